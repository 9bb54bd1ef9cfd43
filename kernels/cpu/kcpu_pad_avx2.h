/*
 * kcpu_pad_avx2.h - masked loads of pieces of input rows, for zero-padded
 * copies, for the AVX2 files only (include it from *_avx2.c, which the
 * Makefile compiles with the AVX2 flags). vmaskmovps loads are cheap on
 * AMD and Intel alike (the stores are microcoded on AMD: the copies store
 * whole vectors). Inline, as the rows are short.
 */
#ifndef KCPU_PAD_AVX2_H
#define KCPU_PAD_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* Lanes whose column first + lane lies in [0, w). */
static inline __m256i kv8_cols_in(int64_t first, int64_t w)
{
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i col = _mm256_add_epi32(_mm256_set1_epi32((int)first), iota);
    return _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), col));
}

/* row[first .. first + 7], zeros for the columns outside [0, w): only
 * those inside are read (first may be negative). */
static inline __m256 kv8_load_cols(const float *row, int64_t first, int64_t w)
{
    if (first >= 0 && first + 8 <= w)
        return _mm256_loadu_ps(row + first);
    const float *at = (const float *)((uintptr_t)row + (uintptr_t)(first * (int64_t)sizeof(float)));
    return _mm256_maskload_ps(at, kv8_cols_in(first, w));
}

#endif /* KCPU_PAD_AVX2_H */
