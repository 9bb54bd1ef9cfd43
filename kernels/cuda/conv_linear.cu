/*
 * conv_linear.cu - convolution and linear layers on the implicit-GEMM kernel
 * of igemm.cuh (and, for few rows, the split-K kernel of gemm_small.cuh):
 * weight packing (host), the tile choice, launches, and kcuda_init, which
 * lifts the kernels' shared-memory limit.
 *
 * Packed weights: [groups][Kpad][Npad] with element (k, n) = w[g*N + n][k],
 * Kpad a multiple of BK, Npad a multiple of the packing tile's BN (a
 * function of N alone, so packing and launching agree without storing it),
 * zeros in the padding. Every kernel plan_tile may choose reads that one
 * layout: its columns per block divide Npad. k runs over (channel, tap)
 * for NCHW x, and over (tap, channel) for NHWC x, where a 16-byte piece of
 * A is then consecutive channels of one pixel; the gather table follows.
 */
#include <string.h>

#include "depthwise.cuh"
#include "gemm_small.cuh"

namespace kcuda {

enum TileId { TILE_S, TILE_M, TILE_L, SPLITK_1, SPLITK_4 };

/* The packing tile, and the baseline kernel set's whole tile choice. */
static TileId tile_for(int n) { return n <= TileS::BN ? TILE_S : n <= TileM::BN ? TILE_M : TILE_L; }
static int tile_bn(TileId t)
{
    static const int BN[] = {TileS::BN, TileM::BN, TileL::BN, 32, 128};
    return BN[t];
}
static int tile_bm(TileId t)
{
    static const int BM[] = {TileS::BM, TileM::BM, TileL::BM, SK_ROWS, SK_ROWS};
    return BM[t];
}
static int round_up(int v, int m) { return (v + m - 1) / m * m; }

static_assert(TileS::BM == 64 && TileS::BN == 32 && TileM::BM == 128 && TileM::BN == 64 && TileL::BM == 128 &&
                  TileL::BN == 128 && SK_ROWS == 8 && SK_WARPS == 8,
              "tile_bn, tile_bm and tile_name name the tiles");
static const char *tile_name(TileId t)
{
    static const char *const NAME[] = {"tile 64x32", "tile 128x64", "tile 128x128", "split-k 8x32",
                                       "split-k 8x128"};
    return NAME[t];
}

/* Split-K (gemm_small.cuh: 8 rows a block, so B is read at most rows / 8
 * times) for at most SPLITK_FEW_ROWS rows, where a 64- or 128-row tile would
 * be mostly padding, and up to SPLITK_MAX_ROWS rows where the packing tile
 * leaves SMs idle. */
constexpr int SPLITK_FEW_ROWS = 16, SPLITK_MAX_ROWS = 64;

static int64_t blocks_of(TileId t, int64_t rows, int npad, int groups)
{
    return (rows + tile_bm(t) - 1) / tile_bm(t) * (npad / tile_bn(t)) * groups;
}

/* The one tile choice, from rows (batch x output pixels), columns (output
 * channels per group), groups and the device's SM count; sm_count 0 is the
 * baseline set: the packing tile, by columns alone. Few rows run split-K,
 * 128 columns a block where that still gives every SM a block, else 32.
 * Otherwise a packing tile that gives every SM a block stays; one that
 * leaves SMs idle gives way to the largest smaller tile that fills them, or
 * the smallest (their columns divide Npad: 128 = 2 * 64 = 4 * 32). A tile
 * larger than max_tile (the largest a kernel form has) gives way to that
 * one. */
static TileId plan_tile(int64_t rows, int cols, int groups, int sm_count, TileId max_tile)
{
    TileId t = tile_for(cols);
    if (sm_count <= 0 || rows <= 0)
        return t > max_tile ? max_tile : t;
    int npad = round_up(cols, tile_bn(t));
    bool idle = blocks_of(t, rows, npad, groups) < sm_count;
    if (rows <= SPLITK_FEW_ROWS || (idle && rows <= SPLITK_MAX_ROWS))
        return npad % tile_bn(SPLITK_4) == 0 && blocks_of(SPLITK_4, rows, npad, groups) >= sm_count ? SPLITK_4
                                                                                                    : SPLITK_1;
    while (t > TILE_S && blocks_of(t, rows, npad, groups) < sm_count)
        t = (TileId)(t - 1);
    return t > max_tile ? max_tile : t;
}

/* The largest tile of a kernel form. The forms new with channels last stop
 * below a tile where ptxas spills at its blocks per SM (make cuda-report):
 * FP32 NHWC x and FP16 NCHW x to NHWC y at 128x64 (their 128x128 spills
 * 24-72 bytes on sm_90), FP32 NCHW x to NHWC y at 64x32 (128x64 spills 12
 * bytes on sm_75). The forms of the baseline set keep all three, the
 * spills of their 128x128 included (docs/performance.md). */
template <typename T, ALoad AL, YLayout YL> constexpr TileId max_tile()
{
    constexpr bool F32 = std::is_same<T, float>::value;
    if (AL == ALoad::CONV && YL == YLayout::ROWS)
        return F32 ? TILE_S : TILE_M;
    return AL == ALoad::CONV_NHWC && F32 ? TILE_M : TILE_L;
}

struct GemmShape {
    int N, K, Kpad, Npad, groups;
};

static GemmShape conv_shape(const struct k_conv2d *p)
{
    int n = p->oc / p->groups, k = p->c / p->groups * p->kh * p->kw;
    return {n, k, round_up(k, TileS::BK), round_up(n, tile_bn(tile_for(n))), p->groups};
}

/* The direct depthwise kernels take what they can, except in the baseline
 * set (sm_count 0), which keeps the GEMM. */
static bool runs_depthwise(const struct k_conv2d *p, int sm_count, enum kcuda_layout xl)
{
    return sm_count != 0 && kcuda_depthwise_takes(p, xl);
}

static GemmShape linear_shape(const struct k_linear *p)
{
    return {p->m, p->k, round_up(p->k, TileS::BK), round_up(p->m, tile_bn(tile_for(p->m))), 1};
}

template <typename T, ALoad AL, YLayout YL, class TL>
static cudaError_t launch_tile(const GemmArgs &a, cudaStream_t st)
{
    dim3 grid((unsigned)((a.M + TL::BM - 1) / TL::BM), (unsigned)(a.Npad / TL::BN),
              (unsigned)(a.groups < 65535 ? a.groups : 65535));
    if (a.Npad / TL::BN > 65535)
        return cudaErrorInvalidConfiguration;
    igemm_kernel<T, AL, YL, TL><<<grid, TL::THREADS, Smem<T, AL, YL, TL>::BYTES, st>>>(a);
    return cudaGetLastError();
}

/* Whether the large tile's shared memory (66 KB) fits a block on this GPU:
 * not on sm_75 (T4: 64 KB), where TileM runs its columns instead (Npad,
 * a multiple of TileL::BN, is one of TileM::BN too). kcuda_init clears it
 * when any device it initialises lacks the room. */
static bool large_tile_fits = true;

template <typename T, ALoad AL, YLayout YL, int V> static cudaError_t launch_splitk(const GemmArgs &a, cudaStream_t st)
{
    constexpr ALoad SAL = AL == ALoad::ROWS_VEC ? ALoad::ROWS : AL;   /* A is read a value at a time */
    dim3 grid((unsigned)((a.M + SK_ROWS - 1) / SK_ROWS), (unsigned)(a.Npad / (32 * V)),
              (unsigned)(a.groups < 65535 ? a.groups : 65535));
    if (a.Npad / (32 * V) > 65535)
        return cudaErrorInvalidConfiguration;
    splitk_kernel<T, SAL, YL, V><<<grid, SK_THREADS, 0, st>>>(a);
    return cudaGetLastError();
}

template <typename T, ALoad AL, YLayout YL> static cudaError_t launch(const GemmArgs &a, int sm_count, cudaStream_t st)
{
    constexpr TileId MAX = max_tile<T, AL, YL>();
    TileId plan = plan_tile(a.M, a.N, a.groups, sm_count, MAX);   /* as kcuda_conv2d_plan / kcuda_linear_plan */
    if (plan <= TILE_L) {
        if constexpr (MAX == TILE_L) {
            if (plan == TILE_L && large_tile_fits)
                return launch_tile<T, AL, YL, TileL>(a, st);
        }
        if constexpr (MAX >= TILE_M) {
            if (plan >= TILE_M)
                return launch_tile<T, AL, YL, TileM>(a, st);
        }
        return launch_tile<T, AL, YL, TileS>(a, st);
    }
    /* split-K's conv gather takes int offsets over a block's images (at
     * most SK_ROWS of them): beyond that, the smallest tile */
    if (is_conv(AL) && (int64_t)SK_ROWS * a.c * a.h * a.w > INT32_MAX)
        return launch_tile<T, AL, YL, TileS>(a, st);
    /* vector loads of B need its 16 (8) byte alignment; the sums are the same either way */
    if (plan == SPLITK_4 && reinterpret_cast<uintptr_t>(a.wt) % (4 * sizeof(T)) == 0)
        return launch_splitk<T, AL, YL, 4>(a, st);
    return launch_splitk<T, AL, YL, 1>(a, st);
}

template <typename T, ALoad AL, YLayout YL, class TL> static cudaError_t raise_smem_limit()
{
    return cudaFuncSetAttribute(igemm_kernel<T, AL, YL, TL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)Smem<T, AL, YL, TL>::BYTES);
}

