/*
 * softmax_avx512.c - one softmax along a contiguous axis on AVX-512
 * (kcpu_softmax.c): the maximum, then e^(x - max) stored and summed in
 * 16 float lanes, then scaled by 1 / sum. exp is kv16_exp (about 1 ulp).
 * Tails use masked loads and stores.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx512.h"

void kcpu_softmax_row_avx512(int64_t len, const float *x, float *y)
{
    __mmask16 tail = (__mmask16)((1u << (len % 16)) - 1);
    int64_t body = len - len % 16, i;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (i = 0; i < body; i += 16)
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
    if (tail)
        mx = _mm512_mask_max_ps(mx, tail, mx, _mm512_maskz_loadu_ps(tail, x + i));
    __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (i = 0; i < body; i += 16) {
        __m512 e = kv16_exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
        _mm512_storeu_ps(y + i, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (tail) {
        __m512 e = kv16_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), m));
        _mm512_mask_storeu_ps(y + i, tail, e);
        sum = _mm512_mask_add_ps(sum, tail, sum, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (i = 0; i < body; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
    if (tail)
        _mm512_mask_storeu_ps(y + i, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + i), inv));
}
