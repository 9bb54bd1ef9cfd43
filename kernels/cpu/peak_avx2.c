/*
 * peak_avx2.c - the FMA loop that measures this core's FP32 peak with AVX2:
 * twelve independent accumulator chains (see peak_avx512.c).
 */
#include <immintrin.h>

#include "kcpu_impl.h"

float kcpu_peak_fma_avx2(int64_t iters)
{
    /* Named variables, not an array: an array the compiler may keep in
     * memory, and then the loop measures stores. */
    __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
    __m256 c0 = _mm256_set1_ps(0.0f), c1 = _mm256_set1_ps(1.0f), c2 = _mm256_set1_ps(2.0f), c3 = _mm256_set1_ps(3.0f);
    __m256 c4 = _mm256_set1_ps(4.0f), c5 = _mm256_set1_ps(5.0f), c6 = _mm256_set1_ps(6.0f), c7 = _mm256_set1_ps(7.0f);
    __m256 c8 = _mm256_set1_ps(8.0f), c9 = _mm256_set1_ps(9.0f), c10 = _mm256_set1_ps(10.0f), c11 = _mm256_set1_ps(11.0f);
    for (int64_t n = 0; n < iters; n++) {
        c0 = _mm256_fmadd_ps(a, c0, b);
        c1 = _mm256_fmadd_ps(a, c1, b);
        c2 = _mm256_fmadd_ps(a, c2, b);
        c3 = _mm256_fmadd_ps(a, c3, b);
        c4 = _mm256_fmadd_ps(a, c4, b);
        c5 = _mm256_fmadd_ps(a, c5, b);
        c6 = _mm256_fmadd_ps(a, c6, b);
        c7 = _mm256_fmadd_ps(a, c7, b);
        c8 = _mm256_fmadd_ps(a, c8, b);
        c9 = _mm256_fmadd_ps(a, c9, b);
        c10 = _mm256_fmadd_ps(a, c10, b);
        c11 = _mm256_fmadd_ps(a, c11, b);
    }
    c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                       _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    c8 = _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11));
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(c0, c8));
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
