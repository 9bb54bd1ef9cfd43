/*
 * layer_norm_avx512.c - one row of a layer normalisation on AVX-512
 * (kcpu_layer_norm.c has the algorithm): tails use masked loads, so every
 * element goes through the same arithmetic.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

static __mmask16 tail_mask(int64_t lanes) { return (__mmask16)((1u << lanes) - 1); }

void kcpu_layer_norm_row_avx512(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                                float stats[2])
{
    __m512 sum = _mm512_setzero_ps(), dsum = _mm512_setzero_ps(), sq = _mm512_setzero_ps();
    int64_t i = 0;
    __mmask16 m = tail_mask(n % 16);
    for (; i + 16 <= n; i += 16)
        sum = _mm512_add_ps(sum, _mm512_loadu_ps(x + i));
    if (i < n)
        sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(m, x + i));
    float mean = _mm512_reduce_add_ps(sum) / (float)n;
    __m512 vm = _mm512_set1_ps(mean);
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
        dsum = _mm512_add_ps(dsum, d);
        sq = _mm512_fmadd_ps(d, d, sq);
    }
    if (i < n) {
        __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), vm);
        dsum = _mm512_add_ps(dsum, d);
        sq = _mm512_fmadd_ps(d, d, sq);
    }
    float c = _mm512_reduce_add_ps(dsum) / (float)n;
    stats[0] = mean + c;
    stats[1] = 1 / sqrtf(_mm512_reduce_add_ps(sq) / (float)n - c * c + eps);
    if (!y)
        return;
    __m512 vc = _mm512_set1_ps(c), vinv = _mm512_set1_ps(stats[1]);
    __m512 one = _mm512_set1_ps(1), zero = _mm512_setzero_ps();
    for (i = 0; i < n; i += 16) {   /* (x - m0) - c: see kcpu_layer_norm.c */
        __mmask16 k = i + 16 <= n ? (__mmask16)0xffff : m;
        __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vc), vinv);
        __m512 vs = s ? _mm512_maskz_loadu_ps(k, s + i) : one, vb = b ? _mm512_maskz_loadu_ps(k, b + i) : zero;
        _mm512_mask_storeu_ps(y + i, k, _mm512_fmadd_ps(v, vs, vb));
    }
}
