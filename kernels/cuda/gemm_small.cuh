/*
 * gemm_small.cuh - the GEMM of igemm.cuh when rows (batch x output pixels)
 * are few: split-K inside one thread block instead of a mostly empty
 * 64..128-row tile on a handful of SMs (lenet5's fc1 at batch 1 ran one
 * 128 x 128 FP32 tile for one row).
 *
 * A block owns SK_ROWS rows x 32 * V columns of C, for one group. Each of
 * its SK_WARPS warps sums one contiguous slice of K (lane j: columns
 * n0 + j*V .. n0 + j*V + V-1, for every row of the block); B rows are read
 * straight from the packed weights (32 * V consecutive elements a warp,
 * coalesced), A values are warp-uniform (one broadcast load a row). The
 * slices' partial sums meet in shared memory and are added in warp order
 * 0, 1, ..., SK_WARPS-1: every output's sum order depends on K alone, not
 * on V, the grid, the device or timing, so results are run-to-run
 * deterministic without atomics or a global workspace. FP16 operands are
 * widened to float, FP32 accumulation as in igemm; the epilogue is igemm's
 * (acc + bias + residual, then the activation). Same GemmArgs, packed
 * weights, gather table and layouts (ALoad, YLayout) as igemm; A is read a
 * value at a time whatever the layout.
 */
#pragma once

#include "igemm.cuh"

