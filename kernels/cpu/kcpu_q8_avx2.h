/*
 * kcpu_q8_avx2.h - k_q8_apply (kernel_quant.h) on 8 int32 lanes, shared by
 * the INT8 kernels compiled for AVX2 (gemm_q8_avx2.c, kcpu_q8_dw_avx2.c).
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

/* kq8_requant8 where kq8_hi256_serves: the same results. */
static inline __m256i kq8_requant8_hi(__m256i v, const struct kq8_hi256 *q, const int8_t *res)
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
    return _mm256_min_epi32(_mm256_max_epi32(r32, q->lo), q->hi);
}

#endif /* KCPU_Q8_AVX2_H */
