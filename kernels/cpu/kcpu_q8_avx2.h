/*
 * kcpu_q8_avx2.h - k_q8_apply (kernel_quant.h) on 8 int32 lanes, shared by
 * the INT8 kernels compiled for AVX2 (gemm_q8_avx2.c, kcpu_q8_dw_avx2.c,
 * q8_nhwc_avx2.c, q8_dwn_avx2.c).
 * Include only from *_avx2.c files: every function here is AVX2 code.
 *
 * The products are 64-bit (even and odd int32 lanes apart, vpmuldq). AVX2
 * has no 64-bit arithmetic shift: (t ^ 2^63) >> s (logical) minus
 * 2^(63 - s) is floor(t / 2^s) exactly, since 2^63 is a multiple of 2^s.
 *
 * The common case, kq8_requant8_hi, is 32-bit after the products, as
 * kcpu_q8_avx512.h's: with the accumulator's shift s >= 33, floor((t +
 * 2^(s-1)) / 2^s) = floor((hi32(t) + 2^(s-33)) / 2^(s-32)); a residual's
 * term (shift >= 8) is shifted left by 32 - s first where s < 32, which
 * neither overflows (|t| < 2^38) nor changes the floor. Its operations are
 * a third of the general path's.
 */
#ifndef KCPU_Q8_AVX2_H
#define KCPU_Q8_AVX2_H

#include <immintrin.h>
#include <string.h>

#include "../kernel_quant.h"

struct kq8_mult256 {
    __m256i m, rnd, bias;
    __m128i sh;
};

static inline struct kq8_mult256 kq8_mult256_of(struct k_q8_mult q)
{
    struct kq8_mult256 v = {_mm256_set1_epi32(q.m), _mm256_set1_epi64x((int64_t)1 << (q.shift - 1)),
                            _mm256_set1_epi64x((int64_t)((uint64_t)1 << (63 - q.shift))),
                            _mm_cvtsi32_si128(q.shift)};
    return v;
}

/* floor((x * m + rnd) / 2^shift) on the even int32 lanes of v, 64-bit lanes. */
static inline __m256i kq8_apply_even256(__m256i v, const struct kq8_mult256 *q)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    __m256i t = _mm256_add_epi64(_mm256_mul_epi32(v, q->m), q->rnd);
    return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_xor_si256(t, sign), q->sh), q->bias);
}

static inline __m256i kq8_clamp256(__m256i x, __m256i lo, __m256i hi)
{
    x = _mm256_blendv_epi8(x, lo, _mm256_cmpgt_epi64(lo, x));
    return _mm256_blendv_epi8(x, hi, _mm256_cmpgt_epi64(x, hi));
}

/* 8 outputs (as int32 lanes) from 8 (acc + bias) lanes and 8 residual
 * bytes at res (or none); lo and hi are the clamp as int64 lanes. */
static inline __m256i kq8_requant8(__m256i v, const struct kq8_mult256 *mv, const int8_t *res,
                                   const struct kq8_mult256 *rv, __m256i lo, __m256i hi)
{
    __m256i vo = _mm256_srli_epi64(v, 32);
    __m256i ev = kq8_apply_even256(v, mv);
    __m256i od = kq8_apply_even256(vo, mv);
    if (res) {
        int64_t r8;
        memcpy(&r8, res, sizeof(r8));
        __m256i r = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(r8)), ro = _mm256_srli_epi64(r, 32);
        ev = _mm256_add_epi64(ev, kq8_apply_even256(r, rv));
        od = _mm256_add_epi64(od, kq8_apply_even256(ro, rv));
    }
    ev = kq8_clamp256(ev, lo, hi);
    od = kq8_clamp256(od, lo, hi);
    return _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
}

/* kq8_requant8_hi's constants: the accumulator's multiplier (s >= 33),
 * the residual's (s >= 8, or none) and the clamp, as 32-bit lanes. */
struct kq8_hi256 {
    __m256i m, rnd;            /* rnd: 2^(s - 33) */
    __m128i sh;                /* s - 32 */
    __m256i rm, rrnd;          /* rrnd: 2^(s - 1), 64-bit lanes */
    __m128i rlsh, rrsh;        /* 32 - s or 0, s - 32 or 0 */
    __m256i lo, hi;
};

static inline int kq8_hi256_serves(struct k_q8_mult m, int has_res, struct k_q8_mult rm)
{
    return m.shift >= 33 && (!has_res || rm.shift >= 8);
}

/* rm is read only with a residual. */
static inline struct kq8_hi256 kq8_hi256_of(struct k_q8_mult m, struct k_q8_mult rm, int has_res, int32_t lo,
                                            int32_t hi)
{
    if (!has_res)
        rm = (struct k_q8_mult){0, 32};
    struct kq8_hi256 v = {
        _mm256_set1_epi32(m.m), _mm256_set1_epi32(1 << (m.shift - 33)), _mm_cvtsi32_si128(m.shift - 32),
        _mm256_set1_epi32(rm.m), _mm256_set1_epi64x((int64_t)1 << (rm.shift - 1)),
        _mm_cvtsi32_si128(rm.shift < 32 ? 32 - rm.shift : 0), _mm_cvtsi32_si128(rm.shift < 32 ? 0 : rm.shift - 32),
        _mm256_set1_epi32(lo), _mm256_set1_epi32(hi),
    };
    return v;
}