template <typename T, ALoad AL, YLayout YL> static cudaError_t raise_smem_limits()
{
    constexpr TileId MAX = max_tile<T, AL, YL>();
    cudaError_t e = raise_smem_limit<T, AL, YL, TileS>();
    if constexpr (MAX >= TILE_M) {
        if (e == cudaSuccess)
            e = raise_smem_limit<T, AL, YL, TileM>();
    }
    if constexpr (MAX == TILE_L) {
        if (e == cudaSuccess && large_tile_fits)
            e = raise_smem_limit<T, AL, YL, TileL>();
    }
    return e;
}

/* Every kernel launch() may start in type T: linear's, and convolution's
 * four layout pairs (x NCHW / NHWC, y NCHW / NHWC). */
template <typename T> static cudaError_t raise_smem_limits_of()
{
    cudaError_t e = raise_smem_limits<T, ALoad::ROWS, YLayout::ROWS>();
    if (e == cudaSuccess)
        e = raise_smem_limits<T, ALoad::CONV, YLayout::NCHW>();
    if (e == cudaSuccess)
        e = raise_smem_limits<T, ALoad::CONV, YLayout::ROWS>();
    if (e == cudaSuccess)
        e = raise_smem_limits<T, ALoad::CONV_NHWC, YLayout::ROWS>();
    if (e == cudaSuccess)
        e = raise_smem_limits<T, ALoad::CONV_NHWC, YLayout::NCHW>();
    return e;
}

