/*
 * igemm.cuh - the one GEMM kernel behind convolution (implicit GEMM) and
 * linear layers, FP32 on CUDA cores and FP16 on tensor cores (WMMA, FP32
 * accumulation), with the fused epilogue y = act(acc + bias + residual).
 *
 * GEMM view, per group g:  C[M, N] = A[M, K] . B[K, N]
 *   conv:   M = n * oh * ow (output pixels), N = oc / groups, K = c/groups*kh*kw;
 *           A is gathered from x through a per-k table, never stored:
 *           NCHW x one element at a time (K ordered channel, then tap), or
 *           NHWC x 16 bytes at a time (K ordered tap, then channel: a
 *           16-byte piece is consecutive channels of one pixel, so the
 *           channels per group must come in whole 16-byte pieces).
 *   linear: M = batch, N = out features, K = in features; A = x [M, K].
 *   B is the packed weight [groups][Kpad][Npad], zero padded, so B tiles
 *   never need bounds checks and are copied with 16-byte cp.async.
 *
 * One block computes a BM x BN tile of C over an NS-stage shared-memory
 * pipeline (BK = 32 deep per stage). A tiles that can be copied 16 bytes at a
 * time (FP16 linear with K % 8 == 0, FP16 NHWC conv) go through cp.async as
 * well; the other A tiles are loaded into registers one stage ahead (FP32
 * NHWC conv: 16-byte loads) and stored after the stage's math, so their
 * latency hides behind it too.
 *
 * Shared memory (dynamic), reused for the C tile once the loop is done:
 *   | A stage 0 .. NS-1 | B stage 0 .. NS-1 |      then      | C tile (float) |
 *   A: [BK][BM+pad] (k-major; NCHW conv, and all FP32) or [BM][BK+pad]
 *      (FP16 linear and NHWC conv)
 *   B: [BK][BN+pad];  C: [BN][BM+4] for NCHW y (pixels contiguous) or
 *   [BM][BN+4] for rows of columns: linear y [batch, m] and NHWC y.
 */
#pragma once

#include <mma.h>

#include "common.cuh"

