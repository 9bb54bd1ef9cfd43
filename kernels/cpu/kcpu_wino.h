/*
 * kcpu_wino.h - 3x3 stride-1 convolutions by Winograd's F(2x2, 3x3)
 * (internal to kernels/cpu: kcpu_conv.c dispatches to it, the kernel tests
 * call it).
 *
 * Every 2x2 block of outputs (a tile) comes from the 4x4 input window
 * around it (d, one per input channel c) as
 *     Y = A^T [ sum_c U[oc][c] .* V[c] ] A,   U = G g G^T,  V = B^T d B
 * with g the 3x3 kernel and
 *     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *     G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
 *     A^T = [1 1 1 0; 0 1 -1 -1].
 * The sum is 16 independent GEMMs, one per position xi of the 4x4
 * transformed window: M[xi] (oc x tiles) = U[xi] (oc x c) . V[xi] (c x
 * tiles), on the shared GEMM block (kcpu_gemm_run), 16 multiply-adds per
 * tile and input channel where the direct convolution does 36. U is packed
 * once, as the GEMM's KCPU_MR-row panels; V and the output transform are
 * made per call, a block of tiles at a time, so that a block's V and M stay
 * in cache between the three steps. The coefficients are 0, +-1 and 1/2:
 * the transforms add a few roundings of sums, and the results stay within
 * the FP32 contract (1e-5 of the output's range; the kernel tests check
 * them as every other path's).
 */
#ifndef KCPU_WINO_H
#define KCPU_WINO_H

#include "kcpu_impl.h"

/* Whether kcpu_conv2d_* hand p to this kernel: one group, 3x3, stride and
 * dilation 1, one pixel of zero padding on every side (so the output is the
 * input's size), 64 or more input and output channels, maps of 12 or more
 * columns (4 or more with 256 or more input channels). Depends on the
 * shape only (never on p->n or the ISA), so packed weights serve every
 * batch and ISA. */
int kcpu_wino_applies(const struct k_conv2d *p);

/* Same contracts as kcpu_conv2d_packed_floats, _pack, _scratch_bytes and
 * _f32 (kcpu.h). The packed weights are U, [16][oc panels][c][KCPU_MR]. */
size_t kcpu_wino_packed_floats(const struct k_conv2d *p);
void kcpu_wino_pack(const struct k_conv2d *p, const float *w, float *packed);
size_t kcpu_wino_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_wino_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                   const float *packed_w, const float *bias, const float *residual, float *y,
                   void *scratch);

/* The input transform of count consecutive tiles of one tile row, every
 * input channel: V[xi][ch][t] for t < count, xi = 4 * i + j the window's
 * row i and column j. Tile t's window is rows row0 .. row0 + 3 and columns
 * col0 + 2t .. col0 + 2t + 3 of channel ch's plane, zero outside the
 * plane. The AVX2 form copies the 4 rows, padded, to `rows` first; it
 * keeps the tiles of each whole 8-tile vector in the order [0 1 4 5 2 3 6
 * 7] in V (its output transform expects them so, and the GEMM does not
 * mind), and writes a partial last vector whole (the next run's tiles,
 * which that run writes again). */
struct kcpu_wino_in {
    const float *x;            /* the image's channel 0, [c][h][w] */
    int64_t h, w;
    int64_t row0, col0;        /* -1 on the first tile row or column */
    int64_t c;
    int64_t count;
    float *rows;               /* AVX2: 4 x rows_ld floats of scratch */
    int64_t rows_ld;           /* >= 2 * count rounded up to 16, + 24 */
    float *v;                  /* V[0][0][0] of the run */
    int64_t ldv;               /* floats between V's channel rows */
    int64_t xi_stride;         /* floats between V's xi planes */
};
void kcpu_wino_in_scalar(const struct kcpu_wino_in *a);
void kcpu_wino_in_avx2(const struct kcpu_wino_in *a);

/* The output transform of count consecutive tiles of one tile row, oc
 * output channels:
 *     y[o * plane + r * ow + col] = act(Y_tile[r][col % 2] + bias[o] + res[same])
 * for rows r < rows (1 or 2) and columns col < cols of the run (tile t
 * gives columns 2t and 2t + 1), Y_tile from M[xi][o][t] (the AVX2 form's
 * M in its input transform's order). The AVX2 form reads M up to 7 tiles
 * past count. */
struct kcpu_wino_out {
    const float *m;            /* M[0][0][0] of the run */
    int64_t ldm, xi_stride;
    int64_t oc;
    int64_t count;
    float *y;                  /* output channel 0, at the run's first pixel */
    const float *res;          /* the same layout, or NULL */
    const float *bias;         /* [oc] or NULL */
    int64_t plane, ow;
    int rows;
    int64_t cols;
    enum k_act act;
};
/* One tile of the 16 GEMMs (M[xi][o][t] = sum_ch U[xi][o][ch] V[xi][ch][t],
 * run by kcpu_wino.c): rows of a panel of U[xi] (a: the first row's
 * floats at the pass's first depth, KCPU_MR floats a depth step) times nv
 * (1..3) vectors of V's columns (b, ldb floats a depth step) over k depth
 * steps, added to M's sums at c (ldc floats between rows), or stored
 * there where first. AVX2: 4 rows, 8-float vectors; AVX-512: the panel's
 * 8 rows, 16-float vectors. */
void kcpu_wino_tile_avx2(int nv, int first, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                         int64_t ldc);
void kcpu_wino_tile_avx512(int nv, int first, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                           int64_t ldc);

void kcpu_wino_out_scalar(const struct kcpu_wino_out *a);
void kcpu_wino_out_avx2(const struct kcpu_wino_out *a);

#endif /* KCPU_WINO_H */
