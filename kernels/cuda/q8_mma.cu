/*
 * q8_mma.cu - INT8 convolution and linear on tensor cores: IMMA,
 * mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (sm_80 and later),
 * bit-identical to kernels/ref/kref_q8.c by construction: the products are
 * exact, int32 accumulation is exact whatever the order (|acc| < 2^31 by
 * K_Q8_MAX_DEPTH, no .satfinite needed), and every output goes through
 * q8.cuh's q8_store, the K_QFN functions of kernel_quant.h that q8.cu's
 * dp4a kernels (the baseline, and the fallback before sm_80) use too.
 *
 * GEMM view, C[rows, cols] = A[rows, K] . B[K, cols]:
 *   rows = output channels (conv oc, linear m). A is the packed weights
 *          (kcuda_q8_pack: [rows padded to 64][K padded to 32], zeros), so
 *          its tiles are copied with 16-byte cp.async and never need a
 *          bounds check;
 *   cols = output pixels (n, oh, ow) for conv, samples n for linear. B is
 *          gathered from NCHW x (implicit GEMM: zero outside the image and
 *          past K) or read from the rows of x [n, k], through registers.
 * Rows are channels so that a thread's accumulator pairs (c0, c1 below:
 * columns 2t and 2t + 1) are neighbouring pixels of one channel, which are
 * neighbours in NCHW y as well. Grouped and depthwise convolutions
 * (groups > 1) keep q8.cu's dp4a kernel: their per-group GEMMs are too
 * narrow for a 64-row tile (depthwise: one row).
 *
 * One block of 4 warps computes a 64 x 64 tile of C; each warp 32 x 32, as
 * 2 x 4 m16n8 tiles. K runs in steps of BK = 32 (one mma k) through a
 * three-stage shared-memory ring: A by cp.async; B loaded into registers one
 * stage ahead and stored after the stage's math, so its latency hides behind
 * the math as the FP16 kernel's gathered operand does (igemm.cuh).
 *
 * Fragments (PTX ISA, mma.m16n8k32 with .s8 operands), thread lane with
 * g = lane / 4, t = lane % 4, each A / B register four consecutive k, the
 * lowest k in the lowest byte:
 *   A (16 x 32, row): a0 row g, k 4t..4t+3;  a1 row g + 8, same k;
 *                     a2 row g, k 16+4t..;   a3 row g + 8, k 16+4t..
 *   B (32 x 8, col):  b0 column g, k 4t..4t+3;  b1 column g, k 16+4t..
 *   C (16 x 8, s32):  c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)
 * Both operands sit in shared memory k-contiguous, one 32-byte k slice per
 * row (of A) or column (of B). ldmatrix.m8n8.x4.b16 (no .trans) on such a
 * layout gives lane the 4 bytes 4t..4t+3 of row g of each 8 x 16-byte
 * matrix: exactly the registers above. So ldmatrix is used for both
 * operands: one x4 fills an A fragment (matrices rows 0-7 / 8-15 by k 0-15 /
 * 16-31), one x4 the B fragments of two n8 tiles. Rows are padded from 32
 * to 48 bytes: the eight rows one ldmatrix phase reads then fall in eight
 * different 16-byte bank groups (48-byte stride: 0, 3, 6, 1, 4, 7, 2, 5 mod 8).
 *
 * The mma code is compiled for sm_80 and later only; the sm_75 build of the
 * fat binary holds a kernel that traps, never launched: the backend asks
 * kcuda_q8_mma_takes first.
 */
#include <string.h>

#include "q8.cuh"

namespace kcuda {
namespace {

constexpr int BM = KCUDA_Q8_ROW_TILE, BN = 64, BK = KCUDA_Q8_K_TILE, LDS = BK + 16, STAGES = 3, THREADS = 128;
static_assert(BM == 64 && BN == 64 && BK == 32 && THREADS == 128,
              "the thread mappings below (A copy, B gather, 2 x 2 warps of 32 x 32) assume these");
static_assert(LDS % 16 == 0, "cp.async and ldmatrix rows stay 16-byte aligned");
static_assert(STAGES >= 2, "the pipeline loads stage kt + STAGES - 1 while stage kt computes");

struct MmaArgs {
    const int8_t *x;        /* conv: NCHW [n, c, h, w]; linear: [n, K] */
    const int8_t *wt;       /* packed weights [rows padded to BM][kpad] */
    const int8_t *res;      /* like y, or NULL (always with out_i32) */
    void *y;                /* conv: NCHW [n, rows, oh, ow]; linear: [n, rows] */
    struct k_q8_epilogue e;
    int rows, K, kpad;
    int64_t cols;           /* conv: n * oh * ow; linear: n */
    int64_t pixels;         /* conv: oh * ow; linear: 1 */
    int c, h, w, kh, kw, ow, stride_h, stride_w, pad_t, pad_l, dil_h, dil_w;   /* conv only */
};

#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const int8_t *p)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s)
                 : "memory");
}

