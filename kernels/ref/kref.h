/*
 * kref.h - reference kernels: plain loops, obviously correct, the oracle.
 *
 * Every optimised kernel (CPU or CUDA) is tested against these. They favour
 * clarity over speed: accumulation is done in double so that they also serve
 * as the high-precision reference in the op tests. Parameters are described
 * in kernel_types.h. Optional pointers (bias, residual) may be NULL.
 *
 * Epilogue order for conv2d and linear, matching PyTorch's conv -> bn -> add
 * -> act: y = act(acc + bias + residual).
 */
#ifndef KREF_H
#define KREF_H

#include <stddef.h>
#include <stdint.h>

#include "../kernel_types.h"

/* The activation in double (also the source of the INT8 tables). */
double kref_act_f64(enum k_act act, double x);
float kref_act_f32(enum k_act act, float x);

void kref_conv2d_f32(const struct k_conv2d *p, const float *x, const float *w,
                     const float *bias, const float *residual, float *y);
/* The transposed convolution (k_conv2d read as kernel_types.h says; act
 * unused); bias may be NULL. */
void kref_conv_transpose2d_f32(const struct k_conv2d *p, const float *x, const float *w, const float *bias, float *y);
void kref_linear_f32(const struct k_linear *p, const float *x, const float *w,
                     const float *bias, const float *residual, float *y);
void kref_max_pool2d_f32(const struct k_pool2d *p, const float *x, float *y);
void kref_avg_pool2d_f32(const struct k_pool2d *p, const float *x, float *y);
/* [n, c, hw] -> [n, c] */
void kref_global_avg_pool_f32(int n, int c, int64_t hw, const float *x, float *y);
void kref_channel_affine_f32(const struct k_channel_affine *p, const float *x,
                             const float *scale, const float *shift, float *y);
void kref_act_f32_n(enum k_act act, int64_t count, const float *x, float *y);
void kref_add_f32(int64_t count, const float *a, const float *b, float *y);
/* y = a op b with the broadcasting strides of p (kernel_types.h). */
void kref_binary_f32(const struct k_binary *p, const float *a, const float *b, float *y);
/* y = f(x) per k_unary (kernel_types.h), in double, rounded once. */
void kref_unary_f32(const struct k_unary *p, const float *x, float *y);
void kref_softmax_f32(const struct k_softmax *p, const float *x, float *y);
/* y per k_layer_norm; scale and bias [cols] may be NULL. */
void kref_layer_norm_f32(const struct k_layer_norm *p, const float *x, const float *scale, const float *bias,
                         float *y);
/* inputs[i] is [outer, lens[i], inner]; y is [outer, sum(lens), inner]. */
void kref_concat_f32(const struct k_concat *p, const float *const *inputs,
                     const int64_t *lens, float *y);
/* y = the reduction of x per k_reduce, in double, rounded once. */
void kref_reduce_f32(const struct k_reduce *p, const float *x, float *y);
/* y = the slice of x per k_slice. */
void kref_slice_f32(const struct k_slice *p, const float *x, float *y);
/* y = x padded per k_pad. */
void kref_pad_f32(const struct k_pad *p, const float *x, float *y);
/* y = x resampled per k_resize. */
void kref_resize_f32(const struct k_resize *p, const float *x, float *y);
/* y = x with its axes permuted per k_transpose. */
void kref_transpose_f32(const struct k_transpose *p, const float *x, float *y);
/* y = alpha * op(a) . op(b) per k_matmul (kernel_types.h). */
void kref_matmul_f32(const struct k_matmul *p, const float *a, const float *b, float *y);
/* scale, bias, mean, var: [n, c] (per sample). */
void kref_batch_norm_f32(const struct k_batch_norm *p, const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y);

#endif /* KREF_H */
