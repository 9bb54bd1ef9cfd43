/*
 * kcpu_dwconv.h - the direct convolution kernel for depthwise and grouped
 * convolutions with few output channels per group, and for dense ones of a
 * single input channel with up to 64 outputs (internal to kernels/cpu:
 * kcpu_conv.c dispatches to it, the kernel tests call it).
 *
 * Such layers do too little work per input element for the packed GEMM:
 * a depthwise 3x3 is 9 multiply-adds per output, and its GEMM would have
 * one-row panels padded to KCPU_MR; a grayscale stem's GEMM has a depth
 * of 9 or 25 and spends its time in the epilogue. Here each (image,
 * group) gets its input planes copied once into a zero-padded grid, split
 * by stride phase, so that every kernel tap reads the grid at unit stride
 * from a fixed offset; an output channel is then a sum of shifted,
 * weighted copies of the grid, computed in long vectors over the flattened
 * grid (a few columns per row past the output's width are computed and
 * dropped).
 */
#ifndef KCPU_DWCONV_H
#define KCPU_DWCONV_H

#include "kcpu_impl.h"

/* Whether kcpu_conv2d_* hand p to this kernel. Depends only on channels
 * and groups (never on p->n). */
int kcpu_dwconv_applies(const struct k_conv2d *p);

/* Same contracts as kcpu_conv2d_packed_floats, _pack, _scratch_bytes and
 * _f32 (kcpu.h). The packed weights are PyTorch's [oc][c / groups][kh][kw]. */
size_t kcpu_dwconv_packed_floats(const struct k_conv2d *p);
void kcpu_dwconv_pack(const struct k_conv2d *p, const float *w, float *packed);
size_t kcpu_dwconv_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_dwconv_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                     const float *packed_w, const float *bias, const float *residual, float *y,
                     void *scratch);

/* Output channels one block computes together: 6 x 2 vectors of
 * accumulators are 12 of AVX2's 16 registers, 6 x 4 are 24 of AVX-512's 32.
 * A group's channels are split into equal blocks (8 as 4 + 4, not 6 + 2). */
#define KCPU_DW_MAX_MO 6

/* mo output channels of one image from their group's padded grid:
 *     acc[o][t] = bias[o] + sum_k w[o * ntaps + k] * grid[off[k] + t],  t < count
 * then output row r of channel o is act(acc[o][r * row_len + (0 .. ow)] + res),
 * stored at y[o * oh * ow + r * ow] (res likewise, when not NULL). count is a
 * multiple of 16; the grid holds zeros wherever a computed column reads
 * past the data. */
struct kcpu_dw_block {
    int mo;                    /* 1 .. KCPU_DW_MAX_MO */
    int64_t ntaps;             /* (c / groups) * kh * kw */
    const int64_t *off;        /* [ntaps] */
    const float *grid;
    const float *w;            /* [mo][ntaps] */
    const float *bias;         /* [mo] or NULL */
    int64_t count;
    float *acc;                /* [mo][count] scratch */
    int oh, ow;
    int64_t row_len;
    const float *res;          /* [mo][oh * ow] or NULL */
    float *y;                  /* [mo][oh * ow] */
    enum k_act act;
};

void kcpu_dw_block_scalar(const struct kcpu_dw_block *b);
void kcpu_dw_block_avx2(const struct kcpu_dw_block *b);
void kcpu_dw_block_avx512(const struct kcpu_dw_block *b);

/* One channel of a depthwise 3x3 (dilation 1, stride 1 or 2 on both axes),
 * from its input plane x [h][w] into y [oh][ow]:
 * y = act(bias + sum w9[ki * 3 + kj] * x[..] (+ res)); res [oh][ow] or
 * NULL; y overlaps neither. Both read x directly, any padding, without a
 * padded copy: AVX-512 with masked loads, AVX2 with masks on its taps. */
void kcpu_dw3x3_avx512(const struct k_conv2d *p, const float *x, const float *w9, float bias,
                       const float *res, float *y);
void kcpu_dw3x3_avx2(const struct k_conv2d *p, const float *x, const float *w9, float bias,
                     const float *res, float *y);

#endif /* KCPU_DWCONV_H */
