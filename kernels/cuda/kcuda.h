/*
 * kcuda.h - CUDA kernels for inferd, callable from C.
 *
 * Same contracts as the reference kernels in kernels/ref/kref.h, plus:
 * - pointers are device pointers; every function only enqueues work on
 *   `stream` and returns the launch status (cudaGetLastError()), never
 *   synchronising. Faults inside a kernel surface at the caller's next
 *   synchronisation;
 * - activations are NCHW (as everywhere in inferd), or NHWC (channels
 *   last) where a function says so, in one element type per
 *   call, `enum kcuda_dtype`: float or IEEE half. bias, scale and shift are
 *   always float. Arithmetic is FP32 (FP16 operands on tensor cores with FP32
 *   accumulation for convolution and linear);
 * - convolution and linear take weights packed once on the host by the
 *   matching *_pack function (FP32), uploaded by the caller and, for FP16,
 *   converted on the device with kcuda_convert. The packed layout is private
 *   to kernels/cuda;
 * - kcuda_init() must run once per device (after cudaSetDevice) before any
 *   convolution or linear launch on it: it raises the GEMM kernels' shared
 *   memory limit.
 *
 * Usage sketch (error checks shortened):
 *
 *     kcuda_init();
 *     float *packed = malloc(kcuda_linear_packed_elems(&p) * sizeof(float));
 *     kcuda_linear_pack(&p, w_host, packed);            // upload to d_w
 *     kcuda_linear(&p, sm_count, KCUDA_F32, d_x, d_w, d_bias, NULL, d_y, stream);
 *
 * Channels last: a convolution reads x and writes y (and its residual) in
 * either layout, chosen per call; reading NHWC x turns the gather into
 * 16-byte loads. Pooling, global average pooling and the per-channel
 * affine have NHWC forms; element-wise ops do not care, and a concat along
 * NHWC channels is kcuda_concat with outer n * h * w and inner 1. The CUDA backend
 * decides which tensors are NHWC (runtime/backend/layout_nhwc.h).
 */
#ifndef KCUDA_H
#define KCUDA_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../kernel_quant.h"
#include "../kernel_types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kcuda_dtype { KCUDA_F32 = 0, KCUDA_F16 };
/* An activation tensor's layout: [n, c, h, w] or [n, h, w, c]. */
enum kcuda_layout { KCUDA_NCHW = 0, KCUDA_NHWC };

/* Bytes of one element of type t. */
size_t kcuda_dtype_size(enum kcuda_dtype t);

cudaError_t kcuda_init(void);

/* ---------------------------------------------------------------- GEMM family
 * Convolution is an implicit GEMM (no im2col buffer): rows are output pixels
 * (n, oh, ow), columns output channels, the reduction runs over
 * (c / groups, kh, kw) through a per-layer gather table. */

/* How one GEMM runs: the thread block's share of the output and the
 * blocks launched. kcuda_gemm_plan is the one tile choice (host code, no
 * GPU), from rows (batch x output pixels; batch for linear), columns
 * (output channels per group), groups and sm_count, the device's SM count
 * (cudaDevAttrMultiProcessorCount). sm_count 0 gives the baseline kernel
 * set's choice: a tile by columns alone (64x32, 128x64, 128x128). Otherwise
 * at most 16 rows, or at most 64 where that tile would leave SMs idle, run
 * split-K (8 rows x 32 or 128 columns a block; its 8 warps share the
 * reduction over K and add their partial sums in a fixed order: run-to-run
 * deterministic, no atomics), and more rows that would leave SMs idle take
 * a smaller tile. K does not change the choice. The packed weights are the
 * same for every plan. */
struct kcuda_gemm_plan {
    int rows, cols;         /* output rows x columns of one thread block */
    int k_split;            /* warps of a block that share K: 1 (tiles) or 8 (split-K) */
    int64_t blocks;         /* thread blocks launched */
    const char *name;       /* for profiles: "tile 128x128", "split-k 8x32", ... (static) */
};
struct kcuda_gemm_plan kcuda_gemm_plan(int64_t rows, int cols, int groups, int sm_count);
/* A convolution's plan for its form (type, x and y layouts): some forms
 * new with channels last lack the larger tiles and run a smaller one. */
