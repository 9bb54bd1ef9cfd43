/*
 * kcpu_q8_avx512.h - k_q8_apply (kernel_quant.h) on 16 int32 lanes, shared
 * by the INT8 kernels compiled for AVX-512 (gemm_q8_avx512.c,
 * kcpu_q8_dw_avx512.c). Include only from *_avx512.c files: every function
 * here is AVX-512 code.
 *
 * The general path works in 64-bit lanes (even and odd int32 lanes apart,
 * vpmuldq + vpsraq), exactly k_q8_apply. The common case takes fewer
 * operations: when the shift s is at least 32, floor(t / 2^s) =
 * floor(hi32(t) / 2^(s - 32)), hi32(t) being the high dword of the 64-bit
 * t (itself floor(t / 2^32)), so the even and odd products meet in one
 * vector and the rest is 32-bit. A small int8 operand (the residual,
 * |x * m| < 2^38) with 8 <= s < 32 is first shifted left by 32 - s, which
 * neither overflows nor changes the floor. With s = 32 + r, r >= 1 (every
 * conv layer of the served models: M < 1/4), the rounding term joins after
 * the products meet, in 32 bits: floor((t + 2^(s-1)) / 2^s) =
 * floor((hi32(t) + 2^(r-1)) / 2^r), a floor of a floor by powers of two.
 */
#ifndef KCPU_Q8_AVX512_H
#define KCPU_Q8_AVX512_H

#include <immintrin.h>

#include "../kernel_quant.h"

struct kq8_mult512 {
    __m512i m, rnd;
    __m128i sh;
};

static inline struct kq8_mult512 kq8_mult512_of(struct k_q8_mult q)
{
    struct kq8_mult512 v = {_mm512_set1_epi32(q.m), _mm512_set1_epi64((int64_t)1 << (q.shift - 1)),
                            _mm_cvtsi32_si128(q.shift)};
    return v;
}

/* k_q8_apply on the even (odd) int32 lanes of v, as 64-bit lanes. */
static inline __m512i kq8_apply_even512(__m512i v, const struct kq8_mult512 *q)
{
    return _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(v, q->m), q->rnd), q->sh);
}

static inline __m512i kq8_apply_odd512(__m512i v, const struct kq8_mult512 *q)
{
    return kq8_apply_even512(_mm512_srli_epi64(v, 32), q);
}

/* The shift-of-at-least-32 form (see the top of the file). */
struct kq8_mult512_hi {
    __m512i m, rnd;
    __m512i lsh, rsh;   /* in every lane: a shift by a vector of counts is one uop, by an xmm count two */
};

static inline struct kq8_mult512_hi kq8_mult512_hi_of(struct k_q8_mult q)
{
    struct kq8_mult512_hi v = {_mm512_set1_epi32(q.m), _mm512_set1_epi64((int64_t)1 << (q.shift - 1)),
                               _mm512_set1_epi64(q.shift < 32 ? 32 - q.shift : 0),
                               _mm512_set1_epi32(q.shift < 32 ? 0 : q.shift - 32)};
    return v;
}

/* Whether kq8_apply_hi512 serves a layer: the accumulator's shift is at
 * least 32, and a residual's (if any) at least 8. */
static inline int kq8_hi_path(struct k_q8_mult m, int has_res, struct k_q8_mult res_mult)
{
    return m.shift >= 32 && (!has_res || res_mult.shift >= 8);
}

/* The high dwords of the 64-bit lanes e (even products) and o (odd ones)
 * as one vector of 16: one in-lane shuffle moves e's down beside o's. */
static inline __m512i kq8_hi32_512(__m512i e, __m512i o)
{
    return _mm512_mask_shuffle_epi32(o, 0x5555, e, _MM_PERM_CDAB);
}

static inline __attribute__((always_inline)) __m512i kq8_apply_hi512(__m512i x, const struct kq8_mult512_hi *q,
                                                                     int lsh)
{
    __m512i e = _mm512_add_epi64(_mm512_mul_epi32(x, q->m), q->rnd);
    __m512i o = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), q->m), q->rnd);
    if (lsh) {
        e = _mm512_sllv_epi64(e, q->lsh);
        o = _mm512_sllv_epi64(o, q->lsh);
    }
    return _mm512_srav_epi32(kq8_hi32_512(e, o), q->rsh);
}

