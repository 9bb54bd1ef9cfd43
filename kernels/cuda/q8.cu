/*
 * q8.cu - INT8 kernels, bit-identical to kernels/ref/kref_q8.c: every
 * integer step goes through the K_QFN functions of kernels/kernel_quant.h,
 * the float edges through __fmul_rn / __int2float_rn (no contraction), and
 * int32 accumulation is exact (|acc| < 2^31 by K_Q8_MAX_DEPTH), so the
 * summation order does not matter.
 *
 * Convolution is a direct implicit GEMM: one thread per output pixel of one
 * output channel, the reduction (c / groups, kh, kw) gathered four int8
 * values at a time and multiplied with __dp4a against weights packed as
 * rows of int8x4 words (zero padded). Linear is one warp per output, lanes
 * striding over k with __dp4a, reduced with shuffles. No shared-memory
 * tiling: these are the baseline, and the fallback before sm_80, of the
 * IMMA kernels of q8_mma.cu, which read the same packed weights (rows of
 * KCUDA_Q8_K_TILE-padded k, the row count padded to KCUDA_Q8_ROW_TILE).
 */
#include <string.h>

#include "q8.cuh"

namespace kcuda {
namespace {

constexpr int Q8_THREADS = 256;

/* kernel_quant.h's k_q8_quantize with the float operations pinned. */
__device__ __forceinline__ int8_t q8_quantize(float x, float inv_scale)
{
    float v = __fmul_rn(x, inv_scale);
    if (v != v)
        return 0;
    if (v >= 127.0f)
        return K_Q8_MAX;
    if (v <= -127.0f)
        return K_Q8_MIN;
    int t = __float2int_rz(v);
    float frac = __fsub_rn(v, __int2float_rn(t));
    if (frac >= 0.5f)
        t++;
    else if (frac <= -0.5f)
        t--;
    return (int8_t)t;
}

__global__ void __launch_bounds__(Q8_THREADS)
conv2d_q8_kernel(struct k_conv2d p, const int8_t *__restrict__ x, const int *__restrict__ w, int words,
                 struct k_q8_epilogue e, const int8_t *__restrict__ residual, void *y)
{
    const int cg = p.c / p.groups, og = p.oc / p.groups, K = cg * p.kh * p.kw;
    const int64_t npix = (int64_t)p.n * p.oh * p.ow, hw = (int64_t)p.h * p.w;
    for (int o = blockIdx.y; o < p.oc; o += gridDim.y) {
        const int g = o / og;
        const int *wr = w + (int64_t)o * words;
        for (int64_t pix = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; pix < npix;
             pix += (int64_t)gridDim.x * blockDim.x) {
            const int ow = (int)(pix % p.ow);
            const int64_t t = pix / p.ow;
            const int oh = (int)(t % p.oh), n = (int)(t / p.oh);
            const int8_t *xb = x + ((int64_t)n * p.c + (int64_t)g * cg) * hw;
            const int ih0 = oh * p.stride_h - p.pad_t, iw0 = ow * p.stride_w - p.pad_l;
            int ci = 0, ki = 0, kj = 0;
            int32_t acc = 0;
            for (int k0 = 0; k0 < K; k0 += 4) {
                unsigned packed = 0;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (k0 + j < K) {
                        int ih = ih0 + ki * p.dil_h, iw = iw0 + kj * p.dil_w;
                        if (ih >= 0 && ih < p.h && iw >= 0 && iw < p.w)
                            packed |= (unsigned)(uint8_t)xb[ci * hw + (int64_t)ih * p.w + iw] << (8 * j);
                        if (++kj == p.kw) {
                            kj = 0;
                            if (++ki == p.kh) {
                                ki = 0;
                                ci++;
                            }
                        }
                    }
                }
                acc = __dp4a((int)packed, __ldg(wr + k0 / 4), acc);
            }
            const int64_t yi = (((int64_t)n * p.oc + o) * p.oh + oh) * p.ow + ow;
            q8_store(e, o, acc, residual, yi, y);
        }
    }
}

__global__ void __launch_bounds__(Q8_THREADS)
linear_q8_kernel(struct k_linear p, const int8_t *__restrict__ x, const int *__restrict__ w, int words,
                 struct k_q8_epilogue e, const int8_t *__restrict__ residual, void *y)
{
    const int lane = threadIdx.x & 31, warps = blockDim.x / 32;
    const int64_t total = (int64_t)p.n * p.m;
    for (int64_t i = blockIdx.x * (int64_t)warps + threadIdx.x / 32; i < total; i += (int64_t)gridDim.x * warps) {
        const int n = (int)(i / p.m), m = (int)(i % p.m);
        const int8_t *xr = x + (int64_t)n * p.k;
        const int *wr = w + (int64_t)m * words;
        int32_t acc = 0;
        for (int k0 = lane * 4; k0 < p.k; k0 += 128) {
            unsigned packed = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (k0 + j < p.k)
                    packed |= (unsigned)(uint8_t)xr[k0 + j] << (8 * j);
            }
            acc = __dp4a((int)packed, __ldg(wr + k0 / 4), acc);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0)
            q8_store(e, m, acc, residual, i, y);
    }
}

