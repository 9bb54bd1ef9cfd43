/*
 * kcpu_math_avx2.h - 8-lane exp, tanh, erf and the activations built on
 * them, for the AVX2 files only (include it from *_avx2.c, which the
 * Makefile compiles with -mavx2 -mfma).
 *
 * Accuracy: exp and the small-|x| tanh polynomial are Cephes' single
 * precision ones (about 1 ulp); erfc has relative error below 1.2e-7. The
 * activations are written so that they keep relative accuracy where their
 * value is tiny (GELU's negative tail), not only absolute accuracy.
 * kcpu_math_avx512.h is the same algorithm on 16 lanes; keep them in step.
 */
#ifndef KCPU_MATH_AVX2_H
#define KCPU_MATH_AVX2_H

#include <immintrin.h>

#include "../kernel_types.h"

/* exp(x) for x clamped to [-87.34, 88]: inside the range both the result
 * and the 2^n built in the exponent field stay normal floats. */
static inline __m256 kv8_exp(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33654f)), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* The sum of v's 8 lanes. */
static inline float kv8_hsum(__m256 v)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

static inline __m256 kv8_abs(__m256 x)
{
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fffffff)));
}

/* Gives |mag| the sign of s. */
static inline __m256 kv8_copysign(__m256 mag, __m256 s)
{
    __m256i sign = _mm256_and_si256(_mm256_castps_si256(s), _mm256_set1_epi32((int)0x80000000u));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(kv8_abs(mag)), sign));
}

static inline __m256 kv8_tanh(__m256 x)
{
    __m256 ax = kv8_abs(x);
    /* Small |x|: odd polynomial, avoiding 1 - 2/(e+1) cancellation. */
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    /* tanh(9) rounds to 1 in float; the clamp keeps exp finite. */
    __m256 e = kv8_exp(_mm256_mul_ps(_mm256_min_ps(ax, _mm256_set1_ps(9.0f)), _mm256_set1_ps(2.0f)));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                               _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm256_blendv_ps(kv8_copysign(big, x), small, is_small);
}

/* erfc(|z|) with relative error below 1.2e-7 over the whole range
 * (Numerical Recipes' Chebyshev fit), so GELU keeps its relative accuracy
 * far into the negative tail where 1 + erf would cancel. */
static inline __m256 kv8_erfc_abs(__m256 z)
{
    __m256 az = kv8_abs(z);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(az, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(0.17087277f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
    return _mm256_mul_ps(t, kv8_exp(_mm256_fnmadd_ps(az, az, p)));
}

static inline __m256 kv8_act(enum k_act act, __m256 x)
{
    const __m256 zero = _mm256_setzero_ps(), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    switch (act) {
    case K_ACT_RELU:
        return _mm256_max_ps(x, zero);
    case K_ACT_RELU6:
        return _mm256_min_ps(_mm256_max_ps(x, zero), _mm256_set1_ps(6.0f));
    case K_ACT_SIGMOID:
        return _mm256_div_ps(one, _mm256_add_ps(one, kv8_exp(_mm256_sub_ps(zero, x))));
    case K_ACT_TANH:
        return kv8_tanh(x);
    case K_ACT_GELU: {
        /* x/2 * erfc(-x/sqrt2): erfc(|z|) below zero, 2 - erfc(|z|) above. */
        __m256 e = kv8_erfc_abs(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
        __m256 pos = _mm256_cmp_ps(x, zero, _CMP_GT_OQ);
        e = _mm256_blendv_ps(e, _mm256_sub_ps(_mm256_set1_ps(2.0f), e), pos);
        return _mm256_mul_ps(_mm256_mul_ps(half, x), e);
    }
    case K_ACT_GELU_TANH: {
        /* x/2 * (1 + tanh(u)) == x * sigmoid(2u), which does not cancel for u << 0. */
        __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        __m256 u2 = _mm256_mul_ps(_mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x),
                                  _mm256_set1_ps(-1.59576912160573072f));
        return _mm256_div_ps(x, _mm256_add_ps(one, kv8_exp(u2)));
    }
    case K_ACT_HARDSWISH: {
        __m256 r6 = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(x, _mm256_set1_ps(3.0f)), zero), _mm256_set1_ps(6.0f));
        return _mm256_mul_ps(_mm256_mul_ps(x, r6), _mm256_set1_ps(1.0f / 6.0f));
    }
    case K_ACT_SILU:
        return _mm256_div_ps(x, _mm256_add_ps(one, kv8_exp(_mm256_sub_ps(zero, x))));
    default:
        return x;
    }
}

/* kv8_act with the clamps (none, ReLU, ReLU6) inline and the rest called:
 * GCC keeps kv8_act, with its exp and erfc, out of line in the epilogues
 * that use it, a call per vector even for a ReLU. */
static inline __attribute__((always_inline)) __m256 kv8_act_clamp_inline(enum k_act act, __m256 x)
{
    switch (act) {
    case K_ACT_NONE:
        return x;
    case K_ACT_RELU:
        return _mm256_max_ps(x, _mm256_setzero_ps());
    case K_ACT_RELU6:
        return _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(6.0f));
    default:
        return kv8_act(act, x);
    }
}

#endif /* KCPU_MATH_AVX2_H */
