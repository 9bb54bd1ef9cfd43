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
 * (ki * dil_h / stride_h) * wq + kj * dil_w / stride_w. Strips never span
 * two images (an image's last strip may be partial), so packing a strip is
 * four slice loads and a byte interleave per depth quad - no per-pixel
 * bounds checks - at the price of (wq - ow) / wq wasted columns (1/8 for
 * the 7x7 maps of the served ResNet, 1/29 for 28x28). A 1x1, stride-1,
 * unpadded convolution reads its input as the planes directly.
 *
 * Depthwise layers (channel multiplier 1) go to the direct kernel of
 * kcpu_q8_dw.h instead: as a GEMM their panels are one row of eight.
 *
 * Linear is the same GEMM with the samples as columns: a B strip is 32 rows
 * of x transposed into depth quads.
 */
#include <string.h>

#include "kcpu_q8_dw.h"
#include "kcpu_q8_impl.h"

#define COL_BUDGET ((int64_t)160 * 1024)   /* bytes of packed B per task: stays in L2 */
/* Multiply-adds below which a layer runs on the calling thread: a few
 * microseconds of VNNI work, less than waking the workers costs. */
#define SOLO_MACS (1 << 20)
#define MAX_STRIPS 32

struct geom {
    int64_t cg, mg, kg, kq, panels;
    int nph;                   /* phase planes per channel */
    int64_t hq, wq;
    int64_t plane;             /* bytes per phase plane, slack included */
    int64_t img_stride;        /* bytes per image of planes */
    int direct;                /* the input is the planes */
    int64_t cols_img;          /* GEMM columns per image */
    int64_t strips_img, strips; /* strips per image, in all */
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
        if (p->stride_w == 1) {
            /* Row r's right padding doubles as row r + 1's left padding (both
             * zero): plane rows of wp - overlap columns, fewer wasted GEMM
             * columns (a 7x7 map: 8 per row instead of 9). The overlap stays
             * within the padding on both sides and leaves room for ow columns. */
            int64_t pr = wp - p->pad_l - p->w;
            int64_t overlap = kcpu_min64(kcpu_min64(p->pad_l, kcpu_max64(pr, 0)), (int64_t)(p->kw - 1) * p->dil_w);
            d.wq = wp - overlap;
        }
        /* slack: a strip reads up to 31 padding columns past its image's
         * last one, plus the largest column offset of a tap */
        int64_t slack = (int64_t)(p->kw - 1) * p->dil_w / p->stride_w + KQ8_NR;
        d.plane = (d.hq * d.wq + slack + 15) / 16 * 16;
    }
    d.img_stride = (int64_t)p->c * d.nph * d.plane;
    d.cols_img = (int64_t)p->oh * d.wq;
    d.strips_img = kcpu_ceil_div(d.cols_img, KQ8_NR);
    d.strips = p->n * d.strips_img;
    return d;
}

static int64_t panel_bytes(int64_t panels, int64_t kq) { return panels * kq * KQ8_PANEL_QUAD; }

const char *kcpu_conv2d_q8_method(const struct k_conv2d *p)
{
    return kq8_dw_applies(p) ? "depthwise direct" : "gemm";
}

/* The GEMM's packed weights (linear's too, whatever its shape). */
static size_t gemm_packed_bytes(const struct k_conv2d *p)
{
    struct geom d = geom_of(p);
    return (size_t)(p->groups * panel_bytes(d.panels, d.kq) + (int64_t)p->oc * 4);
}

static void gemm_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    struct geom d = geom_of(p);
    int8_t *a = packed;
    int32_t *wsum = (int32_t *)(a + p->groups * panel_bytes(d.panels, d.kq));
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t pn = 0; pn < d.panels; pn++)
            for (int64_t q = 0; q < d.kq; q++)
                for (int64_t i = 0; i < KQ8_MR; i++)
                    for (int64_t t = 0; t < 4; t++) {
                        int64_t o = pn * KQ8_MR + i, k = 4 * q + t;
                        int8_t v = 0;
                        if (o < d.mg && k < d.kg)
                            v = w[(g * d.mg + o) * d.kg + k];
                        a[((g * d.panels + pn) * d.kq + q) * KQ8_PANEL_QUAD + i * 4 + t] = v;
                    }
    for (int64_t o = 0; o < p->oc; o++) {
        int32_t s = 0;
        for (int64_t k = 0; k < d.kg; k++)
            s += w[o * d.kg + k];
        wsum[o] = s;
    }
}

