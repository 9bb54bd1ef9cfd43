/*
 * common.cuh - what every kernels/cuda file shares: element types and their
 * conversions, the activations (the formulas of kernels/ref, in float),
 * launch sizing for grid-stride loops, and cp.async.
 */
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "kcuda.h"

namespace kcuda {

/* Host and device code, like act_apply: the kernels' arithmetic can be run
 * on the host too (kcuda_depthwise_host, kcuda_binary_host). */
__host__ __device__ __forceinline__ float to_f(float x) { return x; }
__host__ __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

template <typename T> __host__ __device__ __forceinline__ T from_f(float x);
template <> __host__ __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __host__ __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }

/* act is uniform across a launch, so the switch does not diverge. Precise
 * libm functions (no fast math): FP32 results must stay within 1e-5 of the
 * double-precision reference. GELU uses erfc to avoid the cancellation of
 * 1 + erf(x) for negative x. */
__host__ __device__ __forceinline__ float act_apply(enum k_act act, float x)
{
    switch (act) {
    case K_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case K_ACT_RELU6:
        return x < 0.0f ? 0.0f : x > 6.0f ? 6.0f : x;
    case K_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case K_ACT_TANH:
        return tanhf(x);
    case K_ACT_GELU:
        return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case K_ACT_GELU_TANH: {
        const float k = 0.79788456080286536f; /* sqrt(2 / pi) */
        return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
    case K_ACT_HARDSWISH:
        return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    case K_ACT_SILU:
        return x / (1.0f + expf(-x));
    default:
        return x;
    }
}

constexpr int ELEMWISE_THREADS = 256;

/* Blocks for a grid-stride loop over count items: enough to fill any GPU,
 * never more than the work needs. */
static inline unsigned grid_for(int64_t count, int threads)
{
    int64_t blocks = (count + threads - 1) / threads;
    const int64_t cap = 65536;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

/* cp.async (sm_80 and later) copies 16 bytes global -> shared without
 * registers, zero-filling when src_bytes is 0; before sm_80 (T4: sm_75) the
 * same copy is an ordinary load and store, done before the commit, so the
 * pipeline's waits have nothing left to wait for. */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
#if __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes)
                 : "memory");
#else
    *(int4 *)smem = src_bytes ? *(const int4 *)gmem : make_int4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* Calls f(T *tag) with T = float or __half from a run-time dtype; the
 * lambda recovers T as std::remove_pointer_t<decltype(tag)>. */
template <typename F> static inline cudaError_t dispatch_dtype(enum kcuda_dtype t, F f)
{
    if (t == KCUDA_F16)
        return f(static_cast<__half *>(nullptr));
    if (t == KCUDA_F32)
        return f(static_cast<float *>(nullptr));
    return cudaErrorInvalidValue;
}

} // namespace kcuda
