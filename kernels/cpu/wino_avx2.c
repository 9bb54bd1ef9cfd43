/*
 * wino_avx2.c - the Winograd F(2x2, 3x3) transforms, eight tiles of a tile
 * row to a vector, and the 16 GEMMs' tile, on AVX2 (kcpu_wino.h). Compiled
 * with -mavx2 -mfma; entered only through kcpu_wino_f32 after the run-time
 * ISA check (the AVX-512 ISA uses them too).
 *
 * Tile t's window starts at column 2t, so the windows of eight tiles are
 * one 18-float stretch of a row: its even and odd columns (one load of 16
 * floats split in two) are the windows' columns 0 and 1, the same two
 * vectors loaded 2 floats on the windows' columns 2 and 3.
 */
#include "kcpu_math_avx2.h"
#include "kcpu_wino.h"

/* The even and the odd floats of p[0 .. 16), with the lanes in the order
 * of in-lane shuffles, [p0 p2 p8 p10 | p4 p6 p12 p14] (tiles 0 1 4 5 | 2 3
 * 6 7), or in order where `natural`. The GEMM does not mind the order,
 * and the output transform's in-lane unpacks put it back (store_row), so
 * a run's whole vectors need no lane-crossing permute on either side. Its
 * last vector, when partial, keeps the order: the tiles past the run are
 * the next run's, which it writes again, and must be the last lanes. */
static inline void split_even_odd(const float *p, const int natural, __m256 *even, __m256 *odd)
{
    __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    if (natural) {   /* 64-bit lanes 0, 2, 1, 3 */
        e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
        o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
    }
    *even = e;
    *odd = o;
}

/* d B for one window row of eight tiles: u[j] is column j of the product. */
static inline __attribute__((always_inline)) void row_times_b(const float *row, const int natural, __m256 u[4])
{
    __m256 c0, c1, c2, c3;
    split_even_odd(row, natural, &c0, &c1);
    split_even_odd(row + 2, natural, &c2, &c3);
    u[0] = _mm256_sub_ps(c0, c2);
    u[1] = _mm256_add_ps(c1, c2);
    u[2] = _mm256_sub_ps(c2, c1);
    u[3] = _mm256_sub_ps(c1, c3);
}

/* B^T d B of eight tiles to V. */
static inline __attribute__((always_inline)) void in_vector(const float *d, int64_t wp, const int natural, float *v,
                                                            int64_t xs)
{
    __m256 r0[4], r1[4], r2[4], r3[4];
    row_times_b(d, natural, r0);
    row_times_b(d + wp, natural, r1);
    row_times_b(d + 2 * wp, natural, r2);
    row_times_b(d + 3 * wp, natural, r3);
    /* B^T times that: the window's rows combined. */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(v + j * xs, _mm256_sub_ps(r0[j], r2[j]));
        _mm256_storeu_ps(v + (4 + j) * xs, _mm256_add_ps(r1[j], r2[j]));
        _mm256_storeu_ps(v + (8 + j) * xs, _mm256_sub_ps(r2[j], r1[j]));
        _mm256_storeu_ps(v + (12 + j) * xs, _mm256_sub_ps(r1[j], r3[j]));
    }
}

/* dst[i] = src[col0 + i] where 0 <= col0 + i < w, else 0, for i < len (a
 * multiple of 8); src NULL: a row of zeros. */
static void pad_row(const float *src, int64_t w, int64_t col0, float *dst, int64_t len)
{
    for (int64_t i = 0; i < len; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_setzero_ps());
    if (!src)
        return;
    int64_t i = col0 < 0 ? -col0 : 0, end = kcpu_min64(len, w - col0);
    for (; i + 8 <= end; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + col0 + i));
    for (; i < end; i++)
        dst[i] = src[col0 + i];
}

