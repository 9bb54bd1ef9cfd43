/*
 * f16_avx512.c - FP16 rounding with AVX-512 vcvtps2ph, 16 floats at a time;
 * the tail is one masked vector.
 */
#include <immintrin.h>

#include "kcpu_q8_impl.h"

void kcpu_round_f16_avx512(int64_t count, const float *x, float *y)
{
    for (int64_t i = 0; i < count; i += 16) {
        __mmask16 m = count - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (count - i)) - 1);
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(h));
    }
}
