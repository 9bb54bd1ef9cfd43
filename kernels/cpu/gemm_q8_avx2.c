/*
 * gemm_q8_avx2.c - the AVX2 INT8 GEMM kernel and its requantising
 * epilogue. Compiled with the AVX2 flags; entered only through
 * kq8_block_run after the run-time ISA check (also on AVX-512 CPUs
 * without VNNI).
 *
 * s8 x s8 products use vpmaddubsw(|b|, sign(a, b)) then vpmaddwd by ones:
 * |a|, |b| <= 127 keeps each pair sum within int16 (2 * 127 * 127 < 32767),
 * so nothing saturates and the int32 sums are exact; where a strip has no
 * negative byte (a ReLU's output), vpmaddubsw(b, a) alone. Sixteen ymm registers
 * hold a 4-row x 16-column accumulator tile, so a 8 x 32 tile is four
 * passes over the depth.
 *
 * The epilogue requantises with kcpu_q8_avx2.h, exactly k_q8_apply (its
 * 32-bit form where the row's shift allows, its constants made once per
 * block of rows; that form's clamp on the packed bytes).
 *
 * Also here: B-strip packing (the slice interleave) for every AVX2-capable
 * CPU, AVX-512 ones included.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx2.h"
#include "kcpu_q8_impl.h"

static inline __m256i broadcast_quad(const int8_t *a)
{
    int32_t v;
    memcpy(&v, a, sizeof(v));
    return _mm256_set1_epi32(v);
}

/* acc[r * 2 + h] for rows r0 .. r0 + 3, columns c0 + 8h .. c0 + 8h + 7.
 * nonneg: every byte of the strip is >= 0 (activations after a ReLU), so
 * |b| = b and sign(a, b) = a wherever b != 0: vpmaddubsw(b, a) directly,
 * still exact (2 * 127 * 127 < 32767), two operations fewer per 16 columns
 * of a row. */
static inline __attribute__((always_inline)) void
tile4x16(int64_t kq, const int8_t *a, const int8_t *b, __m256i *acc, const int nonneg)
{
    __m256i c[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        c[i] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t q = 0; q < kq; q++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        __m256i ab0 = nonneg ? b0 : _mm256_abs_epi8(b0), ab1 = nonneg ? b1 : _mm256_abs_epi8(b1);
#pragma GCC unroll 4
        for (ptrdiff_t r = 0; r < 4; r++) {
            __m256i ar = broadcast_quad(a + (ptrdiff_t)4 * r);
            __m256i p0 = _mm256_maddubs_epi16(ab0, nonneg ? ar : _mm256_sign_epi8(ar, b0));
            __m256i p1 = _mm256_maddubs_epi16(ab1, nonneg ? ar : _mm256_sign_epi8(ar, b1));
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

static void tile_signed(int64_t kq, const int8_t *a, const int8_t *b, __m256i *acc) { tile4x16(kq, a, b, acc, 0); }
static void tile_nonneg(int64_t kq, const int8_t *a, const int8_t *b, __m256i *acc) { tile4x16(kq, a, b, acc, 1); }

/* Whether no byte of the strip (kq quads) is negative. */
static int strip_nonneg(const int8_t *b, int64_t kq)
{
    __m256i any = _mm256_setzero_si256();
    for (int64_t i = 0; i < kq * KQ8_STRIP_QUAD; i += 32)
        any = _mm256_or_si256(any, _mm256_loadu_si256((const __m256i *)(b + i)));
    return _mm256_movemask_epi8(any) == 0;
}

/* The requantisation of a block's rows: the 32-bit form's constants where
 * kq8_hi256_serves the row (the same for every strip, so made once). */
struct row_consts {
    struct kq8_hi256 hv[KQ8_MR];
    int hi[KQ8_MR];
};

static void row_consts_of(const struct kq8_block *b, int i0, int mr, struct row_consts *rc)
{
    const struct k_q8_epilogue *e = b->e;
    if (e->out_i32)   /* store_tile does not requantise */
        return;
    for (int i = 0; i < mr; i++) {
        rc->hi[i] = kq8_hi256_serves(b->mult[i0 + i], b->res != NULL, e->res_mult);
        if (rc->hi[i])
            rc->hv[i] = kq8_hi256_of(b->mult[i0 + i], e->res_mult, b->res != NULL, e->lo, e->hi);
    }
}

static void store_tile(const struct kq8_block *b, const int32_t *acc, int i0, int mr, const struct kq8_strip *map,
                       const struct row_consts *rc)
{
    const struct k_q8_epilogue *e = b->e;
    if (e->out_i32) {
        kq8_store_tile(b, acc, i0, mr, map);
        return;
    }
    const __m256i lo = _mm256_set1_epi64x(e->lo), hi = _mm256_set1_epi64x(e->hi);
    const __m256i lo8 = _mm256_set1_epi8((char)e->lo), hi8 = _mm256_set1_epi8((char)e->hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct kq8_mult256 rv = kq8_mult256_of(b->res ? e->res_mult : (struct k_q8_mult){0, 1});
    for (int i = 0; i < mr; i++) {
        int row = i0 + i;
        __m256i bias = _mm256_set1_epi32(b->bias[row]);
        int8_t res[KQ8_NR], out[KQ8_NR];
        if (b->res)
            kq8_gather_row(b, row, map, res);
        __m256i q[4];
        if (rc->hi[i]) {   /* clamped below, on bytes */
            for (int v = 0; v < 4; v++) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(acc + (ptrdiff_t)i * KQ8_NR + (ptrdiff_t)8 * v));
                q[v] = kq8_requant8_hi_unclamped(_mm256_add_epi32(a, bias), &rc->hv[i],
                                                 b->res ? res + (ptrdiff_t)8 * v : NULL);
            }
        } else {
            struct kq8_mult256 mv = kq8_mult256_of(b->mult[row]);
            for (int v = 0; v < 4; v++) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(acc + (ptrdiff_t)i * KQ8_NR + (ptrdiff_t)8 * v));
                q[v] = kq8_requant8(_mm256_add_epi32(a, bias), &mv, b->res ? res + (ptrdiff_t)8 * v : NULL, &rv, lo, hi);
            }
        }
        /* int32 -> int8 (saturating), the clamp, then undo the per-128-bit-lane interleave */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        p = _mm256_permutevar8x32_epi32(_mm256_min_epi8(_mm256_max_epi8(p, lo8), hi8), order);
        if (map->nruns == 1 && map->runs[0].l0 == 0 && map->runs[0].l1 == KQ8_NR) {   /* 32 outputs side by side */
            _mm256_storeu_si256((__m256i *)((int8_t *)b->y + map->runs[0].off + row * b->ldc), p);
            continue;
        }
        _mm256_storeu_si256((__m256i *)out, p);
        kq8_scatter_row(b, row, map, out);
    }
}

