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
 * layout: its columns per block divide Npad.
 */
#include <string.h>

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
 * the smallest (their columns divide Npad: 128 = 2 * 64 = 4 * 32). */
static TileId plan_tile(int64_t rows, int cols, int groups, int sm_count)
{
    TileId t = tile_for(cols);
    if (sm_count <= 0 || rows <= 0)
        return t;
    int npad = round_up(cols, tile_bn(t));
    bool idle = blocks_of(t, rows, npad, groups) < sm_count;
    if (rows <= SPLITK_FEW_ROWS || (idle && rows <= SPLITK_MAX_ROWS))
        return npad % tile_bn(SPLITK_4) == 0 && blocks_of(SPLITK_4, rows, npad, groups) >= sm_count ? SPLITK_4
                                                                                                    : SPLITK_1;
    while (t > TILE_S && blocks_of(t, rows, npad, groups) < sm_count)
        t = (TileId)(t - 1);
    return t;
}

struct GemmShape {
    int N, K, Kpad, Npad, groups;
};

static GemmShape conv_shape(const struct k_conv2d *p)
{
    int n = p->oc / p->groups, k = p->c / p->groups * p->kh * p->kw;
    return {n, k, round_up(k, TileS::BK), round_up(n, tile_bn(tile_for(n))), p->groups};
}

static GemmShape linear_shape(const struct k_linear *p)
{
    return {p->m, p->k, round_up(p->k, TileS::BK), round_up(p->m, tile_bn(tile_for(p->m))), 1};
}

template <typename T, ALoad AL, class TL> static cudaError_t launch_tile(const GemmArgs &a, cudaStream_t st)
{
    dim3 grid((unsigned)((a.M + TL::BM - 1) / TL::BM), (unsigned)(a.Npad / TL::BN),
              (unsigned)(a.groups < 65535 ? a.groups : 65535));
    if (a.Npad / TL::BN > 65535)
        return cudaErrorInvalidConfiguration;
    igemm_kernel<T, AL, TL><<<grid, TL::THREADS, Smem<T, AL, TL>::BYTES, st>>>(a);
    return cudaGetLastError();
}

/* Whether the large tile's shared memory (66 KB) fits a block on this GPU:
 * not on sm_75 (T4: 64 KB), where TileM runs its columns instead (Npad,
 * a multiple of TileL::BN, is one of TileM::BN too). kcuda_init clears it
 * when any device it initialises lacks the room. */
static bool large_tile_fits = true;

template <typename T, ALoad AL, int V> static cudaError_t launch_splitk(const GemmArgs &a, cudaStream_t st)
{
    constexpr ALoad SAL = AL == ALoad::CONV ? ALoad::CONV : ALoad::ROWS;   /* A is read a value at a time */
    dim3 grid((unsigned)((a.M + SK_ROWS - 1) / SK_ROWS), (unsigned)(a.Npad / (32 * V)),
              (unsigned)(a.groups < 65535 ? a.groups : 65535));
    if (a.Npad / (32 * V) > 65535)
        return cudaErrorInvalidConfiguration;
    splitk_kernel<T, SAL, V><<<grid, SK_THREADS, 0, st>>>(a);
    return cudaGetLastError();
}

template <typename T, ALoad AL> static cudaError_t launch(const GemmArgs &a, int sm_count, cudaStream_t st)
{
    TileId plan = plan_tile(a.M, a.N, a.groups, sm_count);
    switch (plan) {
    case TILE_S:
        return launch_tile<T, AL, TileS>(a, st);
    case TILE_M:
        return launch_tile<T, AL, TileM>(a, st);
    case TILE_L:
        return large_tile_fits ? launch_tile<T, AL, TileL>(a, st) : launch_tile<T, AL, TileM>(a, st);
    default:
        /* split-K's conv gather takes int offsets over a block's images
         * (at most SK_ROWS of them): beyond that, the smallest tile */
        if (AL == ALoad::CONV && (int64_t)SK_ROWS * a.c * a.h * a.w > INT32_MAX)
            return launch_tile<T, AL, TileS>(a, st);
        /* vector loads of B need its 16 (8) byte alignment; the sums are the same either way */
        if (plan == SPLITK_4 && reinterpret_cast<uintptr_t>(a.wt) % (4 * sizeof(T)) == 0)
            return launch_splitk<T, AL, 4>(a, st);
        return launch_splitk<T, AL, 1>(a, st);
    }
}

template <typename T, ALoad AL, class TL> static cudaError_t raise_smem_limit()
{
    return cudaFuncSetAttribute(igemm_kernel<T, AL, TL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)Smem<T, AL, TL>::BYTES);
}

