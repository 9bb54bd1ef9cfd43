/*
 * depthwise.cuh - the direct kernels for convolutions with one input
 * channel a group (depthwise.cu), which kcuda_conv2d and kcuda_conv2d_plan
 * (conv_linear.cu) hand such a convolution to. kpad and npad are the GEMM
 * packing's, which the weights are read in.
 */
#ifndef KCUDA_DEPTHWISE_CUH
#define KCUDA_DEPTHWISE_CUH

#include "kcuda.h"

struct kcuda_gemm_plan kcuda_depthwise_plan(const struct k_conv2d *p, enum kcuda_layout yl);
cudaError_t kcuda_depthwise(const struct k_conv2d *p, int kpad, int npad, enum kcuda_dtype t, enum kcuda_layout yl,
                            const void *x, const void *packed_w, const float *bias, const void *residual, void *y,
                            cudaStream_t stream);
/* kcuda_depthwise_host's work, given the packing's kpad and npad. */
void kcuda_depthwise_on_host(const struct k_conv2d *p, int kpad, int npad, const float *x, const float *packed_w,
                             const float *bias, const float *residual, float *y);

#endif /* KCUDA_DEPTHWISE_CUH */
