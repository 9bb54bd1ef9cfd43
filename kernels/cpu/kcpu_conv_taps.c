/*
 * kcpu_conv_taps.c - dense atrous convolutions by the taps that read the
 * input (kcpu_conv_taps.h has the method).
 */
#include "kcpu_conv_taps.h"

#define MAX_TAPS 32        /* per axis */
/* Floats of gathered input per GEMM: with a tap's packed weights they
 * should stay in L2 while the GEMM passes over them. */
#define GATHER_BUDGET ((int64_t)48 * 1024)

/* The output positions [first, first + len) at which tap t reads the input
 * along an axis (len 0: none). Each tap's positions are one interval. */
static void tap_span(int t, int out, int in, int dil, int stride, int pad, int *first, int *len)
{
    int64_t lo = -1, hi = -1;
    for (int o = 0; o < out; o++) {
        int64_t i = (int64_t)o * stride - pad + (int64_t)t * dil;
        if (i >= 0 && i < in) {
            lo = lo < 0 ? o : lo;
            hi = o;
        }
    }
    *first = lo < 0 ? 0 : (int)lo;
    *len = lo < 0 ? 0 : (int)(hi - lo + 1);
}

int kcpu_conv_taps_applies(const struct k_conv2d *p)
{
    if (p->groups != 1 || (p->dil_h == 1 && p->dil_w == 1) || p->kh > MAX_TAPS || p->kw > MAX_TAPS ||
        p->kh * p->kw < 2 || p->oh < 1 || p->ow < 1)
        return 0;
    int64_t read_h = 0, read_w = 0;   /* tap-positions reading the input, per axis */
    int first, len;
    for (int t = 0; t < p->kh; t++) {
        tap_span(t, p->oh, p->h, p->dil_h, p->stride_h, p->pad_t, &first, &len);
        read_h += len;
    }
    for (int t = 0; t < p->kw; t++) {
        tap_span(t, p->ow, p->w, p->dil_w, p->stride_w, p->pad_l, &first, &len);
        read_w += len;
    }
    return 2 * read_h * read_w <= (int64_t)p->kh * p->oh * p->kw * p->ow;
}

static int64_t panels(const struct k_conv2d *p) { return kcpu_ceil_div(p->oc, KCPU_MR); }

/* Floats of one tap's packed weights. */
static int64_t tap_floats(const struct k_conv2d *p) { return panels(p) * KCPU_MR * p->c; }

size_t kcpu_conv_taps_packed_floats(const struct k_conv2d *p)
{
    return (size_t)p->kh * (size_t)p->kw * (size_t)tap_floats(p);
}

void kcpu_conv_taps_pack(const struct k_conv2d *p, const float *w, float *packed)
{
    int64_t taps = (int64_t)p->kh * p->kw;
    for (int64_t t = 0; t < taps; t++) {
        float *dst = packed + t * tap_floats(p);
        for (int64_t pn = 0; pn < panels(p); pn++)
            for (int64_t ci = 0; ci < p->c; ci++)
                for (int i = 0; i < KCPU_MR; i++) {
                    int64_t oc = pn * KCPU_MR + i;
                    dst[(pn * p->c + ci) * KCPU_MR + i] = oc < p->oc ? w[(oc * p->c + ci) * taps + t] : 0.0f;
                }
    }
}

/* Columns one GEMM takes: whole strips, the gathered input within budget. */
static int64_t chunk_cols(const struct k_conv2d *p)
{
    int64_t cols = GATHER_BUDGET / kcpu_max64(1, p->c) / KCPU_NR * KCPU_NR;
    return kcpu_max64(KCPU_NR, kcpu_min64(cols, 512));
}

/* Per thread: gathered input [strips][c][KCPU_NR] (64-byte multiple). */
static int64_t thread_floats(const struct k_conv2d *p) { return (p->c * chunk_cols(p) + 15) / 16 * 16; }

