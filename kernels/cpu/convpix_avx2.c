/*
 * convpix_avx2.c - the pixel-tile convolution's tile (kcpu_convpix.h) on
 * AVX2 + FMA, and the band copy in plain C. Entered only through
 * kcpu_convpix_f32 after the run-time ISA check.
 *
 * With 16 ymm registers a tile is one block of 16 output channels (two
 * 8-row panels, one vector each) by up to KCPU_PIX_AVX2_ROWS pixels: 12
 * accumulators, 2 weight loads and 6 broadcasts per 12 FMAs. Its pixels
 * run on across output rows, each with its own window offset (poff). The epilogue
 * works on each pixel's 8 channels as a vector and stores element by
 * element (vmaskmovps stores are microcoded on AMD).
 */
#include <string.h>

#include "kcpu_convpix.h"
#include "kcpu_math_avx2.h"

static inline __attribute__((always_inline)) void accumulate(const int rows, const struct kcpu_pix_tile *t,
                                                             float *out /* [rows][16] */)
{
    __m256 acc[2][KCPU_PIX_AVX2_ROWS];
    int64_t poff[KCPU_PIX_AVX2_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        acc[0][r] = acc[1][r] = _mm256_setzero_ps();
        poff[r] = t->poff[r];
    }
    const float *w = t->w;
    const int64_t ps = t->panel_stride;
    for (int64_t k = 0; k < t->k; k++, w += KCPU_MR) {
        const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + ps);
        const float *in = t->origin + t->boff[k];
#pragma GCC unroll 8
        for (int64_t r = 0; r < rows; r++) {
            const __m256 b = _mm256_broadcast_ss(in + poff[r]);
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

typedef void (*tile_fn)(const struct kcpu_pix_tile *t, float *out);
#define TILE_FN(R) \
    static void tile_##R(const struct kcpu_pix_tile *t, float *out) { accumulate(R, t, out); }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)
static const tile_fn TILE_FNS[KCPU_PIX_AVX2_ROWS + 1] = {NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

void kcpu_pix_tile_avx2(const struct kcpu_pix_tile *t)
{
    float acc[KCPU_PIX_AVX2_ROWS * 16];
    TILE_FNS[t->pixels](t, acc);
    const int rows = t->pixels;
    const int64_t ldy = t->ldy;
    /* 8 channels at a time: a pixel's 8 sums are a vector, bias and the
     * activation apply lane by lane; the residual and the stores go to
     * each channel's row, pixel by pixel */
    for (int64_t h = 0; h < 2; h++) {
        const __m256 bias = t->bias ? _mm256_loadu_ps(t->bias + 8 * h) : _mm256_setzero_ps();
        float out[KCPU_PIX_AVX2_ROWS][8];
        for (int64_t r = 0; r < rows; r++) {
            __m256 c = _mm256_add_ps(_mm256_loadu_ps(acc + r * 16 + 8 * h), bias);
            if (t->res) {
                float res[8];
                for (int64_t i = 0; i < 8; i++)
                    res[i] = t->res[(8 * h + i) * ldy + r];
                c = _mm256_add_ps(c, _mm256_loadu_ps(res));
            }
            _mm256_storeu_ps(out[r], t->act != K_ACT_NONE ? kv8_act(t->act, c) : c);
        }
        for (int64_t i = 0; i < 8; i++)
            for (int64_t r = 0; r < rows; r++)
                t->y[(8 * h + i) * ldy + r] = out[r][i];
    }
}

void kcpu_pix_band_c(const struct kcpu_pix_band *b)
{
    for (int64_t ci = 0; ci < b->c; ci++)
        for (int64_t r = 0; r < b->rows; r++) {
            float *dst = b->slice + (ci * b->gh + r) * b->gw;
            const int64_t ih = b->g0 + r - b->pad_t;
            memset(dst, 0, (size_t)b->gw * sizeof(float));
            if (ih < 0 || ih >= b->h)
                continue;
            /* input columns iw land at iw + pad_l; those past gw are never read */
            const int64_t n = kcpu_min64(b->w, b->gw - b->pad_l);
            if (n > 0)
                memcpy(dst + b->pad_l, b->x + (ci * b->h + ih) * b->w, (size_t)n * sizeof(float));
        }
}
