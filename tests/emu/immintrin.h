/*
 * tests/emu/immintrin.h - AVX-512 emulated on a CPU without it, for
 * `make test-emulated-avx512` (mk/tests.mk): the compiler's own intrinsics
 * first, then SIMDe's portable AVX-512 (Debian's libsimde-dev) under the
 * native names, then the few the project uses that SIMDe 0.7 lacks,
 * written here lane by lane. Only that build puts this folder first on the
 * include path; its kcpu_isa_hardware() reports AVX-512 with VNNI and
 * AMX-INT8 (KCPU_EMULATED_AVX512), so every AVX-512 kernel runs, slowly, on
 * an AVX2 machine and is checked by the same tests.
 */
#ifndef INFERD_EMU_IMMINTRIN_H
#define INFERD_EMU_IMMINTRIN_H

#include_next <immintrin.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <math.h>
#include <stdlib.h>
#include <simde/x86/avx512.h>
#include <stdint.h>
#include <string.h>

static inline simde__m512i emu_sra_epi64(simde__m512i a, simde__m128i count)
{
    int64_t v[8], c = simde_mm_cvtsi128_si64(count);
    simde_mm512_storeu_si512(v, a);
    for (int i = 0; i < 8; i++)
        v[i] = c > 63 ? (v[i] < 0 ? -1 : 0) : v[i] >> c;
    return simde_mm512_loadu_si512(v);
}

static inline simde__m512 emu_maskz_loadu_ps(simde__mmask16 k, const void *p)
{
    float v[16] = {0};
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy(&v[i], (const float *)p + i, 4);
    return simde_mm512_loadu_ps(v);
}

static inline void emu_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 a)
{
    float v[16];
    simde_mm512_storeu_ps(v, a);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy((float *)p + i, &v[i], 4);
}

static inline simde__m512i emu_maskz_loadu_epi8(simde__mmask64 k, const void *p)
{
    int8_t v[64] = {0};
    for (int i = 0; i < 64; i++)
        if ((k >> i) & 1)
            v[i] = ((const int8_t *)p)[i];
    return simde_mm512_loadu_si512(v);
}

static inline void emu_mm256_mask_storeu_epi8(void *p, simde__mmask32 k, simde__m256i a)
{
    int8_t v[32];
    simde_mm256_storeu_si256(v, a);
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1)
            ((int8_t *)p)[i] = v[i];
}

/* Round to nearest even (the default MXCSR mode); out of range and NaN
 * give INT32_MIN, as the instruction does. */
static inline simde__m512i emu_cvtps_epi32(simde__m512 a)
{
    float f[16];
    int32_t v[16];
    simde_mm512_storeu_ps(f, a);
    for (int i = 0; i < 16; i++) {
        float r = nearbyintf(f[i]);
        v[i] = r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN;
    }
    return simde_mm512_loadu_si512(v);
}

/* The largest lane (the maximum is the same in any order). */
static inline float emu_reduce_max_ps(simde__m512 a)
{
    float f[16], m;
    simde_mm512_storeu_ps(f, a);
    m = f[0];
    for (int i = 1; i < 16; i++)
        m = f[i] > m ? f[i] : m;
    return m;
}

/* GCC's order: upper and lower 256 bits, then 128, then pairs. */
static inline float emu_reduce_add_ps(simde__m512 a)
{
    float f[16], h[8], q[4];
    simde_mm512_storeu_ps(f, a);
    for (int i = 0; i < 8; i++)
        h[i] = f[i + 8] + f[i];
    for (int i = 0; i < 4; i++)
        q[i] = h[i + 4] + h[i];
    float t0 = q[0] + q[2], t1 = q[1] + q[3];
    return t0 + t1;
}

static inline simde__m512i emu_alignr_epi32(simde__m512i a, simde__m512i b, int imm)
{
    int32_t x[32], v[16];
    simde_mm512_storeu_si512(x, b);
    simde_mm512_storeu_si512(x + 16, a);
    for (int i = 0; i < 16; i++)
        v[i] = x[(i + (imm & 15)) % 32];
    return simde_mm512_loadu_si512(v);
}

/* F16C on each half. */
static inline simde__m256i emu_cvtps_ph(simde__m512 a, int rounding)
{
    float f[16];
    simde_mm512_storeu_ps(f, a);
    __m128i lo = _mm256_cvtps_ph(_mm256_loadu_ps(f), 0), hi = _mm256_cvtps_ph(_mm256_loadu_ps(f + 8), 0);
    (void)rounding;   /* the project passes round-to-nearest-even only */
    int16_t v[16];
    _mm_storeu_si128((__m128i *)v, lo);
    _mm_storeu_si128((__m128i *)(v + 8), hi);
    return simde_mm256_loadu_si256(v);
}