namespace kcuda {

/* How A is read: CONV gathers NCHW x an element at a time, CONV_NHWC
 * gathers NHWC x 16 bytes at a time; ROWS / ROWS_VEC read linear's x [M, K]
 * an element / 16 bytes at a time. */
enum class ALoad { CONV, CONV_NHWC, ROWS, ROWS_VEC };
/* How y is written: NCHW y[img][col][pixel], or ROWS y[m][col] (linear's
 * [batch, m], and NHWC conv output, whose rows are pixels). */
enum class YLayout { NCHW, ROWS };

__host__ __device__ constexpr bool is_conv(ALoad al) { return al == ALoad::CONV || al == ALoad::CONV_NHWC; }

struct GemmArgs {
    const void *x;          /* conv: NCHW or NHWC input; linear: [M, K] */
    const void *wt;         /* packed weights [groups][Kpad][Npad] */
    const int4 *table;      /* conv: per k {channel (NCHW: its offset), dh, dw, 0}, Kpad entries */
    const float *bias;      /* [groups * N] or NULL */
    const void *res;        /* same layout as y, or NULL */
    void *y;
    int M, N, K, Kpad, Npad, groups;
    int oc;                 /* columns of y over all groups */
    int c, h, w, cg;        /* conv input: channels, height, width, channels per group */
    int pixels, ow;         /* conv output: oh * ow and ow; 1 and 1 for linear */
    int stride_h, stride_w, pad_t, pad_l;
    enum k_act act;
};

/* Block tile BM x BN, warp tile WM x WN; MIN_BLOCKS per SM caps registers
 * (65536 / (THREADS * MIN_BLOCKS)) so that two blocks share an SM. */
template <int BM_, int BN_, int WM_, int WN_, int MIN_BLOCKS_> struct Tile {
    static constexpr int BM = BM_, BN = BN_, BK = 32, WM = WM_, WN = WN_, MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr int WARPS_M = BM / WM, WARPS = (BM / WM) * (BN / WN), THREADS = WARPS * 32;
    static_assert(THREADS % BM == 0 && THREADS % BK == 0, "the register loaders fix a row (conv) or a k per thread");
};
using TileS = Tile<64, 32, 32, 16, 4>;     /* 4 warps: N <= 32 */
using TileM = Tile<128, 64, 32, 32, 2>;    /* 8 warps: N <= 64 */
using TileL = Tile<128, 128, 64, 32, 2>;   /* 8 warps */

template <typename T, ALoad AL, YLayout YL, class TL> struct Smem {
    static constexpr bool F16 = std::is_same<T, __half>::value;
    static constexpr bool A_KMAJOR = AL == ALoad::CONV || !F16;
    static constexpr bool C_MMAJOR = YL == YLayout::NCHW;
    static constexpr int PAD = 16 / (int)sizeof(T);   /* rows stay 16-byte aligned */
    static constexpr int LDA = A_KMAJOR ? TL::BM + PAD : TL::BK + PAD;
    static constexpr int A_ELEMS = A_KMAJOR ? TL::BK * LDA : TL::BM * LDA;
    static constexpr int LDB = TL::BN + PAD;
    static constexpr int B_ELEMS = TL::BK * LDB;
    static constexpr int STAGES = F16 ? 3 : 2;
    static constexpr size_t PIPE_BYTES = (size_t)STAGES * (A_ELEMS + B_ELEMS) * sizeof(T);
    static constexpr int LDC = C_MMAJOR ? TL::BM + 4 : TL::BN + 4;
    static constexpr size_t C_BYTES = (size_t)(C_MMAJOR ? TL::BN : TL::BM) * LDC * sizeof(float);
    static constexpr size_t BYTES = PIPE_BYTES > C_BYTES ? PIPE_BYTES : C_BYTES;
    /* WMMA fragment pointers must be 32-byte aligned: every stage and row
     * offset used below is a multiple of 32 bytes. */
    static_assert(A_ELEMS * sizeof(T) % 32 == 0 && B_ELEMS * sizeof(T) % 32 == 0, "stage alignment");
};

/* Loads of A for one stage that go through registers (conv gather, and
 * linear rows that cannot be copied 16 bytes at a time). */
template <typename T, ALoad AL, class TL> struct ARegs {
    static constexpr int N = TL::BM * TL::BK / TL::THREADS;
    T v[N];
};

/* Per-thread state of the conv gather: the output pixel this thread's row
 * holds, fixed for the whole K loop. */
struct ConvRow {
    const char *xb;         /* image n, first channel of the group (bytes) */
    int ih0, iw0;
    bool valid;
};

/* Per-thread state of the NHWC gather: the row (output pixel) whose
 * 16-byte pieces this thread copies, fixed for the whole K loop. Two
 * neighbouring threads share a row (every tile has THREADS = 2 * BM) and
 * take its pieces alternately, so each copy instruction of a warp reads
 * whole 32-byte sectors: piece p of the thread is tile column
 * (2p + tid % 2) * VEC. A row's BK values are 64 (FP16) or 128 (FP32)
 * contiguous bytes of one pixel. */
template <typename T, class TL> struct NhwcRow {
    static constexpr int VEC = 16 / (int)sizeof(T);      /* elements of a 16-byte piece */
    static constexpr int PPT = TL::BK / VEC / 2;         /* pieces per thread */
    static_assert(TL::THREADS == 2 * TL::BM && TL::BK % (2 * VEC) == 0, "two threads a row, whole pieces");
    const T *xb;            /* the row's image, channel 0 of the group */
    int ih0, iw0;

    static __device__ __forceinline__ int row() { return (int)threadIdx.x / 2; }
    static __device__ __forceinline__ int col(int p) { return (2 * p + (int)threadIdx.x % 2) * VEC; }

    /* Rows past M gather row M - 1 again: in bounds, and their C rows are
     * never stored. */
    __device__ __forceinline__ void init(const GemmArgs &a, int g, int m0)
    {
        int m = min(m0 + row(), a.M - 1);
        int img = m / a.pixels, pix = m % a.pixels;
        ih0 = (pix / a.ow) * a.stride_h - a.pad_t;
        iw0 = (pix % a.ow) * a.stride_w - a.pad_l;
        xb = static_cast<const T *>(a.x) + (int64_t)img * a.h * a.w * a.c + (int64_t)g * a.cg;
    }

    /* The piece at table entry t ({channel, dh, dw, 0} of its column), or
     * NULL where the tap falls outside the image or past K (the padding
     * entries' dh puts every row below the image: h < 2^29, since a sample
     * holds fewer than 2^31 elements of at least 4 channels). The offset is
     * an int: it stays inside one sample. */
    __device__ __forceinline__ const T *piece(const GemmArgs &a, int4 t) const
    {
        int ih = ih0 + t.y, iw = iw0 + t.z;
        bool in = (unsigned)ih < (unsigned)a.h && (unsigned)iw < (unsigned)a.w;
        return in ? xb + (ih * a.w + iw) * a.c + t.x : nullptr;
    }
};

template <typename T, ALoad AL, YLayout YL, class TL> struct Gemm {
    using S = Smem<T, AL, YL, TL>;
    using NR = NhwcRow<T, TL>;
    static constexpr int BM = TL::BM, BN = TL::BN, BK = TL::BK, THREADS = TL::THREADS;

    /* Register loads of the A tile at k0 (see ARegs). */
    static __device__ __forceinline__ void a_load_regs(const GemmArgs &a, const ConvRow &row, const NR &nr, int m0,
                                                       int k0, ARegs<T, AL, TL> &r)
    {
        const int tid = threadIdx.x;
        if constexpr (AL == ALoad::CONV_NHWC) {
            /* FP32 only (FP16 copies with cp.async): one LDG.128 a piece */
            static_assert(!S::F16 && ARegs<T, AL, TL>::N == NR::PPT * 4, "four floats a piece");
#pragma unroll
            for (int p = 0; p < NR::PPT; p++) {
                const T *src = nr.piece(a, __ldg(&a.table[k0 + NR::col(p)]));
                float4 v = src ? __ldg(reinterpret_cast<const float4 *>(src)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                r.v[p * 4] = v.x, r.v[p * 4 + 1] = v.y, r.v[p * 4 + 2] = v.z, r.v[p * 4 + 3] = v.w;
            }
        } else if (AL == ALoad::CONV) {
            constexpr int KSTEP = THREADS / BM;
            const T *xb = reinterpret_cast<const T *>(row.xb);
#pragma unroll
            for (int j = 0; j < ARegs<T, AL, TL>::N; j++) {
                int4 t = __ldg(&a.table[k0 + tid / BM + j * KSTEP]);
                int ih = row.ih0 + t.y, iw = row.iw0 + t.z;
                bool ok = row.valid && (unsigned)ih < (unsigned)a.h && (unsigned)iw < (unsigned)a.w;
                r.v[j] = ok ? xb[t.x + ih * a.w + iw] : from_f<T>(0.0f);
            }
        } else {
            /* element j: row tid / BK + j * (THREADS / BK), column tid % BK */
            constexpr int MSTEP = THREADS / BK;
            int k = k0 + tid % BK, m = m0 + tid / BK;
            const T *x = static_cast<const T *>(a.x) + (int64_t)m * a.K + k;
#pragma unroll
            for (int j = 0; j < ARegs<T, AL, TL>::N; j++)
                r.v[j] = m + j * MSTEP < a.M && k < a.K ? x[(int64_t)j * MSTEP * a.K] : from_f<T>(0.0f);
        }
    }

    static __device__ __forceinline__ void a_store_regs(T *as, const NR &nr, const ARegs<T, AL, TL> &r)
    {
        const int tid = threadIdx.x;
#pragma unroll
        for (int j = 0; j < ARegs<T, AL, TL>::N; j++) {
            if (AL == ALoad::CONV_NHWC) {   /* k-major: value j % 4 of piece j / 4 */
                as[(NR::col(j / 4) + j % 4) * S::LDA + NR::row()] = r.v[j];
            } else if (AL == ALoad::CONV) {
                as[(tid / BM + j * (THREADS / BM)) * S::LDA + tid % BM] = r.v[j];
            } else {
                int ml = tid / BK + j * (THREADS / BK), kl = tid % BK;
                as[S::A_KMAJOR ? kl * S::LDA + ml : ml * S::LDA + kl] = r.v[j];
            }
        }
    }

    /* cp.async of the 16-byte pieces of a tile: B always, A for ROWS_VEC
     * and FP16 CONV_NHWC (zero-filled outside the image and past K). */
    static __device__ __forceinline__ void async_loads(const GemmArgs &a, const NR &nr, int g, int m0, int n0, int k0,
                                                       T *as, T *bs)
    {
        const int tid = threadIdx.x;
        constexpr int VEC = 16 / (int)sizeof(T);
        constexpr int B_CHUNKS_ROW = BN / VEC;
        const T *wg = static_cast<const T *>(a.wt) + (int64_t)g * a.Kpad * a.Npad;
        for (int c = tid; c < BK * B_CHUNKS_ROW; c += THREADS) {
            int kl = c / B_CHUNKS_ROW, nc = (c % B_CHUNKS_ROW) * VEC;
            cp_async16(bs + kl * S::LDB + nc, wg + (int64_t)(k0 + kl) * a.Npad + n0 + nc, 16);
        }
        if (AL == ALoad::ROWS_VEC) {
            constexpr int A_CHUNKS_ROW = BK / VEC;
            const T *x = static_cast<const T *>(a.x);
            for (int c = tid; c < BM * A_CHUNKS_ROW; c += THREADS) {
                int ml = c / A_CHUNKS_ROW, kc = (c % A_CHUNKS_ROW) * VEC;
                int m = m0 + ml, k = k0 + kc;
                bool ok = m < a.M && k < a.K;   /* K % VEC == 0: a piece is all in or all out */
                cp_async16(as + ml * S::LDA + kc, ok ? x + (int64_t)m * a.K + k : x, ok ? 16 : 0);
            }
        }
        if (AL == ALoad::CONV_NHWC && S::F16) {
#pragma unroll
            for (int p = 0; p < NR::PPT; p++) {
                const T *src = nr.piece(a, __ldg(&a.table[k0 + NR::col(p)]));
                cp_async16(as + NR::row() * S::LDA + NR::col(p), src ? src : static_cast<const T *>(a.x), src ? 16 : 0);
            }
        }
    }
};

/* ------------------------------------------------------------------ math */

/* FP16: WMMA 16x16x16 fragments, FP32 accumulators. */
template <ALoad AL, YLayout YL, class TL> struct MathF16 {
    using S = Smem<__half, AL, YL, TL>;
    static constexpr int FM = TL::WM / 16, FN = TL::WN / 16;
    using LayoutA = typename std::conditional<S::A_KMAJOR, nvcuda::wmma::col_major, nvcuda::wmma::row_major>::type;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[FM][FN];

    __device__ __forceinline__ void zero()
    {
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++)
                nvcuda::wmma::fill_fragment(acc[i][j], 0.0f);
    }

    __device__ __forceinline__ void stage(const __half *as, const __half *bs, int wm0, int wn0)
    {
        using namespace nvcuda;
#pragma unroll
        for (int kk = 0; kk < TL::BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, LayoutA> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; i++) {
                const __half *p = S::A_KMAJOR ? as + kk * S::LDA + wm0 + i * 16 : as + (wm0 + i * 16) * S::LDA + kk;
                wmma::load_matrix_sync(fa[i], p, S::LDA);
            }
#pragma unroll
            for (int j = 0; j < FN; j++)
                wmma::load_matrix_sync(fb[j], bs + kk * S::LDB + wn0 + j * 16, S::LDB);
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }

    __device__ __forceinline__ void store(float *cs, int wm0, int wn0)
    {
        using namespace nvcuda;
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++) {
                int m = wm0 + i * 16, n = wn0 + j * 16;
                if (S::C_MMAJOR)
                    wmma::store_matrix_sync(cs + n * S::LDC + m, acc[i][j], S::LDC, wmma::mem_col_major);
                else
                    wmma::store_matrix_sync(cs + m * S::LDC + n, acc[i][j], S::LDC, wmma::mem_row_major);
            }
    }
};

