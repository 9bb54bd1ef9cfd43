/*
 * depthwise.cu - convolutions with one input channel a group (groups == c:
 * depthwise, and its channel multipliers oc / c > 1), computed directly.
 *
 * The implicit GEMM gives such a group a GEMM of N = oc / c columns (1 for
 * MobileNetV2) in a tile 32 wide and K = kh * kw taps in a k step 32 deep:
 * under 1 % of its MMA work is useful. On the H200 (2026-12-04) MobileNetV2
 * at batch 256 took 120 ms of steps on our convolutions against 18.8 ms on
 * cuDNN's. Here each thread sums one output's taps in FP32 (FP16 inputs
 * are exact in it), then the GEMM's epilogue: y = act(sum + bias +
 * residual), rounded once.
 *
 * x is NCHW (NHWC x reaches the GEMM only in whole 16-byte pieces of a
 * group's channels, which one channel never is); y and the residual are
 * NCHW or NHWC. The weights are read from the GEMM's packing (group g, tap
 * k, column n at (g * Kpad + k) * Npad + n), so a model packs them once for
 * either kernel.
 *
 * NCHW y: a block on up to DW_THREADS neighbouring outputs of one plane
 * (n, o), its taps in shared memory; a small plane gets a block of its
 * size in whole warps (7x7: 64 threads, not 256 with 207 idle). NHWC y: a block on
 * DW_TILE pixels x DW_TILE channels, each thread summing in NCHW order
 * (neighbouring threads on neighbouring pixels: coalesced reads of x), the
 * sums turned round in shared memory so that the stores and the residual's
 * loads run along channels.
 */
#include "common.cuh"
#include "depthwise.cuh"