size_t kcpu_conv2d_q8_packed_bytes(const struct k_conv2d *p)
{
    return kq8_dw_applies(p) ? kq8_dw_packed_bytes(p) : gemm_packed_bytes(p);
}

void kcpu_conv2d_q8_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    if (kq8_dw_applies(p))
        kq8_dw_pack(p, w, packed);
    else
        gemm_pack(p, w, packed);
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
    return (strips + maps + 4 * (int64_t)KQ8_NR + 63) / 64 * 64;
}

/* Planes (unless direct), the tap offset table, per-thread areas. */
static int64_t planes_bytes(const struct k_conv2d *p, const struct geom *d)
{
    return d->direct ? 0 : (p->n * d->img_stride + 63) / 64 * 64;
}

static int64_t koff_bytes(const struct geom *d) { return (d->kg * 8 + 63) / 64 * 64; }

size_t kcpu_conv2d_q8_scratch_bytes(const struct k_conv2d *p, int threads)
{
    if (kq8_dw_applies(p))
        return kq8_dw_scratch_bytes(p, threads);
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
    int by_image;              /* tasks own whole images and build their planes */
    int64_t per_task;          /* images (by_image) or strips per task */
    int64_t chunks;            /* tasks per group */
    int64_t row_chunks;        /* tasks per strip chunk: the group's rows split this many ways */
    int64_t chunk_rows;        /* rows per row chunk, a multiple of KQ8_MR */
};

/* Whether some kernel tap lands on phase `phase` of a strided dimension
 * (a 1x1 stride-2 convolution reads one phase of four). */
static int phase_used(int k, int dil, int stride, int phase)
{
    for (int i = 0; i < k; i++) {
        if (i * dil % stride == phase)
            return 1;
    }
    return 0;
}

/* Copies image / channel `task` of the padded input into its phase planes. */
static void planes_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct k_conv2d *p = j->p;
    /* int8 stores may alias anything: keep every bound in a local */
    const int64_t h = p->h, w = p->w, sh = p->stride_h, sw = p->stride_w, pt = p->pad_t, pl = p->pad_l;
    const int64_t hq = j->d.hq, wq = j->d.wq, plane = j->d.plane;
    const int8_t *src = j->x + task * h * w;
    int8_t *base = (int8_t *)j->planes + task * j->d.nph * plane;
    const int gather2 = sw == 2 && kcpu_isa() == KCPU_ISA_AVX512;
    for (int64_t a = 0; a < sh; a++)
        for (int64_t b = 0; b < sw; b++) {
            if (!phase_used(p->kh, p->dil_h, (int)sh, (int)a) || !phase_used(p->kw, p->dil_w, (int)sw, (int)b))
                continue;
            int8_t *out = base + (a * sw + b) * plane;
            memset(out, 0, (size_t)plane);   /* padding, slack */
            /* plane columns c with input column c * sw + b - pl inside [0, w) */
            int64_t first = b >= pl ? 0 : kcpu_ceil_div(pl - b, sw);
            int64_t n = kcpu_min64(wq, kcpu_ceil_div(w + pl - b, sw)) - first;
            /* plane rows r with input row r * sh + a - pt inside [0, h) */
            int64_t r0 = a >= pt ? 0 : kcpu_ceil_div(pt - a, sh);
            int64_t r1 = kcpu_min64(hq, kcpu_ceil_div(h + pt - a, sh));
            if (n <= 0)
                continue;
            int8_t *dst = out + r0 * wq + first;
            const int8_t *row = src + (r0 * sh + a - pt) * w + first * sw + b - pl;
            for (int64_t r = r0; r < r1; r++, dst += wq, row += sh * w) {
                if (sw == 1) {
                    kq8_copy_short(dst, row, n);
                } else if (gather2) {
                    kq8_gather2_avx512(dst, row, n);
                } else {
                    for (int64_t c = 0; c < n; c++)
                        dst[c] = row[c * sw];
                }
            }
        }
}

