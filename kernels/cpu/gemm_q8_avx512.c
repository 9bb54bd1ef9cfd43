/*
 * gemm_q8_avx512.c - the AVX-512 VNNI INT8 GEMM kernel (KQ8_MR x KQ8_NR =
 * 8 x 32) and its requantising epilogue. Compiled with the AVX-512 flags;
 * entered only through kq8_block_run after the run-time ISA and VNNI checks.
 *
 * Per depth quad the kernel loads two 64-byte B vectors, flips their sign
 * bits (vpdpbusd takes unsigned bytes: x + 128), broadcasts eight weight
 * quads and issues 16 vpdpbusd (1024 multiply-adds) into 16 accumulators;
 * 128 * wsum[row] then removes the offset. The epilogue requantises in
 * 64-bit lanes (even and odd int32 lanes separately, vpmuldq + vpsraq),
 * exactly k_q8_apply, and stores each output run with a byte mask.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_impl.h"

static inline __m512i broadcast_quad(const int8_t *a)
{
    int32_t v;
    memcpy(&v, a, sizeof(v));
    return _mm512_set1_epi32(v);
}

/* acc[2 * i + h] = exact sums of row i, lanes 16h .. 16h + 15. */
static inline __attribute__((always_inline)) void
tile(int64_t kq, const int8_t *a, const int8_t *b, const int32_t *wsum, int mr, __m512i *acc)
{
    __m512i c[2 * KQ8_MR];
#pragma GCC unroll 16
    for (int i = 0; i < 2 * KQ8_MR; i++)
        c[i] = _mm512_setzero_si512();
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t q = 0; q < kq; q++) {
        __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512(b), flip);
        __m512i b1 = _mm512_xor_si512(_mm512_loadu_si512(b + 64), flip);
#pragma GCC unroll 8
        for (int i = 0; i < KQ8_MR; i++) {
            __m512i ai = broadcast_quad(a + 4 * i);
            c[2 * i] = _mm512_dpbusd_epi32(c[2 * i], b0, ai);
            c[2 * i + 1] = _mm512_dpbusd_epi32(c[2 * i + 1], b1, ai);
        }
        a += KQ8_PANEL_QUAD;
        b += KQ8_STRIP_QUAD;
    }
    for (int i = 0; i < mr; i++) {
        __m512i corr = _mm512_set1_epi32(128 * wsum[i]);
        acc[2 * i] = _mm512_sub_epi32(c[2 * i], corr);
        acc[2 * i + 1] = _mm512_sub_epi32(c[2 * i + 1], corr);
    }
}

/* k_q8_apply on the even (odd) int32 lanes of v, as 64-bit lanes. */
static inline __m512i apply_even(__m512i v, __m512i m, __m512i rnd, __m128i sh)
{
    return _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(v, m), rnd), sh);
}

static inline __m512i apply_odd(__m512i v, __m512i m, __m512i rnd, __m128i sh)
{
    return apply_even(_mm512_srli_epi64(v, 32), m, rnd, sh);
}

struct mult_v {
    __m512i m, rnd;
    __m128i sh;
};

static inline struct mult_v mult_vec(struct k_q8_mult q)
{
    struct mult_v v = {_mm512_set1_epi32(q.m), _mm512_set1_epi64((int64_t)1 << (q.shift - 1)),
                       _mm_cvtsi32_si128(q.shift)};
    return v;
}

/* 16 outputs from 16 (acc + bias) lanes and 16 residual bytes. */
static inline __m128i requant16(__m512i v, struct mult_v mv, int has_res, __m128i res, struct mult_v rv,
                                __m512i lo, __m512i hi)
{
    __m512i ev = apply_even(v, mv.m, mv.rnd, mv.sh), od = apply_odd(v, mv.m, mv.rnd, mv.sh);
    if (has_res) {
        __m512i r = _mm512_cvtepi8_epi32(res);
        ev = _mm512_add_epi64(ev, apply_even(r, rv.m, rv.rnd, rv.sh));
        od = _mm512_add_epi64(od, apply_odd(r, rv.m, rv.rnd, rv.sh));
    }
    ev = _mm512_min_epi64(_mm512_max_epi64(ev, lo), hi);
    od = _mm512_min_epi64(_mm512_max_epi64(od, lo), hi);
    return _mm512_cvtepi32_epi8(_mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32)));
}