/* The shift-of-at-least-33 form (see the top of the file): rnd holds
 * 2^(s - 33) in 32-bit lanes, sh s - 32. |hi32(t)| <= 2^30 and
 * rnd <= 2^29, so the sum fits. */
struct kq8_mult512_hi33 {
    __m512i m, rnd;
    __m128i sh;
};

static inline int kq8_hi33_path(struct k_q8_mult m)
{
    return m.shift >= 33;
}

static inline struct kq8_mult512_hi33 kq8_mult512_hi33_of(struct k_q8_mult q)
{
    struct kq8_mult512_hi33 v = {_mm512_set1_epi32(q.m), _mm512_set1_epi32(1 << (q.shift - 33)),
                                 _mm_cvtsi32_si128(q.shift - 32)};
    return v;
}

static inline __attribute__((always_inline)) __m512i kq8_apply_hi33_512(__m512i x, const struct kq8_mult512_hi33 *q)
{
    __m512i e = _mm512_mul_epi32(x, q->m), o = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), q->m);
    return _mm512_sra_epi32(_mm512_add_epi32(kq8_hi32_512(e, o), q->rnd), q->sh);
}

/* The general path's end: the residual's term added to the even (ev) and
 * odd (od) results in 64-bit lanes, the clamp [lo, hi] (as int64 lanes),
 * and the 16 results back as int32 lanes in order. */
static inline __m512i kq8_requant_tail16(__m512i ev, __m512i od, int has_res, __m512i r,
                                         const struct kq8_mult512 *rv, __m512i lo, __m512i hi)
{
    if (has_res) {
        ev = _mm512_add_epi64(ev, kq8_apply_even512(r, rv));
        od = _mm512_add_epi64(od, kq8_apply_odd512(r, rv));
    }
    ev = _mm512_min_epi64(_mm512_max_epi64(ev, lo), hi);
    od = _mm512_min_epi64(_mm512_max_epi64(od, lo), hi);
    return _mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32));
}

/* 16 outputs, as int32 lanes, from 16 (acc + bias) lanes and 16 residual
 * lanes: the general 64-bit path; lo and hi are the clamp as int64 lanes. */
static inline __m512i kq8_requant16(__m512i v, const struct kq8_mult512 *mv, int has_res, __m512i r,
                                    const struct kq8_mult512 *rv, __m512i lo, __m512i hi)
{
    return kq8_requant_tail16(kq8_apply_even512(v, mv), kq8_apply_odd512(v, mv), has_res, r, rv, lo, hi);
}

/* ------------------------------------------------ lanes = output channels */
/* When the 16 lanes are 16 output channels (the matrix-vector kernel, the
 * channels-last convolutions), each lane has its own multiplier and shift:
 * the forms above, made per lane. init is where a lane's sum starts:
 * bias - 128 * wsum (the VNNI kernels' flipped sign bits). Lanes past n
 * get harmless constants (their results are not stored). */
struct kq8_lanes16 {
    __m512i init, m, m_odd;
    __m512i rnd32, sh32;        /* the shift >= 33 form: 2^(s - 33), s - 32 */
    __m512i rnd_even, sh_even;  /* the general form, 64-bit lanes of the even lanes */
    __m512i rnd_odd, sh_odd;    /* and of the odd ones */
    int hi33;                   /* every lane's shift >= 33 */
};