__global__ void max_pool2d_q8_kernel(struct k_pool2d p, const int8_t *__restrict__ x, int8_t *__restrict__ y)
{
    const int64_t total = (int64_t)p.n * p.c * p.oh * p.ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int ow = (int)(i % p.ow), oh = (int)(i / p.ow % p.oh);
        const int64_t nc = i / p.ow / p.oh;
        const int8_t *xp = x + nc * p.h * p.w;
        int8_t best = K_Q8_MIN;
        for (int ki = 0; ki < p.kh; ki++) {
            int ih = oh * p.stride_h - p.pad_t + ki * p.dil_h;
            if (ih < 0 || ih >= p.h)
                continue;
            for (int kj = 0; kj < p.kw; kj++) {
                int iw = ow * p.stride_w - p.pad_l + kj * p.dil_w;
                if (iw >= 0 && iw < p.w && xp[(int64_t)ih * p.w + iw] > best)
                    best = xp[(int64_t)ih * p.w + iw];
            }
        }
        y[i] = best;
    }
}

__global__ void avg_pool2d_q8_kernel(struct k_pool2d p, const struct k_q8_mult *__restrict__ count_mult,
                                     const int8_t *__restrict__ x, int8_t *__restrict__ y)
{
    const int64_t total = (int64_t)p.n * p.c * p.oh * p.ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int ow = (int)(i % p.ow), oh = (int)(i / p.ow % p.oh);
        const int64_t nc = i / p.ow / p.oh;
        const int8_t *xp = x + nc * p.h * p.w;
        int h0 = oh * p.stride_h - p.pad_t, w0 = ow * p.stride_w - p.pad_l;
        int h1 = min(h0 + p.kh, p.h + p.pad_t), w1 = min(w0 + p.kw, p.w + p.pad_l);
        const int padded_cells = (h1 - h0) * (w1 - w0);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        h1 = min(h1, p.h);
        w1 = min(w1, p.w);
        int32_t sum = 0;
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++)
                sum += xp[(int64_t)ih * p.w + iw];
        const int cells = p.count_include_pad ? padded_cells : (h1 - h0) * (w1 - w0);
        int8_t v = 0;
        if (cells > 0)
            v = k_q8_clamp(k_q8_apply(sum, count_mult[cells]), K_Q8_MIN, K_Q8_MAX);
        y[i] = v;
    }
}

/* One warp per (n, c). */
__global__ void global_avg_pool_q8_kernel(int64_t nc_total, int64_t hw, struct k_q8_mult mult,
                                          const int8_t *__restrict__ x, int8_t *__restrict__ y)
{
    const int lane = threadIdx.x & 31, warps = blockDim.x / 32;
    for (int64_t nc = blockIdx.x * (int64_t)warps + threadIdx.x / 32; nc < nc_total;
         nc += (int64_t)gridDim.x * warps) {
        int32_t sum = 0;
        for (int64_t i = lane; i < hw; i += 32)
            sum += x[nc * hw + i];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, off);
        if (lane == 0)
            y[nc] = k_q8_clamp(k_q8_apply(sum, mult), K_Q8_MIN, K_Q8_MAX);
    }
}

__global__ void add_q8_kernel(int64_t count, const int8_t *a, struct k_q8_mult ma, const int8_t *b,
                              struct k_q8_mult mb, int8_t *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = k_q8_add(a[i], ma, b[i], mb);
}

