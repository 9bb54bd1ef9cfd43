/*
 * resize_avx512.c - the row blend of resampling on AVX-512 (kcpu_resize.c):
 * dst = the sum of w[k] * rows[k] over n rows of len elements, the tail
 * through masked loads and stores.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

void kcpu_blend_rows_avx512(int n, const float *const *rows, const float *w, int64_t len, float *dst)
{
    int64_t i = 0;
    for (; i + 16 <= len; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_set1_ps(w[0]), _mm512_loadu_ps(rows[0] + i));
        for (int k = 1; k < n; k++)
            v = _mm512_fmadd_ps(_mm512_set1_ps(w[k]), _mm512_loadu_ps(rows[k] + i), v);
        _mm512_storeu_ps(dst + i, v);
    }
    if (i < len) {
        __mmask16 m = (__mmask16)((1u << (len - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_set1_ps(w[0]), _mm512_maskz_loadu_ps(m, rows[0] + i));
        for (int k = 1; k < n; k++)
            v = _mm512_fmadd_ps(_mm512_set1_ps(w[k]), _mm512_maskz_loadu_ps(m, rows[k] + i), v);
        _mm512_mask_storeu_ps(dst + i, m, v);
    }
}
