/*
 * f16_avx2.c - FP16 rounding with F16C on 8 floats at a time (the AVX2
 * file flags include -mf16c). The tail goes through the scalar helper of
 * kernel_quant.h, which the tests hold bit-identical to vcvtps2ph.
 */
#include <immintrin.h>

#include "kcpu_q8_impl.h"

void kcpu_round_f16_avx2(int64_t count, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < count; i++)
        y[i] = k_f16_round(x[i]);
}
