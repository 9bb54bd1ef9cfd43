/*
 * kcpu_q8_dw_avx512.c - the AVX-512 VNNI plane kernel of the direct INT8
 * depthwise convolution (kcpu_q8_dw.h). Compiled with the AVX-512 flags;
 * entered only after the run-time ISA and VNNI checks.
 *
 * Expansion: 16 quads (64 bytes) of a block row are one byte shuffle of
 * four 16-byte loads of the padded row, one per 4 output columns (when
 * stride_w + dil_w <= 5 every index fits its 16 bytes), with the sign bits
 * flipped: vpdpbusd multiplies unsigned by signed bytes, and the
 * accumulators start at bias - 128 * wsum to undo the offset (padding,
 * stored as 0x80, is a true 0 again). Then 8 vectors (128 flat outputs)
 * at a time: per tap one weight-quad broadcast and 8 vpdpbusd into 8
 * independent accumulators, and the epilogue of kcpu_q8_avx512.h with a
 * lane mask past the band's last output.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx512.h"
#include "kcpu_q8_dw.h"

/* A kq8_dw_row_fn. Writes whole vectors: up to 15 quads past ow (the next
 * row's or the slack). */
static inline __attribute__((always_inline)) void expand_row(const int8_t *src, int8_t *dst, int64_t ow, int64_t sw,
                                                             const int8_t *shuf, int flip)
{
    const __m512i idx = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)shuf));
    const __m512i f = _mm512_set1_epi8(flip ? (char)0x80 : 0);
    for (int64_t c = 0; c < ow; c += 16) {
        const int8_t *s = src + c * sw;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)s));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s + 4 * sw)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s + 8 * sw)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s + 12 * sw)), 3);
        _mm512_storeu_si512(dst + 4 * c, _mm512_xor_si512(_mm512_shuffle_epi8(v, idx), f));
    }
}

/* The plane's epilogue constants. */
struct epi {
    __m512i init;              /* bias - 128 * wsum */
    struct kq8_mult512_hi mh, rh;
    struct kq8_mult512 mv, rv;
    __m512i lo64, hi64, lo32, hi32;
    int64_t n;                 /* outputs of the band */
    const int8_t *res;         /* the band's */
    void *y;
};

/* The epilogue's forms, each compiled apart (no per-vector branches):
 * int32 output, or int8 through the shift >= 32 form or the general one,
 * with or without a residual (kcpu_q8_avx512.h). */
enum { EPI_I32, EPI_HI, EPI_HI_RES, EPI_GEN, EPI_GEN_RES };

static int epi_kind(const struct kq8_dw_plane *pl)
{
    const struct k_q8_mult rm = pl->res ? pl->e->res_mult : (struct k_q8_mult){0, 1};
    if (pl->e->out_i32)
        return EPI_I32;
    if (kq8_hi_path(pl->mult, pl->res != NULL, rm))
        return pl->res ? EPI_HI_RES : EPI_HI;
    return pl->res ? EPI_GEN_RES : EPI_GEN;
}

static struct epi epi_of(const struct kq8_dw_plane *pl)
{
    const struct k_q8_epilogue *e = pl->e;
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult rm = pl->res ? e->res_mult : (struct k_q8_mult){0, 1};
    struct epi ep = {
        /* unsigned: the sum may wrap on the way, the final value fits */
        .init = _mm512_set1_epi32((int32_t)((uint32_t)pl->bias - 128u * (uint32_t)pl->wsum)),
        .mh = kq8_mult512_hi_of(pl->mult), .rh = kq8_mult512_hi_of(rm),
        .mv = kq8_mult512_of(pl->mult), .rv = kq8_mult512_of(rm),
        .lo64 = _mm512_set1_epi64(e->lo), .hi64 = _mm512_set1_epi64(e->hi),
        .lo32 = _mm512_set1_epi32(e->lo), .hi32 = _mm512_set1_epi32(e->hi),
    };
    return ep;
}

/* Lanes [0, left) of 16, for left in any range. */
static inline __mmask16 mask16(int64_t left)
{
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

/* Outputs t .. t + 15 as int32 lanes in [lo, hi], from their accumulator
 * (acc + bias); m: the lanes that exist (their residual bytes). */
static inline __attribute__((always_inline)) __m512i requant(const struct epi *ep, int64_t t, __m512i acc,
                                                             __mmask16 m, const int kind)
{
    const int has_res = kind == EPI_HI_RES || kind == EPI_GEN_RES;
    __m512i r = _mm512_setzero_si512(), q;
    if (has_res)
        r = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, ep->res + t));
    if (kind == EPI_HI || kind == EPI_HI_RES) {
        q = kq8_apply_hi512(acc, &ep->mh, 0);
        if (has_res)
            q = _mm512_add_epi32(q, kq8_apply_hi512(r, &ep->rh, 1));
        return _mm512_min_epi32(_mm512_max_epi32(q, ep->lo32), ep->hi32);
    }
    return kq8_requant16(acc, &ep->mv, has_res, r, &ep->rv, ep->lo64, ep->hi64);
}