/* The high dwords of the 64-bit lanes e (even products) and o (odd ones),
 * in lane order. */
static inline __m256i kq8_hi32_256(__m256i e, __m256i o)
{
    return _mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA);
}

/* kq8_requant8 where kq8_hi256_serves, before the clamp: exact int32
 * values (a saturating pack to int8 then the clamp on bytes gives the
 * same bytes as clamping here). */
static inline __m256i kq8_requant8_hi_unclamped(__m256i v, const struct kq8_hi256 *q, const int8_t *res)
{
    __m256i e = _mm256_mul_epi32(v, q->m), o = _mm256_mul_epi32(_mm256_srli_epi64(v, 32), q->m);
    __m256i r32 = _mm256_sra_epi32(_mm256_add_epi32(kq8_hi32_256(e, o), q->rnd), q->sh);
    if (res) {
        int64_t r8;
        memcpy(&r8, res, sizeof(r8));
        __m256i r = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(r8));
        __m256i re = _mm256_add_epi64(_mm256_mul_epi32(r, q->rm), q->rrnd);
        __m256i ro = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(r, 32), q->rm), q->rrnd);
        re = _mm256_sll_epi64(re, q->rlsh);
        ro = _mm256_sll_epi64(ro, q->rlsh);
        r32 = _mm256_add_epi32(r32, _mm256_sra_epi32(kq8_hi32_256(re, ro), q->rrsh));
    }
    return r32;
}

/* kq8_requant8 where kq8_hi256_serves: the same results. */
static inline __m256i kq8_requant8_hi(__m256i v, const struct kq8_hi256 *q, const int8_t *res)
{
    return _mm256_min_epi32(_mm256_max_epi32(kq8_requant8_hi_unclamped(v, q, res), q->lo), q->hi);
}

/* ------------------------------------------------ lanes = output channels */
/* When the 8 lanes are 8 output channels (the channels-last convolutions),
 * each lane has its own multiplier and shift: the forms above, made per
 * lane (vpsravd, vpsrlvq). init is where a lane's sum starts (the bias).
 * Lanes past n get harmless constants (their results are not stored). */
struct kq8_lanes8 {
    __m256i init, m, m_odd;
    __m256i rnd32, sh32;                  /* the shift >= 33 form: 2^(s - 33), s - 32 */
    __m256i rnd_even, sh_even, bias_even; /* the general form on the even lanes, 64-bit: 2^(s - 1), s, 2^(63 - s) */
    __m256i rnd_odd, sh_odd, bias_odd;    /* and on the odd ones */
    int hi33;                             /* every lane's shift >= 33 */
};

static inline void kq8_lanes8_of(const int32_t *bias, const struct k_q8_mult *mult, int n, struct kq8_lanes8 *r)
{
    int32_t init[8], m[8], rnd32[8], sh32[8];
    int64_t rnd[2][4], sh[2][4], bs[2][4];
    r->hi33 = 1;
    for (int i = 0; i < 8; i++) {
        const struct k_q8_mult q = i < n ? mult[i] : (struct k_q8_mult){0, 33};
        init[i] = i < n ? bias[i] : 0;
        m[i] = q.m;
        r->hi33 = r->hi33 && q.shift >= 33;
        rnd32[i] = q.shift >= 33 ? 1 << (q.shift - 33) : 0;
        sh32[i] = q.shift - 32;
        rnd[i % 2][i / 2] = (int64_t)1 << (q.shift - 1);
        sh[i % 2][i / 2] = q.shift;
        bs[i % 2][i / 2] = (int64_t)((uint64_t)1 << (63 - q.shift));
    }
    r->init = _mm256_loadu_si256((const __m256i *)init);
    r->m = _mm256_loadu_si256((const __m256i *)m);
    r->m_odd = _mm256_srli_epi64(r->m, 32);
    r->rnd32 = _mm256_loadu_si256((const __m256i *)rnd32);
    r->sh32 = _mm256_loadu_si256((const __m256i *)sh32);
    r->rnd_even = _mm256_loadu_si256((const __m256i *)rnd[0]);
    r->sh_even = _mm256_loadu_si256((const __m256i *)sh[0]);
    r->bias_even = _mm256_loadu_si256((const __m256i *)bs[0]);
    r->rnd_odd = _mm256_loadu_si256((const __m256i *)rnd[1]);
    r->sh_odd = _mm256_loadu_si256((const __m256i *)sh[1]);
    r->bias_odd = _mm256_loadu_si256((const __m256i *)bs[1]);
}

/* What a layer's lanes share: the residual's multiplier in both forms and
 * the clamp, as int32 and int64 lanes. */
