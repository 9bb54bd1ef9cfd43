/*
 * layer_norm_avx2.c - one row of a layer normalisation on AVX2
 * (kcpu_layer_norm.c has the algorithm); the tail of fewer than 8 elements
 * in scalar code.
 */
#include <immintrin.h>

#include "kcpu_impl.h"
#include "kcpu_math_avx2.h"

void kcpu_layer_norm_row_avx2(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                              float stats[2])
{
    __m256 sum = _mm256_setzero_ps(), dsum = _mm256_setzero_ps(), sq = _mm256_setzero_ps();
    float tail = 0, dtail = 0, sqtail = 0;
    int64_t i = 0, body = n - n % 8;
    for (; i < body; i += 8)
        sum = _mm256_add_ps(sum, _mm256_loadu_ps(x + i));
    for (; i < n; i++)
        tail += x[i];
    float mean = (kv8_hsum(sum) + tail) / (float)n;
    __m256 vm = _mm256_set1_ps(mean);
    for (i = 0; i < body; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        dsum = _mm256_add_ps(dsum, d);
        sq = _mm256_fmadd_ps(d, d, sq);
    }
    for (; i < n; i++) {
        float d = x[i] - mean;
        dtail += d;
        sqtail += d * d;
    }
    float c = (kv8_hsum(dsum) + dtail) / (float)n;
    stats[0] = mean + c;
    stats[1] = 1 / sqrtf((kv8_hsum(sq) + sqtail) / (float)n - c * c + eps);
    if (!y)
        return;
    __m256 vc = _mm256_set1_ps(c), vinv = _mm256_set1_ps(stats[1]);
    __m256 one = _mm256_set1_ps(1), zero = _mm256_setzero_ps();
    for (i = 0; i < body; i += 8) {   /* (x - m0) - c: see kcpu_layer_norm.c */
        __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vc), vinv);
        __m256 vs = s ? _mm256_loadu_ps(s + i) : one, vb = b ? _mm256_loadu_ps(b + i) : zero;
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(v, vs, vb));
    }
    for (; i < n; i++)
        y[i] = (x[i] - mean - c) * stats[1] * (s ? s[i] : 1.0f) + (b ? b[i] : 0.0f);
}
