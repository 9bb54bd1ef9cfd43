/*
 * kref_q8.h - reference INT8 (and FP16 rounding) kernels: plain loops over
 * the integer rules of kernels/kernel_quant.h, the oracle every optimised
 * INT8 kernel (CPU, CUDA) must match bit for bit.
 *
 * Shapes and parameter blocks are those of kernel_types.h; the INT8 ones
 * ignore the act field (an epilogue's clamp bounds carry ReLU / ReLU6).
 * Weights are unpacked, [oc, c / groups, kh, kw] or [m, k].
 */
#ifndef KREF_Q8_H
#define KREF_Q8_H

#include <stdint.h>

#include "../kernel_quant.h"
#include "../kernel_types.h"

/* y is int8 [n, oc, oh, ow], or int32 when e->out_i32; residual (int8, the
 * layout of y) may be NULL. */
void kref_conv2d_q8(const struct k_conv2d *p, const int8_t *x, const int8_t *w,
                    const struct k_q8_epilogue *e, const int8_t *residual, void *y);
void kref_linear_q8(const struct k_linear *p, const int8_t *x, const int8_t *w,
                    const struct k_q8_epilogue *e, const int8_t *residual, void *y);

/* Padding cells never win; a window without input cells gives -127. */
void kref_max_pool2d_q8(const struct k_pool2d *p, const int8_t *x, int8_t *y);
/* Integer window sum, then apply(sum, count_mult[cells]) with cells the
 * divisor of kref_avg_pool2d_f32 (count_mult has kh * kw + 1 entries, the
 * multiplier for count c being s_in / (c * s_out)). */
void kref_avg_pool2d_q8(const struct k_pool2d *p, const struct k_q8_mult *count_mult,
                        const int8_t *x, int8_t *y);
/* [n, c, hw] -> [n, c]: apply(sum, mult), mult = s_in / (hw * s_out). */
void kref_global_avg_pool_q8(int n, int c, int64_t hw, struct k_q8_mult mult, const int8_t *x,
                             int8_t *y);
void kref_add_q8(int64_t count, const int8_t *a, struct k_q8_mult ma, const int8_t *b,
                 struct k_q8_mult mb, int8_t *y);
/* Each input rescaled to the output by mults[i]. */
void kref_concat_q8(const struct k_concat *p, const int8_t *const *inputs, const int64_t *lens,
                    const struct k_q8_mult *mults, int8_t *y);
void kref_lut_q8(int64_t count, const int8_t *lut, const int8_t *x, int8_t *y);

void kref_quantize_q8(int64_t count, const float *x, float inv_scale, int8_t *y);
void kref_dequantize_q8(int64_t count, const int8_t *x, float scale, float *y);
/* int32 [n, c, inner] -> float with one scale per channel. */
void kref_dequantize_i32(int n, int c, int64_t inner, const int32_t *x, const float *scale,
                         float *y);

/* y = x rounded through binary16; y may equal x. */
void kref_round_f16(int64_t count, const float *x, float *y);

#endif /* KREF_Q8_H */