namespace kcuda {

constexpr int SK_ROWS = 8, SK_WARPS = 8, SK_THREADS = SK_WARPS * 32;

/* V consecutive elements of B as floats: 32 * V-column blocks start at a
 * multiple of 32 * V elements of a row of Npad (a multiple of 32 * V), so
 * V = 4 loads are 16 (float) or 8 (half) bytes aligned when the buffer is. */
template <typename T, int V> struct BLoad;
template <> struct BLoad<float, 1> {
    static __device__ __forceinline__ void get(const float *p, float (&b)[1]) { b[0] = __ldg(p); }
};
template <> struct BLoad<float, 4> {
    static __device__ __forceinline__ void get(const float *p, float (&b)[4])
    {
        float4 q = __ldg(reinterpret_cast<const float4 *>(p));
        b[0] = q.x, b[1] = q.y, b[2] = q.z, b[3] = q.w;
    }
};
template <> struct BLoad<__half, 1> {
    static __device__ __forceinline__ void get(const __half *p, float (&b)[1]) { b[0] = __half2float(__ldg(p)); }
};
template <> struct BLoad<__half, 4> {
    static __device__ __forceinline__ void get(const __half *p, float (&b)[4])
    {
        uint2 q = __ldg(reinterpret_cast<const uint2 *>(p));
        float2 lo = __half22float2(*reinterpret_cast<const __half2 *>(&q.x));
        float2 hi = __half22float2(*reinterpret_cast<const __half2 *>(&q.y));
        b[0] = lo.x, b[1] = lo.y, b[2] = hi.x, b[3] = hi.y;
    }
};

template <typename T, ALoad AL, YLayout YL, int V>
__global__ void __launch_bounds__(SK_THREADS, 2) splitk_kernel(GemmArgs a)
{
    static_assert(AL != ALoad::ROWS_VEC, "split-K reads A a value at a time");
    constexpr bool CONV = is_conv(AL), NHWC = AL == ALoad::CONV_NHWC;
    constexpr int COLS = 32 * V;
    __shared__ __align__(16) float part[SK_WARPS][SK_ROWS][COLS];   /* V = 4: 32 KB */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int m0 = blockIdx.x * SK_ROWS, n0 = blockIdx.y * COLS;
    const int kc = (a.K + SK_WARPS - 1) / SK_WARPS, kb = warp * kc, ke = min(a.K, kb + kc);
    const T *x = static_cast<const T *>(a.x);
    const T *res = static_cast<const T *>(a.res);
    T *y = static_cast<T *>(a.y);

    for (int g = blockIdx.z; g < a.groups; g += gridDim.z) {
        const T *wg = static_cast<const T *>(a.wt) + (int64_t)g * a.Kpad * a.Npad + n0 + lane * V;
        /* Per row of the block (warp-uniform): conv, where its image
         * starts (elements past xb, the block's first image at its group's
         * first channel) and its top-left tap; linear, its first element
         * (r * K past xb). Rows past M read nothing. */
        const int live = min(SK_ROWS, a.M - m0);
        const T *xb = x;
        int xrow[SK_ROWS], ih0[SK_ROWS], iw0[SK_ROWS];
        if (CONV) {
            /* the block's rows span at most SK_ROWS images: int offsets
             * (the launch checks SK_ROWS * c * h * w fits) */
            const int img0 = m0 / a.pixels;
            xb = x + (int64_t)img0 * a.c * a.h * a.w + (int64_t)g * a.cg * (NHWC ? 1 : a.h * a.w);
#pragma unroll
            for (int r = 0; r < SK_ROWS; r++) {
                int m = min(m0 + r, a.M - 1), img = m / a.pixels, pix = m % a.pixels;
                xrow[r] = (img - img0) * a.c * a.h * a.w;
                ih0[r] = r < live ? (pix / a.ow) * a.stride_h - a.pad_t : -(1 << 30);
                iw0[r] = (pix % a.ow) * a.stride_w - a.pad_l;
            }
        } else {
            xb = x + (int64_t)m0 * a.K;
#pragma unroll
            for (int r = 0; r < SK_ROWS; r++)
                xrow[r] = r * a.K, ih0[r] = iw0[r] = 0;
        }
        float acc[SK_ROWS][V];
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
#pragma unroll
            for (int v = 0; v < V; v++)
                acc[r][v] = 0.0f;

#pragma unroll 4
        for (int k = kb; k < ke; k++) {
            float b[V];
            BLoad<T, V>::get(wg + (int64_t)k * a.Npad, b);
            int4 t = make_int4(0, 0, 0, 0);
            if (CONV)
                t = __ldg(&a.table[k]);
#pragma unroll
            for (int r = 0; r < SK_ROWS; r++) {
                float av = 0.0f;
                if (CONV) {
                    int ih = ih0[r] + t.y, iw = iw0[r] + t.z;
                    if ((unsigned)ih < (unsigned)a.h && (unsigned)iw < (unsigned)a.w)
                        av = to_f(xb[xrow[r] + t.x + (ih * a.w + iw) * (NHWC ? a.c : 1)]);
                } else if (r < live) {
                    av = to_f(xb[xrow[r] + k]);
                }
#pragma unroll
                for (int v = 0; v < V; v++)
                    acc[r][v] = fmaf(av, b[v], acc[r][v]);
            }
        }

#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
#pragma unroll
            for (int v = 0; v < V; v++)
                part[warp][r][lane * V + v] = acc[r][v];
        __syncthreads();
        for (int e = threadIdx.x; e < SK_ROWS * COLS; e += SK_THREADS) {
            int r = e / COLS, cl = e % COLS, m = m0 + r, n = n0 + cl;
            if (m >= a.M || n >= a.N)
                continue;
            float v = part[0][r][cl];
#pragma unroll
            for (int w = 1; w < SK_WARPS; w++)
                v += part[w][r][cl];
            int col = g * a.N + n;
            int64_t i = YL == YLayout::NCHW ? ((int64_t)(m / a.pixels) * a.oc + col) * a.pixels + m % a.pixels
                                            : (int64_t)m * a.oc + col;
            if (a.bias)
                v += a.bias[col];
            if (res)
                v += to_f(res[i]);
            y[i] = from_f<T>(act_apply(a.act, v));
        }
        __syncthreads();   /* the next group reuses part */
    }
}

} // namespace kcuda
