/*
 * conv_linear.cu - convolution and linear layers on the implicit-GEMM kernel
 * of igemm.cuh: weight packing (host), tile choice, launches, and
 * kcuda_init, which lifts the kernels' shared-memory limit.
 *
 * Packed weights: [groups][Kpad][Npad] with element (k, n) = w[g*N + n][k],
 * Kpad a multiple of BK, Npad a multiple of the block tile's BN, zeros in
 * the padding. The tile is a function of N alone, so packing and launching
 * agree without storing it.
 */
#include <string.h>

#include "igemm.cuh"

namespace kcuda {

enum TileId { TILE_S, TILE_M, TILE_L };

static TileId tile_for(int n) { return n <= TileS::BN ? TILE_S : n <= TileM::BN ? TILE_M : TILE_L; }
static int tile_bn(TileId t) { return t == TILE_S ? TileS::BN : t == TILE_M ? TileM::BN : TileL::BN; }
static int round_up(int v, int m) { return (v + m - 1) / m * m; }

static_assert(TileS::BM == 64 && TileS::BN == 32 && TileM::BM == 128 && TileM::BN == 64 && TileL::BM == 128 &&
                  TileL::BN == 128,
              "tile_name's strings name the tiles");
static const char *tile_name(TileId t)
{
    return t == TILE_S ? "tile 64x32" : t == TILE_M ? "tile 128x64" : "tile 128x128";
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

template <typename T, ALoad AL> static cudaError_t launch(const GemmArgs &a, cudaStream_t st)
{
    switch (tile_for(a.N)) {
    case TILE_S:
        return launch_tile<T, AL, TileS>(a, st);
    case TILE_M:
        return launch_tile<T, AL, TileM>(a, st);
    default:
        return large_tile_fits ? launch_tile<T, AL, TileL>(a, st) : launch_tile<T, AL, TileM>(a, st);
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

extern "C" const char *kcuda_conv2d_tile(const struct k_conv2d *p) { return tile_name(tile_for(p->oc / p->groups)); }

extern "C" const char *kcuda_linear_tile(const struct k_linear *p) { return tile_name(tile_for(p->m)); }

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

extern "C" cudaError_t kcuda_conv2d(const struct k_conv2d *p, enum kcuda_dtype t, const void *x, const void *packed_w,
                                    const void *table, const float *bias, const void *residual, void *y,
                                    cudaStream_t stream)
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
        return launch<__half, ALoad::CONV>(a, stream);
    return t == KCUDA_F32 ? launch<float, ALoad::CONV>(a, stream) : cudaErrorInvalidValue;
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

extern "C" cudaError_t kcuda_linear(const struct k_linear *p, enum kcuda_dtype t, const void *x, const void *packed_w,
                                    const float *bias, const void *residual, void *y, cudaStream_t stream)
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
        return launch<float, ALoad::ROWS>(a, stream);
    if (t != KCUDA_F16)
        return cudaErrorInvalidValue;
    bool vec = a.K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return vec ? launch<__half, ALoad::ROWS_VEC>(a, stream) : launch<__half, ALoad::ROWS>(a, stream);
}
