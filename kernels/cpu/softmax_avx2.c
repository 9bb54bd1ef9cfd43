/*
 * softmax_avx2.c - one softmax along a contiguous axis on AVX2
 * (kcpu_softmax.c): the maximum, then e^(x - max) stored and summed in
 * 8 float lanes, then scaled by 1 / sum. exp is kv8_exp (about 1 ulp).
 * The tail of fewer than 8 in scalar code (expf).
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx2.h"

void kcpu_softmax_row_avx2(int64_t len, const float *x, float *y)
{
    int64_t body = len - len % 8, i;
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (i = 0; i < body; i += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
    float lanes[8];
    _mm256_storeu_ps(lanes, mx);
    float m = lanes[0];
    for (int l = 1; l < 8; l++)
        m = fmaxf(m, lanes[l]);
    for (i = body; i < len; i++)
        m = fmaxf(m, x[i]);
    __m256 vm = _mm256_set1_ps(m), sum = _mm256_setzero_ps();
    for (i = 0; i < body; i += 8) {
        __m256 e = kv8_exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(y + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    _mm256_storeu_ps(lanes, sum);
    float total = 0;
    for (int l = 0; l < 8; l++)
        total += lanes[l];
    for (i = body; i < len; i++) {
        y[i] = expf(x[i] - m);
        total += y[i];
    }
    __m256 inv = _mm256_set1_ps(1.0f / total);
    for (i = 0; i < body; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    for (i = body; i < len; i++)
        y[i] *= 1.0f / total;
}