struct kcuda_gemm_plan kcuda_conv2d_plan(const struct k_conv2d *p, int sm_count, enum kcuda_dtype t,
                                         enum kcuda_layout xl, enum kcuda_layout yl);
struct kcuda_gemm_plan kcuda_linear_plan(const struct k_linear *p, int sm_count);

/* Elements of the packed weight buffer, and bytes of the gather table. */
size_t kcuda_conv2d_packed_elems(const struct k_conv2d *p);
size_t kcuda_conv2d_table_bytes(const struct k_conv2d *p);
/* Whether the convolution can read NHWC x of type t: the gather copies 16
 * bytes (KCUDA_NHWC_VEC_BYTES) at a time, so each group's channels must fill
 * whole pieces (c / groups a multiple of 8 in FP16, of 4 in FP32). Host code. */
#define KCUDA_NHWC_VEC_BYTES 16
bool kcuda_conv2d_nhwc_takes(const struct k_conv2d *p, enum kcuda_dtype t);
/* w is [oc, c / groups, kh, kw] FP32; fills packed (packed_elems floats) and
 * table (table_bytes) for x in layout xl (the reduction's order differs).
 * Host code; p->n does not matter. */
void kcuda_conv2d_pack(const struct k_conv2d *p, enum kcuda_layout xl, const float *w, float *packed, void *table);
/* y = act(conv(x, w) + bias + residual); bias and residual may be NULL.
 * sm_count: as for kcuda_gemm_plan (0: the baseline tile). x is in layout
 * xl (packed_w and table packed for it), y and residual in yl. NHWC x must
 * be 16-byte aligned and kcuda_conv2d_nhwc_takes, else
 * cudaErrorInvalidValue. */
cudaError_t kcuda_conv2d(const struct k_conv2d *p, int sm_count, enum kcuda_dtype t, enum kcuda_layout xl,
                         enum kcuda_layout yl, const void *x, const void *packed_w, const void *table,
                         const float *bias, const void *residual, void *y, cudaStream_t stream);
/* Convolutions with one input channel a group (depthwise, any channel
 * multiplier), NCHW x and at most KCUDA_DW_MAX_TAPS taps, run a direct
 * kernel (depthwise.cu) rather than the implicit GEMM, except in the
 * baseline set (sm_count 0); kcuda_conv2d_plan names it "depthwise
 * direct". Host code. */
#define KCUDA_DW_MAX_TAPS 64
bool kcuda_depthwise_takes(const struct k_conv2d *p, enum kcuda_layout xl);
/* The direct kernel's arithmetic on the host, for tests without a GPU:
 * NCHW y = act(conv(x, w) + bias + residual), w read from the packing of
 * kcuda_conv2d_pack (NCHW x); bias and residual may be NULL. */
void kcuda_depthwise_host(const struct k_conv2d *p, const float *x, const float *packed_w, const float *bias,
                          const float *residual, float *y);

size_t kcuda_linear_packed_elems(const struct k_linear *p);
/* w is [m, k] FP32 (PyTorch's layout). Host code. */
void kcuda_linear_pack(const struct k_linear *p, const float *w, float *packed);
/* y[n, m] = act(x[n, k] . w^T + bias + residual); sm_count as for kcuda_conv2d. */
cudaError_t kcuda_linear(const struct k_linear *p, int sm_count, enum kcuda_dtype t, const void *x,
                         const void *packed_w, const float *bias, const void *residual, void *y,
                         cudaStream_t stream);

/* ---------------------------------------------------------------- the rest */

cudaError_t kcuda_max_pool2d(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                             cudaStream_t stream);
cudaError_t kcuda_avg_pool2d(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                             cudaStream_t stream);
/* [n, c, hw] -> [n, c] */
cudaError_t kcuda_global_avg_pool(int n, int c, int64_t hw, enum kcuda_dtype t, const void *x, void *y,
                                  cudaStream_t stream);
