/*
 * kcpu_conv.c - 2-D convolution on the CPU as im2col + GEMM, NCHW in and out.
 *
 * Per group g: Y[oc, pixel] = W[oc, c * kh * kw] . col[c * kh * kw, pixel].
 * The weights are the packed A side (KCPU_MR-row panels, packed once by
 * kcpu_conv2d_pack), so the output channel is the GEMM row and the bias a
 * row bias. The pixels of all images form one column space of n * oh * ow
 * columns (the GEMM's segmented output mapping puts each column back into
 * its image): a batch of 7x7 maps fills whole 32-column strips instead of
 * wasting a third of the last strip of every image, and batch 1 still
 * splits into tasks. A task takes a run of columns of one group, writes
 * their im2col into its thread's scratch as KCPU_NR-column strips (the
 * layout the microkernel streams), and runs the GEMM over every output
 * channel of the group. 1x1 stride-1 unpadded convolutions skip im2col:
 * their input image already is the B matrix.
 */
#include <string.h>

#include "kcpu_impl.h"

/* Bytes of im2col columns per task: with the group's packed weights they
 * should stay in L2 while every A panel passes over them. */
#define COL_BUDGET (192 * 1024)
#define MAX_CHUNK 1024  /* columns */

struct conv_dims {
    int64_t cg, mg;            /* input and output channels per group */
    int64_t kg;                /* GEMM depth: cg * kh * kw */
    int64_t panels;            /* KCPU_MR-row panels per group */
    int64_t pixels;            /* oh * ow */
    int direct;                /* 1x1, stride 1, no padding: B is the input */
};

static struct conv_dims dims(const struct k_conv2d *p)
{
    struct conv_dims d;
    d.cg = p->c / p->groups;
    d.mg = p->oc / p->groups;
    d.kg = d.cg * p->kh * p->kw;
    d.panels = kcpu_ceil_div(d.mg, KCPU_MR);
    d.pixels = (int64_t)p->oh * p->ow;
    d.direct = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 &&
               p->pad_t == 0 && p->pad_l == 0 && p->oh == p->h && p->ow == p->w;
    return d;
}

/* The most columns a task may take: a multiple of KCPU_NR. */
static int64_t max_chunk(const struct conv_dims *d)
{
    int64_t cols = COL_BUDGET / (kcpu_max64(1, d->kg) * (int64_t)sizeof(float));
    cols = cols / KCPU_NR * KCPU_NR;
    return kcpu_min64(MAX_CHUNK, kcpu_max64(KCPU_NR, cols));
}

static int64_t col_floats(const struct conv_dims *d)
{
    return d->direct ? 0 : (d->kg * max_chunk(d) + 15) / 16 * 16;
}

size_t kcpu_conv2d_packed_floats(const struct k_conv2d *p)
{
    struct conv_dims d = dims(p);
    return (size_t)p->groups * (size_t)(d.panels * KCPU_MR * d.kg);
}

void kcpu_conv2d_pack(const struct k_conv2d *p, const float *w, float *packed)
{
    struct conv_dims d = dims(p);
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t pn = 0; pn < d.panels; pn++)
            for (int64_t kk = 0; kk < d.kg; kk++) {
                float *dst = packed + ((g * d.panels + pn) * d.kg + kk) * KCPU_MR;
                for (int i = 0; i < KCPU_MR; i++) {
                    int64_t o = pn * KCPU_MR + i;
                    dst[i] = o < d.mg ? w[(g * d.mg + o) * d.kg + kk] : 0.0f;
                }
            }
}

size_t kcpu_conv2d_scratch_bytes(const struct k_conv2d *p, int threads)
{
    struct conv_dims d = dims(p);
    return (size_t)((int64_t)threads * col_floats(&d)) * sizeof(float) + 64;
}

struct conv_job {
    const struct k_conv2d *p;
    struct conv_dims d;
    const float *x, *packed_w, *bias, *residual;
    float *y;
    float *scratch;
    int64_t chunk;             /* columns per task */
    int64_t chunks;            /* tasks per group */
    int64_t chunks_per_image;  /* direct path only */
};

/* One output row's worth of columns inside a strip. */
struct col_run {
    int lane, len;
    int oh, ow;
    const float *img;          /* this group's first input channel */
};

static void fill_row(const struct k_conv2d *p, const struct col_run *r, const float *chan,
                     int ki, int kj, float *d)
{
    int ih = r->oh * p->stride_h - p->pad_t + ki * p->dil_h;
    d += r->lane;
    if (ih < 0 || ih >= p->h) {
        memset(d, 0, (size_t)r->len * sizeof(float));
        return;
    }
    const float *src = chan + (int64_t)ih * p->w;
    int iw0 = r->ow * p->stride_w - p->pad_l + kj * p->dil_w;
    if (p->stride_w == 1) {
        int lo = iw0 < 0 ? -iw0 : 0, hi = p->w - iw0;
        lo = lo < r->len ? lo : r->len;
        hi = hi < lo ? lo : hi > r->len ? r->len : hi;
        memset(d, 0, (size_t)lo * sizeof(float));
        memcpy(d + lo, src + iw0 + lo, (size_t)(hi - lo) * sizeof(float));
        memset(d + hi, 0, (size_t)(r->len - hi) * sizeof(float));
        return;
    }
    for (int t = 0; t < r->len; t++) {
        int iw = iw0 + t * p->stride_w;
        d[t] = iw >= 0 && iw < p->w ? src[iw] : 0.0f;
    }
}