/* c += a . b on one m16n8k32 tile. */
__device__ __forceinline__ void mma_s8(int32_t (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The column of B this thread loads: an output pixel (conv) or a sample. */
struct BCol {
    const int8_t *xb;       /* conv: image n's channel 0; linear: row n of x */
    int ih0, iw0;           /* conv: top-left input position of the window */
    bool valid;
};

/* Its 16 values k0 .. k0 + 15 (zero past K, outside the image, or past
 * the last column), packed four to a word, the lowest k in the lowest byte. */
template <bool CONV> __device__ __forceinline__ uint4 b_gather(const MmaArgs &a, const BCol &bc, int k0)
{
    uint32_t v[4] = {0, 0, 0, 0};
    if (!bc.valid)
        return make_uint4(0, 0, 0, 0);
    if (CONV) {
        const int khw = a.kh * a.kw;
        const int64_t hw = (int64_t)a.h * a.w;
        int ci = k0 / khw, r = k0 - ci * khw;
        int ki = r / a.kw, kj = r - ki * a.kw;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            if (k0 + j < a.K) {
                int ih = bc.ih0 + ki * a.dil_h, iw = bc.iw0 + kj * a.dil_w;
                if ((unsigned)ih < (unsigned)a.h && (unsigned)iw < (unsigned)a.w)
                    v[j / 4] |= (uint32_t)(uint8_t)__ldg(bc.xb + ci * hw + (int64_t)ih * a.w + iw) << (8 * (j % 4));
                if (++kj == a.kw) {
                    kj = 0;
                    if (++ki == a.kh) {
                        ki = 0;
                        ci++;
                    }
                }
            }
        }
    } else {
        const int8_t *p = bc.xb + k0;
        if (k0 + 16 <= a.K && ((uintptr_t)p & 15) == 0)
            return __ldg((const uint4 *)p);
#pragma unroll
        for (int j = 0; j < 16; j++) {
            if (k0 + j < a.K)
                v[j / 4] |= (uint32_t)(uint8_t)__ldg(p + j) << (8 * (j % 4));
        }
    }
    return make_uint4(v[0], v[1], v[2], v[3]);
}

/* The A tile rows row0 .. row0 + 63, k k0 .. k0 + 31: one 16-byte copy per thread. */
__device__ __forceinline__ void a_copy(const MmaArgs &a, int row0, int k0, int8_t *as)
{
    const int r = threadIdx.x / 2, half = (threadIdx.x % 2) * 16;
    cp_async16(as + r * LDS + half, a.wt + (int64_t)(row0 + r) * a.kpad + k0 + half, 16);
}
#endif

template <bool CONV> __global__ void __launch_bounds__(THREADS) q8_mma_kernel(MmaArgs a)
{
#if __CUDA_ARCH__ >= 800
    __shared__ __align__(16) int8_t as[STAGES][BM * LDS];   /* [row][k], 48-byte rows */
    __shared__ __align__(16) int8_t bs[STAGES][BN * LDS];   /* [col][k] */
    const int row0 = blockIdx.y * BM;
    const int64_t col0 = (int64_t)blockIdx.x * BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;

    /* B: this thread loads column bcol, k bk .. bk + 15 of every stage */
    const int bcol = threadIdx.x % BN, bk = (threadIdx.x / BN) * 16;
    BCol bc;
    {
        const int64_t col = col0 + bcol;
        bc.valid = col < a.cols;
        const int64_t cc = bc.valid ? col : 0;
        if (CONV) {
            const int64_t img = cc / a.pixels;
            const int pix = (int)(cc - img * a.pixels);
            bc.ih0 = (pix / a.ow) * a.stride_h - a.pad_t;
            bc.iw0 = (pix % a.ow) * a.stride_w - a.pad_l;
            bc.xb = a.x + img * a.c * ((int64_t)a.h * a.w);
        } else {
            bc.ih0 = bc.iw0 = 0;
            bc.xb = a.x + cc * a.K;
        }
    }

    int32_t acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[mi][ni][r] = 0;
    const int kt_count = a.kpad / BK;

    /* prologue: stages 0 .. STAGES - 2 (not unrolled: one copy of the gather) */
#pragma unroll 1
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < kt_count) {
            a_copy(a, row0, s * BK, as[s]);
            *(uint4 *)(bs[s] + bcol * LDS + bk) = b_gather<CONV>(a, bc, s * BK + bk);
        }
        cp_async_commit();
    }

    for (int kt = 0; kt < kt_count; kt++) {
        cp_async_wait<STAGES - 2>();   /* this thread's copies of stage kt have landed */
        __syncthreads();               /* ... every thread's; stage kt - 1 is free */
        const int next = kt + STAGES - 1, slot = next % STAGES;
        const bool has_next = next < kt_count;
        uint4 bnext = make_uint4(0, 0, 0, 0);
        if (has_next) {
            a_copy(a, row0, next * BK, as[slot]);
            bnext = b_gather<CONV>(a, bc, next * BK + bk);
        }
        cp_async_commit();

        const int8_t *sa = as[kt % STAGES], *sb = bs[kt % STAGES];
        uint32_t af[2][4], bf[4][2];
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
            ldmatrix_x4(af[mi], sa + (wm + mi * 16 + lane % 8 + (lane / 8) % 2 * 8) * LDS + lane / 16 * 16);
#pragma unroll
        for (int np = 0; np < 2; np++) {
            uint32_t r[4];
            ldmatrix_x4(r, sb + (wn + np * 16 + lane % 8 + lane / 16 * 8) * LDS + (lane / 8) % 2 * 16);
            bf[2 * np][0] = r[0];
            bf[2 * np][1] = r[1];
            bf[2 * np + 1][0] = r[2];
            bf[2 * np + 1][1] = r[3];
        }
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
                mma_s8(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);

        if (has_next)   /* slot was last read by stage kt - 1, before this stage's barrier */
            *(uint4 *)(bs[slot] + bcol * LDS + bk) = bnext;
    }
    cp_async_wait<0>();

    /* the epilogue, straight from the accumulators: acc[mi][ni][r] is row
     * wm + mi * 16 + g + 8 * (r / 2), column wn + ni * 8 + 2t + r % 2 */
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int ni = 0; ni < 4; ni++)
#pragma unroll
        for (int cr = 0; cr < 2; cr++) {
            const int64_t col = col0 + wn + ni * 8 + 2 * t + cr;
            if (col >= a.cols)
                continue;
            /* y index of (row 0, col) and the stride between rows */
            int64_t y0 = col * a.rows, ystride = 1;
            if (CONV) {
                const int64_t img = col / a.pixels;
                y0 = img * a.rows * a.pixels + (col - img * a.pixels);
                ystride = a.pixels;
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int rh = 0; rh < 2; rh++) {
                    const int row = row0 + wm + mi * 16 + g + rh * 8;
                    if (row < a.rows)
                        q8_store(a.e, row, acc[mi][ni][rh * 2 + cr], a.res, y0 + row * ystride, a.y);
                }
        }
