/*
 * kcpu_q8_conv.c - INT8 convolution and linear on the CPU: weight packing,
 * B-strip packing and the task split over the INT8 GEMM block.
 *
 * Convolution without an im2col gather. The padded input is first copied
 * into "phase planes": per channel, stride_h x stride_w planes, plane
 * (a, b) holding padded pixels (r * stride_h + a, c * stride_w + b), hq x wq
 * of them. The GEMM's column space then numbers output pixels as
 * oh * wq + ow (ow < wq; columns with ow >= ow_out are computed and dropped),
 * and for every kernel tap (ci, ki, kj) the B row over any run of columns
 * of one image is ONE contiguous slice of one plane, at offset
 * (ki * dil_h / stride_h) * wq + kj * dil_w / stride_w. Packing a strip is
 * then four slice loads and a byte interleave per depth quad - no per-pixel
 * bounds checks - at the price of (wq - ow) / wq wasted columns (2/9 for
 * the 7x7 maps of the served ResNet, 2/30 for 28x28). A 1x1, stride-1,
 * unpadded convolution reads its input as the planes directly.
 *
 * Linear is the same GEMM with the samples as columns: a B strip is 32 rows
 * of x transposed into depth quads.
 */
#include <string.h>

#include "kcpu_q8_impl.h"

#define COL_BUDGET (160 * 1024)   /* bytes of packed B per task: stays in L2 */
#define MAX_STRIPS 32

struct geom {
    int64_t cg, mg, kg, kq, panels;
    int nph;                   /* phase planes per channel */
    int64_t hq, wq;
    int64_t plane;             /* bytes per phase plane, slack included */
    int64_t img_stride;        /* bytes per image of planes */
    int direct;                /* the input is the planes */
    int64_t cols_img, cols;    /* GEMM columns per image, in all */
};

static struct geom geom_of(const struct k_conv2d *p)
{
    struct geom d;
    d.cg = p->c / p->groups;
    d.mg = p->oc / p->groups;
    d.kg = d.cg * p->kh * p->kw;
    d.kq = kq8_quads(d.kg);
    d.panels = kcpu_ceil_div(d.mg, KQ8_MR);
    d.direct = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_t == 0 &&
               p->pad_l == 0 && p->oh == p->h && p->ow == p->w;
    if (d.direct) {
        d.nph = 1;
        d.hq = p->h;
        d.wq = p->w;
        d.plane = (int64_t)p->h * p->w;
    } else {
        int64_t hp = (int64_t)(p->oh - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
        int64_t wp = (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1;
        d.nph = p->stride_h * p->stride_w;
        d.hq = kcpu_ceil_div(hp, p->stride_h);
        d.wq = kcpu_ceil_div(wp, p->stride_w);
        /* slack: padding columns read up to the largest column offset past the plane */
        int64_t slack = (int64_t)(p->kw - 1) * p->dil_w / p->stride_w + 1;
        d.plane = (d.hq * d.wq + slack + 15) / 16 * 16;
    }
    d.img_stride = (int64_t)p->c * d.nph * d.plane;
    d.cols_img = (int64_t)p->oh * d.wq;
    d.cols = p->n * d.cols_img;
    return d;
}

static int64_t panel_bytes(int64_t panels, int64_t kq) { return panels * kq * KQ8_PANEL_QUAD; }

size_t kcpu_conv2d_q8_packed_bytes(const struct k_conv2d *p)
{
    struct geom d = geom_of(p);
    return (size_t)(p->groups * panel_bytes(d.panels, d.kq) + (int64_t)p->oc * 4);
}

void kcpu_conv2d_q8_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    struct geom d = geom_of(p);
    int8_t *a = packed;
    int32_t *wsum = (int32_t *)(a + p->groups * panel_bytes(d.panels, d.kq));
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t pn = 0; pn < d.panels; pn++)
            for (int64_t q = 0; q < d.kq; q++)
                for (int i = 0; i < KQ8_MR; i++)
                    for (int t = 0; t < 4; t++) {
                        int64_t o = pn * KQ8_MR + i, k = 4 * q + t;
                        a[((g * d.panels + pn) * d.kq + q) * KQ8_PANEL_QUAD + i * 4 + t] =
                            o < d.mg && k < d.kg ? w[(g * d.mg + o) * d.kg + k] : 0;
                    }
    for (int64_t o = 0; o < p->oc; o++) {
        int32_t s = 0;
        for (int64_t k = 0; k < d.kg; k++)
            s += w[o * d.kg + k];
        wsum[o] = s;
    }
}

static int64_t max_strips(int64_t kq)
{
    return kcpu_max64(1, kcpu_min64(MAX_STRIPS, COL_BUDGET / (kq * KQ8_STRIP_QUAD)));
}

