/*
 * pool.cu - max and average pooling (one thread per output) and global
 * average pooling (NCHW: one warp per channel; NHWC: one thread per
 * channel, neighbouring threads on neighbouring channels), with the PyTorch
 * semantics of kernels/ref/kref_pool.c: padding never wins a max, averages
 * divide by the window clipped to [-pad, size + pad) or by its real cells.
 * NCHW and NHWC pooling share one kernel: output i is (n, c, oh, ow) or
 * (n, oh, ow, c), channels C_STRIDE apart in x.
 */
#include "common.cuh"

namespace kcuda {

template <typename T, bool MAX, bool NHWC> __global__ void pool2d_kernel(struct k_pool2d p, const T *x, T *y)
{
    int64_t count = (int64_t)p.n * p.c * p.oh * p.ow;
    const int cs = NHWC ? p.c : 1;   /* elements between neighbouring pixels */
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t pix = NHWC ? i / p.c : i;   /* (n, c) or n, then oh, ow */
        int ow = (int)(pix % p.ow), oh = (int)(pix / p.ow % p.oh);
        /* NCHW: plane (n, c); NHWC: image n at channel c */
        const T *xp = NHWC ? x + pix / ((int64_t)p.oh * p.ow) * p.h * p.w * p.c + i % p.c
                           : x + i / ((int64_t)p.oh * p.ow) * p.h * p.w;
        int h0 = oh * p.stride_h - p.pad_t, w0 = ow * p.stride_w - p.pad_l;
        float r;
        if (MAX) {
            r = -INFINITY;
            for (int ki = 0; ki < p.kh; ki++) {
                int ih = h0 + ki * p.dil_h;
                if (ih < 0 || ih >= p.h)
                    continue;
                for (int kj = 0; kj < p.kw; kj++) {
                    int iw = w0 + kj * p.dil_w;
                    if (iw >= 0 && iw < p.w)
                        r = fmaxf(r, to_f(xp[(ih * p.w + iw) * cs]));
                }
            }
        } else {
            int h1 = min(h0 + p.kh, p.h + p.pad_t), w1 = min(w0 + p.kw, p.w + p.pad_l);
            int padded_cells = (h1 - h0) * (w1 - w0);
            h0 = max(h0, 0), w0 = max(w0, 0), h1 = min(h1, p.h), w1 = min(w1, p.w);
            float sum = 0.0f;
            for (int ih = h0; ih < h1; ih++)
                for (int iw = w0; iw < w1; iw++)
                    sum += to_f(xp[(ih * p.w + iw) * cs]);
            int cells = p.count_include_pad ? padded_cells : (h1 - h0) * (w1 - w0);
            r = cells > 0 ? sum / (float)cells : 0.0f;
        }
        y[i] = from_f<T>(r);
    }
}

/* [rows, hw] -> [rows]: one warp per row */
template <typename T> __global__ void mean_rows_kernel(int64_t rows, int64_t hw, const T *x, T *y)
{
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int64_t r = blockIdx.x * (int64_t)warps + threadIdx.x / 32; r < rows; r += (int64_t)gridDim.x * warps) {
        const T *xr = x + r * hw;
        float sum = 0.0f;
        for (int64_t i = lane; i < hw; i += 32)
            sum += to_f(xr[i]);
        for (int off = 16; off > 0; off /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (lane == 0)
            y[r] = from_f<T>(sum / (float)hw);
    }
}

/* NHWC [n, hw, c] -> [n, c]: thread (n, c) sums its channel; a warp's
 * loads are 32 neighbouring channels of one pixel. */
template <typename T> __global__ void mean_pixels_kernel(int n, int c, int64_t hw, const T *x, T *y)
{
    int64_t count = (int64_t)n * c;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        const T *xp = x + i / c * hw * c + i % c;
        float sum = 0.0f;
        for (int64_t q = 0; q < hw; q++)
            sum += to_f(xp[q * c]);
        y[i] = from_f<T>(sum / (float)hw);
    }
}

} // namespace kcuda

using namespace kcuda;

template <bool MAX, bool NHWC>
static cudaError_t pool2d(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y, cudaStream_t stream)
{
    int64_t count = (int64_t)p->n * p->c * p->oh * p->ow;
    if (count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        pool2d_kernel<T, MAX, NHWC><<<grid_for(count, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
            *p, static_cast<const T *>(x), static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_max_pool2d(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                        cudaStream_t stream)
{
    return pool2d<true, false>(p, t, x, y, stream);
}

extern "C" cudaError_t kcuda_avg_pool2d(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                        cudaStream_t stream)
{
    return pool2d<false, false>(p, t, x, y, stream);
}

extern "C" cudaError_t kcuda_max_pool2d_nhwc(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                             cudaStream_t stream)
{
    return pool2d<true, true>(p, t, x, y, stream);
}

extern "C" cudaError_t kcuda_avg_pool2d_nhwc(const struct k_pool2d *p, enum kcuda_dtype t, const void *x, void *y,
                                             cudaStream_t stream)
{
    return pool2d<false, true>(p, t, x, y, stream);
}

extern "C" cudaError_t kcuda_global_avg_pool(int n, int c, int64_t hw, enum kcuda_dtype t, const void *x, void *y,
                                             cudaStream_t stream)
{
    int64_t rows = (int64_t)n * c;
    if (rows <= 0 || hw <= 0)
        return cudaSuccess;
    const int warps = ELEMWISE_THREADS / 32;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        mean_rows_kernel<T><<<grid_for(rows, warps), ELEMWISE_THREADS, 0, stream>>>(rows, hw, static_cast<const T *>(x),
                                                                                    static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_global_avg_pool_nhwc(int n, int c, int64_t hw, enum kcuda_dtype t, const void *x,
                                                  void *y, cudaStream_t stream)
{
    int64_t count = (int64_t)n * c;
    if (count <= 0 || hw <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        mean_pixels_kernel<T><<<grid_for(count, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(
            n, c, hw, static_cast<const T *>(x), static_cast<T *>(y));
        return cudaGetLastError();
    });
}