/* im2col of columns [j0, j0 + ncols) of group base x (image 0) into
 * strips dst[strip][kg][KCPU_NR]. Lanes past ncols in the last strip stay
 * unwritten: the microkernels mask them. */
static void im2col(const struct conv_job *j, const float *x, int64_t j0, int64_t ncols, float *dst)
{
    const struct k_conv2d *p = j->p;
    int64_t plane = (int64_t)p->h * p->w, img_stride = (int64_t)p->c * plane;
    for (int64_t s0 = 0; s0 < ncols; s0 += KCPU_NR) {
        float *ds = dst + (s0 / KCPU_NR) * j->d.kg * KCPU_NR;
        int lanes = (int)kcpu_min64(KCPU_NR, ncols - s0);
        struct col_run runs[KCPU_NR];
        int nruns = 0;
        for (int lane = 0; lane < lanes;) {
            int64_t col = j0 + s0 + lane, pix = col % j->d.pixels;
            struct col_run *r = &runs[nruns++];
            r->lane = lane;
            r->oh = (int)(pix / p->ow);
            r->ow = (int)(pix % p->ow);
            r->len = (int)kcpu_min64(p->ow - r->ow, lanes - lane);
            r->img = x + (col / j->d.pixels) * img_stride;
            lane += r->len;
        }
        int64_t kk = 0;
        for (int64_t ci = 0; ci < j->d.cg; ci++)
            for (int ki = 0; ki < p->kh; ki++)
                for (int kj = 0; kj < p->kw; kj++, kk++)
                    for (int r = 0; r < nruns; r++)
                        fill_row(p, &runs[r], runs[r].img + ci * plane, ki, kj, ds + kk * KCPU_NR);
    }
}

static void conv_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct k_conv2d *p = j->p;
    int64_t g = task / j->chunks, chunk = task % j->chunks;
    int64_t out_off = g * j->d.mg * j->d.pixels;  /* group's first channel, image 0 */
    const float *xg = j->x + g * j->d.cg * p->h * p->w;
    struct kcpu_gemm gm = {
        .m = (int)j->d.mg, .k = j->d.kg,
        .a = j->packed_w + g * j->d.panels * KCPU_MR * j->d.kg,
        .seg_len = j->d.pixels, .seg_stride = (int64_t)p->oc * j->d.pixels, .ldc = j->d.pixels,
        .c = j->y + out_off,
        .res = j->residual ? j->residual + out_off : NULL,
        .bias_row = j->bias ? j->bias + g * j->d.mg : NULL,
        .act = p->act,
    };
    if (j->d.direct) {
        /* Columns of one image only: B rows are that image's channels. */
        int64_t img = chunk / j->chunks_per_image;
        int64_t p0 = (chunk % j->chunks_per_image) * j->chunk;
        gm.b = xg + img * p->c * j->d.pixels + p0;
        gm.ldb = j->d.pixels;
        gm.b_strip = KCPU_NR;
        gm.j0 = img * j->d.pixels + p0;
        gm.n = kcpu_min64(j->chunk, j->d.pixels - p0);
    } else {
        int64_t total = p->n * j->d.pixels;
        float *col = j->scratch + thread * col_floats(&j->d);
        gm.j0 = chunk * j->chunk;
        gm.n = kcpu_min64(j->chunk, total - gm.j0);
        im2col(j, xg, gm.j0, gm.n, col);
        gm.b = col;
        gm.ldb = KCPU_NR;
        gm.b_strip = j->d.kg * KCPU_NR;
    }
    kcpu_gemm_run(&gm);
}

void kcpu_conv2d_f32(struct kcpu_pool *pool, const struct k_conv2d *p,
                     const float *x, const float *packed_w, const float *bias,
                     const float *residual, float *y, void *scratch)
{
    struct conv_job j = {.p = p, .d = dims(p), .x = x, .packed_w = packed_w, .bias = bias,
                         .residual = residual, .y = y, .scratch = kcpu_align64(scratch)};
    int64_t span = j.d.direct ? j.d.pixels : p->n * j.d.pixels;  /* columns a task may range over */
    int64_t units = j.d.direct ? (int64_t)p->groups * p->n : p->groups;
    if (span <= 0 || p->oc <= 0)
        return;
    /* Aim for four tasks per thread, but never exceed the scratch chunk. */
    int64_t want = kcpu_ceil_div(4 * kcpu_pool_threads(pool), units);
    int64_t chunk = kcpu_ceil_div(kcpu_ceil_div(span, want), KCPU_NR) * KCPU_NR;
    j.chunk = kcpu_min64(max_chunk(&j.d), kcpu_max64(KCPU_NR, chunk));
    if (j.d.direct) {
        j.chunks_per_image = kcpu_ceil_div(span, j.chunk);
        j.chunks = p->n * j.chunks_per_image;
    } else {
        j.chunks = kcpu_ceil_div(span, j.chunk);
    }
    kcpu_pool_run(pool, p->groups * j.chunks, conv_task, &j);
}