static inline simde__m512 emu_cvtph_ps(simde__m256i a)
{
    int16_t v[16];
    float f[16];
    simde_mm256_storeu_si256(v, a);
    _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)v)));
    _mm256_storeu_ps(f + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 8))));
    return simde_mm512_loadu_ps(f);
}

#undef _mm512_sra_epi64
#define _mm512_sra_epi64 emu_sra_epi64
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps emu_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps emu_mask_storeu_ps
#undef _mm512_maskz_loadu_epi8
#define _mm512_maskz_loadu_epi8 emu_maskz_loadu_epi8
#undef _mm256_mask_storeu_epi8
#define _mm256_mask_storeu_epi8 emu_mm256_mask_storeu_epi8
#undef _mm512_cvtps_epi32
#define _mm512_cvtps_epi32 emu_cvtps_epi32
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps emu_reduce_add_ps
#undef _mm512_reduce_max_ps
#define _mm512_reduce_max_ps emu_reduce_max_ps
#undef _mm512_alignr_epi32
#define _mm512_alignr_epi32 emu_alignr_epi32
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph emu_cvtps_ph
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps emu_cvtph_ps

static inline simde__m512 emu_mask_i32gather_ps(simde__m512 src, simde__mmask16 k, simde__m512i idx, const void *base,
                                               int scale)
{
    float v[16];
    int32_t ix[16];
    simde_mm512_storeu_ps(v, src);
    simde_mm512_storeu_si512(ix, idx);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy(&v[i], (const char *)base + (int64_t)ix[i] * scale, 4);
    return simde_mm512_loadu_ps(v);
}

static inline simde__m512i emu_mask_shuffle_epi32(simde__m512i src, simde__mmask16 k, simde__m512i a, int imm)
{
    int32_t s[16], x[16], v[16];
    simde_mm512_storeu_si512(s, src);
    simde_mm512_storeu_si512(x, a);
    for (int i = 0; i < 16; i++)
        v[i] = (k >> i) & 1 ? x[i / 4 * 4 + ((imm >> (2 * (i % 4))) & 3)] : s[i];
    return simde_mm512_loadu_si512(v);
}

static inline simde__m512 emu_shuffle_f32x4(simde__m512 a, simde__m512 b, int imm)
{
    float x[16], y[16], v[16];
    simde_mm512_storeu_ps(x, a);
    simde_mm512_storeu_ps(y, b);
    for (int g = 0; g < 4; g++)
        memcpy(v + 4 * g, (g < 2 ? x : y) + 4 * ((imm >> (2 * g)) & 3), 16);
    return simde_mm512_loadu_ps(v);
}

static inline void emu_mm_mask_storeu_epi8(void *p, simde__mmask16 k, simde__m128i a)
{
    int8_t v[16];
    simde_mm_storeu_si128(v, a);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            ((int8_t *)p)[i] = v[i];
}

static inline void emu_mask_storeu_epi8(void *p, simde__mmask64 k, simde__m512i a)
{
    int8_t v[64];
    simde_mm512_storeu_si512(v, a);
    for (int i = 0; i < 64; i++)
        if ((k >> i) & 1)
            ((int8_t *)p)[i] = v[i];
}

/* Truncation toward zero; out of range and NaN give INT32_MIN. */
static inline simde__m512i emu_maskz_cvttps_epi32(simde__mmask16 k, simde__m512 a)
{
    float f[16];
    int32_t v[16];
    simde_mm512_storeu_ps(f, a);
    for (int i = 0; i < 16; i++)
        v[i] = !((k >> i) & 1) ? 0 : f[i] > -2147483649.0f && f[i] < 2147483648.0f ? (int32_t)f[i] : INT32_MIN;
    return simde_mm512_loadu_si512(v);
}

/* vpmovdb: each lane's low byte. */
static inline simde__m128i emu_cvtepi32_epi8(simde__m512i a)
{
    int32_t x[16];
    int8_t v[16];
    simde_mm512_storeu_si512(x, a);
    for (int i = 0; i < 16; i++)
        v[i] = (int8_t)(uint8_t)(uint32_t)x[i];
    return simde_mm_loadu_si128(v);
}

