/*
 * gemv_q8_avx2.c - the INT8 matrix-vector kernel on AVX2 (kq8_gemv_avx2,
 * kcpu_q8_impl.h): a linear layer at batch 1 to 4 without VNNI.
 *
 * Lanes are the block's rows, 8 at a time (one weight panel): per sample
 * and depth quad, the sample's four bytes are broadcast against the
 * panel's quad as in the GEMM (vpmaddubsw(|x|, sign(w, x)), then vpmaddwd
 * by ones: exact), in four independent chains. The epilogue requantises
 * the 8 rows' sums in place, each lane with its own multiplier and shift
 * (vpsrlvq). The GEMM would pack the sample into a strip of 32 columns and
 * compute all of them: MobileNetV2's classifier took 0.71 ms in INT8
 * against 0.31 in FP32 (Zen 3, batch 1).
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx2.h"
#include "kcpu_q8_impl.h"

/* Exact sums of the panel's 8 rows (kq quads) against one sample's bytes
 * x (k of them). */
static __m256i dot8(const int8_t *panel, int64_t kq, const int8_t *x, int64_t k)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i c[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int64_t q = 0; q < kq; q++) {   /* weights past k are zero */
        const __m256i xq = _mm256_set1_epi32(kq8_sample_quad(x, q, k));
        const __m256i w = _mm256_loadu_si256((const __m256i *)(panel + q * KQ8_PANEL_QUAD));
        __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(xq), _mm256_sign_epi8(w, xq));
        c[q & 3] = _mm256_add_epi32(c[q & 3], _mm256_madd_epi16(p, ones));
    }
    return _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
}

/* k_q8_apply's constants for 8 lanes, each its own (even and odd lanes
 * apart, as vpmuldq takes them), for kq8_apply_lanes. */
struct lanes8 {
    __m256i m_even, m_odd;       /* multipliers in the even int32 lanes */
    __m256i rnd_even, rnd_odd;   /* 2^(shift - 1), 64-bit lanes */
    __m256i bias_even, bias_odd; /* 2^(63 - shift) */
    __m256i sh_even, sh_odd;
};

static struct lanes8 lanes8_of(const struct k_q8_mult *mult, int n)
{
    int32_t m[2][8] = {{0}};
    int64_t rnd[2][4], bias[2][4], sh[2][4];
    for (ptrdiff_t i = 0; i < 8; i++) {
        const struct k_q8_mult q = i < n ? mult[i] : (struct k_q8_mult){0, 31};   /* rows past n: dropped */
        ptrdiff_t odd = i & 1, lane = i / 2;
        m[odd][2 * lane] = q.m;
        rnd[odd][lane] = (int64_t)1 << (q.shift - 1);
        bias[odd][lane] = (int64_t)((uint64_t)1 << (63 - q.shift));
        sh[odd][lane] = q.shift;
    }
    struct lanes8 r = {
        _mm256_loadu_si256((const __m256i *)m[0]), _mm256_loadu_si256((const __m256i *)m[1]),
        _mm256_loadu_si256((const __m256i *)rnd[0]), _mm256_loadu_si256((const __m256i *)rnd[1]),
        _mm256_loadu_si256((const __m256i *)bias[0]), _mm256_loadu_si256((const __m256i *)bias[1]),
        _mm256_loadu_si256((const __m256i *)sh[0]), _mm256_loadu_si256((const __m256i *)sh[1]),
    };
    return r;
}

/* kq8_apply_even256 with per-lane constants. */
static inline __m256i apply_lanes(__m256i v, __m256i m, __m256i rnd, __m256i bias, __m256i sh)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    __m256i t = _mm256_add_epi64(_mm256_mul_epi32(v, m), rnd);
    return _mm256_sub_epi64(_mm256_srlv_epi64(_mm256_xor_si256(t, sign), sh), bias);
}

void kq8_gemv_avx2(const struct kq8_block *b, const int8_t *x, int n, int64_t k)
{
    const struct k_q8_epilogue *e = b->e;
    const struct kq8_mult256 rv = kq8_mult256_of(b->res ? e->res_mult : (struct k_q8_mult){0, 1});
    const __m256i lo = _mm256_set1_epi64x(e->lo), hi = _mm256_set1_epi64x(e->hi);
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *panel = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        int32_t bias[8] = {0};
        memcpy(bias, b->bias + i0, (size_t)mr * sizeof(int32_t));
        const struct lanes8 L = lanes8_of(b->mult + i0, mr);
        for (int t = 0; t < n; t++) {
            const int64_t at = b->maps[0].runs[t].off + i0;   /* the sample's rows i0 .. */
            __m256i acc = _mm256_add_epi32(dot8(panel, b->kq, x + t * k, k), _mm256_loadu_si256((const __m256i *)bias));
            if (e->out_i32) {
                int32_t out[8];
                _mm256_storeu_si256((__m256i *)out, acc);
                memcpy((int32_t *)b->y + at, out, (size_t)mr * sizeof(int32_t));
                continue;
            }
            __m256i ev = apply_lanes(acc, L.m_even, L.rnd_even, L.bias_even, L.sh_even);
            __m256i od = apply_lanes(_mm256_srli_epi64(acc, 32), L.m_odd, L.rnd_odd, L.bias_odd, L.sh_odd);
            if (b->res) {
                int8_t res8[8] = {0};
                memcpy(res8, b->res + at, (size_t)mr);
                int64_t r8;
                memcpy(&r8, res8, sizeof(r8));
                __m256i r = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(r8));
                ev = _mm256_add_epi64(ev, kq8_apply_even256(r, &rv));
                od = _mm256_add_epi64(od, kq8_apply_even256(_mm256_srli_epi64(r, 32), &rv));
            }
            ev = kq8_clamp256(ev, lo, hi);
            od = kq8_clamp256(od, lo, hi);
            __m256i q = _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
            /* int32 -> int8 (values in range): bytes 0-3 of each 128-bit lane */
            __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q, q), _mm256_setzero_si256());
            int8_t out[16];
            _mm_storeu_si128((__m128i *)out,
                             _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1)));
            memcpy((int8_t *)b->y + at, out, (size_t)mr);
        }
    }
}