static inline __mmask32 low_mask(int n)
{
    return n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1);
}

static void store_tile(const struct kq8_block *b, const __m512i *acc, int i0, int mr,
                       const struct kq8_strip *map)
{
    const struct k_q8_epilogue *e = b->e;
    if (e->out_i32) {   /* the last layer only: not worth a vector path */
        int32_t tmp[KQ8_MR * KQ8_NR];
        for (int i = 0; i < mr; i++) {
            _mm512_storeu_si512(tmp + i * KQ8_NR, acc[2 * i]);
            _mm512_storeu_si512(tmp + i * KQ8_NR + 16, acc[2 * i + 1]);
        }
        kq8_store_tile(b, tmp, i0, mr, map);
        return;
    }
    const int whole = map->nruns == 1 && map->runs[0].l0 == 0 && map->runs[0].l1 == KQ8_NR;
    const __m512i lo = _mm512_set1_epi64(e->lo), hi = _mm512_set1_epi64(e->hi);
    const struct mult_v rv = mult_vec(e->res_mult);
    int8_t *y = b->y;
    for (int i = 0; i < mr; i++) {
        int row = i0 + i;
        int64_t row_off = row * b->ldc;
        __m512i bias = _mm512_set1_epi32(b->bias[row]);
        struct mult_v mv = mult_vec(b->mult[row]);
        /* A run may start mid-tile: bytes go through 64-byte buffers so no
         * address before a run's start is ever formed. */
        int8_t res[64] = {0}, out[64];
        __m256i r32 = _mm256_setzero_si256();
        if (b->res) {
            if (whole) {
                r32 = _mm256_loadu_si256((const __m256i *)(b->res + map->runs[0].off + row_off));
            } else {
                for (int k = 0; k < map->nruns; k++) {
                    const struct kq8_run *run = &map->runs[k];
                    __mmask32 mk = low_mask(run->l1 - run->l0);
                    _mm256_mask_storeu_epi8(res + run->l0, mk,
                                            _mm256_maskz_loadu_epi8(mk, b->res + run->off + row_off));
                }
                r32 = _mm256_loadu_si256((const __m256i *)res);
            }
        }
        __m128i q0 = requant16(_mm512_add_epi32(acc[2 * i], bias), mv, b->res != NULL,
                               _mm256_castsi256_si128(r32), rv, lo, hi);
        __m128i q1 = requant16(_mm512_add_epi32(acc[2 * i + 1], bias), mv, b->res != NULL,
                               _mm256_extracti128_si256(r32, 1), rv, lo, hi);
        __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
        if (whole) {
            _mm256_storeu_si256((__m256i *)(y + map->runs[0].off + row_off), q);
            continue;
        }
        _mm256_storeu_si256((__m256i *)out, q);
        for (int k = 0; k < map->nruns; k++) {
            const struct kq8_run *run = &map->runs[k];
            _mm256_mask_storeu_epi8(y + run->off + row_off, low_mask(run->l1 - run->l0),
                                    _mm256_loadu_si256((const __m256i *)(out + run->l0)));
        }
    }
}

void kq8_block_avx512(const struct kq8_block *b)
{
    __m512i acc[2 * KQ8_MR];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        for (int s = 0; s < b->nstrips; s++) {
            tile(b->kq, a, b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD, b->wsum + i0, mr, acc);
            store_tile(b, acc, i0, mr, &b->maps[s]);
        }
    }
}