#undef _mm512_mask_i32gather_ps
#define _mm512_mask_i32gather_ps emu_mask_i32gather_ps
#undef _mm512_mask_shuffle_epi32
#define _mm512_mask_shuffle_epi32 emu_mask_shuffle_epi32
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 emu_shuffle_f32x4
#undef _mm_mask_storeu_epi8
#define _mm_mask_storeu_epi8 emu_mm_mask_storeu_epi8
#undef _mm512_mask_storeu_epi8
#define _mm512_mask_storeu_epi8 emu_mask_storeu_epi8
#undef _mm512_maskz_cvttps_epi32
#define _mm512_maskz_cvttps_epi32 emu_maskz_cvttps_epi32
#undef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8 emu_cvtepi32_epi8

static inline simde__m512i emu_sra_epi32(simde__m512i a, simde__m128i count)
{
    int32_t v[16];
    int64_t c = simde_mm_cvtsi128_si64(count);
    simde_mm512_storeu_si512(v, a);
    for (int i = 0; i < 16; i++)
        v[i] = c > 31 ? (v[i] < 0 ? -1 : 0) : v[i] >> c;
    return simde_mm512_loadu_si512(v);
}
#undef _mm512_sra_epi32
#define _mm512_sra_epi32 emu_sra_epi32

static inline simde__m256i emu_mm256_maskz_loadu_epi8(simde__mmask32 k, const void *p)
{
    int8_t v[32] = {0};
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1)
            v[i] = ((const int8_t *)p)[i];
    return simde_mm256_loadu_si256(v);
}

static inline simde__m128i emu_mm_maskz_loadu_epi8(simde__mmask16 k, const void *p)
{
    int8_t v[16] = {0};
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            v[i] = ((const int8_t *)p)[i];
    return simde_mm_loadu_si128(v);
}

static inline simde__m512i emu_cvtepi8_epi32(simde__m128i a)
{
    int8_t x[16];
    int32_t v[16];
    simde_mm_storeu_si128(x, a);
    for (int i = 0; i < 16; i++)
        v[i] = x[i];
    return simde_mm512_loadu_si512(v);
}

static inline void emu_mask_storeu_epi32(void *p, simde__mmask16 k, simde__m512i a)
{
    int32_t v[16];
    simde_mm512_storeu_si512(v, a);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy((int32_t *)p + i, &v[i], 4);
}

/* vpexpandd: the low lanes of a, in order, into the lanes k selects. */
static inline simde__m512i emu_maskz_expand_epi32(simde__mmask16 k, simde__m512i a)
{
    int32_t x[16], v[16] = {0};
    simde_mm512_storeu_si512(x, a);
    for (int i = 0, j = 0; i < 16; i++)
        if ((k >> i) & 1)
            v[i] = x[j++];
    return simde_mm512_loadu_si512(v);
}

static inline simde__m512i emu_srav_epi32(simde__m512i a, simde__m512i count)
{
    int32_t v[16], c[16];
    simde_mm512_storeu_si512(v, a);
    simde_mm512_storeu_si512(c, count);
    for (int i = 0; i < 16; i++)
        v[i] = (uint32_t)c[i] > 31 ? (v[i] < 0 ? -1 : 0) : v[i] >> c[i];
    return simde_mm512_loadu_si512(v);
}

static inline simde__m512i emu_srav_epi64(simde__m512i a, simde__m512i count)
{
    int64_t v[8], c[8];
    simde_mm512_storeu_si512(v, a);
    simde_mm512_storeu_si512(c, count);
    for (int i = 0; i < 8; i++)
        v[i] = (uint64_t)c[i] > 63 ? (v[i] < 0 ? -1 : 0) : v[i] >> c[i];
    return simde_mm512_loadu_si512(v);
}

#undef _mm256_maskz_loadu_epi8
#define _mm256_maskz_loadu_epi8 emu_mm256_maskz_loadu_epi8
#undef _mm_maskz_loadu_epi8
#define _mm_maskz_loadu_epi8 emu_mm_maskz_loadu_epi8
#undef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32 emu_cvtepi8_epi32
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32 emu_mask_storeu_epi32
#undef _mm512_maskz_expand_epi32
#define _mm512_maskz_expand_epi32 emu_maskz_expand_epi32
#undef _mm512_srav_epi32
#define _mm512_srav_epi32 emu_srav_epi32
#undef _mm512_srav_epi64
#define _mm512_srav_epi64 emu_srav_epi64

/* vrndscaleps: SIMDe 0.7.4 reads the no-exception bit (3) as part of the
 * scale. Bits 0-1 the rounding (bit 2: the current mode, nearest), bits
 * 4-7 the fraction bits kept. */
