/*
 * kcpu_q8_nhwc.h - the channels-last INT8 convolution (kcpu_q8.h,
 * kcpu_conv2d_q8_nhwc), internal to kernels/cpu.
 *
 * Activations [n][h][w][c] let the kernel work as OpenVINO's does on its
 * channel-blocked layout: lanes are 16 output channels, and one 32-bit
 * broadcast of a pixel's four consecutive input channels feeds vpdpbusd
 * against a 64-byte weight vector (16 output channels by those four input
 * channels). Nothing is packed per call but a padded, sign-flipped copy of
 * x, and nothing is computed that is not an output: the NCHW GEMM packs each
 * input byte once per kernel tap and computes its implicit grid's padding
 * columns (on a 7x7 map, 64 lanes for 49 pixels).
 *
 *   padded x: per image hp rows of wp pixels of cp = 4 * ceil(c / 4) bytes,
 *     x's pixel (ih, iw) at (ih + pad_t, iw + pad_l), each byte x ^ 0x80
 *     on AVX-512 (vpdpbusd takes unsigned bytes; a padding byte is 0x80,
 *     i.e. 0), x itself elsewhere (padding 0);
 *   packed weights: per block of 16 output channels, [tap][quad][16][4]
 *     int8 (tap = ki * kw + kj, quad = input channels 4q .. 4q + 3, zero
 *     past c and past oc), then int32 wsum[blocks * 16], each channel's
 *     weight sum (the kernel starts its sums at bias - 128 * wsum).
 *
 * A tile is `pixels` consecutive outputs of one output row by `vecs`
 * blocks: pixels * vecs accumulators in registers.
 *
 * AVX2 (no vpdpbusd, q8_nhwc_avx2.c) keeps x's sign bits as they are
 * (padding 0, sums start at bias) and multiplies as the AVX2 GEMM does:
 * vpmaddubsw then vpmaddwd, two ymm per block, one block a tile. The
 * padded copy notes per row whether it holds a negative byte; a tile
 * whose rows hold none takes the shorter unsigned form.
 */
#ifndef KCPU_Q8_NHWC_H
#define KCPU_Q8_NHWC_H

#include "kcpu_q8_impl.h"

#define KQ8_NHWC_MAX_PIX 24   /* pixels of a one-block tile (24 accumulators) */

struct kq8_nhwc_tile {
    const uint8_t *x;          /* the tile's first pixel's window origin in the padded x */
    int64_t xs;                /* bytes between the tile's pixels: stride_w * cp */
    const int64_t *toff;       /* [taps] a tap's byte offset from the window origin */
    int taps;
    int64_t quads;             /* cp / 4 */
    const int8_t *w;           /* the first block's weights */
    int64_t wblock;            /* bytes between blocks' weights */
    const void *consts;        /* kq8_nhwc_consts_avx512's (or _avx2's), for every block of the layer */
    int block0;                /* the tile's first block */
    const struct k_q8_epilogue *e;
    const int8_t *res;         /* the tile's first output in the residual, or NULL */
    void *y;                   /* its first output: int8, or int32 with e->out_i32 */
    int64_t oc;                /* elements between output pixels */
    int oc_left;               /* output channels from the first block on (masks the last) */
    int x_signed;              /* AMX only: x is the input as it is (signed bytes, no sign flip,
                                * none corrected for in the consts), multiplied by TDPBSSD */
};

/* Runs one tile of vecs (1..4) blocks by pixels (1..kq8_nhwc_max_pixels(vecs)). */
void kq8_nhwc_tile_avx512(const struct kq8_nhwc_tile *t, int vecs, int pixels);

/* AMX (kq8_amx): tiles of up to 16 pixels, each block's sums in one tile
 * register, the layer's quads 16 a step (A: the pixels' 64 bytes, t->xs
 * apart, straight from the padded x; B: one block's packed weights for
 * those 16 quads, 64 bytes a row, as they lie), then the VNNI tile's
 * epilogue. kq8_nhwc_tile_amx: one pixel tile by vecs (1..4) blocks, any
 * quads. kq8_nhwc_pair_amx: two pixel tiles (t1 may be NULL) by vecs (1
 * or 2) blocks, for layers whose quads are a multiple of 16; t1 differs
 * from t0 in x, y and res only. Every call of a layer should have the same
 * pixels: the tile registers are reconfigured when the shapes change. */