/* max_tile of the form kcuda_conv2d launches for these layouts. */
template <typename T> static TileId conv_max_tile(enum kcuda_layout xl, enum kcuda_layout yl)
{
    if (xl == KCUDA_NHWC)
        return yl == KCUDA_NHWC ? max_tile<T, ALoad::CONV_NHWC, YLayout::ROWS>()
                                : max_tile<T, ALoad::CONV_NHWC, YLayout::NCHW>();
    return yl == KCUDA_NHWC ? max_tile<T, ALoad::CONV, YLayout::ROWS>() : max_tile<T, ALoad::CONV, YLayout::NCHW>();
}

/* The largest of the large tile's shared-memory needs, over both y layouts
 * (an upper bound of what the forms launched need). */
template <typename T, ALoad AL> static size_t large_tile_bytes()
{
    size_t a = Smem<T, AL, YLayout::NCHW, TileL>::BYTES, b = Smem<T, AL, YLayout::ROWS, TileL>::BYTES;
    return a > b ? a : b;
}

} // namespace kcuda

using namespace kcuda;

extern "C" size_t kcuda_dtype_size(enum kcuda_dtype t) { return t == KCUDA_F16 ? 2 : 4; }

static struct kcuda_gemm_plan plan_of(int64_t rows, int cols, int groups, int sm_count, TileId max)
{
    TileId t = plan_tile(rows, cols, groups, sm_count, max);
    struct kcuda_gemm_plan pl;
    pl.rows = tile_bm(t);
    pl.cols = tile_bn(t);
    pl.k_split = t == SPLITK_1 || t == SPLITK_4 ? SK_WARPS : 1;
    pl.blocks = rows > 0 ? blocks_of(t, rows, round_up(cols, tile_bn(tile_for(cols))), groups) : 0;
    pl.name = tile_name(t);
    return pl;
}

extern "C" struct kcuda_gemm_plan kcuda_gemm_plan(int64_t rows, int cols, int groups, int sm_count)
{
    return plan_of(rows, cols, groups, sm_count, TILE_L);
}

