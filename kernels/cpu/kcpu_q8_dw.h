/*
 * kcpu_q8_dw.h - the direct INT8 depthwise convolution (groups == c == oc),
 * internal to kernels/cpu: kcpu_q8_conv.c hands such layers to it, the
 * kernel tests reach it through kcpu_conv2d_q8.
 *
 * As a GEMM, a depthwise layer is one-row panels padded to KQ8_MR rows and
 * a B strip packed per 9 multiply-adds: an eighth of the VNNI kernel's
 * work is useful. Here each (image, channel) plane is copied into a
 * zero-bordered padded plane, then, band of output rows by band, expanded
 * and convolved:
 *
 *   expanded band: for each vertical stride phase a that some tap reads
 *     and each weight quad q (kernel columns 4q .. 4q + 3), a block of
 *     rows R < band rows + extra of ow quads, quad (R, c) holding the
 *     padded input at row (r0 + R) * stride_h + a and columns
 *     c * stride_w + (4q + t) * dil_w, t < 4 (zero outside the image; any
 *     value where 4q + t >= kw, whose weight is 0), then KQ8_DW_SLACK zero
 *     quads.
 *
 * The horizontal stride and dilation thus live inside the quads, and
 * output (r0 + r, c) - flat index i = r * ow + c in the band - takes tap
 * row ki, quad q from block ((ki * dil_h) % stride_h, q) at flat quad
 * i + (ki * dil_h / stride_h) * ow: one fixed offset per (ki, q), no
 * column wasted, and the outputs come out in y's order. A vector of 16
 * (AVX-512) or 8 (AVX2) flat outputs is kh * nq quad dot products
 * (vpdpbusd, or vpmaddubsw + vpmaddwd) with broadcast weight quads, then
 * the requantising epilogue of kernel_quant.h.
 */
#ifndef KCPU_Q8_DW_H
#define KCPU_Q8_DW_H

#include <string.h>

#include "kcpu_q8_impl.h"

#define KQ8_DW_SLACK 64   /* zero quads after each block: the last group of 4 vectors' overrun */

/* Whether kcpu_conv2d_q8 hands p to this kernel: channel multiplier 1.
 * Depends only on channels and groups (never on p->n or the ISA), so the
 * packed layout serves every ISA. */
int kq8_dw_applies(const struct k_conv2d *p);

/* Same contracts as kcpu_conv2d_q8_packed_bytes, _pack, _scratch_bytes and
 * kcpu_conv2d_q8 (kcpu_q8.h). Packed: per channel kh * nq weight quads
 * (kernel row ki, columns 4q .. 4q + 3, zero past kw), then int32
 * wsum[c], the sum of each channel's weights. */
size_t kq8_dw_packed_bytes(const struct k_conv2d *p);
void kq8_dw_pack(const struct k_conv2d *p, const int8_t *w, void *packed);
size_t kq8_dw_scratch_bytes(const struct k_conv2d *p, int threads);
void kq8_dw_conv(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, const void *packed_w,
                 const struct k_q8_epilogue *e, const int8_t *residual, void *y, void *scratch);

/* Geometry shared by every plane of one call. A large plane goes in bands
 * of output rows, so that a band's expanded blocks stay in L1 between
 * their expansion and their kh * nq reads. */
struct kq8_dw_geom {
    int nq;                    /* weight quads per kernel row: ceil(kw / 4) */
    int ntaps;                 /* kh * nq quad taps */
    int64_t extra;             /* block rows past a band's output rows: (kh - 1) * dil_h / stride_h */
    int64_t band;              /* output rows per band (the last band may have fewer) */
    int64_t block;             /* bytes of one (phase, quad) block: band + extra rows, slack */
    int64_t prow;              /* bytes per row of the padded plane */
    uint64_t phases;           /* bit a: some kernel row reads vertical phase a (a >= 64: assume so) */
    int shuffle;               /* stride_w + dil_w <= 5: 4 quads are one byte shuffle of 16 bytes */
    int64_t table;             /* bytes of the per-call table: tap offsets, shuffles */
};

/* One plane's work: its input is copied into a padded plane
 * (kq8_dw_pad), then band by band the ISA kernel's expand step writes the
 * band's blocks into a grid (flipping sign bits for VNNI: vpdpbusd takes
 * unsigned bytes) and its band step writes the band's outputs. */
struct kq8_dw_plane {
    const struct k_conv2d *p;
    const struct kq8_dw_geom *g;
    const int64_t *off;        /* [ntaps]: tap (ki, q)'s byte offset into grid */
    const int8_t *shuf;        /* [nq][16]: with g->shuffle, quad q's byte shuffle (the ISA kernels' header) */
    const int8_t *x;           /* [h][w] the input channel */
    const int8_t *w;           /* [ntaps][4] its weight quads */
    int32_t wsum;              /* the sum of its weights */
    int32_t bias;
    struct k_q8_mult mult;
    const struct k_q8_epilogue *e;   /* lo, hi, res_mult, out_i32 */
    const int8_t *res;         /* [oh * ow] or NULL */
    void *y;                   /* [oh * ow] int8, or int32 with e->out_i32 */
    int8_t *pad;               /* its padded plane: h rows of g->prow bytes, x's row at
                                  column pad_l, the borders zeroed once per task */
};