struct kq8_lane_epi8 {
    struct kq8_hi256 rh;        /* its residual part and lo, hi (int32) */
    struct kq8_mult256 rv;
    __m256i lo64, hi64;
    int has_res, res_hi;        /* res_hi: the residual's shift >= 8 (the hi form takes it) */
};

static inline struct kq8_lane_epi8 kq8_lane_epi8_of(const struct k_q8_epilogue *e, int has_res)
{
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult rm = has_res ? e->res_mult : (struct k_q8_mult){0, 32};
    struct kq8_lane_epi8 ep = {kq8_hi256_of((struct k_q8_mult){0, 33}, rm, has_res, e->lo, e->hi),
                               kq8_mult256_of(rm), _mm256_set1_epi64x(e->lo), _mm256_set1_epi64x(e->hi),
                               has_res, !has_res || rm.shift >= 8};
    return ep;
}

/* floor(t / 2^s) of 64-bit lanes t, a shift s and bias 2^(63 - s) per lane. */
static inline __m256i kq8_floor_shift256v(__m256i t, __m256i s, __m256i bias)
{
    return _mm256_sub_epi64(_mm256_srlv_epi64(_mm256_xor_si256(t, _mm256_set1_epi64x(INT64_MIN)), s), bias);
}

/* 8 outputs as int32 lanes from 8 sums (init already added) and 8
 * residual lanes r (read only with a residual): k_q8_requant(_res) lane by
 * lane, bit for bit. Stored with kq8_pack16_epi8 and kq8_store_bytes. */
static inline __attribute__((always_inline)) __m256i kq8_lanes8_requant(__m256i x, const struct kq8_lanes8 *l,
                                                                       const struct kq8_lane_epi8 *ep, __m256i r)
{
    if (l->hi33 && ep->res_hi) {
        const struct kq8_hi256 *q = &ep->rh;
        __m256i e = _mm256_mul_epi32(x, l->m), o = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), l->m_odd);
        __m256i r32 = _mm256_srav_epi32(_mm256_add_epi32(kq8_hi32_256(e, o), l->rnd32), l->sh32);
        if (ep->has_res) {
            __m256i re = _mm256_add_epi64(_mm256_mul_epi32(r, q->rm), q->rrnd);
            __m256i ro = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(r, 32), q->rm), q->rrnd);
            re = _mm256_sll_epi64(re, q->rlsh);
            ro = _mm256_sll_epi64(ro, q->rlsh);
            r32 = _mm256_add_epi32(r32, _mm256_sra_epi32(kq8_hi32_256(re, ro), q->rrsh));
        }
        return _mm256_min_epi32(_mm256_max_epi32(r32, q->lo), q->hi);
    }
    __m256i ev = kq8_floor_shift256v(_mm256_add_epi64(_mm256_mul_epi32(x, l->m), l->rnd_even), l->sh_even,
                                     l->bias_even);
    __m256i od = kq8_floor_shift256v(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), l->m_odd),
                                                      l->rnd_odd),
                                     l->sh_odd, l->bias_odd);
    if (ep->has_res) {
        ev = _mm256_add_epi64(ev, kq8_apply_even256(r, &ep->rv));
        od = _mm256_add_epi64(od, kq8_apply_even256(_mm256_srli_epi64(r, 32), &ep->rv));
    }
    ev = kq8_clamp256(ev, ep->lo64, ep->hi64);
    od = kq8_clamp256(od, ep->lo64, ep->hi64);
    return _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
}

/* The n bytes at p (8 read where n >= 8) as int32 lanes, zero past n. */
static inline __m256i kq8_load8_epi8(const int8_t *p, int n)
{
    if (n >= 8)
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
    int8_t t[8] = {0};
    for (int i = 0; i < n; i++)
        t[i] = p[i];
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)t));
}

/* The low bytes of 16 int32 lanes (each within int8), v0's then v1's,
 * in order: saturating packs (exact on int8 values), one dword shuffle. */
static inline __m128i kq8_pack16_epi8(__m256i v0, __m256i v1)
{
    /* per 128-bit half: v0's four int16, v1's four; then their bytes twice */
    const __m256i w = _mm256_packs_epi32(v0, v1), b = _mm256_packs_epi16(w, w);
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)));
}

/* The first n (<= 16) bytes of o to p. */
static inline void kq8_store_bytes(int8_t *p, __m128i o, int n)
{
    if (n >= 16) {
        _mm_storeu_si128((__m128i *)p, o);
        return;
    }
    if (n == 8) {
        _mm_storel_epi64((__m128i *)p, o);
        return;
    }
    int8_t t[16];
    _mm_storeu_si128((__m128i *)t, o);
    for (int i = 0; i < n; i++)
        p[i] = t[i];
}

/* n (<= 8) int32 lanes of v to p. */
static inline void kq8_store8_epi32(int32_t *p, __m256i v, int n)
{
    if (n >= 8) {
        _mm256_storeu_si256((__m256i *)p, v);
        return;
    }
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_epi32(p, mask, v);
}

#endif /* KCPU_Q8_AVX2_H */
