/*
 * gemm_avx512.c - the AVX-512 GEMM microkernel (KCPU_MR x KCPU_NR = 8 x 32)
 * and its in-register epilogue. Compiled with the AVX-512 flags; entered
 * only through kcpu_gemm_run after the run-time ISA check.
 *
 * Per k step the kernel loads two 16-float vectors of B, broadcasts eight
 * A values and issues 16 FMAs into 16 accumulators: enough independent
 * chains to hide FMA latency on two FMA pipes, with 10 loads per 16 FMAs.
 * The row count is a compile-time constant in each instantiation so that
 * edge panels (m not a multiple of 8, e.g. LeNet's 6 channels) do not pay
 * for absent rows.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx512.h"

static inline __attribute__((always_inline)) void
tile(const int mr, const int partial, int64_t k, const float *a, const float *b, int64_t ldb,
     __mmask16 m0, __mmask16 m1, __m512 *out /* [2 * KCPU_MR] */)
{
    __m512 c0[KCPU_MR], c1[KCPU_MR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
        c0[i] = c1[i] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        /* A partial strip is masked so that B may end at the last column
         * (an unpacked input image) without reading past it. */
        __m512 b0 = partial ? _mm512_maskz_loadu_ps(m0, b) : _mm512_loadu_ps(b);
        __m512 b1 = partial ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
        a += KCPU_MR;
        b += ldb;
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        out[2 * i] = c0[i];
        out[2 * i + 1] = c1[i];
    }
}

static __mmask16 lane_mask(int lanes)
{
    return lanes >= 16 ? (__mmask16)0xffff : lanes <= 0 ? 0 : (__mmask16)((1u << lanes) - 1);
}

/* Applies the epilogue to tile columns [t0, t1) of accumulator half h and
 * stores them contiguously at c + off (+ i * ldc per row). Lanes not starting
 * at 0 are compressed down first so the store never needs an address before
 * the run it writes. */
static void store_run(const struct kcpu_gemm *g, const __m512 *acc, int i0, int mr, int h,
                      int lo, int hi, int64_t j_first, int64_t off)
{
    __mmask16 src = (__mmask16)(lane_mask(hi) & ~lane_mask(lo)), dst = lane_mask(hi - lo);
    __m512 bc = _mm512_setzero_ps();
    if (g->bias_col) {
        bc = _mm512_maskz_loadu_ps(dst, g->bias_col + j_first);
    }
    for (int i = 0; i < mr; i++) {
        __m512 v = acc[2 * i + h];
        if (lo)
            v = _mm512_maskz_compress_ps(src, v);
        v = _mm512_add_ps(v, bc);
        if (g->bias_row)
            v = _mm512_add_ps(v, _mm512_set1_ps(g->bias_row[i0 + i]));
        int64_t at = off + (int64_t)i * g->ldc;
        if (g->res)
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(dst, g->res + at));
        _mm512_mask_storeu_ps(g->c + at, dst, kv16_act(g->act, v));
    }
}

static void store_tile(const struct kcpu_gemm *g, const __m512 *acc, int i0, int mr, int64_t j, int nr)
{
    /* Split the tile's columns into runs that stay inside one image. */
    for (int t0 = 0; t0 < nr;) {
        int64_t jj = j + t0;
        int64_t seg = jj / g->seg_len, pos = jj % g->seg_len;
        int t1 = (int)kcpu_min64(nr, t0 + (g->seg_len - pos));
        int64_t off = seg * g->seg_stride + pos + (int64_t)i0 * g->ldc;
        for (int h = 0; h < 2; h++) {
            int lo = (int)kcpu_max64(t0, 16 * h) - 16 * h, hi = (int)kcpu_min64(t1, 16 * h + 16) - 16 * h;
            if (lo < hi)
                store_run(g, acc, i0, mr, h, lo, hi, j + 16 * h + lo,
                          off + (16 * h + lo - t0));
        }
        t0 = t1;
    }
}

#define TILE_CASE(MR)                                                     \
    case MR:                                                              \
        if (nr < KCPU_NR)                                                 \
            tile(MR, 1, g->k, a, b, g->ldb, m0, m1, acc);                 \
        else                                                              \
            tile(MR, 0, g->k, a, b, g->ldb, m0, m1, acc);                 \
        break;

void kcpu_gemm_avx512(const struct kcpu_gemm *g)
{
    __m512 acc[2 * KCPU_MR];
    for (int i0 = 0; i0 < g->m; i0 += KCPU_MR) {
        int mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
        const float *a = g->a + (int64_t)i0 * g->k;
        for (int64_t t0 = 0; t0 < g->n; t0 += KCPU_NR) {
            int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const float *b = g->b + (t0 / KCPU_NR) * g->b_strip;
            __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
            switch (mr) {
            TILE_CASE(1)
            TILE_CASE(2)
            TILE_CASE(3)
            TILE_CASE(4)
            TILE_CASE(5)
            TILE_CASE(6)
            TILE_CASE(7)
            TILE_CASE(8)
            }
            store_tile(g, acc, i0, mr, g->j0 + t0, nr);
        }
    }
}
