/*
 * kcpu_pad_avx512.h - masked loads of input rows into zero-padded rows, for
 * the AVX-512 files only (include it from *_avx512.c, which the Makefile
 * compiles with the AVX-512 flags). Inline, so that the copies of short
 * rows (a few dozen floats) cost no call each.
 */
#ifndef KCPU_PAD_AVX512_H
#define KCPU_PAD_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "kcpu_impl.h"

/* Mask of bits [lo, hi) of a 32-bit lane set, clipped to it. */
static inline uint32_t kv_lane_bits(int lo, int hi)
{
    if (lo < 0)
        lo = 0;
    if (hi > 32)
        hi = 32;
    if (lo >= hi)
        return 0;
    return (uint32_t)((((uint64_t)1 << (hi - lo)) - 1) << lo);
}

/* row + off as an address: off may reach before the row (and the input),
 * but only lanes inside the load mask, which are in bounds, are read. */
static inline const float *kv_at(const float *row, int64_t off)
{
    return (const float *)((uintptr_t)row + (uintptr_t)(off * (int64_t)sizeof(float)));
}

/* dst[t] = src[iw0 + t * sw] for t < len where 0 <= iw0 + t * sw < w, else
 * 0 (sw 1 or 2): kcpu_pad_row_avx512, inline. */
static inline __attribute__((always_inline)) void kv_pad_row(const float *src, int w, int iw0, int sw, float *dst,
                                                             int64_t len)
{
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t t = 0; t < len; t += 16) {
        /* Input columns first + q, q in [0, 16 * sw), that exist. */
        int64_t first = iw0 + t * sw;
        uint32_t in = kv_lane_bits((int)kcpu_max64(-first, -1), (int)kcpu_min64(w - first, 33));
        __mmask16 out = (__mmask16)kv_lane_bits(0, (int)kcpu_min64(len - t, 16));
        __m512 v = _mm512_maskz_loadu_ps((__mmask16)in, kv_at(src, first));
        if (sw == 2)
            v = _mm512_permutex2var_ps(v, evens, _mm512_maskz_loadu_ps((__mmask16)(in >> 16), kv_at(src, first + 16)));
        _mm512_mask_storeu_ps(dst + t, out, v);
    }
}

#endif /* KCPU_PAD_AVX512_H */
