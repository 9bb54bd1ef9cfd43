/*
 * kcpu_math_avx512.h - 16-lane exp, tanh, erf and the activations built on
 * them, for the AVX-512 files only (include it from *_avx512.c, which the
 * Makefile compiles with the AVX-512 flags).
 *
 * Accuracy: exp and the small-|x| tanh polynomial are Cephes' single
 * precision ones (about 1 ulp); erfc has relative error below 1.2e-7. The
 * activations are written so that they keep relative accuracy where their
 * value is tiny (GELU's negative tail), not only absolute accuracy.
 * kcpu_math_avx2.h is the same algorithm on 8 lanes; keep them in step.
 */
#ifndef KCPU_MATH_AVX512_H
#define KCPU_MATH_AVX512_H

#include <immintrin.h>

#include "../kernel_types.h"

/* exp(x) for x clamped to [-87.34, 88]: inside the range both the result
 * and the 2^n built in the exponent field stay normal floats. */
static inline __m512 kv16_exp(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33654f)), _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

static inline __m512 kv16_abs(__m512 x)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

/* Gives |mag| the sign of s. */
static inline __m512 kv16_copysign(__m512 mag, __m512 s)
{
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(kv16_abs(mag)), sign));
}

static inline __m512 kv16_tanh(__m512 x)
{
    __m512 ax = kv16_abs(x);
    /* Small |x|: odd polynomial, avoiding 1 - 2/(e+1) cancellation. */
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    /* tanh(9) rounds to 1 in float; the clamp keeps exp finite. */
    __m512 e = kv16_exp(_mm512_mul_ps(_mm512_min_ps(ax, _mm512_set1_ps(9.0f)), _mm512_set1_ps(2.0f)));
    __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                               _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(is_small, kv16_copysign(big, x), small);
}

/* erfc(|z|) with relative error below 1.2e-7 over the whole range
 * (Numerical Recipes' Chebyshev fit), so GELU keeps its relative accuracy
 * far into the negative tail where 1 + erf would cancel. */
static inline __m512 kv16_erfc_abs(__m512 z)
{
    __m512 az = kv16_abs(z);
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                             _mm512_fmadd_ps(az, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    return _mm512_mul_ps(t, kv16_exp(_mm512_fnmadd_ps(az, az, p)));
}

static inline __m512 kv16_act(enum k_act act, __m512 x)
{
    const __m512 zero = _mm512_setzero_ps(), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    switch (act) {
    case K_ACT_RELU:
        return _mm512_max_ps(x, zero);
    case K_ACT_RELU6:
        return _mm512_min_ps(_mm512_max_ps(x, zero), _mm512_set1_ps(6.0f));
    case K_ACT_SIGMOID:
        return _mm512_div_ps(one, _mm512_add_ps(one, kv16_exp(_mm512_sub_ps(zero, x))));
    case K_ACT_TANH:
        return kv16_tanh(x);
    case K_ACT_GELU: {
        /* x/2 * erfc(-x/sqrt2): erfc(|z|) below zero, 2 - erfc(|z|) above. */
        __m512 e = kv16_erfc_abs(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
        __mmask16 pos = _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ);
        e = _mm512_mask_sub_ps(e, pos, _mm512_set1_ps(2.0f), e);
        return _mm512_mul_ps(_mm512_mul_ps(half, x), e);
    }
    case K_ACT_GELU_TANH: {
        /* x/2 * (1 + tanh(u)) == x * sigmoid(2u), which does not cancel for u << 0. */
        __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
        __m512 u2 = _mm512_mul_ps(_mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x),
                                  _mm512_set1_ps(-1.59576912160573072f));
        return _mm512_div_ps(x, _mm512_add_ps(one, kv16_exp(u2)));
    }
    case K_ACT_HARDSWISH: {
        __m512 r6 = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(x, _mm512_set1_ps(3.0f)), zero), _mm512_set1_ps(6.0f));
        return _mm512_mul_ps(_mm512_mul_ps(x, r6), _mm512_set1_ps(1.0f / 6.0f));
    }
    case K_ACT_SILU:
        return _mm512_div_ps(x, _mm512_add_ps(one, kv16_exp(_mm512_sub_ps(zero, x))));
    default:
        return x;
    }
}

#endif /* KCPU_MATH_AVX512_H */
