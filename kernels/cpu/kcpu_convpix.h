/*
 * kcpu_convpix.h - the pixel-tile convolution kernel (AVX-512 and AVX2; internal to
 * kernels/cpu: kcpu_conv.c dispatches to it, the kernel tests call it).
 *
 * The GEMM paths of kcpu_conv.c put output pixels in 32-column strips: a
 * 7x7 map fills 49 of 64 lanes, a padded grid computes columns it drops,
 * and im2col copies every window. Here the roles are turned round: a tile
 * is a run of up to 16 consecutive output pixels of one output row (on
 * AVX2 up to 6, carrying on across rows; on AVX-512 at batch 1 two whole
 * rows of a 7-wide map) by 16-64 output channels, the channels in vectors. AVX-512
 * runs a group of tiles over the depth in chunks, so that a chunk's
 * weights are read from L1 by every tile of the group. Per reduction step the
 * kernel loads the weights of 16 channels once per vector and broadcasts
 * one input value per pixel (pixel r reads the first pixel's window plus
 * r * stride), so nothing is computed that is not an output. Inputs with
 * padding are first copied into a zero-padded grid (no stride-phase split:
 * the stride is the broadcasts' step).
 *
 * The weights are the GEMM's packed panels (kcpu_conv2d_pack): the kernel
 * joins two 8-row panels into one 16-channel vector, so the packed layout
 * stays the same on every ISA.
 */
#ifndef KCPU_CONVPIX_H
#define KCPU_CONVPIX_H

#include "kcpu_impl.h"

/* Whether kcpu_conv2d_f32 hands p to this kernel: AVX-512 or AVX2, one group,
 * output channels a multiple of 16, a stride of 1 or 2 across, 64 or more
 * multiply-adds per output on AVX-512 and 9 on AVX2 (16 for a strided
 * 1x1), with 48 or more
 * channels maps of up to 28x28 outputs; a plain 1x1 (stride 1, unpadded)
 * only on AVX-512, with 48 or more output and 128 or more input channels
 * on maps of up to 14x14. */
int kcpu_convpix_applies(const struct k_conv2d *p);

/* Whether the kernel takes p on some ISA: kcpu_conv2d_pack then packs p's
 * weights in panel pairs (kcpu_impl.h), whichever ISA runs them. */
int kcpu_convpix_fits_some_isa(const struct k_conv2d *p);

/* Whether at batch 1 the AVX-512 tiles (avx512 != 0) of p's shape take
 * two rows of a 7-wide map, 2 channel vectors by 14 pixels: 28 chains, as
 * many as one-row tiles of 4 vectors by 7 pixels, with half the weight
 * loads a pixel. p->n is not read (kcpu_wino_applies asks, for every batch). */
int kcpu_convpix_two_row_tiles(const struct k_conv2d *p, int avx512);

/* Same contracts as kcpu_conv2d_scratch_bytes and kcpu_conv2d_f32
 * (kcpu.h), with kcpu_conv2d_pack's weights. */
size_t kcpu_convpix_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_convpix_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                      const float *packed_w, const float *bias, const float *residual, float *y,
                      void *scratch);

#define KCPU_PIX_MAX 16    /* pixels of a tile: one vector of lanes */
#define KCPU_PIX_AVX2_ROWS 6   /* pixels of an AVX2 tile (kcpu_pix_rows) */

/* Reduction steps between the prefetch of an AVX-512 tile's input lines
 * and their use. A tile's steps read one line per input channel, a plane
 * apart, which the hardware does not fetch ahead; in a model those lines
 * are in L3 or in the other core's L2 (the previous layer wrote them
 * there). Measured on a 576 -> 96 1x1 layer on 14x14 (2 threads) run right
 * after the depthwise layer that writes its input, as in MobileNetV2:
 * 199-208 us without, 123-128 at 8 steps, 93-106 at 16, 32 and 64; 70-89
 * us when run again at once (all in cache), with or without. The AVX2
 * tile does without: there (on the same Xeon) it cost resnet-mini 2 %. */
#define KCPU_PIX_AHEAD 16

/* One tile: pixels consecutive output pixels by vecs * 16 output
 * channels, on AVX-512 of one output row:
 *     out[o][r] = act(bias[o] + sum_k w[o][k] * origin[boff[k] + r * stride] + res[o][r])
 * or, at batch 1, of two whole 7-pixel rows (next_row > 0: 2 vectors, 14 pixels, pixel
 * r >= 7 at origin + next_row + (r - 7) * stride; a 7-wide map in one-row
 * tiles left half of a 14-pixel tile's chains idle),
 * and on AVX2 consecutive in the plane, across rows, pixel r's window at
 * origin + poff[r] instead (a 7-wide row was tiles of 4 and 3 pixels:
 * 8 and 6 chains of multiply-adds, too few for two FMA pipes), stored at
 * y[o * ldy + r] (res likewise, when not NULL); w is panel pairs
 * [k][KCPU_PAIR] (kcpu_impl.h), one per 16 channels, pair_stride floats
 * apart. */
struct kcpu_pix_tile {
    int vecs;                  /* 1 .. 4 */
    int stride;                /* 1 or 2: the convolution's stride_w (AVX-512) */
    int pixels;                /* 1 .. kcpu_pix_rows(vecs) */
    enum k_act act;
    int64_t next_row;          /* AVX-512: 0, or a two-row tile's second row from origin */
    int64_t poff[KCPU_PIX_AVX2_ROWS];   /* AVX2: pixel r's window, from origin */
    int64_t k;
    const float *w;
    int64_t pair_stride;
    const int64_t *boff;       /* [k] */
    const float *origin;       /* the first pixel's window, top left */
    const float *bias;         /* [vecs * 16] or NULL */
    int64_t ldy;
    const float *res;          /* or NULL */
    float *y;
};

/* The most pixels a tile of vecs channel vectors holds: on AVX-512 its
 * accumulators fill 27 or 28 of the 32 vector registers (16 with one
 * vector); on AVX2 a tile is one block of 16 channels (12 of 16 ymm). */
static inline int kcpu_pix_rows(int vecs, int avx512)
{
    static const int ROWS[5] = {0, 16, 14, 9, 7};
    return avx512 ? ROWS[vecs] : KCPU_PIX_AVX2_ROWS;
}

/* AVX-512: count (1 .. KCPU_PIX_GROUP) tiles of one channel block (the
 * same w, k, boff, vecs and stride), the depth in chunks that pass over
 * every tile of the group while their weights are in L1. */
#define KCPU_PIX_GROUP 8
void kcpu_pix_tiles_avx512(const struct kcpu_pix_tile *tiles, int count);
void kcpu_pix_tile_avx2(const struct kcpu_pix_tile *t);

/* Rows [g0, g0 + rows) of the zero-padded grid of every channel of one
 * image x [c][h][w] (grid cell (r, col) is input (r - pad_t, col - pad_l),
 * zero outside it) into slice [c][gh][gw], at slice rows 0 .. rows - 1. */
struct kcpu_pix_band {
    const float *x;
    int64_t c, h, w, pad_t, pad_l;
    int64_t g0, rows;
    float *slice;
    int64_t gh, gw;
};

void kcpu_pix_band_avx512(const struct kcpu_pix_band *b);
void kcpu_pix_band_avx2(const struct kcpu_pix_band *b);   /* writes up to 7 floats past each row */

#endif /* KCPU_CONVPIX_H */
