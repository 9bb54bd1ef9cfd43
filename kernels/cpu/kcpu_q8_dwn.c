/*
 * kcpu_q8_dwn.c - the channels-last INT8 depthwise convolution (see
 * kcpu_q8_dwn.h): weight packing, scratch geometry, the split over (image,
 * band of output rows), the choice of path, and the plain-C path for the
 * scalar ISA.
 */
#include <string.h>

#include "kcpu_q8_dwn.h"

int kq8_dwn_applies(const struct k_conv2d *p)
{
    return p->groups == p->c && p->oc == p->c;
}

static int64_t groups16(const struct k_conv2d *p)
{
    return kcpu_ceil_div(p->c, 16);
}

/* Slice columns: those the taps read, from -pad_l on. */
static int64_t slice_cols(const struct k_conv2d *p)
{
    return (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1;
}

/* Input rows that nr output rows read. */
static int64_t rows_in(const struct k_conv2d *p, int64_t nr)
{
    return (nr - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
}

/* Bytes of one slice row: a full chunk's channels as int32 (the AVX2
 * path's column, whatever c is). */
static int64_t slice_row_bytes(const struct k_conv2d *p)
{
    return slice_cols(p) * KQ8_DWN_CHUNK * 4;
}

/* The most output rows one task takes: its slice within
 * KQ8_DWN_SLICE_BYTES (one row at least), the image's rows at most. */
static int64_t band_max(const struct k_conv2d *p)
{
    int64_t band = 1;
    while (band < p->oh && rows_in(p, band + 1) * slice_row_bytes(p) <= KQ8_DWN_SLICE_BYTES)
        band++;
    return band;
}

static int64_t slice_bytes(const struct k_conv2d *p)
{
    return kcpu_ceil_div(rows_in(p, band_max(p)) * slice_row_bytes(p), 64) * 64;
}

static int64_t lanes_bytes(const struct k_conv2d *p)
{
    return groups16(p) * KQ8_DWN_LANES_BYTES;
}

size_t kq8_dwn_packed_bytes(const struct k_conv2d *p)
{
    return (size_t)(groups16(p) * p->kh * p->kw * 16 * 4);
}

void kq8_dwn_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    const int64_t ntaps = (int64_t)p->kh * p->kw;
    int32_t *dst = packed;
    for (int64_t g = 0; g < groups16(p); g++)
        for (int64_t t = 0; t < ntaps; t++)
            for (int64_t l = 0; l < 16; l++) {
                int64_t c = g * 16 + l;
                dst[(g * ntaps + t) * 16 + l] = c < p->c ? w[c * ntaps + t] : 0;
            }
}

size_t kq8_dwn_scratch_bytes(const struct k_conv2d *p, int threads)
{
    return (size_t)(64 + lanes_bytes(p) + (int64_t)threads * slice_bytes(p));
}

/* The plain-C path: output rows [r0, r0 + nr) of image img, straight from
 * x, taps outside the image skipped; per pixel, 16 channels at a time with
 * the taps outside (the lanes' loop is what a compiler vectorises). */
static void rows_scalar(const struct kq8_dwn_job *j, int64_t img, int64_t r0, int64_t nr)
{
    const struct k_conv2d *p = j->p;
    const struct k_q8_epilogue *e = j->e;
    const int64_t c = p->c, ntaps = (int64_t)p->kh * p->kw;
    const int8_t *x = j->x + img * p->h * p->w * c;
    for (int64_t r = r0; r < r0 + nr; r++)
        for (int64_t oj = 0; oj < p->ow; oj++) {
            const int64_t yi = ((img * p->oh + r) * p->ow + oj) * c;
            for (int64_t c0 = 0; c0 < c; c0 += 16) {
                const int64_t nl = kcpu_min64(16, c - c0);
                const int32_t *wg = j->w + c0 * ntaps;   /* the group's [ntaps][16] */
                int32_t acc[16] = {0};
                for (int ki = 0; ki < p->kh; ki++) {
                    const int64_t ih = r * p->stride_h - p->pad_t + (int64_t)ki * p->dil_h;
                    if (ih < 0 || ih >= p->h)
                        continue;
                    for (int kj = 0; kj < p->kw; kj++) {
                        const int64_t iw = oj * p->stride_w - p->pad_l + (int64_t)kj * p->dil_w;
                        if (iw < 0 || iw >= p->w)
                            continue;
                        const int8_t *xp = x + (ih * p->w + iw) * c + c0;
                        const int32_t *wt = wg + ((int64_t)ki * p->kw + kj) * 16;
                        if (nl == 16)   /* a fixed count: vectorised at -O2 */
                            for (int l = 0; l < 16; l++)
                                acc[l] += xp[l] * wt[l];
                        else
                            for (int64_t l = 0; l < nl; l++)
                                acc[l] += xp[l] * wt[l];
                    }
                }
                for (int64_t l = 0; l < nl; l++) {
                    const int64_t ch = c0 + l;
                    if (e->out_i32)
                        ((int32_t *)j->y)[yi + ch] = acc[l] + e->bias[ch];
                    else if (j->res)
                        ((int8_t *)j->y)[yi + ch] = k_q8_requant_res(acc[l], e->bias[ch], e->mult[ch],
                                                                     j->res[yi + ch], e->res_mult, e->lo, e->hi);
                    else
                        ((int8_t *)j->y)[yi + ch] = k_q8_requant(acc[l], e->bias[ch], e->mult[ch], e->lo, e->hi);
                }
            }
        }
}

enum kq8_nhwc_path kq8_nhwc_path(void)
{
    if (kq8_b_flipped())   /* AVX-512 with VNNI */
        return KQ8_NHWC_AVX512;
    return kcpu_isa() >= KCPU_ISA_AVX2 ? KQ8_NHWC_AVX2 : KQ8_NHWC_SCALAR;
}

struct dwn_run {
    const struct kq8_dwn_job *j;
    enum kq8_nhwc_path path;
};

static void dwn_task(void *arg, int64_t task, int thread)
{
    const struct dwn_run *run = arg;
    const struct kq8_dwn_job *j = run->j;
    const int64_t img = task / j->bands, r0 = task % j->bands * j->band;
    const int64_t nr = kcpu_min64(j->band, j->p->oh - r0);
    uint8_t *slice = j->slices + (int64_t)thread * j->slice_bytes;
    if (run->path == KQ8_NHWC_AVX512)
        kq8_dwn_rows_avx512(j, img, r0, nr, slice);
    else if (run->path == KQ8_NHWC_AVX2)
        kq8_dwn_rows_avx2(j, img, r0, nr, slice);
    else
        rows_scalar(j, img, r0, nr);
}

void kq8_dwn_conv(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, const void *packed_w,
                  const struct k_q8_epilogue *e, const int8_t *residual, void *y, void *scratch)
{
    if (p->n <= 0 || p->c <= 0 || p->oh <= 0 || p->ow <= 0)
        return;
    uint8_t *base = kcpu_align64(scratch);
    struct kq8_dwn_job j = {.p = p, .x = x, .w = packed_w, .e = e, .res = e->out_i32 ? NULL : residual, .y = y,
                            .lanes = base, .slices = base + lanes_bytes(p), .slice_bytes = slice_bytes(p),
                            .wp = slice_cols(p)};
    /* Up to four tasks per thread, none below KCPU_MIN_TASK_MACS (waking
     * a worker costs more than a small band's work), a multiple of the
     * threads when split; an image's bands as even as can be within the
     * slice's rows. One thread: bands only as the slice requires. */
    const int64_t threads = kcpu_threads_count(th);
    const int64_t macs = (int64_t)p->n * p->oh * p->ow * p->c * p->kh * p->kw;
    int64_t tasks = threads > 1 ? kcpu_min64(4 * threads, kcpu_max64(1, macs / KCPU_MIN_TASK_MACS)) : 1;
    if (tasks > 1)
        tasks = kcpu_ceil_div(tasks, threads) * threads;
    const int64_t per_image = kcpu_min64(p->oh, kcpu_ceil_div(tasks, p->n));
    j.band = kcpu_min64(kcpu_ceil_div(p->oh, per_image), band_max(p));
    j.bands = kcpu_ceil_div(p->oh, j.band);
    struct dwn_run run = {&j, kq8_nhwc_path()};
    if (run.path == KQ8_NHWC_AVX512)
        kq8_dwn_lanes_avx512(p, e, base);
    else if (run.path == KQ8_NHWC_AVX2)
        kq8_dwn_lanes_avx2(p, e, base);
    kcpu_threads_run(th, p->n * j.bands, dwn_task, &run);
}