/* Per-thread scratch: packed strips, their maps, four gather rows. */
static int64_t thread_bytes(int64_t kq)
{
    int64_t strips = max_strips(kq) * kq * KQ8_STRIP_QUAD;
    int64_t maps = max_strips(kq) * (int64_t)sizeof(struct kq8_strip);
    return (strips + maps + 4 * KQ8_NR + 63) / 64 * 64;
}

/* Planes (unless direct), the tap offset table, per-thread areas. */
static int64_t planes_bytes(const struct k_conv2d *p, const struct geom *d)
{
    return d->direct ? 0 : (p->n * d->img_stride + 63) / 64 * 64;
}

static int64_t koff_bytes(const struct geom *d) { return (d->kg * 8 + 63) / 64 * 64; }

size_t kcpu_conv2d_q8_scratch_bytes(const struct k_conv2d *p, int threads)
{
    struct geom d = geom_of(p);
    return (size_t)(planes_bytes(p, &d) + koff_bytes(&d) + threads * thread_bytes(d.kq) + 64);
}

struct conv_job {
    const struct k_conv2d *p;
    struct geom d;
    const int8_t *x, *planes, *a;
    const int32_t *wsum;
    const struct k_q8_epilogue *e;
    const int8_t *res;
    void *y;
    const int64_t *koff;       /* per depth index k: its plane slice, from a group's first plane */
    uint8_t *scratch;          /* per-thread areas */
    int64_t chunk_strips, chunks;
};

/* Copies image / channel `task` of the padded input into its phase planes. */
static void planes_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct geom *d = &j->d;
    const int8_t *src = j->x + task * p->h * p->w;
    int8_t *base = (int8_t *)j->planes + task * d->nph * d->plane;
    for (int a = 0; a < p->stride_h; a++)
        for (int b = 0; b < p->stride_w; b++) {
            int8_t *pl = base + (a * p->stride_w + b) * d->plane;
            /* plane columns c with input column c * stride_w + b - pad_l inside [0, w) */
            int64_t first = b >= p->pad_l ? 0 : kcpu_ceil_div(p->pad_l - b, p->stride_w);
            int64_t last = kcpu_min64(d->wq, kcpu_ceil_div(p->w + p->pad_l - b, p->stride_w));
            for (int64_t r = 0; r < d->hq; r++) {
                int8_t *dst = pl + r * d->wq;
                int64_t ih = r * p->stride_h + a - p->pad_t;
                if (ih < 0 || ih >= p->h || first >= last) {
                    memset(dst, 0, (size_t)d->wq);
                    continue;
                }
                const int8_t *row = src + ih * p->w + first * p->stride_w + b - p->pad_l;
                memset(dst, 0, (size_t)first);
                if (p->stride_w == 1) {
                    memcpy(dst + first, row, (size_t)(last - first));
                } else {
                    for (int64_t c = first; c < last; c++, row += p->stride_w)
                        dst[c] = *row;
                }
                memset(dst + last, 0, (size_t)(d->wq - last));
            }
            memset(pl + d->hq * d->wq, 0, (size_t)(d->plane - d->hq * d->wq));
        }
}

/* koff[k] for every depth index k = (ci, ki, kj): the plane and offset
 * its slices start at, relative to the group's first plane. */
static void tap_offsets(const struct k_conv2d *p, const struct geom *d, int64_t *koff)
{
    for (int64_t k = 0, ci = 0; ci < d->cg; ci++)
        for (int ki = 0; ki < p->kh; ki++)
            for (int kj = 0; kj < p->kw; kj++, k++) {
                int64_t rr = (int64_t)ki * p->dil_h, cc = (int64_t)kj * p->dil_w;
                int64_t ph = (rr % p->stride_h) * p->stride_w + cc % p->stride_w;
                koff[k] = (ci * d->nph + ph) * d->plane + (rr / p->stride_h) * d->wq + cc / p->stride_w;
            }
}

/* Packs columns [c0, c0 + lanes) of group g into one strip. */
static void pack_strip(const struct conv_job *j, int64_t g, int64_t c0, int lanes, int8_t *tmp,
                       int8_t *dst)
{
    static const int8_t zeros[KQ8_NR];
    const struct geom *d = &j->d;
    int64_t img0 = c0 / d->cols_img, local0 = c0 % d->cols_img;
    int single = lanes == KQ8_NR && local0 + KQ8_NR <= d->cols_img;
    const int8_t *group = j->planes + g * d->cg * d->nph * d->plane;
    for (int64_t q = 0; q < d->kq; q++) {
        const int8_t *rows[4];
        for (int t = 0; t < 4; t++) {
            int64_t k = 4 * q + t;
            if (k >= d->kg) {
                rows[t] = zeros;
                continue;
            }
            const int8_t *chan = group + j->koff[k];
            if (single) {
                rows[t] = chan + img0 * d->img_stride + local0;
                continue;
            }
            int8_t *row = tmp + t * KQ8_NR;
            int l = 0;
            for (int64_t col = c0; l < lanes;) {
                int64_t img = col / d->cols_img, loc = col % d->cols_img;
                int len = (int)kcpu_min64(lanes - l, d->cols_img - loc);
                memcpy(row + l, chan + img * d->img_stride + loc, (size_t)len);
                l += len;
                col += len;
            }
            memset(row + lanes, 0, (size_t)(KQ8_NR - lanes));
            rows[t] = row;
        }
        kq8_interleave4(rows[0], rows[1], rows[2], rows[3], dst + q * KQ8_STRIP_QUAD);
    }
}