void kcpu_wino_in_avx2(const struct kcpu_wino_in *a)
{
    const int64_t len = 2 * kcpu_ceil_div(a->count, 8) * 8 + 16;   /* what in_vector reads */
    for (int64_t ch = 0; ch < a->c; ch++) {
        const float *x = a->x + ch * a->h * a->w;
        for (int i = 0; i < 4; i++) {
            const int64_t r = a->row0 + i;
            pad_row(r >= 0 && r < a->h ? x + r * a->w : NULL, a->w, a->col0, a->rows + i * a->rows_ld, len);
        }
        float *v = a->v + ch * a->ldv;
        int64_t t = 0;
        for (; t + 8 <= a->count; t += 8)
            in_vector(a->rows + 2 * t, a->rows_ld, 0, v + t, a->xi_stride);
        if (t < a->count)
            in_vector(a->rows + 2 * t, a->rows_ld, 1, v + t, a->xi_stride);
    }
}

/* Rows r0 .. r0 + 3 of an 8-row panel of U[xi] (a: row r0 of the panel at
 * depth k0, KCPU_MR floats per depth step) times nv vectors of V's
 * columns, depth k0 .. k0 + k - 1, added to M's sums (or stored, for the
 * first depth): 4 x nv accumulators, so 12 FMA chains in flight for 3
 * vectors (7 loads per 12 FMAs). */
static inline __attribute__((always_inline)) void gemm_tile(const int nv, int first, int64_t k,
                                                            const float *a, const float *b, int64_t ldb, float *c,
                                                            int64_t ldc)
{
    __m256 acc[4][3];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            acc[i][v] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc + 8 * v);
    for (int64_t kk = 0; kk < k; kk++, a += KCPU_MR, b += ldb) {
        __m256 bv[3];
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 3
            for (int64_t v = 0; v < nv; v++)
                acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
}

void kcpu_wino_tile_avx2(int nv, int first, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                         int64_t ldc)
{
    if (nv == 3)
        gemm_tile(3, first, k, a, b, ldb, c, ldc);
    else if (nv == 2)
        gemm_tile(2, first, k, a, b, ldb, c, ldc);
    else
        gemm_tile(1, first, k, a, b, ldb, c, ldc);
}

/* The first n (0 .. 8) floats of v to y, without vmaskmovps (microcoded
 * on AMD, and it took a fifth of the output transform's time). */
static inline void store_first(float *y, __m256 v, int64_t n)
{
    __m128 q = _mm256_castps256_ps128(v);
    if (n >= 8) {
        _mm256_storeu_ps(y, v);
        return;
    }
    if (n >= 4) {
        _mm_storeu_ps(y, q);
        q = _mm256_extractf128_ps(v, 1);
        y += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)y, q);
        q = _mm_movehl_ps(q, q);
        y += 2;
        n -= 2;
    }
    if (n >= 1)
        _mm_store_ss(y, q);
}

/* The first n (0 .. 8) floats of p, zeros after them; nothing past them is
 * read (a masked load: fast on AMD, unlike the masked store). */
