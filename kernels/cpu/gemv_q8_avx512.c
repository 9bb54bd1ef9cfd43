/*
 * gemv_q8_avx512.c - the INT8 matrix-vector kernel (kq8_gemv_avx512,
 * kcpu_q8_impl.h): a linear layer at batch 1 to 4, on AVX-512 VNNI.
 *
 * Lanes are the block's rows, 16 at a time (two 8-row weight panels): per
 * sample and depth quad, the sample's four bytes (sign bits flipped, as
 * vpdpbusd takes unsigned bytes) are broadcast against each panel's quad,
 * in four independent chains. The epilogue works on the 16 rows' sums in
 * place, with each lane's own multiplier and shift (kcpu_q8_avx512.h's
 * forms, made per lane), and one masked store writes the sample's 16
 * outputs, which lie side by side in y. The GEMM's 8 x 32 tile would
 * compute 32 columns for each sample, and its epilogue spent more than the
 * dot products on LeNet-5's small layers.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx512.h"
#include "kcpu_q8_impl.h"

/* Exact sums of 16 rows (panels p0 and p1, kq quads) against one sample's
 * bytes x (k of them): four chains per panel hide vpdpbusd's latency. */
static __m512i dot16(const int8_t *p0, const int8_t *p1, int64_t kq, const int8_t *x, int64_t k)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    __m256i c0[4], c1[4];
    for (int i = 0; i < 4; i++)
        c0[i] = c1[i] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {   /* weights past k are zero */
        const __m256i xq = _mm256_xor_si256(_mm256_set1_epi32(kq8_sample_quad(x, q, k)), flip);
        c0[q & 3] = _mm256_dpbusd_epi32(c0[q & 3], xq, _mm256_loadu_si256((const __m256i *)(p0 + q * KQ8_PANEL_QUAD)));
        c1[q & 3] = _mm256_dpbusd_epi32(c1[q & 3], xq, _mm256_loadu_si256((const __m256i *)(p1 + q * KQ8_PANEL_QUAD)));
    }
    __m256i s0 = _mm256_add_epi32(_mm256_add_epi32(c0[0], c0[1]), _mm256_add_epi32(c0[2], c0[3]));
    __m256i s1 = _mm256_add_epi32(_mm256_add_epi32(c1[0], c1[1]), _mm256_add_epi32(c1[2], c1[3]));
    return _mm512_inserti64x4(_mm512_castsi256_si512(s0), s1, 1);
}

void kq8_gemv_avx512(const struct kq8_block *b, const int8_t *x, int n, int64_t k)
{
    const struct k_q8_epilogue *e = b->e;
    const struct kq8_lane_epi ep = kq8_lane_epi_of(e, b->res != NULL);
    struct kq8_lanes16 r;
    for (int i0 = 0; i0 < b->m; i0 += 16) {
        int mr = (int)kcpu_min64(16, b->m - i0);
        const __mmask16 lanes = (__mmask16)((1u << mr) - 1);
        const int8_t *p0 = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        const int8_t *p1 = mr > KQ8_MR ? p0 + b->kq * KQ8_PANEL_QUAD : p0;   /* rows past mr: dropped */
        kq8_lanes16_of(b->bias + i0, b->wsum + i0, b->mult + i0, mr, &r);
        for (int t = 0; t < n; t++) {
            const int64_t at = b->maps[0].runs[t].off + i0;   /* the sample's rows i0 .. */
            __m512i acc = _mm512_add_epi32(dot16(p0, p1, b->kq, x + t * k, k), r.init);
            if (e->out_i32) {
                _mm512_mask_storeu_epi32((int32_t *)b->y + at, lanes, acc);
                continue;
            }
            __m512i res = ep.has_res ? _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes, b->res + at))
                                     : _mm512_setzero_si512();
            _mm_mask_storeu_epi8((int8_t *)b->y + at, lanes, _mm512_cvtepi32_epi8(kq8_lanes_requant(acc, &r, &ep, res)));
        }
    }
}
