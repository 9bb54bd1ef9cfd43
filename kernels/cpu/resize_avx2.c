/*
 * resize_avx2.c - the row blend of resampling on AVX2 (kcpu_resize.c):
 * dst = the sum of w[k] * rows[k] over n rows of len elements; the tail of
 * fewer than 8 in scalar code.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

void kcpu_blend_rows_avx2(int n, const float *const *rows, const float *w, int64_t len, float *dst)
{
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_set1_ps(w[0]), _mm256_loadu_ps(rows[0] + i));
        for (int k = 1; k < n; k++)
            v = _mm256_fmadd_ps(_mm256_set1_ps(w[k]), _mm256_loadu_ps(rows[k] + i), v);
        _mm256_storeu_ps(dst + i, v);
    }
    for (; i < len; i++) {
        float v = w[0] * rows[0][i];
        for (int k = 1; k < n; k++)
            v = fmaf(w[k], rows[k][i], v);
        dst[i] = v;
    }
}