struct concat_q8_args {
    const int8_t *in[KCUDA_CONCAT_MAX];
    int64_t len[KCUDA_CONCAT_MAX];
    struct k_q8_mult mult[KCUDA_CONCAT_MAX];
    int count;
    int64_t total;   /* sum of len */
};

__global__ void concat_q8_kernel(struct concat_q8_args a, int64_t outer, int64_t inner, int8_t *__restrict__ y)
{
    const int64_t n = outer * a.total * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e = i % inner, t = i / inner, o = t / a.total;
        int64_t at = t % a.total;
        int k = 0;
        while (at >= a.len[k]) {
            at -= a.len[k];
            k++;
        }
        const int8_t v = a.in[k][(o * a.len[k] + at) * inner + e];
        y[i] = k_q8_clamp(k_q8_apply(v, a.mult[k]), K_Q8_MIN, K_Q8_MAX);
    }
}

struct lut_q8_table {
    int8_t v[256];
};

__global__ void lut_q8_kernel(int64_t count, struct lut_q8_table lut, const int8_t *x, int8_t *y)
{
    __shared__ int8_t t[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        t[i] = lut.v[i];
    __syncthreads();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = k_q8_lut(t, x[i]);
}

__global__ void quantize_q8_kernel(int64_t count, const float *__restrict__ x, float inv_scale,
                                   int8_t *__restrict__ y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = q8_quantize(x[i], inv_scale);
}

__global__ void dequantize_q8_kernel(int64_t count, const int8_t *__restrict__ x, float scale,
                                     float *__restrict__ y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fmul_rn(__int2float_rn(x[i]), scale);
}

__global__ void dequantize_i32_kernel(int64_t nc_total, int c, int64_t inner, const int32_t *__restrict__ x,
                                      const float *__restrict__ scale, float *__restrict__ y)
{
    const int64_t count = nc_total * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fmul_rn(__int2float_rn(x[i]), scale[(i / inner) % c]);
}

} // namespace
} // namespace kcuda

using namespace kcuda;

