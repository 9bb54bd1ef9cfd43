/*
 * gemm_avx2.c - the AVX2+FMA GEMM microkernel. Compiled with -mavx2 -mfma;
 * entered only through kcpu_gemm_run after the run-time ISA check.
 *
 * With 16 ymm registers an 8 x 32 block of the shared packed layout is
 * covered by two 6 x 16 tiles and one 2 x 32 (block(), below), each
 * reading the panel with its KCPU_MR stride, in passes over the depth.
 * Where the block's 32 columns lie side by side in C and the activation
 * is a clamp, the last pass adds the biases and residual to the registers
 * and stores them there (direct_out); else the tiles go through a buffer
 * to the vector epilogue store_tile, which follows the output's runs.
 * The tiles load B only in whole vectors: a strip whose columns end inside
 * a vector is first copied into zero-padded rows (block()).
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx2.h"

/* Where a tile's finished sums go when not to the buffer: row i, vector
 * v at c + i * ldc + 8 * v, after + bias[i], + col[8 * v ..] and + the
 * residual at the same offset (kcpu_gemm_store_tile's order), then the
 * activation. */
struct direct_out {
    float *c;
    const float *res;      /* or NULL */
    const float *bias;     /* or NULL */
    const float *col;      /* the column bias at the tile's first column, or NULL */
    int64_t ldc;
    enum k_act act;        /* none, ReLU or ReLU6 */
};

/* Depth k0 .. k1 - 1 of the tile, starting from out's sums of depth 0 ..
 * k0 - 1 unless k0 is 0; the sums to out, or finished to d. indexed: B's
 * rows are at b + boff[kk], else b holds row k0 and the next are ldb
 * apart; a constant, so that each loop has one addressing (a run-time
 * test there cost the block about a quarter of its speed on Zen 3,
 * docs/performance.md). */
static inline __attribute__((always_inline)) void
tile(const int mr, const int nv, const int indexed, int64_t k0, int64_t k1, const float *a, int64_t a_step,
     const float *b, const int64_t *boff, int64_t ldb, float *out /* row stride KCPU_NR */,
     const struct direct_out *d)
{
    __m256 c[8][4];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int64_t v = 0; v < nv; v++)
            c[i][v] = k0 ? _mm256_loadu_ps(out + (int64_t)i * KCPU_NR + 8 * v) : _mm256_setzero_ps();
    a += k0 * a_step;
    /* Two steps a loop: measured alternating on Zen 3, the block with
     * one step a loop (about 25 instructions, 12 FMAs) was 10-17 % slower. */
#pragma GCC unroll 2
    for (int64_t kk = k0; kk < k1; kk++) {
        const float *bk = indexed ? b + boff[kk] : b;
        __m256 bv[4];
#pragma GCC unroll 4
        for (int64_t v = 0; v < nv; v++)
            bv[v] = _mm256_loadu_ps(bk + 8 * v);
#pragma GCC unroll 8
        for (int64_t i = 0; i < mr; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
            for (int64_t v = 0; v < nv; v++)
                c[i][v] = _mm256_fmadd_ps(ai, bv[v], c[i][v]);
        }
        a += a_step;
        if (!indexed)
            b += ldb;
    }
    if (d) {
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            const __m256 bias = _mm256_set1_ps(d->bias ? d->bias[i] : 0.0f);
#pragma GCC unroll 4
            for (int64_t v = 0; v < nv; v++) {
                const int64_t at = i * d->ldc + 8 * v;
                __m256 x = _mm256_add_ps(c[i][v], bias);
                if (d->col)
                    x = _mm256_add_ps(x, _mm256_loadu_ps(d->col + 8 * v));
                if (d->res)
                    x = _mm256_add_ps(x, _mm256_loadu_ps(d->res + at));
                _mm256_storeu_ps(d->c + at, kv8_act_clamp_inline(d->act, x));
            }
        }
        return;
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int64_t v = 0; v < nv; v++)
            _mm256_storeu_ps(out + (int64_t)i * KCPU_NR + 8 * v, c[i][v]);
}

/* d moved on to row r and column c of its block. */
static inline struct direct_out direct_at(const struct direct_out *d, int r, int c)
{
    const int64_t at = r * d->ldc + c;
    struct direct_out o = {.c = d->c + at, .res = d->res ? d->res + at : NULL,
                           .bias = d->bias ? d->bias + r : NULL, .col = d->col ? d->col + c : NULL,
                           .ldc = d->ldc, .act = d->act};
    return o;
}

static __m256i lane_mask(int lanes)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), idx);
}

