/*
 * kcpu_q8.h - optimised CPU INT8 kernels (and FP16 rounding), multithreaded
 * over a kcpu_threads, bit-identical to kernels/ref/kref_q8.h on every
 * instruction set.
 *
 * Convolution and linear run as one INT8 GEMM (int32 accumulation) with the
 * requantising epilogue of kernel_quant.h (depthwise convolution as a
 * direct kernel of its own, same epilogue): AVX-512 VNNI (vpdpbusd) where the
 * CPU has it, else AVX2, else plain C, chosen per call from kcpu_isa() (so
 * kcpu_isa_set applies). Weights are packed
 * once by the *_pack functions into a layout every ISA shares; the caller
 * provides scratch of *_scratch_bytes (no allocation on the hot path).
 */
#ifndef KCPU_Q8_H
#define KCPU_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "../kernel_quant.h"
#include "../kernel_types.h"
#include "kcpu_threads.h"

/* Which INT8 GEMM kernel kcpu_isa() selects on this CPU: "scalar", "avx2"
 * or "avx512-vnni" (AVX-512 without VNNI uses the AVX2 kernel). */
const char *kcpu_q8_kernel_name(void);

/* How kcpu_conv2d_q8 computes p, for profiles: "gemm" or "depthwise
 * direct" (groups == c == oc). Depends only on p's channels and groups. */
const char *kcpu_conv2d_q8_method(const struct k_conv2d *p);

/* Packed weights: kcpu_*_q8_packed_bytes() bytes, 64-byte aligned. */
size_t kcpu_conv2d_q8_packed_bytes(const struct k_conv2d *p);
void kcpu_conv2d_q8_pack(const struct k_conv2d *p, const int8_t *w, void *packed);
size_t kcpu_conv2d_q8_scratch_bytes(const struct k_conv2d *p, int threads);
/* y: int8, or int32 when e->out_i32 (then residual must be NULL). */
void kcpu_conv2d_q8(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x,
                    const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual,
                    void *y, void *scratch);

/* Channels last: x [n, h, w, c] (or [n, c, h, w] with x_nchw set: the
 * kernel's padded copy of x converts it), y and residual [n, oh, ow, oc].
 * Bit-identical to kcpu_conv2d_q8 on the same values. takes: whether the
 * kernel serves p on this CPU (groups 1, or depthwise: the kernel of
 * kcpu_q8_dwn.h; on AVX-512 VNNI every dense one but stems of 1-3
 * channels on maps over 28 x 28, and the depthwise ones on maps up to
 * 14 x 14; on AVX2 those whose input map is at most 28 x 28); the scalar
 * ISA runs a plain-C path, correct but slow, should kcpu_isa_set change
 * the ISA after a plan chose the layout. */
int kcpu_conv2d_q8_nhwc_takes(const struct k_conv2d *p);
size_t kcpu_conv2d_q8_nhwc_packed_bytes(const struct k_conv2d *p);
void kcpu_conv2d_q8_nhwc_pack(const struct k_conv2d *p, const int8_t *w, void *packed);
size_t kcpu_conv2d_q8_nhwc_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_conv2d_q8_nhwc(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, int x_nchw,
                         const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual, void *y,
                         void *scratch);
/* AMX: where the CPU has AMX-INT8 and Linux grants the tile state,
 * kcpu_conv2d_q8_nhwc's dense layers (not the depthwise ones) multiply 16
 * pixels by 16 output channels a tile instruction (TDPBUSD) instead of
 * VNNI vectors: the same sums, the same epilogue, the same bytes.
 * kcpu_q8_amx_usable tells whether this CPU may (asking the OS the first
 * time); kcpu_q8_amx_allow(0) keeps to the VNNI tiles (tests and benchmarks
 * compare both), 1 (the default) lets it. */
int kcpu_q8_amx_usable(void);
void kcpu_q8_amx_allow(int allow);
/* Whether kcpu_conv2d_q8_nhwc runs p on AMX tiles now (for profiles). */
int kcpu_conv2d_q8_nhwc_on_amx(const struct k_conv2d *p);
/* Pooling on channels-last x; global average pooling writes y [n, c]. */
void kcpu_max_pool2d_q8_nhwc(struct kcpu_threads *th, const struct k_pool2d *p, const int8_t *x, int8_t *y);
void kcpu_global_avg_pool_q8_nhwc(struct kcpu_threads *th, int n, int c, int64_t hw, struct k_q8_mult mult,
                                  const int8_t *x, int8_t *y);

size_t kcpu_linear_q8_packed_bytes(const struct k_linear *p);
void kcpu_linear_q8_pack(const struct k_linear *p, const int8_t *w, void *packed);
size_t kcpu_linear_q8_scratch_bytes(const struct k_linear *p, int threads);
void kcpu_linear_q8(struct kcpu_threads *th, const struct k_linear *p, const int8_t *x,
                    const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual,
                    void *y, void *scratch);

void kcpu_max_pool2d_q8(struct kcpu_threads *th, const struct k_pool2d *p, const int8_t *x, int8_t *y);
void kcpu_avg_pool2d_q8(struct kcpu_threads *th, const struct k_pool2d *p,
                        const struct k_q8_mult *count_mult, const int8_t *x, int8_t *y);
void kcpu_global_avg_pool_q8(struct kcpu_threads *th, int n, int c, int64_t hw,
                             struct k_q8_mult mult, const int8_t *x, int8_t *y);
void kcpu_add_q8(struct kcpu_threads *th, int64_t count, const int8_t *a, struct k_q8_mult ma,
                 const int8_t *b, struct k_q8_mult mb, int8_t *y);
void kcpu_concat_q8(struct kcpu_threads *th, const struct k_concat *p, const int8_t *const *inputs,
                    const int64_t *lens, const struct k_q8_mult *mults, int8_t *y);
void kcpu_lut_q8(struct kcpu_threads *th, int64_t count, const int8_t *lut, const int8_t *x, int8_t *y);
void kcpu_quantize_q8(struct kcpu_threads *th, int64_t count, const float *x, float inv_scale,
                      int8_t *y);
void kcpu_dequantize_q8(struct kcpu_threads *th, int64_t count, const int8_t *x, float scale,
                        float *y);
void kcpu_dequantize_i32(struct kcpu_threads *th, int n, int c, int64_t inner, const int32_t *x,
                         const float *scale, float *y);

/* y = x rounded through binary16 (F16C where present); y may equal x. */
void kcpu_round_f16(struct kcpu_threads *th, int64_t count, const float *x, float *y);

#endif /* KCPU_Q8_H */
