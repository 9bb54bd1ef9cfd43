/*
 * pack_q8_avx512.c - AVX-512 (BW) help for getting data into INT8: the
 * stride-2 column gather of convolution planes, which plain C does a byte
 * at a time, and the quantisation of model inputs. Masked loads and stores
 * touch exactly the bytes asked for.
 */
#include <immintrin.h>

#include "kcpu_q8_impl.h"

void kq8_gather2_avx512(int8_t *dst, const int8_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i += 32) {
        int64_t m = n - i < 32 ? n - i : 32;          /* outputs this round */
        int64_t bytes = 2 * m - 1;                    /* inputs they need */
        __mmask64 in = bytes >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << bytes) - 1);
        __m512i words = _mm512_maskz_loadu_epi8(in, src + 2 * i);
        /* the low byte of each 16-bit word is the even column */
        __m256i even = _mm512_cvtepi16_epi8(words);
        _mm256_mask_storeu_epi8(dst + i, m >= 32 ? 0xffffffffu : (__mmask32)((1u << m) - 1), even);
    }
}

/* k_q8_quantize on 16 floats at a time: clamp, truncate, then the exact
 * fraction test of the scalar rule (round half away from zero). */
void kq8_quantize_avx512(int64_t count, const float *x, float inv_scale, int8_t *y)
{
    const __m512 inv = _mm512_set1_ps(inv_scale), one = _mm512_set1_ps(1.0f);
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
    for (int64_t i = 0; i < count; i += 16) {
        __mmask16 m = count - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (count - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
        __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m512 f = _mm512_sub_ps(v, t);
        t = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ), t, one);
        t = _mm512_mask_sub_ps(t, _mm512_cmp_ps_mask(f, mhalf, _CMP_LE_OQ), t, one);
        _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(_mm512_maskz_cvttps_epi32(num, t)));
    }
}