/* Output runs of columns [c0, c0 + lanes) of group g. */
static void map_strip(const struct conv_job *j, int64_t g, int64_t c0, int lanes, struct kq8_strip *m)
{
    const struct k_conv2d *p = j->p;
    const struct geom *d = &j->d;
    int64_t ohw = (int64_t)p->oh * p->ow;
    int64_t img = c0 / d->cols_img, loc = c0 % d->cols_img, oh = loc / d->wq, ow = loc % d->wq;
    m->nruns = 0;
    for (int t = 0; t < lanes; t++) {
        if (ow < p->ow) {
            int64_t off = (img * p->oc + g * d->mg) * ohw + oh * p->ow + ow;
            struct kq8_run *last = m->nruns ? &m->runs[m->nruns - 1] : NULL;
            if (last && last->l1 == t && last->off + (t - last->l0) == off)
                last->l1 = t + 1;
            else
                m->runs[m->nruns++] = (struct kq8_run){t, t + 1, off};
        }
        if (++ow == d->wq) {   /* next output row, next image */
            ow = 0;
            if (++oh == p->oh) {
                oh = 0;
                img++;
            }
        }
    }
}

static void conv_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct geom *d = &j->d;
    int64_t g = task / j->chunks, chunk = task % j->chunks;
    int64_t c0 = chunk * j->chunk_strips * KQ8_NR;
    int64_t ncols = kcpu_min64(j->chunk_strips * KQ8_NR, d->cols - c0);
    int nstrips = (int)kcpu_ceil_div(ncols, KQ8_NR);
    uint8_t *area = j->scratch + thread * thread_bytes(d->kq);
    int8_t *strips = (int8_t *)area;
    struct kq8_strip *maps = (struct kq8_strip *)(area + max_strips(d->kq) * d->kq * KQ8_STRIP_QUAD);
    int8_t *tmp = (int8_t *)(maps + max_strips(d->kq));
    for (int s = 0; s < nstrips; s++) {
        int lanes = (int)kcpu_min64(KQ8_NR, ncols - s * KQ8_NR);
        pack_strip(j, g, c0 + s * KQ8_NR, lanes, tmp, strips + s * d->kq * KQ8_STRIP_QUAD);
        map_strip(j, g, c0 + s * KQ8_NR, lanes, &maps[s]);
    }
    struct kq8_block b = {
        .m = (int)d->mg, .kq = d->kq,
        .a = j->a + g * panel_bytes(d->panels, d->kq), .wsum = j->wsum + g * d->mg,
        .b = strips, .nstrips = nstrips, .maps = maps,
        .ldc = (int64_t)j->p->oh * j->p->ow,
        .bias = j->e->bias + g * d->mg, .mult = j->e->mult + g * d->mg, .e = j->e,
        .res = j->res, .y = j->y,
    };
    kq8_block_run(&b);
}

void kcpu_conv2d_q8(struct kcpu_pool *pool, const struct k_conv2d *p, const int8_t *x,
                    const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual,
                    void *y, void *scratch)
{
    struct conv_job j = {.p = p, .d = geom_of(p), .x = x, .a = packed_w, .e = e, .res = residual, .y = y};
    if (j.d.cols <= 0 || p->oc <= 0)
        return;
    j.wsum = (const int32_t *)(j.a + p->groups * panel_bytes(j.d.panels, j.d.kq));
    uint8_t *s = (uint8_t *)kcpu_align64(scratch);
    j.planes = j.d.direct ? x : (const int8_t *)s;
    s += planes_bytes(p, &j.d);
    if (!j.d.direct)
        kcpu_pool_run(pool, (int64_t)p->n * p->c, planes_task, &j);
    tap_offsets(p, &j.d, (int64_t *)s);
    j.koff = (const int64_t *)s;
    j.scratch = s + koff_bytes(&j.d);
    /* Aim for four tasks per thread, within the per-task strip budget. */
    int64_t strips = kcpu_ceil_div(j.d.cols, KQ8_NR);
    int64_t want = kcpu_ceil_div(4 * kcpu_pool_threads(pool), p->groups);
    j.chunk_strips = kcpu_max64(1, kcpu_min64(max_strips(j.d.kq), kcpu_ceil_div(strips, want)));
    j.chunks = kcpu_ceil_div(strips, j.chunk_strips);
    kcpu_pool_run(pool, p->groups * j.chunks, conv_task, &j);
}

