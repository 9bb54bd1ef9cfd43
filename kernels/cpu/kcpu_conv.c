/*
 * kcpu_conv.c - 2-D convolution on the CPU as GEMM, NCHW in and out.
 *
 * Per group g: Y[oc, pixel] = W[oc, c * kh * kw] . B[c * kh * kw, pixel].
 * The weights are the packed A side (KCPU_MR-row panels, packed once by
 * kcpu_conv2d_pack), so output channels are GEMM rows and the bias a row
 * bias. The pixels of all images form one column space (the GEMM's
 * two-level output mapping puts every column back into its image), so a
 * batch of 7x7 maps fills whole 32-column strips and batch 1 still splits
 * into several tasks. A task takes a run of columns of one group and runs
 * the GEMM over every output channel of the group. B comes from one of:
 *
 * - direct: 1x1, stride 1, unpadded, pixels filling whole strips (nearly):
 *   the input image is B as it is;
 * - implicit: the input is copied once per call into a padded grid in the
 *   scratch, split by stride phase ([c][phase row][phase col][n * rows][row],
 *   a phase holding the padded input cells whose coordinates have one
 *   remainder modulo the stride). Every tap (ki, kj) then reads one phase
 *   at unit stride, so B row (ci, ki, kj) is the grid shifted by an offset,
 *   which the microkernel reads through an offset table. The grid's pad
 *   columns and rows are computed and dropped: its extra area is the waste;
 * - im2col: each task expands its columns into its thread's scratch as
 *   KCPU_NR-column strips, the layout the microkernel streams. Costs about
 *   half a cycle per B element, which matters when the GEMM does little
 *   per element (few output channels).
 *
 * plan() picks implicit over im2col when its wasted columns cost less
 * than im2col would. Depthwise and grouped convolutions with few output
 * channels per group, and dense ones of one input channel with few
 * outputs, go to the direct kernel of kcpu_dwconv.c instead,
 * padded 3x3 stride-1 ones with enough channels to Winograd's F(2x2, 3x3)
 * in kcpu_wino.c (weights packed its own way), and most other dense ones
 * that are not a plain 1x1 to the pixel-tile kernel of kcpu_convpix.c,
 * which reads the same packed weights.
 */
#include <string.h>

#include "kcpu_conv_taps.h"
#include "kcpu_convpix.h"
#include "kcpu_dwconv.h"
#include "kcpu_impl.h"
#include "kcpu_wino.h"

/* Bytes of B per task: with the group's packed weights they should stay
 * in L2 while every A panel passes over them. */
#define COL_BUDGET ((int64_t)192 * 1024)
#define MAX_CHUNK 1024  /* columns */
/* Grid floats one pad task writes at least: copying is cheap per float. */
#define PAD_TASK_FLOATS ((int64_t)64 * 1024)
/* Images from which im2col's copy is cheaper per element (plan()). */
#define IM2COL_BATCH 8

enum conv_path { PATH_DIRECT, PATH_IMPLICIT, PATH_IM2COL };

struct conv_plan {
    int64_t cg, mg;            /* input and output channels per group */
    int64_t kg;                /* GEMM depth: cg * kh * kw */
    int64_t panels;            /* KCPU_MR-row panels per group */
    int64_t a_step;            /* KCPU_MR, or KCPU_PAIR: panels packed in pairs (the pixel-tile kernel's) */
    int64_t pixels;            /* oh * ow */
    enum conv_path path;
    /* Implicit path: each phase holds an image in img_rows rows of row_len
     * floats, images back to back, then a zero tail; the zeros ending a row
     * (image) double as the leading padding of the next. */
    int64_t row_len, img_rows;
    int64_t phase, chan;       /* floats per phase (tail included), per channel */
    int64_t cols;              /* columns a task may range over */
};

/* One axis of the implicit grid: the shortest row (image) length such
 * that every output has a distinct column, the data fits, and a window
 * running off the end of a row only reads zeros at the start of the next. */
