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

/* Depth steps between a B row's prefetch and its use. Measured (2
 * threads, docs/performance.md): a 1x1 layer whose input is in L3 (as in
 * a model, where the previous layer spilled it) 1.3-1.4x faster (96 -> 16
 * on 112x112, 144 -> 24 on 56x56); in cache, 256 -> 64 on 56x56 1.15x,
 * 512 -> 128 on 28x28 1.07x, the rest within 3 %. */
#define B_AHEAD 16

static inline __attribute__((always_inline)) void
tile(const int mr, const int partial, const int indexed, int64_t k, const float *a, int64_t a_step, const float *b,
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
        /* A B read in place (a 1x1 layer's input) has its rows a plane
         * apart, too far for the hardware to fetch ahead: fetch row
         * kk + B_AHEAD now. */
        if (!indexed && kk + B_AHEAD < k) {
            __builtin_prefetch(bk + B_AHEAD * ldb);
            __builtin_prefetch(bk + B_AHEAD * ldb + 16);
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
        a += a_step;
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

/* The epilogue of a tile whose strip is one run of C (every 1x1 layer's
 * strip inside an image, every linear one): no run search, no lane
 * compression, and the activation fixed outside the row loop (act is a
 * constant in each instantiation). Same sums in the same order as
 * store_run. On a 16 -> 96 1x1 layer (depth 16) the general epilogue and
 * its run search were half of the layer's time. */
static inline __attribute__((always_inline)) void
store_whole_act(const struct kcpu_gemm *g, const __m512 *acc, int i0, int mr, int64_t j, int64_t off,
                __mmask16 m0, __mmask16 m1, const enum k_act act)
{
    const __m512 bc0 = g->bias_col ? _mm512_maskz_loadu_ps(m0, g->bias_col + j) : _mm512_setzero_ps();
    const __m512 bc1 = g->bias_col ? _mm512_maskz_loadu_ps(m1, g->bias_col + j + 16) : _mm512_setzero_ps();
    float *c = g->c + off + (int64_t)i0 * g->ldc;
    const float *res = g->res ? g->res + off + (int64_t)i0 * g->ldc : NULL;
    for (int i = 0; i < mr; i++, c += g->ldc) {
        __m512 v0 = _mm512_add_ps(acc[(ptrdiff_t)2 * i], bc0), v1 = _mm512_add_ps(acc[(ptrdiff_t)2 * i + 1], bc1);
        if (g->bias_row) {
            const __m512 b = _mm512_set1_ps(g->bias_row[i0 + i]);
            v0 = _mm512_add_ps(v0, b);
            v1 = _mm512_add_ps(v1, b);
        }
        if (res) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, res));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, res + 16));
            res += g->ldc;
        }
        _mm512_mask_storeu_ps(c, m0, kv16_act(act, v0));
        _mm512_mask_storeu_ps(c + 16, m1, kv16_act(act, v1));
    }
}

static void store_whole(const struct kcpu_gemm *g, const __m512 *acc, int i0, int mr, int64_t j, int64_t off,
                        __mmask16 m0, __mmask16 m1)
{
    switch (g->act) {
    case K_ACT_NONE:
        store_whole_act(g, acc, i0, mr, j, off, m0, m1, K_ACT_NONE);
        return;
    case K_ACT_RELU:
        store_whole_act(g, acc, i0, mr, j, off, m0, m1, K_ACT_RELU);
        return;
    case K_ACT_RELU6:
        store_whole_act(g, acc, i0, mr, j, off, m0, m1, K_ACT_RELU6);
        return;
    default:
        store_whole_act(g, acc, i0, mr, j, off, m0, m1, g->act);
        return;
    }
}

/* The offset in c of a strip's column 0 when the strip's nr columns are
 * one run of C, else -1. */
static int64_t whole_offset(const struct kcpu_gemm *g, int64_t t0, int nr)
{
    int64_t j = g->j0 + t0, first, off;
    return kcpu_gemm_next_run(g, j, j + nr, &first, &off) == nr && first == j ? off : -1;
}

/* Strips whose whole_offset is found once per block rather than once per
 * panel (its divisions were a tenth of a depth-16 layer): a conv task's
 * strips (at most 32) fit; longer blocks find it per tile. */
#define WHOLE_CACHE 64

#define TILE_VARIANTS(MR, PARTIAL)                                                   \
    do {                                                                             \
        if (g->boff)                                                                 \
            tile(MR, PARTIAL, 1, g->k, a, g->a_step, b, g->boff, g->ldb, m0, m1, acc); \
        else                                                                         \
            tile(MR, PARTIAL, 0, g->k, a, g->a_step, b, g->boff, g->ldb, m0, m1, acc); \
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
    int64_t whole_at[WHOLE_CACHE] = {0};   /* read only where cached */
    const int cached = kcpu_ceil_div(g->n, KCPU_NR) <= WHOLE_CACHE;
    for (int64_t t0 = 0; cached && t0 < g->n; t0 += KCPU_NR)
        whole_at[t0 / KCPU_NR] = whole_offset(g, t0, (int)kcpu_min64(KCPU_NR, g->n - t0));
    for (int i0 = 0; i0 < g->m; i0 += KCPU_MR) {
        int mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
        const float *a = kcpu_gemm_panel(g, i0);
        for (int64_t t0 = 0; t0 < g->n; t0 += KCPU_NR) {
            int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const float *b = g->b + (t0 / KCPU_NR) * g->b_strip;
            __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
            const int64_t j = g->j0 + t0, off = cached ? whole_at[t0 / KCPU_NR] : whole_offset(g, t0, nr);
            const int whole = off >= 0;
            if (whole) {   /* its one run */
                tr.count = 1, tr.t0[0] = 0, tr.len[0] = nr, tr.off[0] = off;
            } else {
                find_runs(g, j, nr, &tr);
            }
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
            if (whole)
                store_whole(g, acc, i0, mr, j, off, m0, m1);
            else
                store_tile(g, acc, &tr, i0, mr, j);
        }
    }
}