size_t kcpu_conv_taps_scratch_bytes(const struct k_conv2d *p, int threads)
{
    return (size_t)threads * (size_t)thread_floats(p) * sizeof(float) + 64;
}

/* The output rectangle where a tap reads the input. */
struct tap_rect {
    int ky, kx, y0, x0, h, w;
};

struct taps_job {
    const struct k_conv2d *p;
    const float *x, *packed_w, *bias, *residual;
    float *y, *scratch;
    struct tap_rect rects[MAX_TAPS * MAX_TAPS];
    int n_rects;
    int64_t imgs_per_task, mblocks;
};

/* The input offset (within an image) tap r reads for its output pixel at
 * (oy, ox). */
static int64_t input_at(const struct k_conv2d *p, const struct tap_rect *r, int64_t oy, int64_t ox)
{
    int64_t iy = oy * p->stride_h - p->pad_t + (int64_t)r->ky * p->dil_h;
    int64_t ix = ox * p->stride_w - p->pad_l + (int64_t)r->kx * p->dil_w;
    return iy * p->w + ix;
}

/* Rectangle columns [j0, j0 + n) (images from img0 back to back) of the
 * input the tap reads, as strips [c][KCPU_NR] (lanes past n zero). */
static void gather(const struct taps_job *j, const struct tap_rect *r, int64_t img0, int64_t j0, int64_t n,
                   float *dst)
{
    const struct k_conv2d *p = j->p;
    int64_t plane = (int64_t)p->h * p->w, per = (int64_t)r->h * r->w;
    for (int64_t s = 0; s < n; s += KCPU_NR) {
        float *strip = dst + s * p->c;
        int lanes = (int)kcpu_min64(KCPU_NR, n - s);
        int64_t off[KCPU_NR];
        for (int l = 0; l < lanes; l++) {
            int64_t col = j0 + s + l, at = col % per;
            off[l] = (img0 + col / per) * p->c * plane + input_at(p, r, r->y0 + at / r->w, r->x0 + at % r->w);
        }
        for (int64_t ci = 0; ci < p->c; ci++) {
            float *d = strip + ci * KCPU_NR;
            const float *src = j->x + ci * plane;
            for (int l = 0; l < lanes; l++)
                d[l] = src[off[l]];
            for (int l = lanes; l < KCPU_NR; l++)
                d[l] = 0.0f;
        }
    }
}

/* y's channels [row0, row0 + rows) of images [img0, img1) += the tap's
 * weights times the input it reads, over its rectangle. */
static void add_tap(const struct taps_job *j, const struct tap_rect *r, int64_t img0, int64_t img1, int64_t row0,
                    int64_t rows, int64_t pn0, float *scratch)
{
    const struct k_conv2d *p = j->p;
    int64_t plane = (int64_t)p->oh * p->ow, per = (int64_t)r->h * r->w, chunk = chunk_cols(p);
    struct kcpu_gemm gm = {
        .m = (int)rows, .k = p->c,
        .a = j->packed_w + (r->ky * p->kw + r->kx) * tap_floats(p) + pn0 * KCPU_MR * p->c, .a_step = KCPU_MR,
        .seg_len = per, .seg_stride = p->oc * plane,
        .row_len = r->w, .row_valid = r->w, .rows_valid = r->h, .row_stride = p->ow, .ldc = plane,
        .act = K_ACT_NONE,
    };
    gm.c = j->y + (img0 * p->oc + row0) * plane + (int64_t)r->y0 * p->ow + r->x0;
    gm.res = gm.c;
    /* Whole rows at stride 1: the input as it lies, one image at a time. */
    if (p->stride_h == 1 && p->stride_w == 1 && r->w == p->ow && p->ow == p->w) {
        for (int64_t img = img0; img < img1; img++)
            for (int64_t c0 = 0; c0 < per; c0 += chunk) {
                gm.b = j->x + img * p->c * p->h * p->w + input_at(p, r, r->y0, 0) + c0;
                gm.ldb = (int64_t)p->h * p->w;
                gm.b_strip = KCPU_NR;
                gm.j0 = (img - img0) * per + c0;
                gm.n = kcpu_min64(chunk, per - c0);
                kcpu_gemm_run(&gm);
            }
        return;
    }
    int64_t cols = (img1 - img0) * per;
    for (int64_t c0 = 0; c0 < cols; c0 += chunk) {
        gm.j0 = c0;
        gm.n = kcpu_min64(chunk, cols - c0);
        gather(j, r, img0, c0, gm.n, scratch);
        gm.b = scratch;
        gm.ldb = KCPU_NR;
        gm.b_strip = (int64_t)p->c * KCPU_NR;
        kcpu_gemm_run(&gm);
    }
}

