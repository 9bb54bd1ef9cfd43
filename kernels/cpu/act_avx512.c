/*
 * act_avx512.c - AVX-512 element-wise loops: activation, add, one channel of
 * an affine, the sum of a row. Tails use masked loads and stores, so every element goes
 * through the same vector arithmetic. y may alias an input element for
 * element: each vector is loaded before it is stored.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx512.h"

static __mmask16 tail_mask(int64_t lanes)
{
    return (__mmask16)((1u << lanes) - 1);
}

void kcpu_act_avx512(enum k_act act, int64_t count, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_ps(y + i, kv16_act(act, _mm512_loadu_ps(x + i)));
    if (i < count) {
        __mmask16 m = tail_mask(count - i);
        _mm512_mask_storeu_ps(y + i, m, kv16_act(act, _mm512_maskz_loadu_ps(m, x + i)));
    }
}

void kcpu_add_avx512(int64_t count, const float *a, const float *b, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < count) {
        __mmask16 m = tail_mask(count - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i),
                                                      _mm512_maskz_loadu_ps(m, b + i)));
    }
}

float kcpu_sum_avx512(int64_t count, const float *x)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();   /* two chains of adds */
    int64_t i = 0;
    for (; i + 32 <= count; i += 32) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
        s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
    }
    if (i + 16 <= count) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
        i += 16;
    }
    if (i < count)
        s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(tail_mask(count - i), x + i));
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

void kcpu_affine_avx512(int64_t count, const float *x, float s, float t, float *y)
{
    __m512 vs = _mm512_set1_ps(s), vt = _mm512_set1_ps(t);
    int64_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), vs, vt));
    if (i < count) {
        __mmask16 m = tail_mask(count - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), vs, vt));
    }
}