/* Band outputs t .. t + 63 from 4 accumulators: all 64 exist when full,
 * else those before ep->n. int8 results are packed into one 64-byte store
 * (vpmovdb to memory is slow on Zen 4): the in-lane packs leave dword
 * 4l + k of the 64 bytes holding vector k's outputs 4l .. 4l + 3, which
 * one dword permute puts in order. */
static inline __attribute__((always_inline)) void store64(const struct epi *ep, int64_t t, const __m512i *acc,
                                                          const int kind, const int full)
{
    __mmask16 m[4];
#pragma GCC unroll 4
    for (ptrdiff_t v = 0; v < 4; v++)
        m[v] = full ? (__mmask16)0xFFFF : mask16(ep->n - t - 16 * v);
    if (kind == EPI_I32) {
#pragma GCC unroll 4
        for (ptrdiff_t v = 0; v < 4; v++)
            _mm512_mask_storeu_epi32((int32_t *)ep->y + t + 16 * v, m[v], acc[v]);
        return;
    }
    __m512i q[4];
#pragma GCC unroll 4
    for (ptrdiff_t v = 0; v < 4; v++)
        q[v] = requant(ep, t + 16 * v, acc[v], m[v], kind);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
    b = _mm512_permutexvar_epi32(order, b);
    if (full) {
        _mm512_storeu_si512((int8_t *)ep->y + t, b);
    } else {
        int64_t left = ep->n - t;
        __mmask64 bm = left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
        _mm512_mask_storeu_epi8((int8_t *)ep->y + t, bm, b);
    }
}

#define MAX_NV 8   /* vectors at a time: 8 independent vpdpbusd chains */

/* nv (4 or 8) vectors of 16 flat outputs from t; nv, kind and full are
 * constants at every call, so the loops unroll and the accumulators live
 * in registers. A partial group computes its vectors past ep->n too: they
 * read the block's slack (KQ8_DW_SLACK) and are not stored. */
static inline __attribute__((always_inline)) void conv_vectors(const struct kq8_dw_plane *pl, const struct epi *ep,
                                                               const int8_t *grid, int64_t t, const int nv,
                                                               const int kind, const int full)
{
    __m512i acc[MAX_NV];
#pragma GCC unroll 8
    for (ptrdiff_t v = 0; v < nv; v++)
        acc[v] = ep->init;
    const int8_t *g = grid + 4 * t;
    const int ntaps = pl->g->ntaps;
    for (ptrdiff_t k = 0; k < ntaps; k++) {
        const int8_t *s = g + pl->off[k];
        int32_t wq;
        memcpy(&wq, pl->w + 4 * k, sizeof(wq));
        const __m512i w = _mm512_set1_epi32(wq);
#pragma GCC unroll 8
        for (ptrdiff_t v = 0; v < nv; v++)
            acc[v] = _mm512_dpbusd_epi32(acc[v], _mm512_loadu_si512(s + 64 * v), w);
    }
#pragma GCC unroll 2
    for (ptrdiff_t v = 0; v < nv; v += 4)
        store64(ep, t + 16 * v, acc + v, kind, full);
}

static inline __attribute__((always_inline)) void conv_band(const struct kq8_dw_plane *pl, const struct epi *ep,
                                                            const int8_t *grid, const int kind)
{
    int64_t t = 0;
    for (; t + (int64_t)16 * MAX_NV <= ep->n; t += (int64_t)16 * MAX_NV)
        conv_vectors(pl, ep, grid, t, MAX_NV, kind, 1);
    for (; t < ep->n; t += 64)
        conv_vectors(pl, ep, grid, t, 4, kind, 0);
}

void kq8_dw_expand_avx512(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid)
{
    kq8_dw_expand(pl, r0, nr, grid, 1, expand_row);
}

void kq8_dw_band_avx512(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid)
{
    const struct k_conv2d *p = pl->p;
    const int kind = epi_kind(pl);
    const int64_t first = r0 * p->ow;
    struct epi ep = epi_of(pl);
    ep.n = nr * p->ow;
    ep.res = pl->res ? pl->res + first : NULL;
    ep.y = (char *)pl->y + first * (kind == EPI_I32 ? 4 : 1);
    switch (kind) {
    case EPI_I32: conv_band(pl, &ep, grid, EPI_I32); break;
    case EPI_HI: conv_band(pl, &ep, grid, EPI_HI); break;
    case EPI_HI_RES: conv_band(pl, &ep, grid, EPI_HI_RES); break;
    case EPI_GEN: conv_band(pl, &ep, grid, EPI_GEN); break;
    default: conv_band(pl, &ep, grid, EPI_GEN_RES); break;
    }
}