static inline __m256 load_first(const float *p, int64_t n)
{
    static const int32_t ONES_THEN_ZEROS[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    if (n >= 8)
        return _mm256_loadu_ps(p);
    return _mm256_maskload_ps(p, _mm256_loadu_si256((const __m256i *)(ONES_THEN_ZEROS + 8 - n)));
}

/* Output row values a (even columns) and b (odd ones) of eight tiles in
 * split_even_odd's lane order (natural: in order), plus the bias and
 * residual, through the activation, to y's valid columns. */
static inline __attribute__((always_inline)) void store_row(__m256 a, __m256 b, const int natural, __m256 bias,
                                                            const float *res, float *y, int64_t valid,
                                                            enum k_act act)
{
    /* In order: lo [a0 b0 a1 b1 | a4 b4 a5 b5], hi [a2 b2 a3 b3 | a6 b6 a7 b7];
     * tiles [0 1 4 5 | 2 3 6 7]: lo is columns 0 .. 7, hi 8 .. 15. */
    __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
    __m256 y0 = natural ? _mm256_permute2f128_ps(lo, hi, 0x20) : lo;
    __m256 y1 = natural ? _mm256_permute2f128_ps(lo, hi, 0x31) : hi;
    y0 = _mm256_add_ps(y0, bias);
    y1 = _mm256_add_ps(y1, bias);
    if (valid >= 16) {
        if (res) {
            y0 = _mm256_add_ps(y0, _mm256_loadu_ps(res));
            y1 = _mm256_add_ps(y1, _mm256_loadu_ps(res + 8));
        }
        _mm256_storeu_ps(y, kv8_act_clamp_inline(act, y0));
        _mm256_storeu_ps(y + 8, kv8_act_clamp_inline(act, y1));
        return;
    }
    const int64_t n0 = valid < 8 ? valid : 8, n1 = valid - n0;
    if (res) {
        y0 = _mm256_add_ps(y0, load_first(res, n0));
        y1 = _mm256_add_ps(y1, load_first(res + 8, n1));
    }
    store_first(y, kv8_act_clamp_inline(act, y0), n0);
    store_first(y + 8, kv8_act_clamp_inline(act, y1), n1);
}

/* The output transform of channel o, for one activation and with or
 * without a residual (constants once inlined). */
static inline __attribute__((always_inline)) void out_channel(const struct kcpu_wino_out *a, int64_t o,
                                                              const enum k_act act, const int with_res)
{
    const int64_t xs = a->xi_stride;
    const __m256 bias = _mm256_set1_ps(a->bias ? a->bias[o] : 0.0f);
    const float *m = a->m + o * a->ldm;
    float *y = a->y + o * a->plane;
    const float *res = with_res ? a->res + o * a->plane : NULL;
    for (int64_t t = 0; t < a->count; t += 8, m += 8, y += 16, res = with_res ? res + 16 : NULL) {
        /* A^T M: s = rows 0 + 1 + 2, d = rows 1 - 2 - 3, by column. */
        __m256 s[4], d[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m256 m0 = _mm256_loadu_ps(m + j * xs), m1 = _mm256_loadu_ps(m + (4 + j) * xs);
            __m256 m2 = _mm256_loadu_ps(m + (8 + j) * xs), m3 = _mm256_loadu_ps(m + (12 + j) * xs);
            s[j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
            d[j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
        }
        /* Times A: columns 0 + 1 + 2 and 1 - 2 - 3. */
        const int64_t valid = a->cols - 2 * t;
        const int natural = a->count - t < 8;   /* as kcpu_wino_in_avx2 wrote it */
        store_row(_mm256_add_ps(_mm256_add_ps(s[0], s[1]), s[2]), _mm256_sub_ps(_mm256_sub_ps(s[1], s[2]), s[3]),
                  natural, bias, res, y, valid, act);
        if (a->rows == 2)
            store_row(_mm256_add_ps(_mm256_add_ps(d[0], d[1]), d[2]), _mm256_sub_ps(_mm256_sub_ps(d[1], d[2]), d[3]),
                      natural, bias, with_res ? res + a->ow : NULL, y + a->ow, valid, act);
    }
}

#define OUT_CHANNELS(ACT, RES)                       \
    for (int64_t o = 0; o < a->oc; o++)                \
        out_channel(a, o, ACT, RES);                   \
    return;

void kcpu_wino_out_avx2(const struct kcpu_wino_out *a)
{
    /* The common activations inlined, the others through kv8_act. */
    switch (a->act) {
    case K_ACT_NONE:
        if (a->res) { OUT_CHANNELS(K_ACT_NONE, 1) }
        OUT_CHANNELS(K_ACT_NONE, 0)
    case K_ACT_RELU:
        if (a->res) { OUT_CHANNELS(K_ACT_RELU, 1) }
        OUT_CHANNELS(K_ACT_RELU, 0)
    default:
        for (int64_t o = 0; o < a->oc; o++)
            out_channel(a, o, a->act, a->res != NULL);
    }
}