/* FP32: each lane of a warp owns TM x TN outputs, in groups of 4 rows (and 4
 * columns) spaced so that a warp's float4 reads of a k-row are contiguous. */
template <ALoad AL, YLayout YL, class TL> struct MathF32 {
    using S = Smem<float, AL, YL, TL>;
    static constexpr int LM = 8, LN = 4;
    static constexpr int TM = TL::WM / LM, TN = TL::WN / LN;
    static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 groups");
    float acc[TM][TN];

    __device__ __forceinline__ void zero()
    {
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = 0.0f;
    }

    /* Row (or column) of element i of this lane inside the warp tile. */
    static __device__ __forceinline__ int row(int i, int lm) { return (i / 4) * (LM * 4) + lm * 4 + i % 4; }
    static __device__ __forceinline__ int col(int j, int ln) { return (j / 4) * (LN * 4) + ln * 4 + j % 4; }

    __device__ __forceinline__ void stage(const float *as, const float *bs, int wm0, int wn0)
    {
        const int lane = threadIdx.x % 32, lm = lane / LN, ln = lane % LN;
#pragma unroll 8
        for (int k = 0; k < TL::BK; k++) {
            float av[TM], bv[TN];
#pragma unroll
            for (int q = 0; q < TM / 4; q++) {
                float4 v = *reinterpret_cast<const float4 *>(as + k * S::LDA + wm0 + row(q * 4, lm));
                av[q * 4] = v.x, av[q * 4 + 1] = v.y, av[q * 4 + 2] = v.z, av[q * 4 + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < TN / 4; q++) {
                float4 v = *reinterpret_cast<const float4 *>(bs + k * S::LDB + wn0 + col(q * 4, ln));
                bv[q * 4] = v.x, bv[q * 4 + 1] = v.y, bv[q * 4 + 2] = v.z, bv[q * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }

    __device__ __forceinline__ void store(float *cs, int wm0, int wn0)
    {
        const int lane = threadIdx.x % 32, lm = lane / LN, ln = lane % LN;
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) {
                int m = wm0 + row(i, lm), n = wn0 + col(j, ln);
                cs[S::C_MMAJOR ? n * S::LDC + m : m * S::LDC + n] = acc[i][j];
            }
    }
};

template <typename T, ALoad AL, YLayout YL, class TL>
using Math =
    typename std::conditional<std::is_same<T, __half>::value, MathF16<AL, YL, TL>, MathF32<AL, YL, TL>>::type;

/* ------------------------------------------------------------------ kernel */

template <typename T, ALoad AL, YLayout YL, class TL>
__device__ __forceinline__ void epilogue(const GemmArgs &a, int g, int m0, int n0, const float *cs)
{
    using S = Smem<T, AL, YL, TL>;
    const int tid = threadIdx.x;
    const T *res = static_cast<const T *>(a.res);
    T *y = static_cast<T *>(a.y);
    if (S::C_MMAJOR) {
        /* conv: y[img][g*N + n][pixel]; this thread keeps one pixel */
        int ml = tid % TL::BM, m = m0 + ml;
        if (m >= a.M)
            return;
        int img = m / a.pixels, pix = m % a.pixels;
        int64_t base = (int64_t)img * a.oc * a.pixels + pix;
        for (int nl = tid / TL::BM; nl < TL::BN; nl += TL::THREADS / TL::BM) {
            int n = n0 + nl;
            if (n >= a.N)
                break;
            int col = g * a.N + n;
            int64_t i = base + (int64_t)col * a.pixels;
            float v = cs[nl * S::LDC + ml];
            if (a.bias)
                v += a.bias[col];
            if (res)
                v += to_f(res[i]);
            y[i] = from_f<T>(act_apply(a.act, v));
        }
    } else {
        /* rows: y[m][g*N + n], n contiguous (linear: one group) */
        for (int e = tid; e < TL::BM * TL::BN; e += TL::THREADS) {
            int ml = e / TL::BN, nl = e % TL::BN, m = m0 + ml, n = n0 + nl;
            if (m >= a.M || n >= a.N)
                continue;
            int col = g * a.N + n;
            int64_t i = (int64_t)m * a.oc + col;
            float v = cs[ml * S::LDC + nl];
            if (a.bias)
                v += a.bias[col];
            if (res)
                v += to_f(res[i]);
            y[i] = from_f<T>(act_apply(a.act, v));
        }
    }
}

template <typename T, ALoad AL, YLayout YL, class TL>
__global__ void __launch_bounds__(TL::THREADS, TL::MIN_BLOCKS) igemm_kernel(GemmArgs a)
{
    using S = Smem<T, AL, YL, TL>;
    using G = Gemm<T, AL, YL, TL>;
    /* A through registers: all but the 16-byte cp.async copies */
    constexpr bool REG_A = AL != ALoad::ROWS_VEC && !(AL == ALoad::CONV_NHWC && S::F16);
    constexpr int NS = S::STAGES;
    extern __shared__ __align__(128) unsigned char smem[];
    T *as_base = reinterpret_cast<T *>(smem);
    T *bs_base = as_base + NS * S::A_ELEMS;
    float *cs = reinterpret_cast<float *>(smem);

    const int warp = threadIdx.x / 32;
    const int wm0 = (warp % TL::WARPS_M) * TL::WM, wn0 = (warp / TL::WARPS_M) * TL::WN;
    const int m0 = blockIdx.x * TL::BM, n0 = blockIdx.y * TL::BN;
    const int kt_count = a.Kpad / TL::BK;

    for (int g = blockIdx.z; g < a.groups; g += gridDim.z) {
        ConvRow row = {nullptr, 0, 0, false};
        if (AL == ALoad::CONV) {
            int m = m0 + threadIdx.x % TL::BM;
            row.valid = m < a.M;
            int img = row.valid ? m / a.pixels : 0, pix = row.valid ? m % a.pixels : 0;
            row.ih0 = (pix / a.ow) * a.stride_h - a.pad_t;
            row.iw0 = (pix % a.ow) * a.stride_w - a.pad_l;
            row.xb = static_cast<const char *>(a.x) +
                     ((int64_t)img * a.c + (int64_t)g * a.cg) * a.h * a.w * (int64_t)sizeof(T);
        }
        NhwcRow<T, TL> nr;
        if (AL == ALoad::CONV_NHWC)
            nr.init(a, g, m0);
        Math<T, AL, YL, TL> math;
        math.zero();
        ARegs<T, AL, TL> regs;

        /* prologue: stages 0 .. NS-2 */
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < kt_count) {
                if constexpr (REG_A) {
                    G::a_load_regs(a, row, nr, m0, s * TL::BK, regs);
                    G::a_store_regs(as_base + s * S::A_ELEMS, nr, regs);
                }
                G::async_loads(a, nr, g, m0, n0, s * TL::BK, as_base + s * S::A_ELEMS, bs_base + s * S::B_ELEMS);
            }
            cp_async_commit();
        }

        for (int kt = 0; kt < kt_count; kt++) {
            cp_async_wait<NS - 2>();   /* stage kt's copies have landed */
            __syncthreads();           /* ... for every thread; stage kt-1 is free */
            int next = kt + NS - 1, slot = next % NS;
            bool has_next = next < kt_count;
            if (has_next) {
                G::async_loads(a, nr, g, m0, n0, next * TL::BK, as_base + slot * S::A_ELEMS,
                               bs_base + slot * S::B_ELEMS);
                if constexpr (REG_A)
                    G::a_load_regs(a, row, nr, m0, next * TL::BK, regs);
            }
            cp_async_commit();
            math.stage(as_base + (kt % NS) * S::A_ELEMS, bs_base + (kt % NS) * S::B_ELEMS, wm0, wn0);
            if constexpr (REG_A) {
                if (has_next)
                    G::a_store_regs(as_base + slot * S::A_ELEMS, nr, regs);
            }
        }
        cp_async_wait<0>();
        __syncthreads();   /* all math done: the pipeline's memory becomes the C tile */
        math.store(cs, wm0, wn0);
        __syncthreads();
        epilogue<T, AL, YL, TL>(a, g, m0, n0, cs);
        __syncthreads();   /* the next group reuses shared memory */
    }
}

} // namespace kcuda