/* koff[k] for every depth index k = (ci, ki, kj): the plane and offset
 * its slices start at, relative to the group's first plane. The taps of
 * channel 0 first (the divisions, once per tap: once per k they were 5 %
 * of a small model's time), then every other channel's are those shifted
 * by its planes. */
static void tap_offsets(const struct k_conv2d *p, const struct geom *d, int64_t *koff)
{
    int64_t taps = (int64_t)p->kh * p->kw;
    for (int ki = 0; ki < p->kh; ki++)
        for (int kj = 0; kj < p->kw; kj++) {
            int64_t rr = (int64_t)ki * p->dil_h, cc = (int64_t)kj * p->dil_w;
            int64_t ph = (rr % p->stride_h) * p->stride_w + cc % p->stride_w;
            koff[ki * p->kw + kj] = ph * d->plane + (rr / p->stride_h) * d->wq + cc / p->stride_w;
        }
    for (int64_t ci = 1; ci < d->cg; ci++)
        for (int64_t t = 0; t < taps; t++)
            koff[ci * taps + t] = koff[t] + ci * d->nph * d->plane;
}

/* Where strip s starts: its image and first column there; its lane count. */
static int strip_at(const struct geom *d, int64_t s, int64_t *img, int64_t *local0)
{
    *img = s / d->strips_img;
    *local0 = (s % d->strips_img) * KQ8_NR;
    return (int)kcpu_min64(KQ8_NR, d->cols_img - *local0);
}

/* Packs strip s of group g. */
static void pack_strip(const struct conv_job *j, int64_t g, int64_t s, int8_t *tmp, int8_t *dst)
{
    static const int8_t zeros[KQ8_NR];
    const struct geom *d = &j->d;
    int64_t img, local0;
    int lanes = strip_at(d, s, &img, &local0);
    /* planes have slack for a full strip; the input itself (direct) does not,
     * so a direct partial strip goes through zero-filled copies */
    const int8_t *base = j->planes + g * d->cg * d->nph * d->plane + img * d->img_stride + local0;
    if (!d->direct || lanes == KQ8_NR) {
        kq8_pack_slices(base, j->koff, d->kg, kq8_b_flipped(), dst);
        return;
    }
    for (int64_t q = 0; q < d->kq; q++) {
        const int8_t *rows[4];
        for (int64_t t = 0; t < 4; t++) {
            int64_t k = 4 * q + t;
            rows[t] = zeros;
            if (k < d->kg) {
                memcpy(tmp + t * KQ8_NR, base + j->koff[k], (size_t)lanes);
                memset(tmp + t * KQ8_NR + lanes, 0, (size_t)(KQ8_NR - lanes));
                rows[t] = tmp + t * KQ8_NR;
            }
        }
        kq8_interleave4(rows[0], rows[1], rows[2], rows[3], dst + q * KQ8_STRIP_QUAD);
    }
    if (kq8_b_flipped())
        kq8_flip(dst, d->kq * KQ8_STRIP_QUAD);
}

/* Output runs of strip s of group g: one per output row it covers. */
static void map_strip(const struct conv_job *j, int64_t g, int64_t s, struct kq8_strip *m)
{
    const struct k_conv2d *p = j->p;
    const struct geom *d = &j->d;
    int64_t img, local0;
    int lanes = strip_at(d, s, &img, &local0);
    int64_t oh = local0 / d->wq, ow = local0 % d->wq;
    int64_t base = (img * p->oc + g * d->mg) * p->oh * p->ow;
    m->nruns = 0;
    for (int t = 0; t < lanes;) {
        int len = (int)kcpu_min64(lanes - t, d->wq - ow);   /* columns left in this output row */
        if (ow < p->ow)
            m->runs[m->nruns++] = (struct kq8_run){t, t + (int)kcpu_min64(len, p->ow - ow), base + oh * p->ow + ow};
        t += len;
        ow = 0;
        oh++;
    }
}