static inline simde__m512 emu_roundscale_ps(simde__m512 a, int imm)
{
    float f[16];
    const float scale = (float)(1 << ((imm >> 4) & 15));
    simde_mm512_storeu_ps(f, a);
    for (int i = 0; i < 16; i++) {
        float v = f[i] * scale;
        switch ((imm & 4) ? 0 : imm & 3) {
        case 0: v = nearbyintf(v); break;
        case 1: v = floorf(v); break;
        case 2: v = ceilf(v); break;
        default: v = truncf(v); break;
        }
        f[i] = v / scale;
    }
    return simde_mm512_loadu_ps(f);
}
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps emu_roundscale_ps

/* AMX-TILE and AMX-INT8 (the INT8 channels-last convolution's tiles), which
 * SIMDe does not have: eight tile registers per thread, as bytes, and the
 * instructions the project uses, row by row. Like the hardware (which
 * raises #UD), a use that does not fit the loaded configuration aborts. */
struct emu_tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

static _Thread_local struct {
    int configured;
    uint8_t rows[8];
    uint16_t colsb[8];
    uint8_t data[8][16][64];
} emu_tiles;

static inline void emu_tile_check(int ok)
{
    if (!ok)
        abort();
}

static inline void emu_tile_loadconfig(const void *config)
{
    const struct emu_tile_config *c = config;
    emu_tile_check(c->palette == 1);
    memset(&emu_tiles, 0, sizeof emu_tiles);
    emu_tiles.configured = 1;
    for (int t = 0; t < 8; t++) {
        emu_tile_check(c->rows[t] <= 16 && c->colsb[t] <= 64 && c->colsb[t] % 4 == 0);
        emu_tiles.rows[t] = c->rows[t];
        emu_tiles.colsb[t] = c->colsb[t];
    }
}

static inline void emu_tile_used(int t)
{
    emu_tile_check(emu_tiles.configured && t >= 0 && t < 8 && emu_tiles.rows[t] > 0 && emu_tiles.colsb[t] > 0);
}

static inline void emu_tile_loadd(int t, const void *base, long stride)
{
    emu_tile_used(t);
    memset(emu_tiles.data[t], 0, sizeof emu_tiles.data[t]);
    for (int r = 0; r < emu_tiles.rows[t]; r++)
        memcpy(emu_tiles.data[t][r], (const uint8_t *)base + (long)r * stride, emu_tiles.colsb[t]);
}

static inline void emu_tile_stored(int t, void *base, long stride)
{
    emu_tile_used(t);
    for (int r = 0; r < emu_tiles.rows[t]; r++)
        memcpy((uint8_t *)base + (long)r * stride, emu_tiles.data[t][r], emu_tiles.colsb[t]);
}

static inline void emu_tile_zero(int t)
{
    emu_tile_used(t);
    memset(emu_tiles.data[t], 0, sizeof emu_tiles.data[t]);
}

/* c += a times b (signed bytes; a's unsigned where a_unsigned), 32-bit
 * sums: c is M x N int32, a M x K quads, b K rows of N quads. */
static inline void emu_tile_dp(int c, int a, int b, int a_unsigned)
{
    emu_tile_used(c), emu_tile_used(a), emu_tile_used(b);
    const int m = emu_tiles.rows[c], n = emu_tiles.colsb[c] / 4, k = emu_tiles.colsb[a] / 4;
    emu_tile_check(emu_tiles.rows[a] == m && emu_tiles.rows[b] == k && emu_tiles.colsb[b] == emu_tiles.colsb[c]);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t sum;
            memcpy(&sum, &emu_tiles.data[c][i][4 * j], 4);
            for (int q = 0; q < k; q++)
                for (int e = 0; e < 4; e++)
                    sum = (int32_t)((uint32_t)sum +
                                    (uint32_t)((a_unsigned ? (int)emu_tiles.data[a][i][4 * q + e]
                                                           : (int)(int8_t)emu_tiles.data[a][i][4 * q + e]) *
                                               (int8_t)emu_tiles.data[b][q][4 * j + e]));
            memcpy(&emu_tiles.data[c][i][4 * j], &sum, 4);
        }
}

static inline void emu_tile_dpbusd(int c, int a, int b) { emu_tile_dp(c, a, b, 1); }
static inline void emu_tile_dpbssd(int c, int a, int b) { emu_tile_dp(c, a, b, 0); }

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbusd
#undef _tile_dpbssd
#define _tile_loadconfig emu_tile_loadconfig
#define _tile_loadd emu_tile_loadd
#define _tile_stored emu_tile_stored
#define _tile_zero emu_tile_zero
#define _tile_dpbusd emu_tile_dpbusd
#define _tile_dpbssd emu_tile_dpbssd

#endif