/* Block row (quad q) from the padded input row prow (index j holding
 * column j - pad_l), any stride and dilation, sign bits flipped with flip. */
void kq8_dw_expand_row_plain(const struct kq8_dw_plane *pl, const int8_t *prow, int q, int flip, int8_t *dst);

/* A row expander of an ISA kernel, for g->shuffle layers: ow quads from
 * src (the padded row at quad q's first column), 4 columns per 16-byte
 * load at src + 4 * sw * column group, shuffled by shuf (quad q's 16
 * bytes), sign bits flipped with flip. Scalars, not the plane: int8
 * stores may alias any field, which would be reloaded per row. It may
 * write up to KQ8_DW_SLACK - 1 quads past ow. */
typedef void (*kq8_dw_row_fn)(const int8_t *src, int8_t *dst, int64_t ow, int64_t sw, const int8_t *shuf, int flip);

/* Copies the image's columns of x into the padded plane (the borders stay
 * zero). */
static inline void kq8_dw_pad(const struct kq8_dw_plane *pl)
{
    const struct k_conv2d *p = pl->p;
    const int64_t prow = pl->g->prow;
    const int64_t j0 = kcpu_min64(p->pad_l, prow), j1 = kcpu_min64((int64_t)p->pad_l + p->w, prow);
    if (j1 > j0)
        for (int64_t ih = 0; ih < p->h; ih++)
            kq8_copy_short(pl->pad + ih * prow + j0, pl->x + ih * p->w + (j0 - p->pad_l), j1 - j0);
}

/* Expands the band of output rows [r0, r0 + nr) into grid: block row
 * R of phase a is padded row (r0 + R) * stride_h + a, for R < nr + extra,
 * then the slack, zeroed; rows through `fast` when g->shuffle. Inlined
 * into each ISA kernel (fast a constant there), since a small plane is
 * mostly this loop's overhead. */
static inline __attribute__((always_inline)) void kq8_dw_expand(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr,
                                                                int8_t *grid, int flip, kq8_dw_row_fn fast)
{
    const struct k_conv2d *p = pl->p;
    const struct kq8_dw_geom *g = pl->g;
    /* every bound in a local: the int8 stores below may alias any field */
    const int zero = flip ? 0x80 : 0;   /* a padding byte, as stored */
    const int64_t ow = p->ow, row_bytes = ow * 4, sh = p->stride_h, sw = p->stride_w, h = p->h;
    const int64_t nq = g->nq, block = g->block, rows = nr + g->extra, prow = g->prow;
    const int64_t first = r0 * sh - p->pad_t, quad_cols = 4 * (int64_t)p->dil_w;
    const uint64_t phases = g->phases;
    const int shuffle = g->shuffle;
    const int8_t *pad = pl->pad, *shuf = pl->shuf;
    for (int64_t a = 0; a < sh; a++) {
        if (a < 64 && !((phases >> a) & 1))
            continue;
        int8_t *blocks = grid + a * nq * block;
        /* rows in order: a row's overrun lands in the next row, rewritten
         * after it, or in the slack */
        for (int64_t r = 0; r < rows; r++) {
            const int64_t ih = first + r * sh + a;
            int8_t *dst = blocks + r * row_bytes;
            if (ih < 0 || ih >= h) {
                for (int64_t q = 0; q < nq; q++)
                    for (int64_t i = 0; i < row_bytes; i += 64)
                        memset(dst + q * block + i, zero, 64);
                continue;
            }
            const int8_t *src = pad + ih * prow;
            for (int64_t q = 0; q < nq; q++) {
                if (shuffle)
                    fast(src + q * quad_cols, dst + q * block, ow, sw, shuf + 16 * q, flip);
                else
                    kq8_dw_expand_row_plain(pl, src, (int)q, flip, dst + q * block);
            }
        }
        for (int64_t q = 0; q < nq; q++)
            for (int64_t i = 0; i < (int64_t)KQ8_DW_SLACK * 4; i += 64)
                memset(blocks + q * block + rows * row_bytes + i, zero, 64);
    }
}

/* An ISA kernel: expand writes the band of output rows [r0, r0 + nr) into
 * grid; band writes that band's outputs from it. */
struct kq8_dw_isa {
    void (*expand)(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid);
    void (*band)(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid);
};

void kq8_dw_expand_scalar(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid);
void kq8_dw_band_scalar(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid);
void kq8_dw_expand_avx2(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid);
void kq8_dw_band_avx2(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid);
void kq8_dw_expand_avx512(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid);
void kq8_dw_band_avx512(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid);

#endif /* KCPU_Q8_DW_H */