/* Packs strips [s0, s0 + count) of group g and multiplies them by the
 * group's rows [r0, r0 + m), as many strips at a time as the thread's
 * scratch holds. */
static void run_strips(const struct conv_job *j, int64_t g, int64_t s0, int64_t count, int64_t r0, int64_t m,
                       int thread)
{
    const struct geom *d = &j->d;
    uint8_t *area = j->scratch + thread * thread_bytes(d->kq);
    int8_t *strips = (int8_t *)area;
    struct kq8_strip *maps = (struct kq8_strip *)(area + max_strips(d->kq) * d->kq * KQ8_STRIP_QUAD);
    int8_t *tmp = (int8_t *)(maps + max_strips(d->kq));
    const int64_t ldc = (int64_t)j->p->oh * j->p->ow, row0 = g * d->mg + r0;
    for (int64_t done = 0; done < count;) {
        int n = (int)kcpu_min64(max_strips(d->kq), count - done);
        for (int s = 0; s < n; s++) {
            pack_strip(j, g, s0 + done + s, tmp, strips + s * d->kq * KQ8_STRIP_QUAD);
            map_strip(j, g, s0 + done + s, &maps[s]);
        }
        /* the maps address the group's first row: shift y and res to row r0 */
        struct kq8_block b = {
            .m = (int)m, .kq = d->kq,
            .a = j->a + g * panel_bytes(d->panels, d->kq) + panel_bytes(r0 / KQ8_MR, d->kq),
            .wsum = j->wsum + row0,
            .b = strips, .nstrips = n, .maps = maps, .ldc = ldc,
            .bias = j->e->bias + row0, .mult = j->e->mult + row0, .e = j->e,
            .res = j->res ? j->res + r0 * ldc : NULL,
            .y = (char *)j->y + r0 * ldc * (j->e->out_i32 ? 4 : 1),
        };
        kq8_block_run(&b);
        done += n;
    }
}

static void conv_task(void *arg, int64_t task, int thread)
{
    const struct conv_job *j = arg;
    const struct geom *d = &j->d;
    int64_t rc = task / (j->p->groups * j->chunks), rest = task % (j->p->groups * j->chunks);
    int64_t g = rest / j->chunks, first = (rest % j->chunks) * j->per_task;
    int64_t r0 = rc * j->chunk_rows, m = kcpu_min64(j->chunk_rows, d->mg - r0);
    if (!j->by_image) {
        run_strips(j, g, first, kcpu_min64(j->per_task, d->strips - first), r0, m, thread);
        return;
    }
    int64_t last = kcpu_min64(j->p->n, first + j->per_task);
    for (int64_t img = first; img < last; img++)
        for (int64_t ci = 0; ci < d->cg; ci++)
            planes_task(arg, img * j->p->c + g * d->cg + ci, thread);
    run_strips(j, g, first * d->strips_img, (last - first) * d->strips_img, r0, m, thread);
}

