/*
 * act_avx2.c - AVX2 element-wise loops: activation, add, one channel of an
 * affine, the sum of a row. Tails use maskload/maskstore, so every element goes through the
 * same vector arithmetic. y may alias an input element for element.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx2.h"

static __m256i tail_mask(int64_t lanes)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void kcpu_act_avx2(enum k_act act, int64_t count, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, kv8_act(act, _mm256_loadu_ps(x + i)));
    if (i < count) {
        __m256i m = tail_mask(count - i);
        _mm256_maskstore_ps(y + i, m, kv8_act(act, _mm256_maskload_ps(x + i, m)));
    }
}

void kcpu_add_avx2(int64_t count, const float *a, const float *b, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < count) {
        __m256i m = tail_mask(count - i);
        _mm256_maskstore_ps(y + i, m, _mm256_add_ps(_mm256_maskload_ps(a + i, m),
                                                    _mm256_maskload_ps(b + i, m)));
    }
}

float kcpu_sum_avx2(int64_t count, const float *x)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();   /* two chains of adds */
    int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
    }
    if (i + 8 <= count) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        i += 8;
    }
    if (i < count)
        s1 = _mm256_add_ps(s1, _mm256_maskload_ps(x + i, tail_mask(count - i)));
    return kv8_hsum(_mm256_add_ps(s0, s1));
}

void kcpu_affine_avx2(int64_t count, const float *x, float s, float t, float *y)
{
    __m256 vs = _mm256_set1_ps(s), vt = _mm256_set1_ps(t);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vs, vt));
    if (i < count) {
        __m256i m = tail_mask(count - i);
        _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(_mm256_maskload_ps(x + i, m), vs, vt));
    }
}
