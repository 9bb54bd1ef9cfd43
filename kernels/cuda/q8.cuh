/*
 * q8.cuh - what the INT8 kernel files share (q8.cu: dp4a and the other INT8
 * ops; q8_mma.cu: IMMA): the requantising store of a conv / linear output,
 * through kernel_quant.h's K_QFN functions only, so every INT8 GEMM kernel
 * writes exactly what kernels/ref/kref_q8.c does.
 */
#pragma once

#include "../kernel_quant.h"
#include "common.cuh"

namespace kcuda {

/* y[yi] from the int32 accumulator of output channel oc (bias not yet
 * added); residual is NULL when there is none (always with out_i32). */
__device__ __forceinline__ void q8_store(const struct k_q8_epilogue &e, int oc, int32_t acc,
                                         const int8_t *__restrict__ residual, int64_t yi, void *y)
{
    if (e.out_i32) {
        ((int32_t *)y)[yi] = acc + e.bias[oc];
        return;
    }
    if (residual)
        ((int8_t *)y)[yi] = k_q8_requant_res(acc, e.bias[oc], e.mult[oc], residual[yi], e.res_mult, e.lo, e.hi);
    else
        ((int8_t *)y)[yi] = k_q8_requant(acc, e.bias[oc], e.mult[oc], e.lo, e.hi);
}

} // namespace kcuda