#define KQ8_NHWC_AMX_PIX 16
void kq8_nhwc_tile_amx(const struct kq8_nhwc_tile *t, int vecs, int pixels);
void kq8_nhwc_pair_amx(const struct kq8_nhwc_tile *t0, const struct kq8_nhwc_tile *t1, int vecs, int pixels);

/* What AVX-512 VNNI leaves to the NCHW kernels, measured against them
 * (build/bench_int8_layout, docs/performance.md, 2026-12-01): a dense
 * layer of 1-3 input channels on a map over 28 x 28 (a stem: each pixel
 * padded to one quad, a step per tap; the GEMM ran ResNet-50's and
 * MobileNetV2's 1.2-2.2x faster; resnet-mini's, 28 x 28, stays: its
 * output is the next block's residual, and an NCHW stem took that block
 * to NCHW too, resnet-mini INT8 batch 64 36.8 -> 43.8 us an image), and a
 * depthwise one on a map over 14 x 14 (its rows widened to int32:
 * 0.61-0.92x the NCHW kernel's speed on 28x28 to 112x112 maps, 1.4-2.5x
 * on 14x14 and 7x7). MobileNetV2 then turns channels last where its maps
 * reach 14 x 14. */
#define KQ8_NHWC_AVX512_MIN_C 4
#define KQ8_NHWC_AVX512_STEM_MAP 784
#define KQ8_NHWC_AVX512_DW_MAX_MAP 196

/* AVX2: one block by up to 5 pixels (4 in the signed form). nonneg: no
 * byte of the rows the tile reads is negative. */
/* AVX2 takes layers whose input map has at most this many pixels (28 x
 * 28). Measured against the NCHW GEMM on a Zen 3 (docs/performance.md):
 * on 14x14 and 7x7 maps 1.01-3.9x faster, on 28x28 0.88-1.28x, on 56x56
 * and larger 0.57-0.99x (the depthwise layers' per-pixel epilogue, the
 * GEMM there already fills its lanes). So a network's large maps stay
 * NCHW and it turns channels last once, where its maps shrink to 28x28. */
#define KQ8_NHWC_AVX2_MAX_MAP 784
#define KQ8_NHWC_AVX2_MAX_PIX 5
#define KQ8_NHWC_AVX2_MAX_PIX_SIGNED 4
void kq8_nhwc_tile_avx2(const struct kq8_nhwc_tile *t, int pixels, int nonneg);

/* The padded copy's row from NCHW x on AVX2 (any CPU with AVX2): pixels
 * [0, pixels) of c planes' rows (src: channel 0's, plane bytes apart) to
 * row, cp bytes a pixel, each byte ^ flip, channels past c flip. Returns
 * 0x80 where a byte read is negative, else 0. */
uint8_t kq8_nhwc_rows_from_nchw_avx2(const uint8_t *src, int64_t plane, int64_t c, int64_t cp, int64_t pixels,
                                     uint8_t flip, uint8_t *row);

/* The padded copy's row from NHWC x without channel padding on AVX2: dst =
 * src ^ flip for n bytes. Returns 0x80 where a byte read is negative, else
 * 0. */
uint8_t kq8_nhwc_copy_flip_avx2(uint8_t *dst, const uint8_t *src, int64_t n, uint8_t flip);

/* The most pixels a tile of vecs blocks takes: up to 24 accumulators, the
 * weight vectors and a broadcast beside them in the 32 registers. */
static inline int kq8_nhwc_max_pixels(int vecs)
{
    static const int most[5] = {0, KQ8_NHWC_MAX_PIX, 12, 8, 6};
    return most[vecs];
}

/* The epilogue's constants for a call (the residual's multiplier and
 * the clamp, then each block's lanes): at most KQ8_NHWC_CONSTS_BYTES(blocks)
 * bytes, 64-byte aligned. */
#define KQ8_NHWC_EPI_BYTES 768
#define KQ8_NHWC_LANES_BYTES 768
#define KQ8_NHWC_CONSTS_BYTES(blocks) (KQ8_NHWC_EPI_BYTES + (int64_t)(blocks) * KQ8_NHWC_LANES_BYTES)
void kq8_nhwc_consts_avx512(const int32_t *bias, const int32_t *wsum, const struct k_q8_mult *mult, int oc,
                            const struct k_q8_epilogue *e, int has_res, void *consts);
/* The same for the AVX2 tile: a block's room holds two kq8_lanes8. */
void kq8_nhwc_consts_avx2(const int32_t *bias, const struct k_q8_mult *mult, int oc, const struct k_q8_epilogue *e,
                          int has_res, void *consts);

#endif /* KCPU_Q8_NHWC_H */