static int64_t grid_len(int in, int out, int k, int dil, int stride, int pad)
{
    int64_t len = out;
    for (int ph = 0; ph < stride; ph++) {
        int64_t reach = -1;    /* furthest tap shift into this phase */
        for (int t = 0; t < k; t++)
            if (t * dil % stride == ph)
                reach = t * dil / stride;
        if (reach < 0)
            continue;
        int64_t lo = (pad - ph + stride - 1) / stride;      /* first data cell */
        int64_t hi = (in + pad - ph + stride - 1) / stride; /* past the last */
        if (pad - ph < 0)
            lo = 0;
        len = kcpu_max64(len, kcpu_max64(hi, out + reach - lo));
    }
    return len;
}

static struct conv_plan plan(const struct k_conv2d *p)
{
    struct conv_plan c;
    memset(&c, 0, sizeof(c));
    c.cg = p->c / p->groups;
    c.mg = p->oc / p->groups;
    c.kg = c.cg * p->kh * p->kw;
    c.panels = kcpu_ceil_div(c.mg, KCPU_MR);
    c.a_step = kcpu_convpix_fits_some_isa(p) ? KCPU_PAIR : KCPU_MR;   /* then mg is a multiple of 16 */
    c.pixels = (int64_t)p->oh * p->ow;
    c.cols = p->n * c.pixels;
    c.path = PATH_IM2COL;
    /* The direct path's columns stay within an image, so a map whose
     * pixels leave a last strip mostly empty (14x14: 196 of 224 lanes, 7x7:
     * 49 of 64) wastes it in every image of a batch; the implicit path's
     * columns run on into the next image, for the price of one copy of the
     * input (a few percent): taken when it saves more lanes than that. */
    int64_t direct_lanes = p->n * kcpu_ceil_div(c.pixels, KCPU_NR) * KCPU_NR;
    int64_t packed_lanes = kcpu_ceil_div(p->n * c.pixels, KCPU_NR) * KCPU_NR;
    if (p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_t == 0 &&
        p->pad_l == 0 && p->oh == p->h && p->ow == p->w && 16 * (direct_lanes - packed_lanes) <= packed_lanes) {
        c.path = PATH_DIRECT;
        c.cols = c.pixels;
        return c;
    }
    int64_t row = grid_len(p->w, p->ow, p->kw, p->dil_w, p->stride_w, p->pad_l);
    int64_t rows = grid_len(p->h, p->oh, p->kh, p->dil_h, p->stride_h, p->pad_t);
    /* Implicit computes row * rows columns per image for `pixels` outputs;
     * im2col spends about half a cycle per B element at unit stride (more
     * when strided) where the GEMM spends mg / 32 (16 lanes, 2 FMA pipes):
     * pick the cheaper. From IM2COL_BATCH images on, im2col's copy costs
     * less than that (measured on LeNet-5's conv2, waste 0.96 x 16
     * channels: im2col 22 % faster at batch 64, 21 % slower at batch 1). */
    double waste = (double)(row * rows) / (double)c.pixels - 1.0;
    int strided = p->stride_h > 1 || p->stride_w > 1;
    double bound = strided ? 32.0 : p->n >= IM2COL_BATCH ? 8.0 : 16.0;
    if (waste * (double)c.mg >= bound)
        return c;
    c.path = PATH_IMPLICIT;
    c.row_len = row;
    c.img_rows = rows;
    c.cols = (p->n - 1) * rows * row + (p->oh - 1) * row + p->ow;
    /* Past the last image, windows reach at most k - 1 taps further. */
    int64_t tail = ((int64_t)(p->kh - 1) * p->dil_h / p->stride_h + 1) * row +
                   (int64_t)(p->kw - 1) * p->dil_w / p->stride_w + KCPU_NR;
    c.phase = (p->n * rows * row + tail + 15) / 16 * 16;
    c.chan = (int64_t)p->stride_h * p->stride_w * c.phase;
    return c;
}

/* Panels a depth step of the packed weights holds: 1, or 2 in pairs. */
static int64_t panels_a_step(const struct conv_plan *c) { return c->a_step / KCPU_MR; }

/* The most columns a task may take: a multiple of KCPU_NR. */
static int64_t max_chunk(const struct conv_plan *c)
{
    int64_t cols = COL_BUDGET / (kcpu_max64(1, c->kg) * (int64_t)sizeof(float));
    cols = cols / KCPU_NR * KCPU_NR;
    return kcpu_min64(MAX_CHUNK, kcpu_max64(KCPU_NR, cols));
}