cudaError_t kcuda_channel_affine(const struct k_channel_affine *p, enum kcuda_dtype t, const void *x,
                                 const float *scale, const float *shift, void *y, cudaStream_t stream);
/* The same three on NHWC x and y (p's fields keep their meaning):
 * [n, oh, ow, c] pooled from [n, h, w, c]; [n, hw, c] -> [n, c]; the affine
 * over [n, hw = p->inner, c]. */
cudaError_t kcuda_max_pool2d_nhwc(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                  cudaStream_t stream);
cudaError_t kcuda_avg_pool2d_nhwc(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                  cudaStream_t stream);
cudaError_t kcuda_global_avg_pool_nhwc(int n, int c, int64_t hw, enum kcuda_dtype t, const void *x, void *y,
                                       cudaStream_t stream);
cudaError_t kcuda_channel_affine_nhwc(const struct k_channel_affine *p, enum kcuda_dtype t, const void *x,
                                      const float *scale, const float *shift, void *y, cudaStream_t stream);
/* y may equal x. */
cudaError_t kcuda_act(enum k_act act, int64_t count, enum kcuda_dtype t, const void *x, void *y,
                      cudaStream_t stream);
/* y may equal a or b. */
cudaError_t kcuda_add(int64_t count, enum kcuda_dtype t, const void *a, const void *b, void *y,
                      cudaStream_t stream);
/* The ONNX element-wise ops (broadcast.cu): y = a op b with numpy
 * broadcasting over k_binary's strides (kernels/kernel_types.h), and
 * y = f(x) for k_unary's functions; arithmetic in float, rounded once. */
cudaError_t kcuda_binary(const struct k_binary *p, enum kcuda_dtype t, const void *a, const void *b, void *y,
                         cudaStream_t stream);
cudaError_t kcuda_unary(const struct k_unary *p, enum kcuda_dtype t, const void *x, void *y, cudaStream_t stream);
/* The same arithmetic on the host (FP32), for tests without a GPU. */
void kcuda_binary_host(const struct k_binary *p, const float *a, const float *b, float *y);
void kcuda_unary_host(const struct k_unary *p, const float *x, float *y);
cudaError_t kcuda_softmax(const struct k_softmax *p, enum kcuda_dtype t, const void *x, void *y,
                          cudaStream_t stream);
/* inputs[i] is [outer, lens[i], inner]; at most KCUDA_CONCAT_MAX inputs. */
#define KCUDA_CONCAT_MAX 16
cudaError_t kcuda_concat(const struct k_concat *p, enum kcuda_dtype t, const void *const *inputs,
                         const int64_t *lens, void *y, cudaStream_t stream);
/* In place over NCHW y [n, c, hw]: y = act(y + bias[c] + residual), the
 * epilogue of a convolution computed elsewhere (cuDNN). bias and residual
 * may be NULL. */
cudaError_t kcuda_bias_act(int n, int c, int64_t hw, enum kcuda_dtype t, const float *bias,
                           const void *residual, enum k_act act, void *y, cudaStream_t stream);
/* Element type conversion (round to nearest even); from == to copies. */
cudaError_t kcuda_convert(int64_t count, enum kcuda_dtype from, const void *x, enum kcuda_dtype to, void *y,
                          cudaStream_t stream);

/* ---------------------------------------------------------------- INT8
 * Bit-identical to kernels/ref/kref_q8.h (same contracts, same integer
 * rules from kernel_quant.h). Conv2d / linear weights are packed once on the
 * host with kcuda_q8_pack (rows [oc] or [m] of c / groups * kh * kw or k
 * int8 values, each row zero padded to a multiple of KCUDA_Q8_K_TILE, zero
 * rows appended up to a multiple of KCUDA_Q8_ROW_TILE), then uploaded; both
 * kernel sets below read that one layout. An epilogue's bias and mult, avg
 * pooling's count_mult and dequantize_i32's scale are device pointers;
 * everything else is passed by value from the host. */

