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
 * for absent rows. The epilogue's residual and output lines are prefetched
 * before the k loop, whose FMAs then hide those misses.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx512.h"

static inline __attribute__((always_inline)) void
tile(const int mr, const int partial, const int indexed, int64_t k, const float *a, const float *b,
     const int64_t *boff, int64_t ldb, __mmask16 m0, __mmask16 m1, __m512 *out /* [2 * KCPU_MR] */)
{
    __m512 c0[KCPU_MR], c1[KCPU_MR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
        c0[i] = c1[i] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        const float *bk = indexed ? b + boff[kk] : b;
        /* An indexed B is the padded input read in place, past L2 on the
         * first panel: fetch the same row of the next strip a strip early. */
        if (indexed) {
            __builtin_prefetch(bk + KCPU_NR);
            __builtin_prefetch(bk + (2 * KCPU_NR - 1));
        }
        /* A partial strip is masked so that B may end at the last column
         * (an unpacked input image) without reading past it. */
        __m512 b0 = partial ? _mm512_maskz_loadu_ps(m0, bk) : _mm512_loadu_ps(bk);
        __m512 b1 = partial ? _mm512_maskz_loadu_ps(m1, bk + 16) : _mm512_loadu_ps(bk + 16);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
        a += KCPU_MR;
        if (!indexed)
            b += ldb;
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        out[(int64_t)2 * i] = c0[i];
        out[(int64_t)2 * i + 1] = c1[i];
    }
}

static __mmask16 lane_mask(int lanes)
{
    return lanes >= 16 ? (__mmask16)0xffff : lanes <= 0 ? 0 : (__mmask16)((1u << lanes) - 1);
}

/* Applies the epilogue to lanes [lo, hi) of accumulator half h of every
 * row and stores them contiguously at c + off (+ i * ldc for row i). Lanes
 * not starting at 0 are compressed down first, so the store never needs an
 * address before the run it writes. */
static void store_run(const struct kcpu_gemm *g, const __m512 *acc, int i0, int mr, int h,
                      int lo, int hi, int64_t j_first, int64_t off)
{
    __mmask16 src = (__mmask16)(lane_mask(hi) & ~lane_mask(lo)), dst = lane_mask(hi - lo);
    __m512 bc = g->bias_col ? _mm512_maskz_loadu_ps(dst, g->bias_col + j_first) : _mm512_setzero_ps();
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

/* The runs of real outputs in a tile's columns: one per output row and
 * image the columns reach. */
struct tile_runs {
    int count;
    int t0[KCPU_NR], len[KCPU_NR];   /* tile columns [t0, t0 + len) */
    int64_t off[KCPU_NR];            /* offset in c of row 0, column t0 */
};

static void find_runs(const struct kcpu_gemm *g, int64_t j, int nr, struct tile_runs *tr)
{
    int64_t first, off, len;
    tr->count = 0;
    for (int64_t jj = j; (len = kcpu_gemm_next_run(g, jj, j + nr, &first, &off)) > 0; jj = first + len) {
        tr->t0[tr->count] = (int)(first - j);
        tr->len[tr->count] = (int)len;
        tr->off[tr->count++] = off;
    }
}

/* The epilogue's residual and output lines are fetched before the k loop
 * so that their misses overlap the FMAs instead of stalling the stores. */
static void prefetch_epilogue(const struct kcpu_gemm *g, const struct tile_runs *tr, int i0, int mr)
{
    for (int r = 0; r < tr->count; r++)
        for (int i = 0; i < mr; i++) {
            int64_t at = tr->off[r] + (int64_t)(i0 + i) * g->ldc;
            __builtin_prefetch(g->c + at, 1);
            __builtin_prefetch(g->c + at + tr->len[r] - 1, 1);
            if (g->res) {
                __builtin_prefetch(g->res + at);
                __builtin_prefetch(g->res + at + tr->len[r] - 1);
            }
        }
}

static void store_tile(const struct kcpu_gemm *g, const __m512 *acc, const struct tile_runs *tr,
                       int i0, int mr, int64_t j)
{
    for (int r = 0; r < tr->count; r++) {
        int t0 = tr->t0[r], t1 = t0 + tr->len[r];
        int64_t off = tr->off[r] + (int64_t)i0 * g->ldc;
        for (int h = 0; h < 2; h++) {
            int h0 = 16 * h;   /* the half's first tile column */
            int lo = (int)kcpu_max64(t0, h0) - h0, hi = (int)kcpu_min64(t1, h0 + 16) - h0;
            if (lo < hi)
                store_run(g, acc, i0, mr, h, lo, hi, j + h0 + lo, off + (h0 + lo - t0));
        }
    }
}

#define TILE_VARIANTS(MR, PARTIAL)                                                   \
    do {                                                                             \
        if (g->boff)                                                                 \
            tile(MR, PARTIAL, 1, g->k, a, b, g->boff, g->ldb, m0, m1, acc);          \
        else                                                                         \
            tile(MR, PARTIAL, 0, g->k, a, b, g->boff, g->ldb, m0, m1, acc);          \
    } while (0)

#define TILE_CASE(MR)                                                                \
    case MR:                                                                         \
        if (nr < KCPU_NR)                                                            \
            TILE_VARIANTS(MR, 1);                                                    \
        else                                                                         \
            TILE_VARIANTS(MR, 0);                                                    \
        break;

void kcpu_gemm_avx512(const struct kcpu_gemm *g)
{
    __m512 acc[2 * KCPU_MR];
    struct tile_runs tr;
    for (int i0 = 0; i0 < g->m; i0 += KCPU_MR) {
        int mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
        const float *a = g->a + (int64_t)i0 * g->k;
        for (int64_t t0 = 0; t0 < g->n; t0 += KCPU_NR) {
            int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const float *b = g->b + (t0 / KCPU_NR) * g->b_strip;
            __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
            find_runs(g, g->j0 + t0, nr, &tr);
            prefetch_epilogue(g, &tr, i0, mr);
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
            store_tile(g, acc, &tr, i0, mr, g->j0 + t0);
        }
    }
}
