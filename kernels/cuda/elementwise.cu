/*
 * elementwise.cu - activations, element-wise add, the per-channel affine
 * (NCHW and NHWC), the bias + residual + activation epilogue of a cuDNN
 * convolution, and dtype conversion. Memory-bound grid-stride loops; arithmetic in float.
 */
#include "common.cuh"

namespace kcuda {

template <typename T> __global__ void act_kernel(enum k_act act, int64_t count, const T *x, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(act_apply(act, to_f(x[i])));
}

template <typename T> __global__ void add_kernel(int64_t count, const T *a, const T *b, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
}

/* [n, c, inner]: y = x * scale[c] + shift[c] */
template <typename T>
__global__ void affine_kernel(int64_t count, int c, int64_t inner, const T *x, const float *scale, const float *shift,
                              T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        int ch = (int)(i / inner % c);
        y[i] = from_f<T>(fmaf(to_f(x[i]), scale[ch], shift[ch]));
    }
}

/* In place over [n, c, hw]: y = act(y + bias[c] + residual) */
template <typename T>
__global__ void bias_act_kernel(int64_t count, int c, int64_t hw, const float *bias, const T *res, enum k_act act,
                                T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        float v = to_f(y[i]);
        if (bias)
            v += bias[i / hw % c];
        if (res)
            v += to_f(res[i]);
        y[i] = from_f<T>(act_apply(act, v));
    }
}

template <typename A, typename B> __global__ void convert_kernel(int64_t count, const A *x, B *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<B>(to_f(x[i]));
}

} // namespace kcuda

using namespace kcuda;

#define GRID(count) grid_for(count, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream

extern "C" cudaError_t kcuda_act(enum k_act act, int64_t count, enum kcuda_dtype t, const void *x, void *y,
                                 cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        act_kernel<T><<<GRID(count)>>>(act, count, static_cast<const T *>(x), static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_add(int64_t count, enum kcuda_dtype t, const void *a, const void *b, void *y,
                                 cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        add_kernel<T><<<GRID(count)>>>(count, static_cast<const T *>(a), static_cast<const T *>(b),
                                       static_cast<T *>(y));
        return cudaGetLastError();
    });
}

/* The affine over count elements whose channel repeats every `inner`
 * (NCHW: the plane; NHWC: 1, the channel fastest). */
static cudaError_t channel_affine(const struct k_channel_affine *p, int64_t inner, enum kcuda_dtype t, const void *x,
                                  const float *scale, const float *shift, void *y, cudaStream_t stream)
{
    int64_t count = (int64_t)p->n * p->c * p->inner;
    if (count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        affine_kernel<T><<<GRID(count)>>>(count, p->c, inner, static_cast<const T *>(x), scale, shift,
                                          static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_channel_affine(const struct k_channel_affine *p, enum kcuda_dtype t, const void *x,
                                            const float *scale, const float *shift, void *y, cudaStream_t stream)
{
    return channel_affine(p, p->inner, t, x, scale, shift, y, stream);
}

/* NHWC [n, hw, c]: the channel is the fastest index (inner 1). */
extern "C" cudaError_t kcuda_channel_affine_nhwc(const struct k_channel_affine *p, enum kcuda_dtype t, const void *x,
                                                 const float *scale, const float *shift, void *y, cudaStream_t stream)
{
    return channel_affine(p, 1, t, x, scale, shift, y, stream);
}

extern "C" cudaError_t kcuda_bias_act(int n, int c, int64_t hw, enum kcuda_dtype t, const float *bias,
                                      const void *residual, enum k_act act, void *y, cudaStream_t stream)
{
    int64_t count = (int64_t)n * c * hw;
    if (count <= 0 || (!bias && !residual && act == K_ACT_NONE))
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        bias_act_kernel<T><<<GRID(count)>>>(count, c, hw, bias, static_cast<const T *>(residual), act,
                                            static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_convert(int64_t count, enum kcuda_dtype from, const void *x, enum kcuda_dtype to,
                                     void *y, cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    if (from == to)
        return cudaMemcpyAsync(y, x, (size_t)count * kcuda_dtype_size(from), cudaMemcpyDeviceToDevice, stream);
    if (from == KCUDA_F32 && to == KCUDA_F16)
        convert_kernel<float, __half><<<GRID(count)>>>(count, static_cast<const float *>(x), static_cast<__half *>(y));
    else if (from == KCUDA_F16 && to == KCUDA_F32)
        convert_kernel<__half, float><<<GRID(count)>>>(count, static_cast<const __half *>(x), static_cast<float *>(y));
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
