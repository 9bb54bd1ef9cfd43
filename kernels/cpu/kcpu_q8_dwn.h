/*
 * kcpu_q8_dwn.h - the channels-last (NHWC) INT8 depthwise convolution
 * (groups == c == oc), internal to kernels/cpu: the CPU backend hands it
 * NHWC depthwise layers; the kernel tests call it directly.
 *
 * The NCHW kernel (kcpu_q8_dw.h) works a plane at a time, and its fixed
 * cost per plane (about 60 ns) dominates small maps (960 channels of 7x7).
 * Here the lanes are channels: 16 channels of one output pixel per vector,
 * the taps the loop, so nothing is paid per channel.
 *
 * Usage (buffers 64-byte aligned, of the sizes reported):
 *     kq8_dwn_pack(p, w, packed);                      // once per model
 *     kq8_dwn_conv(th, p, x, packed, e, res, y, scratch);
 *
 * AVX-512 VNNI path (q8_dwn_avx512.c), per task (an image's band of
 * output rows) and chunk of up to KQ8_DWN_CHUNK channels: the band's input
 * rows are widened to int32 into a zero-padded slice in scratch,
 *
 *   slice[row][col][chunk channels rounded up to 16] int32,
 *
 * row R being input row r0 * stride_h - pad_t + R, column C input column
 * C - pad_l (zero outside the image, and for channels past c), so every
 * tap of every output pixel reads the slice at a fixed offset, borders
 * included. A tap is then one vpdpwssd per 16 channels with the slice as
 * memory operand: the tap's int32 weights against x widened to int16 in
 * the low half of each dword, zero above (so the weight's sign half
 * multiplies 0). Sums are exact; the epilogue is kernel_quant.h's, lane by lane
 * (kcpu_q8_avx512.h's kq8_lanes_requant, one precomputed kq8_lanes16 per
 * 16 channels). AVX2 (q8_dwn_avx2.c) does the same 8 channels a vector,
 * vpmaddwd and vpaddd a tap. The scalar ISA takes the plain-C path, which
 * reads x directly.
 */
#ifndef KCPU_Q8_DWN_H
#define KCPU_Q8_DWN_H

#include "kcpu_q8_impl.h"

#define KQ8_DWN_CHUNK 64             /* channels widened into the slice at once */
#define KQ8_DWN_SLICE_BYTES ((int64_t)128 * 1024)   /* a slice's target size (the rows' minimum may exceed it) */
#define KQ8_DWN_LANES_BYTES 1024     /* room for one struct kq8_lanes16 (asserted in q8_dwn_avx512.c) */

/* Whether p is a depthwise layer with channel multiplier 1 (groups == c
 * == oc). Depends on channels and groups only. */
int kq8_dwn_applies(const struct k_conv2d *p);

/* Packed weights: per group of 16 channels, [kh * kw taps][16] int32,
 * tap (ki, kj) = ki * kw + kj of channel c holding w[c][ki][kj] (zero for
 * channels past c). The same for every ISA. */
size_t kq8_dwn_packed_bytes(const struct k_conv2d *p);
/* w: [c][1][kh][kw] int8, as the model stores it. */
void kq8_dwn_pack(const struct k_conv2d *p, const int8_t *w, void *packed);
/* Scratch for `threads` threads; does not depend on p->n (a buffer sized
 * for the largest batch serves every smaller one). */
size_t kq8_dwn_scratch_bytes(const struct k_conv2d *p, int threads);
/* y = the epilogue e of the depthwise convolution of x: x [n][h][w][c]
 * int8, residual (or NULL; never with e->out_i32) and y [n][oh][ow][c],
 * y int8, or int32 (acc + bias) with e->out_i32. th may be NULL (the
 * calling thread only). Bit for bit kref_conv2d_q8 on the NCHW layout. */
void kq8_dwn_conv(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, const void *packed_w,
                  const struct k_q8_epilogue *e, const int8_t *residual, void *y, void *scratch);

/* The channels-last kernels' path under kcpu_isa() now, shared by the
 * convolution (kcpu_q8_nhwc.c) and the depthwise kernel: AVX-512 with
 * VNNI, AVX2 (also an AVX-512 CPU without VNNI), or plain C. */
enum kq8_nhwc_path { KQ8_NHWC_SCALAR, KQ8_NHWC_AVX2, KQ8_NHWC_AVX512 };
enum kq8_nhwc_path kq8_nhwc_path(void);

/* ------------------------------------------------ between the two files */

/* One call's work, shared by its tasks. */
struct kq8_dwn_job {
    const struct k_conv2d *p;
    const int8_t *x;                /* [n][h][w][c] */
    const int32_t *w;               /* packed */
    const struct k_q8_epilogue *e;
    const int8_t *res;              /* [n][oh][ow][c] or NULL */
    void *y;                        /* [n][oh][ow][c] */
    const void *lanes;              /* [ceil(c / 16)] KQ8_DWN_LANES_BYTES each (vector paths) */
    uint8_t *slices;                /* per thread, slice_bytes each (vector paths) */
    int64_t slice_bytes;
    int64_t wp;                     /* slice columns: (ow - 1) * stride_w + (kw - 1) * dil_w + 1 */
    int64_t band;                   /* output rows per task (the last band of an image may have fewer) */
    int64_t bands;                  /* bands per image */
};

/* The AVX-512 VNNI path: the epilogue constants of every 16 channels into
 * job->lanes (before the tasks), and one task's output rows
 * [r0, r0 + nr) of image img, with slice its thread's slice. */
void kq8_dwn_lanes_avx512(const struct k_conv2d *p, const struct k_q8_epilogue *e, void *lanes);
void kq8_dwn_rows_avx512(const struct kq8_dwn_job *j, int64_t img, int64_t r0, int64_t nr, void *slice);
/* The same on AVX2 (q8_dwn_avx2.c): lanes of 8 channels, two to each
 * KQ8_DWN_LANES_BYTES. */
void kq8_dwn_lanes_avx2(const struct k_conv2d *p, const struct k_q8_epilogue *e, void *lanes);
void kq8_dwn_rows_avx2(const struct kq8_dwn_job *j, int64_t img, int64_t r0, int64_t nr, void *slice);

#endif /* KCPU_Q8_DWN_H */