/* The tile with B's rows from the offset table or ldb apart. */
#define TILE_VARIANTS(MR, NV, a, t, d)                                                   \
    do {                                                                                 \
        if (g->boff)                                                                     \
            tile(MR, NV, 1, k0, k1, a, g->a_step, b + (c0 - lo), g->boff, g->ldb, (t) + c0, d); \
        else                                                                                    \
            tile(MR, NV, 0, k0, k1, a, g->a_step, b + (c0 - lo), NULL, g->ldb, (t) + c0, d);    \
    } while (0)

/* A tile of MR rows of panel a (row r0 of the block), NV vectors from
 * column c0, depth k0 .. k1 - 1, into t + c0 or finished to d (only a
 * whole strip is given a d). */
#define TILE_CASE(MR, NV, a, t)                                  \
    case MR:                                                     \
        if (d) {                                                 \
            const struct direct_out dt = direct_at(d, r0, c0);   \
            TILE_VARIANTS(MR, NV, a, t, &dt);                    \
        } else {                                                 \
            TILE_VARIANTS(MR, NV, a, t, NULL);                   \
        }                                                        \
        break;

/* Rows 0 .. mr - 1 (mr <= 6) of the strip's columns lo .. hi - 1 (a
 * multiple of 8 of them) in tiles 16 columns wide, the last one 8 wide
 * where its columns fit. b as tile's, at column lo. */
static inline __attribute__((always_inline)) void
six_rows(const struct kcpu_gemm *g, const float *a, const float *b, int mr, int lo, int hi, int64_t k0, int64_t k1,
         float *tmp, const struct direct_out *d)
{
    const int r0 = 0;
    for (int c0 = lo; c0 < hi; c0 += 16) {
        const int cols = hi - c0 < 16 ? hi - c0 : 16;
#define UP_TO_SIX_ROWS(NV)                                                                       \
    TILE_CASE(1, NV, a, tmp) TILE_CASE(2, NV, a, tmp) TILE_CASE(3, NV, a, tmp)                   \
    TILE_CASE(4, NV, a, tmp) TILE_CASE(5, NV, a, tmp) TILE_CASE(6, NV, a, tmp)
        if (cols <= 8) {
            switch (mr) { UP_TO_SIX_ROWS(1) }
        } else {
            switch (mr) { UP_TO_SIX_ROWS(2) }
        }
#undef UP_TO_SIX_ROWS
    }
}

/* Rows 6 .. mr - 1 (one or two) of columns lo .. hi - 1 (a multiple of 8
 * of them, at most 32) in one tile; b at column lo. */
static inline __attribute__((always_inline)) void
last_rows(const struct kcpu_gemm *g, const float *a, const float *b, int mr, int lo, int hi, int64_t k0, int64_t k1,
          float *tmp, const struct direct_out *d)
{
    const int r0 = 6, c0 = lo;
    const float *a6 = a + 6;
    float *t6 = tmp + (ptrdiff_t)6 * KCPU_NR;
#define ONE_OR_TWO_ROWS(NV) switch (mr - 6) { TILE_CASE(1, NV, a6, t6) TILE_CASE(2, NV, a6, t6) }
    switch ((hi - lo) / 8) {
    case 1: ONE_OR_TWO_ROWS(1) break;
    case 2: ONE_OR_TWO_ROWS(2) break;
    case 3: ONE_OR_TWO_ROWS(3) break;
    default: ONE_OR_TWO_ROWS(4) break;
    }
#undef ONE_OR_TWO_ROWS
}

/* Most depth per pass over the block, split evenly: A's 8 x KC and B's
 * KC x 32 floats (5 + 20 KiB) stay in L1 while the block's three tiles
 * read them. With the whole depth in one pass the tiles read both from L2:
 * measured alternating on Zen 3, ResNet-50's 2048 -> 512 (7x7 maps) and
 * 1024 -> 256 (14x14) 1x1 layers ran 1.1-1.2x faster in passes. */
#define KC 160

/* Every row (mr <= 8) of the strip's 8 columns lo .. lo + 7 in one tile
 * (8 FMA chains; two rows alone would wait on the FMA latency). b as
 * tile's, at column lo; never a whole strip, so no d. */