/* wsum may be NULL (sums taken on unflipped bytes: init = bias). */
static inline void kq8_lanes16_of(const int32_t *bias, const int32_t *wsum, const struct k_q8_mult *mult, int n,
                                  struct kq8_lanes16 *r)
{
    int32_t init[16], m[16], rnd32[16], sh32[16];
    int64_t rnd64[16], sh64[16];
    r->hi33 = 1;
    for (int i = 0; i < 16; i++) {
        const struct k_q8_mult q = i < n ? mult[i] : (struct k_q8_mult){0, 33};
        /* unsigned: the sum may wrap on the way, the final value fits */
        init[i] = i < n ? (int32_t)((uint32_t)bias[i] - (wsum ? 128u * (uint32_t)wsum[i] : 0u)) : 0;
        m[i] = q.m;
        r->hi33 = r->hi33 && kq8_hi33_path(q);
        rnd32[i] = q.shift >= 33 ? 1 << (q.shift - 33) : 0;
        sh32[i] = q.shift - 32;
        rnd64[i] = (int64_t)1 << (q.shift - 1);
        sh64[i] = q.shift;
    }
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    r->init = _mm512_loadu_si512(init);
    r->m = _mm512_loadu_si512(m);
    r->m_odd = _mm512_srli_epi64(r->m, 32);
    r->rnd32 = _mm512_loadu_si512(rnd32);
    r->sh32 = _mm512_loadu_si512(sh32);
    r->rnd_even = _mm512_permutex2var_epi64(_mm512_loadu_si512(rnd64), even, _mm512_loadu_si512(rnd64 + 8));
    r->rnd_odd = _mm512_permutex2var_epi64(_mm512_loadu_si512(rnd64), odd, _mm512_loadu_si512(rnd64 + 8));
    r->sh_even = _mm512_permutex2var_epi64(_mm512_loadu_si512(sh64), even, _mm512_loadu_si512(sh64 + 8));
    r->sh_odd = _mm512_permutex2var_epi64(_mm512_loadu_si512(sh64), odd, _mm512_loadu_si512(sh64 + 8));
}

/* What a layer's lanes share: the residual's multiplier in both forms and
 * the clamp, as int32 and int64 lanes. */
struct kq8_lane_epi {
    struct kq8_mult512_hi rh;
    struct kq8_mult512 rv;
    __m512i lo32, hi32, lo64, hi64;
    int has_res, res_hi;        /* res_hi: the residual's shift >= 8 (the hi form takes it) */
};

static inline struct kq8_lane_epi kq8_lane_epi_of(const struct k_q8_epilogue *e, int has_res)
{
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult rm = has_res ? e->res_mult : (struct k_q8_mult){0, 1};
    struct kq8_lane_epi ep = {kq8_mult512_hi_of(rm), kq8_mult512_of(rm), _mm512_set1_epi32(e->lo),
                              _mm512_set1_epi32(e->hi), _mm512_set1_epi64(e->lo), _mm512_set1_epi64(e->hi),
                              has_res, !has_res || rm.shift >= 8};
    return ep;
}

/* 16 outputs as int32 lanes from 16 sums (init already added) and 16
 * residual lanes (read only with a residual): k_q8_requant(_res) lane by
 * lane, bit for bit. */
static inline __attribute__((always_inline)) __m512i kq8_lanes_requant_hi33(__m512i x, const struct kq8_lanes16 *r,
                                                                            const struct kq8_lane_epi *ep,
                                                                            const int has_res, __m512i res)
{
    __m512i e = _mm512_mul_epi32(x, r->m), o = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd);
    __m512i q = _mm512_srav_epi32(_mm512_add_epi32(kq8_hi32_512(e, o), r->rnd32), r->sh32);
    if (has_res)
        q = _mm512_add_epi32(q, kq8_apply_hi512(res, &ep->rh, 1));
    return _mm512_min_epi32(_mm512_max_epi32(q, ep->lo32), ep->hi32);
}

static inline __attribute__((always_inline)) __m512i kq8_lanes_requant_wide(__m512i x, const struct kq8_lanes16 *r,
                                                                           const struct kq8_lane_epi *ep,
                                                                           const int has_res, __m512i res)
{
    __m512i ev = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, r->m), r->rnd_even), r->sh_even);
    __m512i od = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd),
                                                    r->rnd_odd), r->sh_odd);
    return kq8_requant_tail16(ev, od, has_res, res, &ep->rv, ep->lo64, ep->hi64);
}

/* Whether the lanes take the 32-bit form (kq8_lanes_requant_hi33). */
static inline int kq8_lanes_hi33(const struct kq8_lanes16 *r, const struct kq8_lane_epi *ep)
{
    return r->hi33 && ep->res_hi;
}

static inline __attribute__((always_inline)) __m512i kq8_lanes_requant(__m512i x, const struct kq8_lanes16 *r,
                                                                       const struct kq8_lane_epi *ep, __m512i res)
{
    if (kq8_lanes_hi33(r, ep))
        return kq8_lanes_requant_hi33(x, r, ep, ep->has_res, res);
    return kq8_lanes_requant_wide(x, r, ep, ep->has_res, res);
}

#endif /* KCPU_Q8_AVX512_H */
