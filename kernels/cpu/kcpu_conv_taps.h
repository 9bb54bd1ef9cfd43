/*
 * kcpu_conv_taps.h - dense atrous convolutions whose taps mostly read
 * padding, by the taps that read the input (internal to kernels/cpu:
 * kcpu_conv.c dispatches to it).
 *
 * At a rate near its map's size (DeepLab's ASPP: a 3x3 at dilation 12 on
 * a 14x14 map) most of a convolution's tap-pixels read padding (82 %
 * there), which im2col multiplies as zeros. Each tap (ky, kx) reads the
 * input at the output pixels of one rectangle (a run of rows by a run of
 * columns: the centre tap all 14x14, a corner tap 2x2), so the output is
 * the bias, plus for each tap W[:, :, ky, kx] (oc x c, packed per tap at
 * load as the GEMM's KCPU_MR-row panels) times the input pixels the tap
 * reads over its rectangle (c x pixels), each a GEMM on the shared block
 * (kcpu_gemm_run) adding into y's rectangle in place; the activation
 * last. A rectangle as wide as the map at stride 1 reads the input as it
 * lies (whole rows); others gather their pixels into the thread's scratch.
 * Tasks split the images, and the output channels where images are fewer
 * than threads.
 */
#ifndef KCPU_CONV_TAPS_H
#define KCPU_CONV_TAPS_H

#include "kcpu_impl.h"

/* Whether kcpu_conv2d_* hand p to this kernel: one group, dilated, at most
 * 32 taps per axis, and at most half of the tap-pixels reading the input.
 * Depends on the shape only (never on p->n or the ISA). */
int kcpu_conv_taps_applies(const struct k_conv2d *p);

/* Same contracts as kcpu_conv2d_packed_floats, _pack, _scratch_bytes and
 * _f32 (kcpu.h). The packed weights are [kh * kw taps][oc panels][c][KCPU_MR]. */
size_t kcpu_conv_taps_packed_floats(const struct k_conv2d *p);
void kcpu_conv_taps_pack(const struct k_conv2d *p, const float *w, float *packed);
size_t kcpu_conv_taps_scratch_bytes(const struct k_conv2d *p, int threads);
void kcpu_conv_taps_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x, const float *packed_w,
                        const float *bias, const float *residual, float *y, void *scratch);

#endif /* KCPU_CONV_TAPS_H */