extern "C" {

/* Row stride of the packed weights: k padded to the IMMA kernels' k tile
 * (a multiple of 4, the dp4a word, too). */
static int64_t q8_kpad(int64_t k) { return (k + KCUDA_Q8_K_TILE - 1) / KCUDA_Q8_K_TILE * KCUDA_Q8_K_TILE; }

size_t kcuda_q8_packed_bytes(int64_t rows, int64_t k)
{
    const int64_t rp = (rows + KCUDA_Q8_ROW_TILE - 1) / KCUDA_Q8_ROW_TILE * KCUDA_Q8_ROW_TILE;
    return (size_t)rp * (size_t)q8_kpad(k);
}

void kcuda_q8_pack(int64_t rows, int64_t k, const int8_t *w, int8_t *packed)
{
    const int64_t kp = q8_kpad(k);
    memset(packed, 0, kcuda_q8_packed_bytes(rows, k));
    for (int64_t r = 0; r < rows; r++)
        memcpy(packed + r * kp, w + r * k, (size_t)k);
}

cudaError_t kcuda_conv2d_q8(const struct k_conv2d *p, const int8_t *x, const int8_t *packed_w,
                            const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream)
{
    const int K = p->c / p->groups * p->kh * p->kw;
    const int64_t npix = (int64_t)p->n * p->oh * p->ow;
    if (npix <= 0 || p->oc <= 0)
        return cudaSuccess;
    dim3 grid(grid_for(npix, Q8_THREADS), (unsigned)(p->oc < 65535 ? p->oc : 65535));
    conv2d_q8_kernel<<<grid, Q8_THREADS, 0, stream>>>(*p, x, (const int *)packed_w, (int)(q8_kpad(K) / 4), *e,
                                                       e->out_i32 ? nullptr : residual, y);
    return cudaGetLastError();
}

cudaError_t kcuda_linear_q8(const struct k_linear *p, const int8_t *x, const int8_t *packed_w,
                            const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream)
{
    const int64_t total = (int64_t)p->n * p->m;
    if (total <= 0)
        return cudaSuccess;
    linear_q8_kernel<<<grid_for(total * 32, Q8_THREADS), Q8_THREADS, 0, stream>>>(
        *p, x, (const int *)packed_w, (int)(q8_kpad(p->k) / 4), *e, e->out_i32 ? nullptr : residual, y);
    return cudaGetLastError();
}

cudaError_t kcuda_max_pool2d_q8(const struct k_pool2d *p, const int8_t *x, int8_t *y, cudaStream_t stream)
{
    const int64_t total = (int64_t)p->n * p->c * p->oh * p->ow;
    if (total <= 0)
        return cudaSuccess;
    max_pool2d_q8_kernel<<<grid_for(total, Q8_THREADS), Q8_THREADS, 0, stream>>>(*p, x, y);
    return cudaGetLastError();
}

cudaError_t kcuda_avg_pool2d_q8(const struct k_pool2d *p, const struct k_q8_mult *count_mult, const int8_t *x,
                                int8_t *y, cudaStream_t stream)
{
    const int64_t total = (int64_t)p->n * p->c * p->oh * p->ow;
    if (total <= 0)
        return cudaSuccess;
    avg_pool2d_q8_kernel<<<grid_for(total, Q8_THREADS), Q8_THREADS, 0, stream>>>(*p, count_mult, x, y);
    return cudaGetLastError();
}

cudaError_t kcuda_global_avg_pool_q8(int n, int c, int64_t hw, struct k_q8_mult mult, const int8_t *x, int8_t *y,
                                     cudaStream_t stream)
{
    const int64_t nc = (int64_t)n * c;
    if (nc <= 0)
        return cudaSuccess;
    global_avg_pool_q8_kernel<<<grid_for(nc * 32, Q8_THREADS), Q8_THREADS, 0, stream>>>(nc, hw, mult, x, y);
    return cudaGetLastError();
}

cudaError_t kcuda_add_q8(int64_t count, const int8_t *a, struct k_q8_mult ma, const int8_t *b, struct k_q8_mult mb,
                         int8_t *y, cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    add_q8_kernel<<<grid_for(count, Q8_THREADS), Q8_THREADS, 0, stream>>>(count, a, ma, b, mb, y);
    return cudaGetLastError();
}

cudaError_t kcuda_concat_q8(const struct k_concat *p, const int8_t *const *inputs, const int64_t *lens,
                            const struct k_q8_mult *mults, int8_t *y, cudaStream_t stream)
{
    if (p->count < 1 || p->count > KCUDA_CONCAT_MAX)
        return cudaErrorInvalidValue;
    struct concat_q8_args a;
    memset(&a, 0, sizeof(a));
    a.count = p->count;
    for (int i = 0; i < p->count; i++) {
        a.in[i] = inputs[i];
        a.len[i] = lens[i];
        a.mult[i] = mults[i];
        a.total += lens[i];
    }
    const int64_t n = p->outer * a.total * p->inner;
    if (n <= 0)
        return cudaSuccess;
    concat_q8_kernel<<<grid_for(n, Q8_THREADS), Q8_THREADS, 0, stream>>>(a, p->outer, p->inner, y);
    return cudaGetLastError();
}

cudaError_t kcuda_lut_q8(int64_t count, const int8_t *lut, const int8_t *x, int8_t *y, cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    struct lut_q8_table t;
    memcpy(t.v, lut, sizeof(t.v));
    lut_q8_kernel<<<grid_for(count, Q8_THREADS), Q8_THREADS, 0, stream>>>(count, t, x, y);
    return cudaGetLastError();
}

cudaError_t kcuda_quantize_q8(int64_t count, const float *x, float inv_scale, int8_t *y, cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    quantize_q8_kernel<<<grid_for(count, Q8_THREADS), Q8_THREADS, 0, stream>>>(count, x, inv_scale, y);
    return cudaGetLastError();
}

cudaError_t kcuda_dequantize_q8(int64_t count, const int8_t *x, float scale, float *y, cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    dequantize_q8_kernel<<<grid_for(count, Q8_THREADS), Q8_THREADS, 0, stream>>>(count, x, scale, y);
    return cudaGetLastError();
}

cudaError_t kcuda_dequantize_i32(int n, int c, int64_t inner, const int32_t *x, const float *scale, float *y,
                                 cudaStream_t stream)
{
    const int64_t nc = (int64_t)n * c;
    if (nc <= 0 || inner <= 0)
        return cudaSuccess;
    dequantize_i32_kernel<<<grid_for(nc * inner, Q8_THREADS), Q8_THREADS, 0, stream>>>(nc, c, inner, x, scale, y);
    return cudaGetLastError();
}

} // extern "C"
