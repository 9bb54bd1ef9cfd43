/*
 * kcpu.h - optimised CPU kernels (FP32), vectorised and multithreaded.
 *
 * Same contracts as the reference kernels in kernels/ref/kref.h, plus:
 * - work is split over a kcpu_threads (see kcpu_threads.h); pass NULL to run on the
 *   calling thread only;
 * - convolution and linear take weights pre-packed once at load time by the
 *   matching *_pack function, and a caller-provided scratch buffer whose size
 *   the *_scratch_bytes function gives (no allocation on the hot path);
 * - the instruction set (AVX-512, AVX2+FMA or plain C) is chosen at run time
 *   from the CPU (kcpu_isa()); the binary never requires -march=native.
 */
#ifndef KCPU_H
#define KCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../kernel_types.h"
#include "kcpu_threads.h"

enum kcpu_isa { KCPU_ISA_SCALAR = 0, KCPU_ISA_AVX2, KCPU_ISA_AVX512 };

/* The instruction set the kernels use, process-wide: the best this CPU
 * supports unless kcpu_isa_set chose another (cached after the first call). */
enum kcpu_isa kcpu_isa(void);
/* "scalar", "avx2", "avx512". */
const char *kcpu_isa_name(enum kcpu_isa isa);
/* The ISA kcpu_isa_name calls name; false when none is. */
bool kcpu_isa_from_name(const char *name, enum kcpu_isa *out);
/* The best ISA the CPU itself supports, whatever kcpu_isa_set chose. */
enum kcpu_isa kcpu_isa_hardware(void);
/* Makes kcpu_isa() return isa from now on, for every caller in the process
 * (the CPU backend's cpu_isa option; tests run every kernel under every ISA
 * the CPU has). Returns 0, or -1 when the CPU lacks isa. Packed weights stay
 * valid across the switch. */
int kcpu_isa_set(enum kcpu_isa isa);

/* This machine's FP32 peak in GFLOP/s under kcpu_isa(), measured: an FMA
 * loop on every thread of th at once (NULL: one core). Takes about 15 ms. */
double kcpu_peak_gflops(struct kcpu_threads *th);

/* Packed weights: opaque float buffer of kcpu_*_packed_floats() floats,
 * 64-byte aligned, allocated by the caller. */
size_t kcpu_conv2d_packed_floats(const struct k_conv2d *p);
void kcpu_conv2d_pack(const struct k_conv2d *p, const float *w, float *packed);
/* Scratch for one call with p->n images, for a pool of `threads` threads. */
size_t kcpu_conv2d_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_conv2d_f32(struct kcpu_threads *th, const struct k_conv2d *p,
                     const float *x, const float *packed_w, const float *bias,
                     const float *residual, float *y, void *scratch);
/* How kcpu_conv2d_f32 computes p, for profiles: "direct gemm" (1x1),
 * "implicit gemm", "im2col gemm", "pixel-tile gemm", "winograd gemm",
 * "reading taps gemm" (kcpu_conv_taps.h) or "depthwise direct". */
const char *kcpu_conv2d_method(const struct k_conv2d *p);

/* A 1x1 convolution pw (stride 1, unpadded, one group) and the depthwise
 * 3x3 dw that reads its output (dilation 1, stride 1 or 2 both ways),
 * both with at most a clamp (ReLU, ReLU6) for activation, run as one:
 * y = dw(pw(x)), the expanded tensor kept in cache a band of channels at
 * a time (kcpu_expand_dw.c). pw's weights packed by kcpu_expand_dw_pack;
 * dw's are PyTorch's [c][1][3][3] as they are. kcpu_expand_dw_applies
 * says where the runtime chains them (it also depends on kcpu_isa());
 * kcpu_expand_dw_f32 computes any pair of those shapes. */
bool kcpu_expand_dw_applies(const struct k_conv2d *pw, const struct k_conv2d *dw);
size_t kcpu_expand_dw_packed_floats(const struct k_conv2d *pw);
void kcpu_expand_dw_pack(const struct k_conv2d *pw, const float *w, float *packed);
size_t kcpu_expand_dw_scratch_bytes(const struct k_conv2d *pw, int threads);
void kcpu_expand_dw_f32(struct kcpu_threads *th, const struct k_conv2d *pw, const struct k_conv2d *dw,
                        const float *x, const float *packed, const float *pw_bias, const float *dw_w,
                        const float *dw_bias, float *y, void *scratch);