#else
    __trap();   /* kcuda_q8_mma_takes said no: never launched here */
#endif
}

template <bool CONV> cudaError_t launch(const MmaArgs &a, cudaStream_t stream)
{
    if (a.cols <= 0 || a.rows <= 0)
        return cudaSuccess;
    const int64_t gx = (a.cols + BN - 1) / BN, gy = (a.rows + BM - 1) / BM;
    if (gx > 0x7fffffff || gy > 65535)
        return cudaErrorInvalidConfiguration;
    q8_mma_kernel<CONV><<<dim3((unsigned)gx, (unsigned)gy), THREADS, 0, stream>>>(a);
    return cudaGetLastError();
}

MmaArgs args_common(const int8_t *x, const int8_t *packed_w, const struct k_q8_epilogue *e,
                    const int8_t *residual, void *y, int rows, int K)
{
    MmaArgs a;
    memset(&a, 0, sizeof(a));
    a.x = x;
    a.wt = packed_w;
    a.res = e->out_i32 ? nullptr : residual;
    a.y = y;
    a.e = *e;
    a.rows = rows;
    a.K = K;
    a.kpad = (K + BK - 1) / BK * BK;
    a.pixels = 1;
    return a;
}

} // namespace
} // namespace kcuda

using namespace kcuda;

extern "C" {

bool kcuda_q8_mma_takes(int sm, const struct k_conv2d *conv)
{
    return sm >= KCUDA_Q8_MMA_MIN_SM && (!conv || conv->groups == 1);
}

cudaError_t kcuda_conv2d_q8_mma(const struct k_conv2d *p, const int8_t *x, const int8_t *packed_w,
                                const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream)
{
    if (p->groups != 1)
        return cudaErrorInvalidValue;
    MmaArgs a = args_common(x, packed_w, e, residual, y, p->oc, p->c * p->kh * p->kw);
    a.pixels = (int64_t)p->oh * p->ow;
    a.cols = p->n * a.pixels;
    a.c = p->c, a.h = p->h, a.w = p->w, a.kh = p->kh, a.kw = p->kw, a.ow = p->ow;
    a.stride_h = p->stride_h, a.stride_w = p->stride_w, a.pad_t = p->pad_t, a.pad_l = p->pad_l;
    a.dil_h = p->dil_h, a.dil_w = p->dil_w;
    return launch<true>(a, stream);
}

cudaError_t kcuda_linear_q8_mma(const struct k_linear *p, const int8_t *x, const int8_t *packed_w,
                                const struct k_q8_epilogue *e, const int8_t *residual, void *y, cudaStream_t stream)
{
    MmaArgs a = args_common(x, packed_w, e, residual, y, p->m, p->k);
    a.cols = p->n;
    return launch<false>(a, stream);
}

} // extern "C"