extern "C" struct kcuda_gemm_plan kcuda_conv2d_plan(const struct k_conv2d *p, int sm_count, enum kcuda_dtype t,
                                                    enum kcuda_layout xl, enum kcuda_layout yl)
{
    if (runs_depthwise(p, sm_count, xl))
        return kcuda_depthwise_plan(p, yl);
    TileId max = t == KCUDA_F16 ? conv_max_tile<__half>(xl, yl) : conv_max_tile<float>(xl, yl);
    return plan_of((int64_t)p->n * p->oh * p->ow, p->oc / p->groups, p->groups, sm_count, max);
}

extern "C" struct kcuda_gemm_plan kcuda_linear_plan(const struct k_linear *p, int sm_count)
{
    return kcuda_gemm_plan(p->n, p->m, 1, sm_count);
}

extern "C" cudaError_t kcuda_init(void)
{
    int device = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e != cudaSuccess)
        return e;
    size_t need = 0;
    for (size_t b : {large_tile_bytes<float, ALoad::CONV>(), large_tile_bytes<float, ALoad::CONV_NHWC>(),
                     large_tile_bytes<float, ALoad::ROWS>(), large_tile_bytes<__half, ALoad::CONV>(),
                     large_tile_bytes<__half, ALoad::CONV_NHWC>(), large_tile_bytes<__half, ALoad::ROWS>(),
                     large_tile_bytes<__half, ALoad::ROWS_VEC>()})
        need = b > need ? b : need;
    large_tile_fits = large_tile_fits && need <= (size_t)optin;
    e = raise_smem_limits_of<float>();
    if (e == cudaSuccess)
        e = raise_smem_limits_of<__half>();
    if (e == cudaSuccess)
        e = raise_smem_limits<__half, ALoad::ROWS_VEC, YLayout::ROWS>();
    return e;
}

/* ------------------------------------------------------------------ conv2d */

extern "C" size_t kcuda_conv2d_packed_elems(const struct k_conv2d *p)
{
    GemmShape s = conv_shape(p);
    return (size_t)s.groups * s.Kpad * s.Npad;
}

extern "C" size_t kcuda_conv2d_table_bytes(const struct k_conv2d *p) { return (size_t)conv_shape(p).Kpad * sizeof(int4); }

extern "C" bool kcuda_conv2d_nhwc_takes(const struct k_conv2d *p, enum kcuda_dtype t)
{
    return p->groups > 0 && p->c % p->groups == 0 &&
           (size_t)(p->c / p->groups) * kcuda_dtype_size(t) % KCUDA_NHWC_VEC_BYTES == 0;
}

extern "C" void kcuda_conv2d_pack(const struct k_conv2d *p, enum kcuda_layout xl, const float *w, float *packed,
                                  void *table)
{
    GemmShape s = conv_shape(p);
    const int taps = p->kh * p->kw, cg = p->c / p->groups;
    const bool nhwc = xl == KCUDA_NHWC;
    memset(packed, 0, kcuda_conv2d_packed_elems(p) * sizeof(float));
    /* w's k (PyTorch's order) is ci * taps + tap; the packed k is that
     * (NCHW x) or tap * cg + ci (NHWC x) */
    for (int g = 0; g < s.groups; g++)
        for (int n = 0; n < s.N; n++)
            for (int k = 0; k < s.K; k++) {
                int wk = nhwc ? k % cg * taps + k / cg : k;
                packed[((size_t)g * s.Kpad + k) * s.Npad + n] = w[((size_t)g * s.N + n) * s.K + wk];
            }
    /* packed k -> {channel (NCHW: its offset), dh, dw}; padding rows get a
     * displacement no input row can have. */
    int4 *t = static_cast<int4 *>(table);
    for (int k = 0; k < s.Kpad; k++) {
        if (k < s.K) {
            int ci = nhwc ? k % cg : k / taps, tap = nhwc ? k / cg : k % taps;
            int ki = tap / p->kw, kj = tap % p->kw;
            t[k] = make_int4(nhwc ? ci : ci * p->h * p->w, ki * p->dil_h, kj * p->dil_w, 0);
        } else {
            t[k] = make_int4(0, 1 << 30, 0, 0);
        }
    }
}

/* The kernel for one pair of layouts. */
template <typename T>
static cudaError_t launch_conv(const GemmArgs &a, int sm_count, enum kcuda_layout xl, enum kcuda_layout yl,
                               cudaStream_t st)
{
    if (xl == KCUDA_NHWC)
        return yl == KCUDA_NHWC ? launch<T, ALoad::CONV_NHWC, YLayout::ROWS>(a, sm_count, st)
                                : launch<T, ALoad::CONV_NHWC, YLayout::NCHW>(a, sm_count, st);
    return yl == KCUDA_NHWC ? launch<T, ALoad::CONV, YLayout::ROWS>(a, sm_count, st)
                            : launch<T, ALoad::CONV, YLayout::NCHW>(a, sm_count, st);
}