#define KCUDA_Q8_K_TILE 32     /* the k of one IMMA m16n8k32 step */
#define KCUDA_Q8_ROW_TILE 64   /* output channels per IMMA thread block */

size_t kcuda_q8_packed_bytes(int64_t rows, int64_t k);
/* packed: kcuda_q8_packed_bytes(rows, k) bytes, 16-byte aligned once uploaded. */
void kcuda_q8_pack(int64_t rows, int64_t k, const int8_t *w, int8_t *packed);
/* The baseline conv2d / linear kernels (q8.cu: dp4a, untiled; any device,
 * any groups). y is int8, or int32 when e->out_i32 (residual then ignored). */
cudaError_t kcuda_conv2d_q8(const struct k_conv2d *p, const int8_t *x, const int8_t *packed_w,
                            const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream);
cudaError_t kcuda_linear_q8(const struct k_linear *p, const int8_t *x, const int8_t *packed_w,
                            const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream);
/* The same on tensor cores (q8_mma.cu: IMMA mma.sync m16n8k32), same
 * arguments, same bits. Only on a device of compute capability
 * KCUDA_Q8_MMA_MIN_SM or newer (major * 10 + minor), and only for
 * convolutions with groups == 1: kcuda_q8_mma_takes says which; launched
 * elsewhere the kernel traps. The caller (the CUDA backend, in one place)
 * picks between the two sets. */
#define KCUDA_Q8_MMA_MIN_SM 80
bool kcuda_q8_mma_takes(int sm, const struct k_conv2d *conv);   /* conv NULL: linear */
cudaError_t kcuda_conv2d_q8_mma(const struct k_conv2d *p, const int8_t *x, const int8_t *packed_w,
                                const struct k_q8_epilogue *e, const int8_t *residual, void *y,
                                cudaStream_t stream);
cudaError_t kcuda_linear_q8_mma(const struct k_linear *p, const int8_t *x, const int8_t *packed_w,
                                const struct k_q8_epilogue *e, const int8_t *residual, void *y,
                                cudaStream_t stream);
cudaError_t kcuda_max_pool2d_q8(const struct k_pool2d *p, const int8_t *x, int8_t *y, cudaStream_t stream);
cudaError_t kcuda_avg_pool2d_q8(const struct k_pool2d *p, const struct k_q8_mult *count_mult, const int8_t *x,
                                int8_t *y, cudaStream_t stream);
cudaError_t kcuda_global_avg_pool_q8(int n, int c, int64_t hw, struct k_q8_mult mult, const int8_t *x, int8_t *y,
                                     cudaStream_t stream);
cudaError_t kcuda_add_q8(int64_t count, const int8_t *a, struct k_q8_mult ma, const int8_t *b, struct k_q8_mult mb,
                         int8_t *y, cudaStream_t stream);
/* mults (host) has p->count entries, at most KCUDA_CONCAT_MAX. */
cudaError_t kcuda_concat_q8(const struct k_concat *p, const int8_t *const *inputs, const int64_t *lens,
                            const struct k_q8_mult *mults, int8_t *y, cudaStream_t stream);
/* lut: 256 host bytes, y = lut[x + 128]. */
cudaError_t kcuda_lut_q8(int64_t count, const int8_t *lut, const int8_t *x, int8_t *y, cudaStream_t stream);
cudaError_t kcuda_quantize_q8(int64_t count, const float *x, float inv_scale, int8_t *y, cudaStream_t stream);
cudaError_t kcuda_dequantize_q8(int64_t count, const int8_t *x, float scale, float *y, cudaStream_t stream);
/* int32 [n, c, inner] -> float, scale [c] on the device. */
cudaError_t kcuda_dequantize_i32(int n, int c, int64_t inner, const int32_t *x, const float *scale, float *y,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* KCUDA_H */