/* Per-thread im2col floats (64-byte multiple). */
static int64_t col_floats(const struct conv_plan *c)
{
    return c->path == PATH_IM2COL ? (c->kg * max_chunk(c) + 15) / 16 * 16 : 0;
}

/* Shared implicit-path floats: the offset table, then the padded grid. */
static int64_t table_floats(const struct conv_plan *c)
{
    return c->path == PATH_IMPLICIT ? (c->kg * 2 + 15) / 16 * 16 : 0;
}

static int64_t grid_floats(const struct k_conv2d *p, const struct conv_plan *c)
{
    return c->path == PATH_IMPLICIT ? p->c * c->chan : 0;
}

size_t kcpu_conv2d_packed_floats(const struct k_conv2d *p)
{
    if (kcpu_dwconv_applies(p))
        return kcpu_dwconv_packed_floats(p);
    if (kcpu_conv_taps_applies(p))
        return kcpu_conv_taps_packed_floats(p);
    if (kcpu_wino_applies(p))
        return kcpu_wino_packed_floats(p);
    struct conv_plan c = plan(p);
    return (size_t)p->groups * (size_t)(c.panels * KCPU_MR * c.kg);
}

void kcpu_conv2d_pack(const struct k_conv2d *p, const float *w, float *packed)
{
    if (kcpu_dwconv_applies(p)) {
        kcpu_dwconv_pack(p, w, packed);
        return;
    }
    if (kcpu_conv_taps_applies(p)) {
        kcpu_conv_taps_pack(p, w, packed);
        return;
    }
    if (kcpu_wino_applies(p)) {
        kcpu_wino_pack(p, w, packed);
        return;
    }
    struct conv_plan c = plan(p);
    for (int64_t g = 0; g < p->groups; g++)
        kcpu_gemm_pack_a(w + g * c.mg * c.kg, c.mg, c.kg, c.a_step, packed + g * c.panels * KCPU_MR * c.kg);
}

const char *kcpu_conv2d_method(const struct k_conv2d *p)
{
    static const char *const NAMES[] = {[PATH_DIRECT] = "direct gemm", [PATH_IMPLICIT] = "implicit gemm",
                                        [PATH_IM2COL] = "im2col gemm"};
    if (kcpu_dwconv_applies(p))
        return p->groups > 1 ? "depthwise direct" : "direct";
    if (kcpu_conv_taps_applies(p))
        return "reading taps gemm";
    if (kcpu_wino_applies(p))
        return "winograd gemm";
    return kcpu_convpix_applies(p) ? "pixel-tile gemm" : NAMES[plan(p).path];
}

/* Grows with p->n: scratch sized for the largest batch serves every smaller
 * one (the runtime relies on it). A smaller batch may take another path (a
 * 1x1 the implicit one where this batch takes the direct, fewer than
 * IM2COL_BATCH images the implicit one where this batch takes im2col), so
 * every batch up to p->n is planned and the most any needs is returned. */
size_t kcpu_conv2d_scratch_bytes(const struct k_conv2d *p, int threads)
{
    if (kcpu_dwconv_applies(p))
        return kcpu_dwconv_scratch_bytes(p, threads);
    if (kcpu_conv_taps_applies(p))
        return kcpu_conv_taps_scratch_bytes(p, threads);
    if (kcpu_wino_applies(p))
        return kcpu_wino_scratch_bytes(p, threads);
    int64_t most = 0;
    struct k_conv2d q = *p;
    for (q.n = p->n; q.n >= 1; q.n--) {
        struct conv_plan c = plan(&q);
        most = kcpu_max64(most, threads * col_floats(&c) + table_floats(&c) + grid_floats(&q, &c));
    }
    size_t gemm = (size_t)most * sizeof(float) + 64, pix = kcpu_convpix_scratch_bytes(p, threads);
    return gemm > pix ? gemm : pix;
}

struct conv_job {
    const struct k_conv2d *p;
    struct conv_plan c;
    const float *x, *packed_w, *bias, *residual;
    float *y;
    float *cols;               /* im2col: per-thread strips */
    int64_t *boff;             /* implicit: B row offsets */
    float *grid;               /* implicit: padded input */
    int64_t chunk;             /* columns per task */
    int64_t chunks;            /* tasks per group */
    int64_t chunks_per_image;  /* direct path only */
    int64_t mblocks;           /* row blocks a chunk is split into */
    int64_t pad_planes;        /* implicit: (channel, image) planes per pad task */
};

