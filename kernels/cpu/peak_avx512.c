/*
 * peak_avx512.c - the FMA loop that measures this core's FP32 peak with
 * AVX-512: twelve independent accumulator chains, more than FMA latency
 * times FMA pipes on any AVX-512 core, so only issue width limits it.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

float kcpu_peak_fma_avx512(int64_t iters)
{
    /* Named variables, not an array: an array the compiler may keep in
     * memory, and then the loop measures stores. */
    __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
    __m512 c0 = _mm512_set1_ps(0.0f), c1 = _mm512_set1_ps(1.0f), c2 = _mm512_set1_ps(2.0f), c3 = _mm512_set1_ps(3.0f);
    __m512 c4 = _mm512_set1_ps(4.0f), c5 = _mm512_set1_ps(5.0f), c6 = _mm512_set1_ps(6.0f), c7 = _mm512_set1_ps(7.0f);
    __m512 c8 = _mm512_set1_ps(8.0f), c9 = _mm512_set1_ps(9.0f), c10 = _mm512_set1_ps(10.0f), c11 = _mm512_set1_ps(11.0f);
    for (int64_t n = 0; n < iters; n++) {
        c0 = _mm512_fmadd_ps(a, c0, b);
        c1 = _mm512_fmadd_ps(a, c1, b);
        c2 = _mm512_fmadd_ps(a, c2, b);
        c3 = _mm512_fmadd_ps(a, c3, b);
        c4 = _mm512_fmadd_ps(a, c4, b);
        c5 = _mm512_fmadd_ps(a, c5, b);
        c6 = _mm512_fmadd_ps(a, c6, b);
        c7 = _mm512_fmadd_ps(a, c7, b);
        c8 = _mm512_fmadd_ps(a, c8, b);
        c9 = _mm512_fmadd_ps(a, c9, b);
        c10 = _mm512_fmadd_ps(a, c10, b);
        c11 = _mm512_fmadd_ps(a, c11, b);
    }
    c0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                       _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    c8 = _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11));
    return _mm512_reduce_add_ps(_mm512_add_ps(c0, c8));
}