size_t kcpu_linear_packed_floats(const struct k_linear *p);
void kcpu_linear_pack(const struct k_linear *p, const float *w, float *packed);
size_t kcpu_linear_scratch_bytes(const struct k_linear *p, int threads);
void kcpu_linear_f32(struct kcpu_threads *th, const struct k_linear *p,
                     const float *x, const float *packed_w, const float *bias,
                     const float *residual, float *y, void *scratch);

void kcpu_max_pool2d_f32(struct kcpu_threads *th, const struct k_pool2d *p,
                         const float *x, float *y);
void kcpu_avg_pool2d_f32(struct kcpu_threads *th, const struct k_pool2d *p,
                         const float *x, float *y);
void kcpu_global_avg_pool_f32(struct kcpu_threads *th, int n, int c, int64_t hw,
                              const float *x, float *y);
void kcpu_channel_affine_f32(struct kcpu_threads *th,
                             const struct k_channel_affine *p, const float *x,
                             const float *scale, const float *shift, float *y);
/* y may equal x (in place). */
void kcpu_act_f32(struct kcpu_threads *th, enum k_act act, int64_t count,
                  const float *x, float *y);
/* y may equal a or b. */
void kcpu_add_f32(struct kcpu_threads *th, int64_t count, const float *a,
                  const float *b, float *y);
/* y = a op b with broadcasting; y must not overlap a or b. */
void kcpu_binary_f32(struct kcpu_threads *th, const struct k_binary *p,
                     const float *a, const float *b, float *y);
/* y = f(x) per k_unary (kernel_types.h); y may be x. */
void kcpu_unary_f32(struct kcpu_threads *th, const struct k_unary *p, const float *x, float *y);
void kcpu_softmax_f32(struct kcpu_threads *th, const struct k_softmax *p,
                      const float *x, float *y);
/* y per k_layer_norm; scale and bias [cols] may be NULL; y must not overlap x. */
void kcpu_layer_norm_f32(struct kcpu_threads *th, const struct k_layer_norm *p, const float *x, const float *scale,
                         const float *bias, float *y);
/* y = the reduction of x per k_reduce; y must not overlap x. */
void kcpu_reduce_f32(struct kcpu_threads *th, const struct k_reduce *p, const float *x, float *y);
/* y = the slice of x per k_slice; y must not overlap x. */
void kcpu_slice_f32(struct kcpu_threads *th, const struct k_slice *p, const float *x, float *y);
/* y = x padded per k_pad; y must not overlap x. */
void kcpu_pad_f32(struct kcpu_threads *th, const struct k_pad *p, const float *x, float *y);
/* The transposed convolution (k_conv2d read as kernel_types.h says; act
 * unused); bias may be NULL; y must not overlap x. */
void kcpu_conv_transpose2d_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x, const float *w,
                               const float *bias, float *y);
/* y = x resampled per k_resize, with scratch of kcpu_resize_scratch_bytes
 * (its index and weight tables, a row per thread); y must not overlap x. */
size_t kcpu_resize_scratch_bytes(const struct k_resize *p, int threads);
void kcpu_resize_f32(struct kcpu_threads *th, const struct k_resize *p, const float *x, float *y, void *scratch);
/* y = x with its axes permuted per k_transpose; y must not overlap x. */
void kcpu_transpose_f32(struct kcpu_threads *th, const struct k_transpose *p, const float *x, float *y);
void kcpu_concat_f32(struct kcpu_threads *th, const struct k_concat *p,
                     const float *const *inputs, const int64_t *lens, float *y);
/* memcpy(dst, src, bytes), split over the threads from KCPU_COPY_SPLIT_BYTES on
 * (below, waking the workers costs more than it saves); no overlap. */
#define KCPU_COPY_SPLIT_BYTES ((size_t)16 << 20)
void kcpu_copy(struct kcpu_threads *th, void *dst, const void *src, size_t bytes);
/* Both operands are run-time data, packed per matrix into scratch
 * (kcpu_matmul_scratch_bytes); y must not overlap them. */
size_t kcpu_matmul_scratch_bytes(const struct k_matmul *p, int threads);
void kcpu_matmul_f32(struct kcpu_threads *th, const struct k_matmul *p,
                     const float *a, const float *b, float *y, void *scratch);
void kcpu_batch_norm_f32(struct kcpu_threads *th, const struct k_batch_norm *p,
                         const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y);

#endif /* KCPU_H */