void kcpu_conv2d_q8(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x,
                    const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual,
                    void *y, void *scratch)
{
    if (kq8_dw_applies(p)) {
        kq8_dw_conv(th, p, x, packed_w, e, residual, y, scratch);
        return;
    }
    struct conv_job j = {.p = p, .d = geom_of(p), .x = x, .a = packed_w, .e = e, .res = residual, .y = y};
    if (j.d.strips <= 0 || p->oc <= 0)
        return;
    j.wsum = (const int32_t *)(j.a + p->groups * panel_bytes(j.d.panels, j.d.kq));
    uint8_t *s = (uint8_t *)kcpu_align64(scratch);
    j.planes = j.d.direct ? x : (const int8_t *)s;
    s += planes_bytes(p, &j.d);
    tap_offsets(p, &j.d, (int64_t *)s);
    j.koff = (const int64_t *)s;
    j.scratch = s + koff_bytes(&j.d);
    /* Aim for four tasks per thread. With images to spare, a task takes
     * whole images and copies their planes itself (one threads run, data still
     * in cache); else the planes come first and tasks split the strips. */
    if ((int64_t)p->n * p->oc * p->oh * p->ow * j.d.kg < SOLO_MACS)
        th = NULL;
    int threads = kcpu_threads_count(th);
    int64_t want = kcpu_ceil_div(4 * (int64_t)threads, p->groups);
    j.by_image = !j.d.direct && p->n >= 2 * threads;
    if (j.by_image) {
        j.per_task = kcpu_ceil_div(p->n, want);
        j.chunks = kcpu_ceil_div(p->n, j.per_task);
    } else {
        if (!j.d.direct)
            kcpu_threads_run(th, (int64_t)p->n * p->c, planes_task, &j);
        j.per_task = kcpu_max64(1, kcpu_min64(max_strips(j.d.kq), kcpu_ceil_div(j.d.strips, want)));
        j.chunks = kcpu_ceil_div(j.d.strips, j.per_task);
    }
    /* Few strip tasks (a 14x14 map is 7 strips): split the rows as well,
     * one share per thread, each thread packing the strips it needs.
     * Measured on ResNet-50 INT8's 14x14 layers, two threads: 1.33-1.55x
     * their one-thread speed before, 1.72-1.86x after. */
    j.row_chunks = 1;
    j.chunk_rows = j.d.mg;
    if (!j.by_image && threads > 1 && p->groups * j.chunks < 4 * (int64_t)threads &&
        j.d.panels >= 2 * (int64_t)threads) {
        j.chunk_rows = kcpu_ceil_div(j.d.panels, threads) * KQ8_MR;
        j.row_chunks = kcpu_ceil_div(j.d.mg, j.chunk_rows);
    }
    kcpu_threads_run(th, j.row_chunks * p->groups * j.chunks, conv_task, &j);
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
    return gemm_packed_bytes(&c);
}

void kcpu_linear_q8_pack(const struct k_linear *p, const int8_t *w, void *packed)
{
    struct k_conv2d c = linear_as_conv(p);
    gemm_pack(&c, w, packed);
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
    if (lanes <= KQ8_GEMV_MAX_N && kq8_b_flipped()) {
        kq8_gemv_avx512(&blk, j->x + c0 * p->k, lanes, p->k);
        return;
    }
    if (lanes <= KQ8_GEMV_MAX_N && kcpu_isa() >= KCPU_ISA_AVX2) {   /* no VNNI: kq8_block_run takes AVX2 too */
        kq8_gemv_avx2(&blk, j->x + c0 * p->k, lanes, p->k);
        return;
    }
    /* column t is sample c0 + t; its depth quads are 4 adjacent bytes of
     * its row (whole quads copied as one 4-byte move each: a copy of
     * variable length per quad was a libc call, most of a small layer's
     * time) */
    memset(b, 0, (size_t)(j->kq * KQ8_STRIP_QUAD));
    const int64_t whole = p->k / 4;
    for (int64_t t = 0; t < lanes; t++) {
        const int8_t *row = j->x + (c0 + t) * p->k;
        for (int64_t q = 0; q < whole; q++)
            memcpy(b + q * KQ8_STRIP_QUAD + t * 4, row + 4 * q, 4);
        if (whole < j->kq)
            memcpy(b + whole * KQ8_STRIP_QUAD + t * 4, row + 4 * whole, (size_t)(p->k - 4 * whole));
    }
    if (kq8_b_flipped())
        kq8_flip(b, j->kq * KQ8_STRIP_QUAD);
    kq8_block_run(&blk);
}

void kcpu_linear_q8(struct kcpu_threads *th, const struct k_linear *p, const int8_t *x,
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
    if ((int64_t)p->n * p->m * p->k < SOLO_MACS)
        th = NULL;
    int64_t want_rows = kcpu_ceil_div(2 * (int64_t)kcpu_threads_count(th), j.strips);
    j.panels_per_task = kcpu_ceil_div(panels, kcpu_min64(panels, want_rows));
    j.row_tasks = kcpu_ceil_div(panels, j.panels_per_task);
    kcpu_threads_run(th, j.strips * j.row_tasks, linear_task, &j);
}
