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

/* Rows i0 .. i0 + 15 of the block: where their sums start (bias - 128 *
 * wsum) and their multipliers, lane by lane; rows past the block get
 * harmless ones (their results are not stored). */
struct rows16 {
    __m512i init, m, m_odd;
    __m512i rnd32, sh32;        /* the shift >= 33 form: 2^(s - 33), s - 32 */
    __m512i rnd_even, sh_even;  /* the general form, 64-bit lanes of the even rows */
    __m512i rnd_odd, sh_odd;    /* and of the odd ones */
    int hi33;                   /* every row's shift >= 33 */
};

static void rows_of(const struct kq8_block *b, int i0, int mr, struct rows16 *r)
{
    int32_t init[16], m[16], rnd32[16], sh32[16];
    int64_t rnd64[16], sh64[16];
    r->hi33 = 1;
    for (int i = 0; i < 16; i++) {
        const struct k_q8_mult q = i < mr ? b->mult[i0 + i] : (struct k_q8_mult){0, 33};
        /* unsigned: the sum may wrap on the way, the final value fits */
        init[i] = i < mr ? (int32_t)((uint32_t)b->bias[i0 + i] - 128u * (uint32_t)b->wsum[i0 + i]) : 0;
        m[i] = q.m;
        r->hi33 = r->hi33 && kq8_hi33_path(q);
        rnd32[i] = q.shift >= 33 ? 1 << (q.shift - 33) : 0;
        sh32[i] = q.shift - 32;
        rnd64[i] = (int64_t)1 << (q.shift - 1);
        sh64[i] = q.shift;
    }
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    r->init = _mm512_loadu_si512(init);
    r->m = _mm512_loadu_si512(m);
    r->m_odd = _mm512_srli_epi64(r->m, 32);
    r->rnd32 = _mm512_loadu_si512(rnd32);
    r->sh32 = _mm512_loadu_si512(sh32);
    r->rnd_even = _mm512_permutex2var_epi64(_mm512_loadu_si512(rnd64), even, _mm512_loadu_si512(rnd64 + 8));
    r->rnd_odd = _mm512_permutex2var_epi64(_mm512_loadu_si512(rnd64), odd, _mm512_loadu_si512(rnd64 + 8));
    r->sh_even = _mm512_permutex2var_epi64(_mm512_loadu_si512(sh64), even, _mm512_loadu_si512(sh64 + 8));
    r->sh_odd = _mm512_permutex2var_epi64(_mm512_loadu_si512(sh64), odd, _mm512_loadu_si512(sh64 + 8));
}

/* Exact sums of 16 rows (panels p0 and p1, kq quads) against one sample's
 * bytes x (k of them): four chains per panel hide vpdpbusd's latency. */
static __m512i dot16(const int8_t *p0, const int8_t *p1, int64_t kq, const int8_t *x, int64_t k)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    __m256i c0[4], c1[4];
    for (int i = 0; i < 4; i++)
        c0[i] = c1[i] = _mm256_setzero_si256();
    int64_t full = k / 4;   /* quads wholly inside x; the rest is zero-padded */
    for (int64_t q = 0; q < kq; q++) {
        int32_t v = 0;
        if (q < full)
            memcpy(&v, x + 4 * q, sizeof(v));
        else
            memcpy(&v, x + 4 * q, (size_t)(k - 4 * q));   /* weights past k are zero */
        const __m256i xq = _mm256_xor_si256(_mm256_set1_epi32(v), flip);
        c0[q & 3] = _mm256_dpbusd_epi32(c0[q & 3], xq, _mm256_loadu_si256((const __m256i *)(p0 + q * KQ8_PANEL_QUAD)));
        c1[q & 3] = _mm256_dpbusd_epi32(c1[q & 3], xq, _mm256_loadu_si256((const __m256i *)(p1 + q * KQ8_PANEL_QUAD)));
    }
    __m256i s0 = _mm256_add_epi32(_mm256_add_epi32(c0[0], c0[1]), _mm256_add_epi32(c0[2], c0[3]));
    __m256i s1 = _mm256_add_epi32(_mm256_add_epi32(c1[0], c1[1]), _mm256_add_epi32(c1[2], c1[3]));
    return _mm512_inserti64x4(_mm512_castsi256_si512(s0), s1, 1);
}

/* k_q8_apply lane by lane: the shift >= 33 form, exactly as
 * kq8_apply_hi33_512 with each lane's own constants. */
static inline __m512i apply_hi33(__m512i x, const struct rows16 *r)
{
    __m512i e = _mm512_mul_epi32(x, r->m), o = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd);
    return _mm512_srav_epi32(_mm512_add_epi32(kq8_hi32_512(e, o), r->rnd32), r->sh32);
}

/* The general form in 64-bit lanes (even and odd rows apart), each lane's
 * own shift, then kq8_requant16's tail (residual, clamp). */
static inline __m512i requant_general(__m512i x, const struct rows16 *r, int has_res, __m512i res,
                                      const struct kq8_mult512 *rv, __m512i lo, __m512i hi)
{
    __m512i ev = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, r->m), r->rnd_even), r->sh_even);
    __m512i od = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd),
                                                    r->rnd_odd), r->sh_odd);
    return kq8_requant_tail16(ev, od, has_res, res, rv, lo, hi);
}

void kq8_gemv_avx512(const struct kq8_block *b, const int8_t *x, int n, int64_t k)
{
    const struct k_q8_epilogue *e = b->e;
    const int has_res = b->res != NULL;
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult rm = has_res ? e->res_mult : (struct k_q8_mult){0, 1};
    const struct kq8_mult512_hi rh = kq8_mult512_hi_of(rm);
    const struct kq8_mult512 rv = kq8_mult512_of(rm);
    const __m512i lo32 = _mm512_set1_epi32(e->lo), hi32 = _mm512_set1_epi32(e->hi);
    const __m512i lo64 = _mm512_set1_epi64(e->lo), hi64 = _mm512_set1_epi64(e->hi);
    struct rows16 r;
    for (int i0 = 0; i0 < b->m; i0 += 16) {
        int mr = (int)kcpu_min64(16, b->m - i0);
        const __mmask16 lanes = (__mmask16)((1u << mr) - 1);
        const int8_t *p0 = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        const int8_t *p1 = mr > KQ8_MR ? p0 + b->kq * KQ8_PANEL_QUAD : p0;   /* rows past mr: dropped */
        rows_of(b, i0, mr, &r);
        const int hi_form = r.hi33 && (!has_res || rm.shift >= 8);
        for (int t = 0; t < n; t++) {
            const int64_t at = b->maps[0].runs[t].off + i0;   /* the sample's rows i0 .. */
            __m512i acc = _mm512_add_epi32(dot16(p0, p1, b->kq, x + t * k, k), r.init);
            if (e->out_i32) {
                _mm512_mask_storeu_epi32((int32_t *)b->y + at, lanes, acc);
                continue;
            }
            __m512i res = _mm512_setzero_si512(), q;
            if (has_res)
                res = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes, b->res + at));
            if (hi_form) {
                q = apply_hi33(acc, &r);
                if (has_res)
                    q = _mm512_add_epi32(q, kq8_apply_hi512(res, &rh, 1));
                q = _mm512_min_epi32(_mm512_max_epi32(q, lo32), hi32);
            } else {
                q = requant_general(acc, &r, has_res, res, &rv, lo64, hi64);
            }
            _mm_mask_storeu_epi8((int8_t *)b->y + at, lanes, _mm512_cvtepi32_epi8(q));
        }
    }
}