void kcpu_im2col_strip(const struct k_conv2d *p, const struct kcpu_col_run *runs, int nruns,
                       float *dst)
{
    int64_t plane = (int64_t)p->h * p->w;
    int cg = p->c / p->groups;
    for (int ci = 0; ci < cg; ci++)
        for (int ki = 0; ki < p->kh; ki++)
            for (int kj = 0; kj < p->kw; kj++, dst += KCPU_NR)
                for (int r = 0; r < nruns; r++) {
                    const struct kcpu_col_run *run = &runs[r];
                    float *d = dst + run->lane;
                    int ih = run->ih0 + ki * p->dil_h;
                    if (ih < 0 || ih >= p->h) {
                        for (int t = 0; t < run->len; t++)
                            d[t] = 0.0f;
                        continue;
                    }
                    const float *row = run->img + ci * plane + (int64_t)ih * p->w;
                    int iw = run->iw0 + kj * p->dil_w;
                    for (int t = 0; t < run->len; t++, iw += p->stride_w)
                        d[t] = iw >= 0 && iw < p->w ? row[iw] : 0.0f;
                }
}

/* im2col of columns [j0, j0 + ncols) of group base x (image 0) into
 * strips dst[strip][kg][KCPU_NR]. */
static void im2col(const struct conv_job *j, const float *x, int64_t j0, int64_t ncols, float *dst)
{
    const struct k_conv2d *p = j->p;
    int64_t img_stride = (int64_t)p->c * p->h * p->w;
    int avx512 = kcpu_isa() == KCPU_ISA_AVX512;
    for (int64_t s0 = 0; s0 < ncols; s0 += KCPU_NR) {
        int lanes = (int)kcpu_min64(KCPU_NR, ncols - s0);
        struct kcpu_col_run runs[KCPU_NR];
        int nruns = 0;
        for (int lane = 0; lane < lanes;) {
            int64_t col = j0 + s0 + lane, pix = col % j->c.pixels;
            int oh = (int)(pix / p->ow), ow = (int)(pix % p->ow);
            struct kcpu_col_run *r = &runs[nruns++];
            r->lane = lane;
            r->len = (int)kcpu_min64(p->ow - ow, lanes - lane);
            r->ih0 = oh * p->stride_h - p->pad_t;
            r->iw0 = ow * p->stride_w - p->pad_l;
            r->img = x + (col / j->c.pixels) * img_stride;
            lane += r->len;
        }
        float *ds = dst + (s0 / KCPU_NR) * j->c.kg * KCPU_NR;
        if (!avx512 || kcpu_im2col_strip_avx512(p, runs, nruns, ds) != 0)
            kcpu_im2col_strip(p, runs, nruns, ds);
    }
}

/* Whether some kernel tap reads stride phase ph of an axis. */
static int phase_used(int k, int dil, int stride, int ph)
{
    for (int t = 0; t < k; t++)
        if (t * dil % stride == ph)
            return 1;
    return 0;
}

/* Implicit path, first pass: one (channel, image) of the padded grid, in
 * every stride phase a tap reads. */