template <typename T, ALoad AL> static cudaError_t raise_smem_limits()
{
    cudaError_t e = raise_smem_limit<T, AL, TileS>();
    if (e == cudaSuccess)
        e = raise_smem_limit<T, AL, TileM>();
    if (e == cudaSuccess && large_tile_fits)
        e = raise_smem_limit<T, AL, TileL>();
    return e;
}

} // namespace kcuda

using namespace kcuda;

extern "C" size_t kcuda_dtype_size(enum kcuda_dtype t) { return t == KCUDA_F16 ? 2 : 4; }

extern "C" struct kcuda_gemm_plan kcuda_gemm_plan(int64_t rows, int cols, int groups, int sm_count)
{
    TileId t = plan_tile(rows, cols, groups, sm_count);
    struct kcuda_gemm_plan pl;
    pl.rows = tile_bm(t);
    pl.cols = tile_bn(t);
    pl.k_split = t == SPLITK_1 || t == SPLITK_4 ? SK_WARPS : 1;
    pl.blocks = rows > 0 ? blocks_of(t, rows, round_up(cols, tile_bn(tile_for(cols))), groups) : 0;
    pl.name = tile_name(t);
    return pl;
}

extern "C" struct kcuda_gemm_plan kcuda_conv2d_plan(const struct k_conv2d *p, int sm_count)
{
    return kcuda_gemm_plan((int64_t)p->n * p->oh * p->ow, p->oc / p->groups, p->groups, sm_count);
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
    large_tile_fits = large_tile_fits && Smem<float, ALoad::CONV, TileL>::BYTES <= (size_t)optin &&
                      Smem<__half, ALoad::ROWS_VEC, TileL>::BYTES <= (size_t)optin &&
                      Smem<__half, ALoad::CONV, TileL>::BYTES <= (size_t)optin &&
                      Smem<__half, ALoad::ROWS, TileL>::BYTES <= (size_t)optin;
    e = raise_smem_limits<float, ALoad::CONV>();
    if (e == cudaSuccess)
        e = raise_smem_limits<float, ALoad::ROWS>();
    if (e == cudaSuccess)
        e = raise_smem_limits<__half, ALoad::CONV>();
    if (e == cudaSuccess)
        e = raise_smem_limits<__half, ALoad::ROWS>();
    if (e == cudaSuccess)
        e = raise_smem_limits<__half, ALoad::ROWS_VEC>();
    return e;
}

/* ------------------------------------------------------------------ conv2d */

extern "C" size_t kcuda_conv2d_packed_elems(const struct k_conv2d *p)
{
    GemmShape s = conv_shape(p);
    return (size_t)s.groups * s.Kpad * s.Npad;
}

extern "C" size_t kcuda_conv2d_table_bytes(const struct k_conv2d *p) { return (size_t)conv_shape(p).Kpad * sizeof(int4); }

extern "C" void kcuda_conv2d_pack(const struct k_conv2d *p, const float *w, float *packed, void *table)
{
    GemmShape s = conv_shape(p);
    memset(packed, 0, kcuda_conv2d_packed_elems(p) * sizeof(float));
    for (int g = 0; g < s.groups; g++)
        for (int n = 0; n < s.N; n++)
            for (int k = 0; k < s.K; k++)
                packed[((size_t)g * s.Kpad + k) * s.Npad + n] = w[((size_t)g * s.N + n) * s.K + k];
    /* k = (ci, ki, kj) -> offset of channel ci and the tap's displacement;
     * padding rows get a displacement no input row can have. */
    int4 *t = static_cast<int4 *>(table);
    int taps = p->kh * p->kw;
    for (int k = 0; k < s.Kpad; k++) {
        if (k < s.K) {
            int ci = k / taps, ki = k % taps / p->kw, kj = k % p->kw;
            t[k] = make_int4(ci * p->h * p->w, ki * p->dil_h, kj * p->dil_w, 0);
        } else {
            t[k] = make_int4(0, 1 << 30, 0, 0);
        }
    }
}

extern "C" cudaError_t kcuda_conv2d(const struct k_conv2d *p, int sm_count, enum kcuda_dtype t, const void *x,
                                    const void *packed_w, const void *table, const float *bias,
                                    const void *residual, void *y, cudaStream_t stream)
{
    GemmShape s = conv_shape(p);
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
    if (t == KCUDA_F16)
        return launch<__half, ALoad::CONV>(a, sm_count, stream);
    return t == KCUDA_F32 ? launch<float, ALoad::CONV>(a, sm_count, stream) : cudaErrorInvalidValue;
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
        return launch<float, ALoad::ROWS>(a, sm_count, stream);
    if (t != KCUDA_F16)
        return cudaErrorInvalidValue;
    bool vec = a.K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return vec ? launch<__half, ALoad::ROWS_VEC>(a, sm_count, stream)
               : launch<__half, ALoad::ROWS>(a, sm_count, stream);
}