static inline __attribute__((always_inline)) void
column_rows(const struct kcpu_gemm *g, const float *a, const float *b, int mr, int lo, int64_t k0, int64_t k1,
            float *tmp)
{
    const int r0 = 0, c0 = lo;
    const struct direct_out *d = NULL;
    switch (mr) {
        TILE_CASE(1, 1, a, tmp) TILE_CASE(2, 1, a, tmp) TILE_CASE(3, 1, a, tmp) TILE_CASE(4, 1, a, tmp)
        TILE_CASE(5, 1, a, tmp) TILE_CASE(6, 1, a, tmp) TILE_CASE(7, 1, a, tmp) TILE_CASE(8, 1, a, tmp)
    }
}

/* The strip's last nr - whole columns (1 to 7) of B rows k0 .. k1 - 1,
 * zero-padded to 8, into tail[k - k0][8]. With 8 columns or more in the
 * strip, each row's last 8 are loaded whole and shifted down (a scalar
 * copy loop cost more than the tile on Zen 1); else built lane by lane. */
static void copy_tail(const struct kcpu_gemm *g, const float *b, int64_t k0, int64_t k1, int whole, int nr,
                      float *tail)
{
    const int n = nr - whole;
    const __m256i shift = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 - n));
    const __m256 keep = _mm256_castsi256_ps(lane_mask(n));
    for (int64_t kk = k0; kk < k1; kk++, tail += 8) {
        const float *row = g->boff ? b + g->boff[kk] : b + kk * g->ldb;
        __m256 v;
        if (nr >= 8) {
            v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + nr - 8), shift);
        } else {
            const float *r = row + whole;
            v = _mm256_setr_ps(r[0], n > 1 ? r[1] : 0, n > 2 ? r[2] : 0, n > 3 ? r[3] : 0, n > 4 ? r[4] : 0,
                               n > 5 ? r[5] : 0, n > 6 ? r[6] : 0, 0);
        }
        _mm256_storeu_ps(tail, _mm256_and_ps(v, keep));
    }
}

/* The 8 x 32 block as two 6 x 16 tiles (12 accumulators each, 2 B loads
 * and 6 broadcasts per 12 FMAs) and one 2 x 32 (8 accumulators): with 16
 * registers, 4 x 16 tiles kept only 8 FMA chains in flight, about Zen 3's
 * latency times its two FMA pipes, and reached 71 % of the FMA loop.
 * A strip whose columns end inside a vector (a 7x7 map's 49 columns leave
 * 17 in the second) has its last few columns in zero-padded vectors:
 * loading them masked (vmaskmovps) ran such strips at a third of the
 * speed on Zen 1. tail holds them for the whole depth (copied once for
 * every panel), or is NULL and they are copied here a pass at a time. */
static void block(const struct kcpu_gemm *g, const float *a, const float *b, int mr, int nr, float *tmp,
                  const struct direct_out *d, const float *tail)
{
    const int64_t passes = kcpu_max64(1, kcpu_ceil_div(g->k, KC)), kc = kcpu_ceil_div(g->k, passes);
    const int whole = nr / 8 * 8, six = mr < 6 ? mr : 6;
    float pass_tail[KC * 8];
    const struct kcpu_gemm tail_g = {.a_step = g->a_step, .ldb = 8};
    int64_t k0 = 0;
    do {   /* at least one pass: depth 0 stores zeros */
        const int64_t k1 = kcpu_min64(g->k, k0 + kc);
        const struct direct_out *last = k1 == g->k ? d : NULL;
        const float *bk = g->boff ? b : b + k0 * g->ldb;   /* as tile() reads it */
        if (whole > 0) {
            six_rows(g, a, bk, six, 0, whole, k0, k1, tmp, last);
            if (mr > 6)
                last_rows(g, a, bk, mr, 0, whole, k0, k1, tmp, last);
        }
        if (whole < nr) {   /* never a whole strip: no d */
            if (!tail)
                copy_tail(g, b, k0, k1, whole, nr, pass_tail);
            column_rows(&tail_g, a, tail ? tail + k0 * 8 : pass_tail, mr, whole, k0, k1, tmp);
        }
        k0 = k1;
    } while (k0 < g->k);
}

/* kcpu_gemm_store_tile's sums in the same order (tile + bias_row, +
 * bias_col, + residual, then the activation), 8 lanes at a time: the
 * portable one goes element by element with a branch per term and took
 * 57 % of a 64 -> 256 1x1 layer's time (depth 64: as much work per tile
 * as the FMAs). */