namespace kcuda {

constexpr int DW_THREADS = 256;
constexpr int DW_TILE = 32;            /* NHWC: pixels x channels a block */
constexpr int DW_ROWS = 8;             /* NHWC: DW_TILE x DW_ROWS threads */

struct DwArgs {
    int n, c, h, w, oc, oh, ow;
    int kh, kw, stride_h, stride_w, pad_t, pad_l, dil_h, dil_w;
    int mult;                          /* oc / c: output channels per input channel */
    int kpad, npad;                    /* the GEMM packing's */
    enum k_act act;
};

static DwArgs dw_args(const struct k_conv2d *p, int kpad, int npad)
{
    return {p->n, p->c, p->h, p->w, p->oc, p->oh, p->ow, p->kh, p->kw, p->stride_h, p->stride_w, p->pad_t,
            p->pad_l, p->dil_h, p->dil_w, p->oc / p->c, kpad, npad, p->act};
}

/* Tap k of output channel o in the GEMM's packing. */
template <typename T> __host__ __device__ __forceinline__ float dw_weight(const DwArgs &a, const T *w, int o, int k)
{
    return to_f(w[((int64_t)(o / a.mult) * a.kpad + k) * a.npad + o % a.mult]);
}

/* The taps of output (oy, ox) over input plane xp, weights wk[kh * kw]
 * (host and device: the host's copy checks the arithmetic without a GPU). */
template <typename T>
__host__ __device__ __forceinline__ float dw_sum(const DwArgs &a, const T *xp, const float *wk, int oy, int ox)
{
    const int iy0 = oy * a.stride_h - a.pad_t, ix0 = ox * a.stride_w - a.pad_l;
    float acc = 0.0f;
    for (int i = 0; i < a.kh; i++) {
        const int iy = iy0 + i * a.dil_h;
        if ((unsigned)iy >= (unsigned)a.h)
            continue;
        for (int j = 0; j < a.kw; j++) {
            const int ix = ix0 + j * a.dil_w;
            if ((unsigned)ix < (unsigned)a.w)
                acc = fmaf(to_f(xp[(int64_t)iy * a.w + ix]), wk[i * a.kw + j], acc);
        }
    }
    return acc;
}

/* The GEMM's epilogue for output i of channel o: y = act(sum + bias + residual). */
template <typename T>
__host__ __device__ __forceinline__ void dw_store(const DwArgs &a, const float *bias, const T *res, T *y, int64_t i,
                                                  int o, float sum)
{
    if (bias)
        sum += bias[o];
    if (res)
        sum += to_f(res[i]);
    y[i] = from_f<T>(act_apply(a.act, sum));
}

/* Threads of an NCHW block: the plane's pixels in whole warps, at most
 * DW_THREADS. */
static int nchw_threads(int64_t pixels)
{
    return pixels >= DW_THREADS ? DW_THREADS : (int)((pixels + 31) / 32 * 32);
}

/* The launch of either kernel: grid x, y, z (64-bit, checked before use)
 * and block x, y. NCHW y: (n * oc planes, pixel blocks), nchw_threads;
 * NHWC y: (pixel tiles, channel tiles, images), DW_TILE x DW_ROWS. */
struct DwGrid {
    int64_t x, y, z;
    int bx, by;
};

static DwGrid dw_grid(int n, int oc, int64_t pixels, enum kcuda_layout yl)
{
    if (yl == KCUDA_NHWC)
        return {(pixels + DW_TILE - 1) / DW_TILE, (oc + DW_TILE - 1) / DW_TILE, n, DW_TILE, DW_ROWS};
    const int threads = nchw_threads(pixels);
    return {(int64_t)n * oc, (pixels + threads - 1) / threads, 1, threads, 1};
}

/* grid (n * oc planes, pixel blocks); nchw_threads(pixels) threads */
template <typename T>
__global__ void __launch_bounds__(DW_THREADS) dw_nchw_kernel(DwArgs a, const T *x, const T *w, const float *bias,
                                                              const T *res, T *y)
{
    __shared__ float wk[KCUDA_DW_MAX_TAPS];
    const int64_t plane = blockIdx.x;  /* img * oc + o */
    const int o = (int)(plane % a.oc), taps = a.kh * a.kw;
    for (int k = threadIdx.x; k < taps; k += blockDim.x)
        wk[k] = dw_weight(a, w, o, k);
    __syncthreads();
    const int pixels = a.oh * a.ow;
    const int pix = blockIdx.y * blockDim.x + threadIdx.x;
    if (pix >= pixels)
        return;
    const T *xp = x + (plane / a.oc * a.c + o / a.mult) * (int64_t)a.h * a.w;
    dw_store(a, bias, res, y, plane * pixels + pix, o, dw_sum(a, xp, wk, pix / a.ow, pix % a.ow));
}

/* grid (pixel tiles, channel tiles, images); block DW_TILE x DW_ROWS */
template <typename T>
__global__ void __launch_bounds__(DW_TILE * DW_ROWS) dw_nhwc_kernel(DwArgs a, const T *x, const T *w,
                                                                   const float *bias, const T *res, T *y)
{
    __shared__ float wk[DW_TILE][KCUDA_DW_MAX_TAPS];
    __shared__ float sums[DW_TILE][DW_TILE + 1];   /* [channel][pixel], padded against bank conflicts */
    const int taps = a.kh * a.kw, pixels = a.oh * a.ow, img = blockIdx.z;
    const int pix0 = blockIdx.x * DW_TILE, o0 = blockIdx.y * DW_TILE;
    const int tid = threadIdx.y * DW_TILE + threadIdx.x;
    for (int e = tid; e < DW_TILE * taps; e += DW_TILE * DW_ROWS) {
        const int oc = e / taps, k = e % taps;
        if (o0 + oc < a.oc)
            wk[oc][k] = dw_weight(a, w, o0 + oc, k);
    }
    __syncthreads();
    /* sums: thread x on pixel pix0 + x, rows of threads over the channels */
    const int pix = pix0 + threadIdx.x;
    for (int oc = threadIdx.y; oc < DW_TILE; oc += DW_ROWS) {
        const int o = o0 + oc;
        if (pix < pixels && o < a.oc) {
            const T *xp = x + ((int64_t)img * a.c + o / a.mult) * a.h * a.w;
            sums[oc][threadIdx.x] = dw_sum(a, xp, wk[oc], pix / a.ow, pix % a.ow);
        }
    }
    __syncthreads();
    /* stores: thread x on channel o0 + x, rows of threads over the pixels */
    const int o = o0 + threadIdx.x;
    if (o >= a.oc)
        return;
    for (int p = threadIdx.y; p < DW_TILE; p += DW_ROWS) {
        if (pix0 + p >= pixels)
            break;
        dw_store(a, bias, res, y, ((int64_t)img * pixels + pix0 + p) * a.oc + o, o, sums[threadIdx.x][p]);
    }
}

template <typename T>
static cudaError_t dw_launch(const DwArgs &a, enum kcuda_layout yl, const void *x, const void *w, const float *bias,
                             const void *res, void *y, cudaStream_t st)
{
    const T *xt = static_cast<const T *>(x), *wt = static_cast<const T *>(w), *rt = static_cast<const T *>(res);
    T *yt = static_cast<T *>(y);
    const DwGrid g = dw_grid(a.n, a.oc, (int64_t)a.oh * a.ow, yl);
    if (g.x > 0x7fffffff || g.y > 65535 || g.z > 65535)
        return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)g.x, (unsigned)g.y, (unsigned)g.z), block((unsigned)g.bx, (unsigned)g.by);
    if (yl == KCUDA_NHWC)
        dw_nhwc_kernel<T><<<grid, block, 0, st>>>(a, xt, wt, bias, rt, yt);
    else
        dw_nchw_kernel<T><<<grid, block, 0, st>>>(a, xt, wt, bias, rt, yt);
    return cudaGetLastError();
}

}   // namespace kcuda

