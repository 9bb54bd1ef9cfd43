/*
 * convpix_avx512.c - the pixel-tile convolution microkernel (see
 * kcpu_convpix.h) and its epilogue. Compiled with the AVX-512 flags;
 * entered only through kcpu_convpix_f32 after the run-time ISA check.
 *
 * Per reduction step: one 16-channel weight vector per channel vector
 * (two 8-row panel rows joined), one broadcast per pixel, vecs * rows FMAs
 * into as many accumulators (24 or 16 of the 32 registers); at 6 x 4 that
 * is 14 loads per 24 FMAs. The epilogue turns the tile round, one output
 * channel at a time, with a gather from the stored accumulators, so each
 * channel's pixels leave in one vector: a masked store where they are
 * consecutive in the output (one image), else a scatter.
 */
#include "kcpu_convpix.h"
#include "kcpu_math_avx512.h"

static inline __attribute__((always_inline)) void
accumulate(const int vecs, const int rows, const struct kcpu_pix_tile *t, float *out /* [rows][vecs * 16] */)
{
    __m512 acc[4][KCPU_PIX_MAX];
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            acc[v][r] = _mm512_setzero_ps();
    /* Pixels past the tile's last repeat its first: computed, never stored. */
    const float *o[KCPU_PIX_MAX];
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++)
        o[r] = t->origin[r < t->pixels ? r : 0];
    const float *w = t->w;
    const int64_t ps = t->panel_stride;
    for (int64_t k = 0; k < t->k; k++, w += KCPU_MR) {
        const int64_t off = t->boff[k];
        __m512 wv[4];
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            wv[v] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(w + 2 * v * ps)),
                                       _mm256_loadu_ps(w + (2 * v + 1) * ps), 1);
#pragma GCC unroll 16
        for (int r = 0; r < rows; r++) {
            __m512 b = _mm512_set1_ps(o[r][off]);
#pragma GCC unroll 4
            for (int v = 0; v < vecs; v++)
                acc[v][r] = _mm512_fmadd_ps(wv[v], b, acc[v][r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            _mm512_storeu_ps(out + r * vecs * 16 + v * 16, acc[v][r]);
}

static void store(const struct kcpu_pix_tile *t, const float *acc)
{
    const int ch = t->vecs * 16;
    const __mmask16 m = (__mmask16)((1u << t->pixels) - 1);
    const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i from = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(ch));
    const __m512i to = _mm512_maskz_loadu_epi32(m, t->yoff);
    /* One image's pixels in order are consecutive in the output. */
    int consecutive = 1;
    for (int r = 1; r < t->pixels; r++)
        consecutive &= t->yoff[r] == t->yoff[0] + r;
    for (int o = 0; o < ch; o++) {
        __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, from, acc + o, 4);
        if (t->bias)
            v = _mm512_add_ps(v, _mm512_set1_ps(t->bias[o]));
        float *y = t->y + o * t->ldy;
        const float *res = t->res ? t->res + o * t->ldy : NULL;
        if (consecutive) {
            if (res)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res + t->yoff[0]));
            _mm512_mask_storeu_ps(y + t->yoff[0], m, kv16_act(t->act, v));
        } else {
            if (res)
                v = _mm512_add_ps(v, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, to, res, 4));
            _mm512_mask_i32scatter_ps(y, m, to, kv16_act(t->act, v), 4);
        }
    }
}

void kcpu_pix_tile_avx512(const struct kcpu_pix_tile *t)
{
    float out[24 * 16] __attribute__((aligned(64)));  /* rows * vecs <= 24 vectors */
    switch (t->vecs) {
    case 1:
        accumulate(1, 16, t, out);
        break;
    case 2:
        accumulate(2, 12, t, out);
        break;
    case 3:
        accumulate(3, 8, t, out);
        break;
    default:
        accumulate(4, 6, t, out);
        break;
    }
    store(t, out);
}