void kq8_block_avx2(const struct kq8_block *b)
{
    int32_t acc[KQ8_MR * KQ8_NR];
    __m256i t[8];
    enum { CHECKED = 32 };   /* strips whose signs are looked at (the conv packs at most 32) */
    char nonneg[CHECKED] = {0};
    for (int s = 0; s < b->nstrips && s < CHECKED; s++)
        nonneg[s] = (char)strip_nonneg(b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD, b->kq);
    struct row_consts rc;
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        row_consts_of(b, i0, mr, &rc);
        for (int s = 0; s < b->nstrips; s++) {
            const int8_t *bs = b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD;
            void (*tile)(int64_t, const int8_t *, const int8_t *, __m256i *) =
                s < CHECKED && nonneg[s] ? tile_nonneg : tile_signed;
            for (int r0 = 0; r0 < mr; r0 += 4)
                for (ptrdiff_t h = 0; h < 2; h++) {
                    tile(b->kq, a + (ptrdiff_t)4 * r0, bs + (ptrdiff_t)64 * h, t);
                    for (ptrdiff_t r = 0; r < 4 && r0 + r < mr; r++) {
                        _mm256_storeu_si256((__m256i *)(acc + (ptrdiff_t)(r0 + r) * KQ8_NR + (ptrdiff_t)16 * h), t[2 * r]);
                        _mm256_storeu_si256((__m256i *)(acc + (ptrdiff_t)(r0 + r) * KQ8_NR + (ptrdiff_t)16 * h + 8), t[2 * r + 1]);
                    }
                }
            store_tile(b, acc, i0, mr, &b->maps[s], &rc);
        }
    }
}

static inline void interleave4(__m256i a, __m256i b, __m256i c, __m256i d, int8_t *dst)
{
    /* in-lane unpacks give quads of columns 0-7 | 16-23 and 8-15 | 24-31 ... */
    __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
    __m256i cd_lo = _mm256_unpacklo_epi8(c, d), cd_hi = _mm256_unpackhi_epi8(c, d);
    __m256i q0 = _mm256_unpacklo_epi16(ab_lo, cd_lo), q1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);
    __m256i q2 = _mm256_unpacklo_epi16(ab_hi, cd_hi), q3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);
    /* ... which the 128-bit permutes put back in column order */
    __m256i *o = (__m256i *)dst;
    _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(q0, q1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(q2, q3, 0x20));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(q0, q1, 0x31));
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(q2, q3, 0x31));
}

void kq8_pack_slices_avx2(const int8_t *base, const int64_t *koff, int64_t kg, int flip, int8_t *dst)
{
    /* flipping the rows flips the interleaved strip */
    const __m256i f = flip ? _mm256_set1_epi8((char)0x80) : _mm256_setzero_si256();
    int64_t k = 0;
    for (; k + 4 <= kg; k += 4, dst += KQ8_STRIP_QUAD)
        interleave4(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(base + koff[k])), f),
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(base + koff[k + 1])), f),
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(base + koff[k + 2])), f),
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(base + koff[k + 3])), f), dst);
    if (k < kg) {   /* the last quad: rows past the depth are zero */
        __m256i r[4];
        for (int t = 0; t < 4; t++)
            r[t] = _mm256_xor_si256(k + t < kg ? _mm256_loadu_si256((const __m256i *)(base + koff[k + t]))
                                               : _mm256_setzero_si256(), f);
        interleave4(r[0], r[1], r[2], r[3], dst);
    }
}
