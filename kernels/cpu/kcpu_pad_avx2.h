/*
 * kcpu_pad_avx2.h - pieces of input rows, zeros outside them (for
 * zero-padded copies and loads at a plane's edges), for the AVX2 files
 * only (include it from *_avx2.c, which the Makefile compiles with the
 * AVX2 flags). Nothing outside a row is read, and no load is masked:
 * vmaskmovps loads ran the GEMM's tiles at a third of their speed on Zen
 * 1 (gemm_avx2.c), and a 7x7 map's rows are all edge. A piece at an edge
 * is whole vectors from inside the row, moved into place. Inline, as the
 * rows are short.
 */
#ifndef KCPU_PAD_AVX2_H
#define KCPU_PAD_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* Lanes whose column first + step * lane lies in [0, w). */
static inline __m256i kv8_cols_in_step(int64_t first, int step, int64_t w)
{
    const __m256i lane = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(step));
    __m256i col = _mm256_add_epi32(_mm256_set1_epi32((int)first), lane);
    return _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), col));
}

/* Lanes whose column first + lane lies in [0, w). */
static inline __m256i kv8_cols_in(int64_t first, int64_t w) { return kv8_cols_in_step(first, 1, w); }

/* row[first .. first + 7], zeros for the columns outside [0, w): only
 * those inside are read (first may be negative). */
static inline __m256 kv8_load_cols(const float *row, int64_t first, int64_t w)
{
    if (first >= 0 && first + 8 <= w)
        return _mm256_loadu_ps(row + first);
    if (first >= w || first + 8 <= 0)
        return _mm256_setzero_ps();
    if (w >= 8) {
        /* the row's first or last 8 columns, lane l moved to take column first + l */
        const int64_t from = first < 0 ? 0 : w - 8;
        const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + from),
                                            _mm256_add_epi32(iota, _mm256_set1_epi32((int)(first - from))));
        return _mm256_and_ps(v, _mm256_castsi256_ps(kv8_cols_in(first, w)));
    }
    const __m256i col = _mm256_add_epi32(_mm256_set1_epi32((int)first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (w >= 4) {
        /* columns 0 .. 3 in lanes 0 .. 3, w - 4 .. w - 1 in 4 .. 7 */
        __m256 both = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row)), _mm_loadu_ps(row + w - 4), 1);
        __m256i from_hi = _mm256_cmpgt_epi32(col, _mm256_set1_epi32(3));
        __m256i lane = _mm256_blendv_epi8(col, _mm256_add_epi32(col, _mm256_set1_epi32(8 - (int)w)), from_hi);
        return _mm256_and_ps(_mm256_permutevar8x32_ps(both, lane), _mm256_castsi256_ps(kv8_cols_in(first, w)));
    }
    float at[8];   /* rows of 1 to 3 columns */
    for (int l = 0; l < 8; l++)
        at[l] = first + l >= 0 && first + l < w ? row[first + l] : 0.0f;
    return _mm256_loadu_ps(at);
}

#endif /* KCPU_PAD_AVX2_H */