using namespace kcuda;

extern "C" bool kcuda_depthwise_takes(const struct k_conv2d *p, enum kcuda_layout xl)
{
    return xl == KCUDA_NCHW && p->groups == p->c && p->c > 0 && p->oc % p->c == 0 &&
           p->kh * p->kw <= KCUDA_DW_MAX_TAPS;
}

struct kcuda_gemm_plan kcuda_depthwise_plan(const struct k_conv2d *p, enum kcuda_layout yl)
{
    const DwGrid g = dw_grid(p->n, p->oc, (int64_t)p->oh * p->ow, yl);
    if (yl == KCUDA_NHWC)
        return {DW_TILE, DW_TILE, 1, g.x * g.y * g.z, "depthwise direct 32x32"};
    return {g.bx, 1, 1, g.x * g.y * g.z, "depthwise direct"};
}

cudaError_t kcuda_depthwise(const struct k_conv2d *p, int kpad, int npad, enum kcuda_dtype t,
                            enum kcuda_layout yl, const void *x, const void *packed_w, const float *bias,
                            const void *residual, void *y, cudaStream_t stream)
{
    const DwArgs a = dw_args(p, kpad, npad);
    if ((int64_t)p->n * p->oh * p->ow == 0 || p->oc == 0)
        return cudaSuccess;
    if (t == KCUDA_F16)
        return dw_launch<__half>(a, yl, x, packed_w, bias, residual, y, stream);
    return t == KCUDA_F32 ? dw_launch<float>(a, yl, x, packed_w, bias, residual, y, stream) : cudaErrorInvalidValue;
}

void kcuda_depthwise_on_host(const struct k_conv2d *p, int kpad, int npad, const float *x, const float *packed_w,
                             const float *bias, const float *residual, float *y)
{
    const DwArgs a = dw_args(p, kpad, npad);
    const int taps = p->kh * p->kw, pixels = p->oh * p->ow;
    float wk[KCUDA_DW_MAX_TAPS];
    for (int img = 0; img < p->n; img++)
        for (int o = 0; o < p->oc; o++) {
            for (int k = 0; k < taps; k++)
                wk[k] = dw_weight(a, packed_w, o, k);
            const float *xp = x + ((int64_t)img * p->c + o / a.mult) * p->h * p->w;
            for (int pix = 0; pix < pixels; pix++)
                dw_store(a, bias, residual, y, ((int64_t)img * p->oc + o) * pixels + pix, o,
                         dw_sum(a, xp, wk, pix / p->ow, pix % p->ow));
        }
}