static void taps_task(void *arg, int64_t task, int thread)
{
    const struct taps_job *j = arg;
    const struct k_conv2d *p = j->p;
    int64_t mb = task % j->mblocks, img0 = task / j->mblocks * j->imgs_per_task;
    int64_t img1 = kcpu_min64(p->n, img0 + j->imgs_per_task);
    int64_t units = panels(p), pn0 = mb * units / j->mblocks, pn1 = (mb + 1) * units / j->mblocks;
    int64_t row0 = pn0 * KCPU_MR, rows = kcpu_min64(p->oc, pn1 * KCPU_MR) - row0;
    int64_t plane = (int64_t)p->oh * p->ow;
    if (rows <= 0)
        return;
    for (int64_t img = img0; img < img1; img++)   /* the bias and residual first */
        for (int64_t i = 0; i < rows; i++) {
            int64_t at = (img * p->oc + row0 + i) * plane;
            float b = j->bias ? j->bias[row0 + i] : 0.0f;
            for (int64_t e = 0; e < plane; e++)
                j->y[at + e] = j->residual ? b + j->residual[at + e] : b;
        }
    float *scratch = j->scratch + thread * thread_floats(p);
    for (int t = 0; t < j->n_rects; t++)
        add_tap(j, &j->rects[t], img0, img1, row0, rows, pn0, scratch);
    if (p->act != K_ACT_NONE)
        for (int64_t img = img0; img < img1; img++) {
            float *at = j->y + (img * p->oc + row0) * plane;
            kcpu_act_run(p->act, rows * plane, at, at);
        }
}

void kcpu_conv_taps_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x, const float *packed_w,
                        const float *bias, const float *residual, float *y, void *scratch)
{
    struct taps_job j = {.p = p, .x = x, .packed_w = packed_w, .bias = bias, .residual = residual, .y = y,
                         .scratch = kcpu_align64(scratch)};
    if (p->n <= 0 || p->oc <= 0)
        return;
    for (int ky = 0; ky < p->kh; ky++)
        for (int kx = 0; kx < p->kw; kx++) {
            struct tap_rect r = {.ky = ky, .kx = kx};
            tap_span(ky, p->oh, p->h, p->dil_h, p->stride_h, p->pad_t, &r.y0, &r.h);
            tap_span(kx, p->ow, p->w, p->dil_w, p->stride_w, p->pad_l, &r.x0, &r.w);
            if (r.h > 0 && r.w > 0)
                j.rects[j.n_rects++] = r;
        }
    /* Images split first; output channels too where images are fewer than
     * threads (each row block gathers its input again). */
    int64_t threads = kcpu_threads_count(th);
    j.imgs_per_task = kcpu_max64(1, p->n / (4 * threads));
    int64_t img_tasks = kcpu_ceil_div(p->n, j.imgs_per_task);
    j.mblocks = kcpu_max64(1, kcpu_min64(panels(p), kcpu_ceil_div(threads, img_tasks)));
    kcpu_threads_run(th, img_tasks * j.mblocks, taps_task, &j);
}