static void pad_plane(const struct conv_job *j, int64_t ch, int64_t img)
{
    const struct k_conv2d *p = j->p;
    const struct conv_plan *c = &j->c;
    const float *src = j->x + (img * p->c + ch) * p->h * p->w;
    int avx512 = kcpu_isa() == KCPU_ISA_AVX512;
    for (int a = 0; a < p->stride_h; a++)
        for (int b = 0; b < p->stride_w; b++) {
            if (!phase_used(p->kh, p->dil_h, p->stride_h, a) || !phase_used(p->kw, p->dil_w, p->stride_w, b))
                continue;
            float *ph = j->grid + ch * c->chan + (a * p->stride_w + b) * c->phase;
            float *dst = ph + img * c->img_rows * c->row_len;
            for (int64_t r = 0; r < c->img_rows; r++, dst += c->row_len) {
                int64_t ih = r * p->stride_h + a - p->pad_t;
                int iw0 = b - p->pad_l;  /* input column of grid column 0 */
                if (ih < 0 || ih >= p->h)
                    memset(dst, 0, (size_t)c->row_len * sizeof(float));
                else if (p->stride_w <= 2 && avx512)
                    kcpu_pad_row_avx512(src + ih * p->w, p->w, iw0, p->stride_w, dst, c->row_len);
                else
                    for (int64_t t = 0, iw = iw0; t < c->row_len; t++, iw += p->stride_w)
                        dst[t] = iw >= 0 && iw < p->w ? src[ih * p->w + iw] : 0.0f;
            }
            if (img == p->n - 1) {  /* the zeros the last image's windows reach */
                int64_t used = p->n * c->img_rows * c->row_len;
                memset(ph + used, 0, (size_t)(c->phase - used) * sizeof(float));
            }
        }
}

static void pad_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    int64_t planes = (int64_t)j->p->c * j->p->n;
    for (int64_t pl = task * j->pad_planes; pl < kcpu_min64(planes, (task + 1) * j->pad_planes); pl++)
        pad_plane(j, pl / j->p->n, pl % j->p->n);
}

static void conv_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct conv_plan *c = &j->c;
    int64_t mb = task % j->mblocks;
    task /= j->mblocks;
    int64_t g = task / j->chunks, chunk = task % j->chunks;
    /* Row block mb: panels [pn0, pn1) of the group, whole pairs. */
    const int64_t per = panels_a_step(c), units = c->panels / per;
    int64_t pn0 = mb * units / j->mblocks * per, pn1 = (mb + 1) * units / j->mblocks * per;
    int64_t row0 = pn0 * KCPU_MR, rows = kcpu_min64(c->mg, pn1 * KCPU_MR) - row0;
    int64_t out_off = (g * c->mg + row0) * c->pixels;  /* block's first channel, image 0 */
    struct kcpu_gemm gm = {
        .m = (int)rows, .k = c->kg,
        .a = j->packed_w + (g * c->panels + pn0) * KCPU_MR * c->kg, .a_step = c->a_step,
        .b_strip = KCPU_NR, .ldb = c->pixels,
        .seg_len = c->pixels, .seg_stride = (int64_t)p->oc * c->pixels,
        .row_len = c->pixels, .row_valid = c->pixels, .rows_valid = 1, .ldc = c->pixels,
        .c = j->y + out_off,
        .res = j->residual ? j->residual + out_off : NULL,
        .bias_row = j->bias ? j->bias + g * c->mg + row0 : NULL,
        .act = p->act,
    };
    const float *xg = j->x + g * c->cg * p->h * p->w;
    if (c->path == PATH_DIRECT) {
        /* Columns of one image only: B rows are that image's channels. */
        int64_t img = chunk / j->chunks_per_image;
        int64_t p0 = (chunk % j->chunks_per_image) * j->chunk;
        gm.b = xg + img * p->c * c->pixels + p0;
        gm.j0 = img * c->pixels + p0;
        gm.n = kcpu_min64(j->chunk, c->pixels - p0);
    } else if (c->path == PATH_IMPLICIT) {
        gm.j0 = chunk * j->chunk;
        gm.n = kcpu_min64(j->chunk, c->cols - gm.j0);
        gm.b = j->grid + g * c->cg * c->chan + gm.j0;
        gm.boff = j->boff;
        gm.seg_len = c->img_rows * c->row_len;
        gm.row_len = c->row_len;
        gm.row_valid = p->ow;
        gm.rows_valid = p->oh;
    } else {
        float *col = j->cols + thread * col_floats(c);
        gm.j0 = chunk * j->chunk;
        gm.n = kcpu_min64(j->chunk, c->cols - gm.j0);
        im2col(j, xg, gm.j0, gm.n, col);
        gm.b = col;
        gm.ldb = KCPU_NR;
        gm.b_strip = c->kg * KCPU_NR;
    }
    kcpu_gemm_run(&gm);
}