static void store_tile(const struct kcpu_gemm *g, const float *tmp, int i0, int mr, int64_t j, int nr)
{
    int64_t first, off, len;
    for (int64_t jj = j; (len = kcpu_gemm_next_run(g, jj, j + nr, &first, &off)) > 0; jj = first + len)
        for (int64_t i = 0; i < mr; i++) {
            const float *t = tmp + (int64_t)i * KCPU_NR + (first - j);
            const __m256 bias = _mm256_set1_ps(g->bias_row ? g->bias_row[i0 + i] : 0.0f);
            const int64_t at = off + (int64_t)(i0 + i) * g->ldc;
            const float *res = g->res ? g->res + at : NULL, *col = g->bias_col ? g->bias_col + first : NULL;
            float *c = g->c + at;
            int64_t e = 0;
            for (; e + 8 <= len; e += 8) {
                __m256 v = _mm256_add_ps(_mm256_loadu_ps(t + e), bias);
                if (col)
                    v = _mm256_add_ps(v, _mm256_loadu_ps(col + e));
                if (res)
                    v = _mm256_add_ps(v, _mm256_loadu_ps(res + e));
                _mm256_storeu_ps(c + e, kv8_act_clamp_inline(g->act, v));
            }
            if (e < len) {   /* (vmaskmovps stores are microcoded on AMD: tails only) */
                const __m256i m = lane_mask((int)(len - e));
                __m256 v = _mm256_add_ps(_mm256_maskload_ps(t + e, m), bias);
                if (col)
                    v = _mm256_add_ps(v, _mm256_maskload_ps(col + e, m));
                if (res)
                    v = _mm256_add_ps(v, _mm256_maskload_ps(res + e, m));
                _mm256_maskstore_ps(c + e, m, kv8_act_clamp_inline(g->act, v));
            }
        }
}

/* Most depth whose last-strip tail kcpu_gemm_avx2 copies once, on its
 * stack (64 KiB). */
#define TAIL_K 2048

/* A's panels that stay in Zen 3's 512 KiB L2 (half of it) while every
 * strip of B passes them once. */
#define A_L2_BYTES ((int64_t)256 * 1024)

void kcpu_gemm_avx2(const struct kcpu_gemm *g)
{
    float tmp[KCPU_MR * KCPU_NR];
    /* Strips outer where A fits in L2: each B strip is read from memory
     * once and from L1 for every panel. Panels outer streamed B from L3
     * once per panel: ResNet-50's 64 -> 256 1x1 layers on 56x56 maps (B
     * 0.8 MB, 32 panels) ran at a fifth of the FMA peak. */
    const int strips_outer = (int64_t)g->m * g->k * (int64_t)sizeof(float) <= A_L2_BYTES;
    const int64_t panels = kcpu_ceil_div(g->m, KCPU_MR), strips = kcpu_ceil_div(g->n, KCPU_NR);
    const int clamp = g->act == K_ACT_NONE || g->act == K_ACT_RELU || g->act == K_ACT_RELU6;
    float tail[TAIL_K * 8];
    const float *last_tail = NULL;   /* the last strip's, when it has one */
    const int last_nr = (int)(g->n - (strips - 1) * KCPU_NR);
    if (strips > 0 && last_nr % 8 != 0 && g->k <= TAIL_K) {
        copy_tail(g, g->b + (strips - 1) * g->b_strip, 0, g->k, last_nr / 8 * 8, last_nr, tail);
        last_tail = tail;
    }
    for (int64_t outer = 0; outer < (strips_outer ? strips : panels); outer++)
        for (int64_t inner = 0; inner < (strips_outer ? panels : strips); inner++) {
            const int64_t p = strips_outer ? inner : outer, s = strips_outer ? outer : inner;
            const int i0 = (int)(p * KCPU_MR), mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
            const int64_t t0 = s * KCPU_NR;
            const int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const int64_t j = g->j0 + t0;
            int64_t first, off;
            /* the whole strip one run of C: its tiles store there */
            if (nr == KCPU_NR && clamp && kcpu_gemm_next_run(g, j, j + nr, &first, &off) == nr && first == j) {
                const int64_t at = off + (int64_t)i0 * g->ldc;
                const struct direct_out d = {.c = g->c + at, .res = g->res ? g->res + at : NULL,
                                             .bias = g->bias_row ? g->bias_row + i0 : NULL,
                                             .col = g->bias_col ? g->bias_col + j : NULL,
                                             .ldc = g->ldc, .act = g->act};
                block(g, kcpu_gemm_panel(g, i0), g->b + s * g->b_strip, mr, nr, tmp, &d, NULL);
                continue;
            }
            block(g, kcpu_gemm_panel(g, i0), g->b + s * g->b_strip, mr, nr, tmp, NULL,
                  s == strips - 1 ? last_tail : NULL);
            store_tile(g, tmp, i0, mr, j, nr);
        }
}
