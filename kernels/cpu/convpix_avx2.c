/*
 * convpix_avx2.c - the pixel-tile convolution's tile (kcpu_convpix.h) on
 * AVX2 + FMA, and its band copy. Entered only through
 * kcpu_convpix_f32 after the run-time ISA check.
 *
 * With 16 ymm registers a tile is one block of 16 output channels (two
 * 8-row panels, one vector each) by up to KCPU_PIX_AVX2_ROWS pixels: 12
 * accumulators, 2 weight loads and 6 broadcasts per 12 FMAs. Its pixels
 * run on across output rows, each with its own window offset (poff). The
 * epilogue turns each 8 channels x pixels block round in registers and
 * stores each channel's run in 4-, 2- and 1-float pieces (vmaskmovps
 * stores are microcoded on AMD).
 */
#include <stddef.h>
#include <stdint.h>

#include "kcpu_convpix.h"
#include "kcpu_math_avx2.h"
#include "kcpu_pad_avx2.h"

static inline __attribute__((always_inline)) void accumulate(const int rows, const struct kcpu_pix_tile *t,
                                                             float *out /* [rows][16] */)
{
    __m256 acc[2][KCPU_PIX_AVX2_ROWS];
    /* A pointer per pixel, so that each broadcast is one load from
     * pointer + 4 * tap offset. The empty asm hides where the pointers
     * come from: else GCC folds them back into origin + (poff + tap),
     * one more add per broadcast, and spills an offset. */
    const float *pix[KCPU_PIX_AVX2_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        acc[0][r] = acc[1][r] = _mm256_setzero_ps();
        pix[r] = t->origin + t->poff[r];
        __asm__("" : "+r"(pix[r]));
    }
    const float *w0p = t->w, *w1p = t->w + KCPU_MR;   /* the pair's two panels */
    const int64_t *boff = t->boff, depth = t->k;
    /* Two steps a loop: ResNet-50's strided layers 0.92-1.17x, median
     * 1.04x, in three alternating runs on Zen 3 (docs/performance.md). */
#pragma GCC unroll 2
    for (int64_t k = 0; k < depth; k++, w0p += KCPU_PAIR, w1p += KCPU_PAIR) {
        const __m256 w0 = _mm256_loadu_ps(w0p), w1 = _mm256_loadu_ps(w1p);
        const int64_t tap = boff[k];
#pragma GCC unroll 8
        for (int64_t r = 0; r < rows; r++) {
            const __m256 b = _mm256_broadcast_ss(pix[r] + tap);
            acc[0][r] = _mm256_fmadd_ps(w0, b, acc[0][r]);
            acc[1][r] = _mm256_fmadd_ps(w1, b, acc[1][r]);
        }
    }
#pragma GCC unroll 8
    for (int64_t r = 0; r < rows; r++) {
        _mm256_storeu_ps(out + r * 16, acc[0][r]);
        _mm256_storeu_ps(out + r * 16 + 8, acc[1][r]);
    }
}

/* r[i] lane j <- r[j] lane i. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* The first n (1 .. 8) lanes of v at dst, without masked stores. */
static inline void store_n(float *dst, __m256 v, int n)
{
    __m128 q = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(dst, q);
        if (n == 8) {
            _mm_storeu_ps(dst + 4, _mm256_extractf128_ps(v, 1));
            return;
        }
        q = _mm256_extractf128_ps(v, 1), dst += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)dst, q);
        q = _mm_movehl_ps(q, q), dst += 2, n -= 2;
    }
    if (n)
        _mm_store_ss(dst, q);
}

/* The tile's sums (acc, [n][16]) finished and stored. */
static inline __attribute__((always_inline)) void epilogue(const int n, const struct kcpu_pix_tile *t,
                                                           const float *acc)
{
    const int64_t ldy = t->ldy;
    const __m256i in = kv8_cols_in(0, n);
    /* 8 channels at a time, turned round in registers so that each
     * channel's pixels are a vector: its bias a broadcast, its residual and
     * output contiguous runs (the scalar stores of a pixel-major epilogue
     * were 13 % of resnet-mini's time) */
    for (int64_t h = 0; h < 2; h++) {
        __m256 v[8];
        for (int r = 0; r < 8; r++)
            v[r] = r < n ? _mm256_loadu_ps(acc + (ptrdiff_t)r * 16 + 8 * h) : _mm256_setzero_ps();
        transpose8(v);
        for (int64_t i = 0; i < 8; i++) {
            const int64_t o = (8 * h + i) * ldy;
            __m256 c = _mm256_add_ps(v[i], _mm256_set1_ps(t->bias ? t->bias[8 * h + i] : 0.0f));
            if (t->res)
                c = _mm256_add_ps(c, _mm256_maskload_ps(t->res + o, in));
            store_n(t->y + o, kv8_act_clamp_inline(t->act, c), n);
        }
    }
}

/* A tile of each size, its pixel count a constant throughout. */
typedef void (*tile_fn)(const struct kcpu_pix_tile *t);
#define TILE_FN(R)                                        \
    static void tile_##R(const struct kcpu_pix_tile *t)   \
    {                                                     \
        float acc[(R) * 16];                              \
        accumulate(R, t, acc);                            \
        epilogue(R, t, acc);                              \
    }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)
static const tile_fn TILE_FNS[KCPU_PIX_AVX2_ROWS + 1] = {NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

void kcpu_pix_tile_avx2(const struct kcpu_pix_tile *t)
{
    TILE_FNS[t->pixels](t);
}

/* Rows in whole vectors: masked loads read the image's columns and zeros
 * elsewhere, and a row's last vector spills its spare lanes onto the next
 * row (written after it), past the band's rows or into the slack after
 * the slice (kcpu_convpix.c); memset and memcpy per row of 16-30 floats
 * were a tenth of resnet-mini's time. */
void kcpu_pix_band_avx2(const struct kcpu_pix_band *b)
{
    for (int64_t ci = 0; ci < b->c; ci++)
        for (int64_t r = 0; r < b->rows; r++) {
            float *dst = b->slice + (ci * b->gh + r) * b->gw;
            const int64_t ih = b->g0 + r - b->pad_t;
            if (ih < 0 || ih >= b->h) {
                for (int64_t t = 0; t < b->gw; t += 8)
                    _mm256_storeu_ps(dst + t, _mm256_setzero_ps());
                continue;
            }
            const float *row = b->x + (ci * b->h + ih) * b->w;
            for (int64_t t = 0; t < b->gw; t += 8)   /* input column t - pad_l in lane 0 */
                _mm256_storeu_ps(dst + t, kv8_load_cols(row, t - b->pad_l, b->w));
        }
}