void kcpu_conv2d_f32(struct kcpu_threads *th, const struct k_conv2d *p,
                     const float *x, const float *packed_w, const float *bias,
                     const float *residual, float *y, void *scratch)
{
    if (kcpu_dwconv_applies(p)) {
        kcpu_dwconv_f32(th, p, x, packed_w, bias, residual, y, scratch);
        return;
    }
    if (kcpu_conv_taps_applies(p)) {
        kcpu_conv_taps_f32(th, p, x, packed_w, bias, residual, y, scratch);
        return;
    }
    if (kcpu_wino_applies(p)) {
        kcpu_wino_f32(th, p, x, packed_w, bias, residual, y, scratch);
        return;
    }
    if (kcpu_convpix_applies(p)) {
        kcpu_convpix_f32(th, p, x, packed_w, bias, residual, y, scratch);
        return;
    }
    struct conv_job j = {.p = p, .c = plan(p), .x = x, .packed_w = packed_w, .bias = bias,
                         .residual = residual, .y = y};
    const struct conv_plan *c = &j.c;
    if (c->cols <= 0 || p->oc <= 0)
        return;
    void *base = kcpu_align64(scratch);   /* the offset table then the grid, or the columns */
    if (c->path == PATH_IMPLICIT) {
        j.boff = base;
        j.grid = (float *)base + table_floats(c);
        /* Channel 0's taps (the divisions once per tap), then the others'
         * shifted by their channel. */
        int64_t taps = (int64_t)p->kh * p->kw;
        for (int64_t ki = 0; ki < p->kh; ki++)
            for (int64_t kj = 0; kj < p->kw; kj++) {
                int64_t dy = ki * p->dil_h, dx = kj * p->dil_w;
                int64_t phase = dy % p->stride_h * p->stride_w + dx % p->stride_w;
                j.boff[ki * p->kw + kj] = phase * c->phase + dy / p->stride_h * c->row_len + dx / p->stride_w;
            }
        for (int64_t ci = 1; ci < c->cg; ci++)
            for (int64_t t = 0; t < taps; t++)
                j.boff[ci * taps + t] = j.boff[t] + ci * c->chan;
        int64_t plane = c->img_rows * c->row_len * p->stride_h * p->stride_w;
        j.pad_planes = kcpu_max64(1, PAD_TASK_FLOATS / kcpu_max64(1, plane));
        kcpu_threads_run(th, kcpu_ceil_div((int64_t)p->c * p->n, j.pad_planes), pad_task, &j);
    } else {
        j.cols = base;
    }
    /* Aim for four tasks per thread, none smaller than KCPU_MIN_TASK_MACS,
     * and never exceed the scratch chunk. */
    int64_t units = c->path == PATH_DIRECT ? (int64_t)p->groups * p->n : p->groups;
    int64_t want = kcpu_ceil_div(4 * (int64_t)kcpu_threads_count(th), units);
    int64_t chunk = kcpu_max64(kcpu_ceil_div(c->cols, want),
                               KCPU_MIN_TASK_MACS / kcpu_max64(1, c->mg * c->kg));
    chunk = kcpu_ceil_div(chunk, KCPU_NR) * KCPU_NR;
    j.chunk = kcpu_min64(max_chunk(c), kcpu_max64(KCPU_NR, chunk));
    if (c->path == PATH_DIRECT) {
        j.chunks_per_image = kcpu_ceil_div(c->cols, j.chunk);
        j.chunks = p->n * j.chunks_per_image;
    } else {
        j.chunks = kcpu_ceil_div(c->cols, j.chunk);
    }
    /* Few columns (the 14x14 and 7x7 maps of a large network at batch 1)
     * give few tasks, and a last strip much narrower than the others: split
     * the output channels too, so that every thread gets work of like size. */
    int64_t tasks = p->groups * j.chunks;
    j.mblocks = 1;
    if (kcpu_threads_count(th) > 1 && tasks < want * units) {
        int64_t worth = c->panels * KCPU_MR * c->kg * kcpu_min64(j.chunk, c->cols) / KCPU_MIN_TASK_MACS;
        int64_t most = c->panels / panels_a_step(c);   /* panels, or pairs */
        j.mblocks = kcpu_max64(1, kcpu_min64(kcpu_min64(most, worth), kcpu_ceil_div(want * units, tasks)));
    }
    kcpu_threads_run(th, tasks * j.mblocks, conv_task, &j);
}