extern "C" void kcuda_depthwise_host(const struct k_conv2d *p, const float *x, const float *packed_w,
                                     const float *bias, const float *residual, float *y)
{
    GemmShape s = conv_shape(p);
    kcuda_depthwise_on_host(p, s.Kpad, s.Npad, x, packed_w, bias, residual, y);
}

extern "C" cudaError_t kcuda_conv2d(const struct k_conv2d *p, int sm_count, enum kcuda_dtype t,
                                    enum kcuda_layout xl, enum kcuda_layout yl, const void *x, const void *packed_w,
                                    const void *table, const float *bias, const void *residual, void *y,
                                    cudaStream_t stream)
{
    GemmShape s = conv_shape(p);
    if (runs_depthwise(p, sm_count, xl))
        return kcuda_depthwise(p, s.Kpad, s.Npad, t, yl, x, packed_w, bias, residual, y, stream);
    GemmArgs a = {};
    a.x = x, a.wt = packed_w, a.table = static_cast<const int4 *>(table), a.bias = bias, a.res = residual, a.y = y;
    a.M = p->n * p->oh * p->ow, a.N = s.N, a.K = s.K, a.Kpad = s.Kpad, a.Npad = s.Npad, a.groups = s.groups;
    a.oc = p->oc;
    a.c = p->c, a.h = p->h, a.w = p->w, a.cg = p->c / p->groups;
    a.pixels = p->oh * p->ow, a.ow = p->ow;
    a.stride_h = p->stride_h, a.stride_w = p->stride_w, a.pad_t = p->pad_t, a.pad_l = p->pad_l;
    a.act = p->act;
    if (a.M == 0)
        return cudaSuccess;
    /* the NHWC gather's 16-byte pieces: whole pieces per group, an aligned x */
    if (xl == KCUDA_NHWC && (!kcuda_conv2d_nhwc_takes(p, t) || reinterpret_cast<uintptr_t>(x) % 16 != 0))
        return cudaErrorInvalidValue;
    if (t == KCUDA_F16)
        return launch_conv<__half>(a, sm_count, xl, yl, stream);
    return t == KCUDA_F32 ? launch_conv<float>(a, sm_count, xl, yl, stream) : cudaErrorInvalidValue;
}

/* ------------------------------------------------------------------ linear */

extern "C" size_t kcuda_linear_packed_elems(const struct k_linear *p)
{
    GemmShape s = linear_shape(p);
    return (size_t)s.Kpad * s.Npad;
}

extern "C" void kcuda_linear_pack(const struct k_linear *p, const float *w, float *packed)
{
    GemmShape s = linear_shape(p);
    memset(packed, 0, kcuda_linear_packed_elems(p) * sizeof(float));
    for (int n = 0; n < s.N; n++)
        for (int k = 0; k < s.K; k++)
            packed[(size_t)k * s.Npad + n] = w[(size_t)n * s.K + k];
}

extern "C" cudaError_t kcuda_linear(const struct k_linear *p, int sm_count, enum kcuda_dtype t, const void *x,
                                    const void *packed_w, const float *bias, const void *residual, void *y,
                                    cudaStream_t stream)
{
    GemmShape s = linear_shape(p);
    GemmArgs a = {};
    a.x = x, a.wt = packed_w, a.bias = bias, a.res = residual, a.y = y;
    a.M = p->n, a.N = s.N, a.K = s.K, a.Kpad = s.Kpad, a.Npad = s.Npad, a.groups = 1, a.oc = p->m;
    a.pixels = 1, a.ow = 1;
    a.act = p->act;
    if (a.M == 0)
        return cudaSuccess;
    if (t == KCUDA_F32)
        return launch<float, ALoad::ROWS, YLayout::ROWS>(a, sm_count, stream);
    if (t != KCUDA_F16)
        return cudaErrorInvalidValue;
    bool vec = a.K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return vec ? launch<__half, ALoad::ROWS_VEC, YLayout::ROWS>(a, sm_count, stream)
               : launch<__half, ALoad::ROWS, YLayout::ROWS>(a, sm_count, stream);
}
