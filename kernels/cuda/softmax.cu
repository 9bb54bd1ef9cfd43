/*
 * softmax.cu - max-subtracted softmax along one axis of [outer, len, inner]:
 * one warp per row when the axis is innermost (logits), else one thread per
 * (outer, inner) column walking the axis, so neighbouring threads read
 * neighbouring addresses.
 */
#include "common.cuh"

namespace kcuda {

template <typename T> __global__ void softmax_rows_kernel(int64_t rows, int64_t len, const T *x, T *y)
{
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int64_t r = blockIdx.x * (int64_t)warps + threadIdx.x / 32; r < rows; r += (int64_t)gridDim.x * warps) {
        const T *xr = x + r * len;
        T *yr = y + r * len;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t i = lane; i < len; i += 32)
            mx = fmaxf(mx, to_f(xr[i]));
        for (int off = 16; off > 0; off /= 2)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        for (int64_t i = lane; i < len; i += 32)
            sum += expf(to_f(xr[i]) - mx);
        for (int off = 16; off > 0; off /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, off);
        float inv = 1.0f / sum;
        for (int64_t i = lane; i < len; i += 32)
            yr[i] = from_f<T>(expf(to_f(xr[i]) - mx) * inv);
    }
}

template <typename T> __global__ void softmax_cols_kernel(struct k_softmax p, const T *x, T *y)
{
    int64_t cols = p.outer * p.inner;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = c / p.inner * p.axis_len * p.inner + c % p.inner;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t a = 0; a < p.axis_len; a++)
            mx = fmaxf(mx, to_f(x[base + a * p.inner]));
        for (int64_t a = 0; a < p.axis_len; a++)
            sum += expf(to_f(x[base + a * p.inner]) - mx);
        float inv = 1.0f / sum;
        for (int64_t a = 0; a < p.axis_len; a++)
            y[base + a * p.inner] = from_f<T>(expf(to_f(x[base + a * p.inner]) - mx) * inv);
    }
}

} // namespace kcuda

using namespace kcuda;

extern "C" cudaError_t kcuda_softmax(const struct k_softmax *p, enum kcuda_dtype t, const void *x, void *y,
                                     cudaStream_t stream)
{
    if (p->outer <= 0 || p->axis_len <= 0 || p->inner <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T *xt = static_cast<const T *>(x);
        T *yt = static_cast<T *>(y);
        if (p->inner == 1)
            softmax_rows_kernel<T><<<grid_for(p->outer, ELEMWISE_THREADS / 32), ELEMWISE_THREADS, 0, stream>>>(
                p->outer, p->axis_len, xt, yt);
        else
            softmax_cols_kernel<T><<<grid_for(p->outer * p->inner, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
                *p, xt, yt);
        return cudaGetLastError();
    });
}
