/*
 * gemm_q8_avx2.c - the AVX2 INT8 GEMM kernel and its requantising
 * epilogue. Compiled with the AVX2 flags; entered only through
 * kq8_block_run after the run-time ISA check (also on AVX-512 CPUs
 * without VNNI).
 *
 * s8 x s8 products use vpmaddubsw(|b|, sign(a, b)) then vpmaddwd by ones:
 * |a|, |b| <= 127 keeps each pair sum within int16 (2 * 127 * 127 < 32767),
 * so nothing saturates and the int32 sums are exact. Sixteen ymm registers
 * hold a 4-row x 16-column accumulator tile, so a 8 x 32 tile is four
 * passes over the depth.
 *
 * AVX2 has no 64-bit arithmetic shift: (t ^ 2^63) >> s (logical) minus
 * 2^(63 - s) is floor(t / 2^s) exactly, since 2^63 is a multiple of 2^s.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_impl.h"

static inline __m256i broadcast_quad(const int8_t *a)
{
    int32_t v;
    memcpy(&v, a, sizeof(v));
    return _mm256_set1_epi32(v);
}

/* acc[r * 2 + h] for rows r0 .. r0 + 3, columns c0 + 8h .. c0 + 8h + 7. */
static inline __attribute__((always_inline)) void
tile4x16(int64_t kq, const int8_t *a, const int8_t *b, __m256i *acc)
{
    __m256i c[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        c[i] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t q = 0; q < kq; q++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        __m256i ab0 = _mm256_abs_epi8(b0), ab1 = _mm256_abs_epi8(b1);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m256i ar = broadcast_quad(a + 4 * r);
            __m256i p0 = _mm256_maddubs_epi16(ab0, _mm256_sign_epi8(ar, b0));
            __m256i p1 = _mm256_maddubs_epi16(ab1, _mm256_sign_epi8(ar, b1));
            c[2 * r] = _mm256_add_epi32(c[2 * r], _mm256_madd_epi16(p0, ones));
            c[2 * r + 1] = _mm256_add_epi32(c[2 * r + 1], _mm256_madd_epi16(p1, ones));
        }
        a += KQ8_PANEL_QUAD;
        b += KQ8_STRIP_QUAD;
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        acc[i] = c[i];
}

/* floor((x * m + rnd) / 2^shift) on the even int32 lanes of v, 64-bit lanes. */
static inline __m256i apply_even(__m256i v, __m256i m, __m256i rnd, __m128i sh, __m256i bias)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    __m256i t = _mm256_add_epi64(_mm256_mul_epi32(v, m), rnd);
    return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_xor_si256(t, sign), sh), bias);
}

struct mult_v {
    __m256i m, rnd, bias;
    __m128i sh;
};

static inline struct mult_v mult_vec(struct k_q8_mult q)
{
    struct mult_v v = {_mm256_set1_epi32(q.m), _mm256_set1_epi64x((int64_t)1 << (q.shift - 1)),
                       _mm256_set1_epi64x((int64_t)((uint64_t)1 << (63 - q.shift))),
                       _mm_cvtsi32_si128(q.shift)};
    return v;
}

static inline __m256i clamp64(__m256i x, __m256i lo, __m256i hi)
{
    x = _mm256_blendv_epi8(x, lo, _mm256_cmpgt_epi64(lo, x));
    return _mm256_blendv_epi8(x, hi, _mm256_cmpgt_epi64(x, hi));
}

/* 8 outputs (as int32 lanes) from 8 (acc + bias) lanes and 8 residual bytes. */
static inline __m256i requant8(__m256i v, const struct mult_v *mv, const int8_t *res,
                               const struct mult_v *rv, __m256i lo, __m256i hi)
{
    __m256i vo = _mm256_srli_epi64(v, 32);
    __m256i ev = apply_even(v, mv->m, mv->rnd, mv->sh, mv->bias);
    __m256i od = apply_even(vo, mv->m, mv->rnd, mv->sh, mv->bias);
    if (res) {
        int64_t r8;
        memcpy(&r8, res, sizeof(r8));
        __m256i r = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(r8)), ro = _mm256_srli_epi64(r, 32);
        ev = _mm256_add_epi64(ev, apply_even(r, rv->m, rv->rnd, rv->sh, rv->bias));
        od = _mm256_add_epi64(od, apply_even(ro, rv->m, rv->rnd, rv->sh, rv->bias));
    }
    ev = clamp64(ev, lo, hi);
    od = clamp64(od, lo, hi);
    return _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
}

static void store_tile(const struct kq8_block *b, const int32_t *acc, int i0, int mr,
                       const struct kq8_strip *map)
{
    const struct k_q8_epilogue *e = b->e;
    if (e->out_i32) {
        kq8_store_tile(b, acc, i0, mr, map);
        return;
    }
    const __m256i lo = _mm256_set1_epi64x(e->lo), hi = _mm256_set1_epi64x(e->hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const struct mult_v rv = mult_vec(e->res_mult);
    for (int i = 0; i < mr; i++) {
        int row = i0 + i;
        __m256i bias = _mm256_set1_epi32(b->bias[row]);
        struct mult_v mv = mult_vec(b->mult[row]);
        int8_t res[KQ8_NR], out[KQ8_NR];
        if (b->res)
            kq8_gather_row(b, row, map, res);
        __m256i q[4];
        for (int v = 0; v < 4; v++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(acc + i * KQ8_NR + 8 * v));
            q[v] = requant8(_mm256_add_epi32(a, bias), &mv, b->res ? res + 8 * v : NULL, &rv, lo, hi);
        }
        /* int32 -> int8 (values already in range), then undo the per-128-bit-lane interleave */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i *)out, _mm256_permutevar8x32_epi32(p, order));
        kq8_scatter_row(b, row, map, out);
    }
}

void kq8_block_avx2(const struct kq8_block *b)
{
    int32_t acc[KQ8_MR * KQ8_NR];
    __m256i t[8];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        for (int s = 0; s < b->nstrips; s++) {
            const int8_t *bs = b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD;
            for (int r0 = 0; r0 < mr; r0 += 4)
                for (int h = 0; h < 2; h++) {
                    tile4x16(b->kq, a + 4 * r0, bs + 64 * h, t);
                    for (int r = 0; r < 4 && r0 + r < mr; r++) {
                        _mm256_storeu_si256((__m256i *)(acc + (r0 + r) * KQ8_NR + 16 * h), t[2 * r]);
                        _mm256_storeu_si256((__m256i *)(acc + (r0 + r) * KQ8_NR + 16 * h + 8), t[2 * r + 1]);
                    }
                }
            store_tile(b, acc, i0, mr, &b->maps[s]);
        }
    }
}