/* ------------------------------------------------------------ linear */

static struct k_conv2d linear_as_conv(const struct k_linear *p)
{
    struct k_conv2d c = {.n = p->n, .c = p->k, .h = 1, .w = 1, .oc = p->m, .oh = 1, .ow = 1,
                         .kh = 1, .kw = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                         .groups = 1};
    return c;
}

size_t kcpu_linear_q8_packed_bytes(const struct k_linear *p)
{
    struct k_conv2d c = linear_as_conv(p);
    return kcpu_conv2d_q8_packed_bytes(&c);
}

void kcpu_linear_q8_pack(const struct k_linear *p, const int8_t *w, void *packed)
{
    struct k_conv2d c = linear_as_conv(p);
    kcpu_conv2d_q8_pack(&c, w, packed);
}

size_t kcpu_linear_q8_scratch_bytes(const struct k_linear *p, int threads)
{
    return (size_t)(threads * thread_bytes(kq8_quads(p->k)) + 64);
}

struct linear_job {
    const struct k_linear *p;
    const int8_t *x, *a;
    const int32_t *wsum;
    const struct k_q8_epilogue *e;
    const int8_t *res;
    void *y;
    uint8_t *scratch;
    int64_t kq, strips, panels_per_task, row_tasks;
};

static void linear_task(void *arg, int64_t task, int thread)
{
    const struct linear_job *j = arg;
    const struct k_linear *p = j->p;
    int64_t strip = task / j->row_tasks, r0 = (task % j->row_tasks) * j->panels_per_task * KQ8_MR;
    int64_t c0 = strip * KQ8_NR;
    int lanes = (int)kcpu_min64(KQ8_NR, p->n - c0);
    int8_t *b = (int8_t *)(j->scratch + thread * thread_bytes(j->kq));
    struct kq8_strip *map = (struct kq8_strip *)(b + max_strips(j->kq) * j->kq * KQ8_STRIP_QUAD);
    /* column t is sample c0 + t; its depth quads are 4 adjacent bytes of its row */
    memset(b, 0, (size_t)(j->kq * KQ8_STRIP_QUAD));
    for (int t = 0; t < lanes; t++) {
        const int8_t *row = j->x + (c0 + t) * p->k;
        for (int64_t q = 0; q < j->kq; q++)
            memcpy(b + q * KQ8_STRIP_QUAD + t * 4, row + 4 * q, (size_t)kcpu_min64(4, p->k - 4 * q));
    }
    map->nruns = lanes;
    for (int t = 0; t < lanes; t++)
        map->runs[t] = (struct kq8_run){t, t + 1, (c0 + t) * p->m + r0};
    struct kq8_block blk = {
        .m = (int)kcpu_min64(j->panels_per_task * KQ8_MR, p->m - r0), .kq = j->kq,
        .a = j->a + (r0 / KQ8_MR) * j->kq * KQ8_PANEL_QUAD, .wsum = j->wsum + r0,
        .b = b, .nstrips = 1, .maps = map, .ldc = 1,
        .bias = j->e->bias + r0, .mult = j->e->mult + r0, .e = j->e,
        .res = j->res, .y = j->y,
    };
    kq8_block_run(&blk);
}

void kcpu_linear_q8(struct kcpu_pool *pool, const struct k_linear *p, const int8_t *x,
                    const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual,
                    void *y, void *scratch)
{
    if (p->n <= 0 || p->m <= 0)
        return;
    struct linear_job j = {.p = p, .x = x, .a = packed_w, .e = e, .res = residual, .y = y,
                           .scratch = (uint8_t *)kcpu_align64(scratch), .kq = kq8_quads(p->k)};
    int64_t panels = kcpu_ceil_div(p->m, KQ8_MR);
    j.wsum = (const int32_t *)(j.a + panel_bytes(panels, j.kq));
    j.strips = kcpu_ceil_div(p->n, KQ8_NR);
    /* split the rows too when there are few samples */
    int64_t want_rows = kcpu_ceil_div(2 * kcpu_pool_threads(pool), j.strips);
    j.panels_per_task = kcpu_ceil_div(panels, kcpu_min64(panels, want_rows));
    j.row_tasks = kcpu_ceil_div(panels, j.panels_per_task);
    kcpu_pool_run(pool, j.strips * j.row_tasks, linear_task, &j);
}
