/*
 * kcpu_q8_dw_avx2.c - the AVX2 plane kernel of the direct INT8 depthwise
 * convolution (kcpu_q8_dw.h). Compiled with the AVX2 flags; entered only
 * after the run-time ISA check (also on AVX-512 CPUs without VNNI).
 *
 * As the AVX-512 kernel with 8-quad vectors, without the sign flip: the
 * products are vpmaddubsw(|x|, sign(w, x)) then vpmaddwd by ones, exact
 * because |x|, |w| <= 127 keeps each pair sum within int16. 4 vectors
 * (32 flat outputs) at a time; whole vectors requantise with
 * kcpu_q8_avx2.h (four at once into one 32-byte store where they can), a
 * band's last partial one through kernel_quant.h.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx2.h"
#include "kcpu_q8_dw.h"

/* A kq8_dw_row_fn. Writes whole vectors: up to 7 quads past ow (the next
 * row's or the slack). */
static inline __attribute__((always_inline)) void expand_row(const int8_t *src, int8_t *dst, int64_t ow, int64_t sw,
                                                             const int8_t *shuf, int flip)
{
    const __m256i idx = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)shuf));
    const __m256i f = _mm256_set1_epi8(flip ? (char)0x80 : 0);
    for (int64_t c = 0; c < ow; c += 8) {
        const int8_t *s = src + c * sw;
        __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s));
        v = _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)(s + 4 * sw)), 1);
        _mm256_storeu_si256((__m256i *)(dst + 4 * c), _mm256_xor_si256(_mm256_shuffle_epi8(v, idx), f));
    }
}

struct epi {
    struct kq8_mult256 mv, rv;
    __m256i lo, hi;            /* as int64 lanes */
    int use_hi;                /* the 32-bit form serves (kq8_hi256_serves) */
    struct kq8_hi256 hv;
};

static inline __m256i requant8(const struct epi *ep, __m256i acc, const int8_t *res)
{
    return ep->use_hi ? kq8_requant8_hi(acc, &ep->hv, res) : kq8_requant8(acc, &ep->mv, res, &ep->rv, ep->lo, ep->hi);
}

/* The band's outputs: first .. first + n - 1 of the plane. */
struct band {
    const struct epi *ep;
    int64_t first, n;
};

/* Band outputs t .. t + 7 from their accumulators (acc + bias). */
static void store8(const struct kq8_dw_plane *pl, const struct band *b, int64_t t, __m256i acc)
{
    const struct k_q8_epilogue *e = pl->e;
    const struct epi *ep = b->ep;
    int64_t left = b->n - t;
    if (left <= 0)
        return;
    t += b->first;
    if (left >= 8 && e->out_i32) {
        _mm256_storeu_si256((__m256i *)((int32_t *)pl->y + t), acc);
        return;
    }
    if (left < 8) {
        int32_t a[8];
        _mm256_storeu_si256((__m256i *)a, acc);
        for (int64_t i = 0; i < left; i++) {
            if (e->out_i32)
                ((int32_t *)pl->y)[t + i] = a[i];
            else if (pl->res)
                ((int8_t *)pl->y)[t + i] = k_q8_requant_res(a[i], 0, pl->mult, pl->res[t + i], e->res_mult, e->lo, e->hi);
            else
                ((int8_t *)pl->y)[t + i] = k_q8_requant(a[i], 0, pl->mult, e->lo, e->hi);
        }
        return;
    }
    __m256i q = requant8(ep, acc, pl->res ? pl->res + t : NULL);
    /* int32 -> int8 (values already in range): bytes 0-3 of each 128-bit lane */
    __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q, q), _mm256_setzero_si256());
    __m128i out = _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
    _mm_storel_epi64((__m128i *)((int8_t *)pl->y + t), out);
}

/* Band outputs t .. t + 31, all inside the band, as int8: the four
 * vectors requantised, then packed and stored together. */
static inline __attribute__((always_inline)) void store32(const struct kq8_dw_plane *pl, const struct band *b,
                                                          int64_t t, const __m256i acc[4])
{
    const struct epi *ep = b->ep;
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    t += b->first;
    __m256i q[4];
#pragma GCC unroll 4
    for (ptrdiff_t v = 0; v < 4; v++)
        q[v] = requant8(ep, acc[v], pl->res ? pl->res + t + 8 * v : NULL);
    /* int32 -> int8 (values already in range), then undo the per-128-bit-lane interleave */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)((int8_t *)pl->y + t), _mm256_permutevar8x32_epi32(p, order));
}

static inline __attribute__((always_inline)) void conv_vectors(const struct kq8_dw_plane *pl, const struct band *b,
                                                               const int8_t *grid, int64_t t, const int nv)
{
    const __m256i ones = _mm256_set1_epi16(1), init = _mm256_set1_epi32(pl->bias);
    __m256i acc[4];
#pragma GCC unroll 4
    for (ptrdiff_t v = 0; v < nv; v++)
        acc[v] = init;
    const int8_t *g = grid + 4 * t;
    const int ntaps = pl->g->ntaps;
    for (ptrdiff_t k = 0; k < ntaps; k++) {
        const int8_t *s = g + pl->off[k];
        int32_t wq;
        memcpy(&wq, pl->w + 4 * k, sizeof(wq));
        const __m256i w = _mm256_set1_epi32(wq);
#pragma GCC unroll 4
        for (ptrdiff_t v = 0; v < nv; v++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(s + 32 * v));
            __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(w, x));
            acc[v] = _mm256_add_epi32(acc[v], _mm256_madd_epi16(p, ones));
        }
    }
    if (nv == 4 && t + 32 <= b->n && !pl->e->out_i32) {
        store32(pl, b, t, acc);
        return;
    }
#pragma GCC unroll 4
    for (ptrdiff_t v = 0; v < nv; v++)
        store8(pl, b, t + 8 * v, acc[v]);
}

void kq8_dw_expand_avx2(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid)
{
    kq8_dw_expand(pl, r0, nr, grid, 0, expand_row);
}

void kq8_dw_band_avx2(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid)
{
    const struct k_q8_epilogue *e = pl->e;
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    struct epi ep = {
        .mv = kq8_mult256_of(pl->mult), .rv = kq8_mult256_of(pl->res ? e->res_mult : (struct k_q8_mult){0, 1}),
        .lo = _mm256_set1_epi64x(e->lo), .hi = _mm256_set1_epi64x(e->hi),
        .use_hi = kq8_hi256_serves(pl->mult, pl->res != NULL, e->res_mult),
    };
    if (ep.use_hi)
        ep.hv = kq8_hi256_of(pl->mult, e->res_mult, pl->res != NULL, e->lo, e->hi);
    const struct band b = {&ep, r0 * pl->p->ow, nr * pl->p->ow};
    int64_t t = 0;
    for (; t + 32 <= b.n; t += 32)
        conv_vectors(pl, &b, grid, t, 4);
    for (; t < b.n; t += 8)
        conv_vectors(pl, &b, grid, t, 1);
}
