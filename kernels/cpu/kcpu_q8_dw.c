/*
 * kcpu_q8_dw.c - the direct INT8 depthwise convolution (see kcpu_q8_dw.h
 * for why and the expanded layout): geometry, weight packing, the plane
 * expansion shared by the ISA kernels, the plain-C kernel, and the task
 * split over (image, channel) planes.
 */
#include <string.h>

#include "kcpu_q8_dw.h"

int kq8_dw_applies(const struct k_conv2d *p)
{
    return p->groups == p->c && p->oc == p->c;
}

/* A band's expanded blocks: half of the 32 KiB L1 data cache of Zen 4
 * (and of most x86 cores), the rest for the padded rows read and the
 * outputs. 112x112 planes go in 4 bands of 28 rows. */
#define BAND_BYTES ((int64_t)16 * 1024)

/* A plane's fixed work (the padded copy, the row loops, the epilogue's
 * constants), counted as multiply-adds: a 3x3 7x7 plane (441) takes
 * about 60 ns here, two to three times its arithmetic (Zen 4). */
#define PLANE_MACS 1024

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static struct kq8_dw_geom geom_of(const struct k_conv2d *p)
{
    struct kq8_dw_geom g;
    g.nq = (int)kcpu_ceil_div(p->kw, 4);
    g.ntaps = p->kh * g.nq;
    g.extra = (int64_t)(p->kh - 1) * p->dil_h / p->stride_h;
    g.phases = 0;
    int nphases = 0;
    for (int a = 0; a < p->stride_h; a++) {
        int used = 0;
        for (int ki = 0; ki < p->kh; ki++)
            used |= ki * p->dil_h % p->stride_h == a;
        nphases += used;
        if (used && a < 64)
            g.phases |= (uint64_t)1 << a;
    }
    /* Bands as even as can be, of whole vectors where the width allows
     * (band * ow a multiple of 16), and at least twice the rows a band
     * re-expands from the one before. */
    int64_t per_row = (int64_t)nphases * g.nq * p->ow * 4;
    g.band = kcpu_max64(kcpu_max64(BAND_BYTES / kcpu_max64(per_row, 1) - g.extra, 2 * g.extra), 1);
    if (g.band < p->oh) {
        g.band = kcpu_ceil_div(p->oh, kcpu_ceil_div(p->oh, g.band));
        int64_t m = 16 / gcd64(p->ow, 16);
        g.band = kcpu_min64(p->oh, kcpu_ceil_div(g.band, m) * m);
    }
    g.band = kcpu_min64(g.band, p->oh);
    g.block = kcpu_ceil_div(((g.band + g.extra) * p->ow + KQ8_DW_SLACK) * 4, 64) * 64;
    /* the widest read: a 16-byte load for the last 4 columns of a
     * vector of 16, at the last quad */
    int64_t ow16 = kcpu_ceil_div(p->ow, 16) * 16;
    g.prow = kcpu_ceil_div(ow16 * p->stride_w + 4 * (int64_t)g.nq * p->dil_w + 16, 64) * 64;
    g.shuffle = p->stride_w + p->dil_w <= 5;
    g.table = kcpu_ceil_div((int64_t)g.ntaps * 8 + (int64_t)g.nq * 16, 64) * 64;
    return g;
}

size_t kq8_dw_packed_bytes(const struct k_conv2d *p)
{
    struct kq8_dw_geom g = geom_of(p);
    return (size_t)p->c * ((size_t)g.ntaps * 4 + 4);
}

void kq8_dw_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    struct kq8_dw_geom g = geom_of(p);
    int8_t *quads = packed;
    int32_t *wsum = (int32_t *)(quads + (int64_t)p->c * g.ntaps * 4);
    for (int64_t c = 0; c < p->c; c++) {
        int32_t s = 0;
        for (int ki = 0; ki < p->kh; ki++)
            for (int q = 0; q < g.nq; q++)
                for (int t = 0; t < 4; t++) {
                    int kj = 4 * q + t;
                    int8_t v = 0;
                    if (kj < p->kw)
                        v = w[(c * p->kh + ki) * p->kw + kj];
                    quads[((c * p->kh + ki) * g.nq + q) * 4 + t] = v;
                    s += v;
                }
        wsum[c] = s;
    }
}

/* Bytes of one grid: a band's blocks for every phase, used or not. */
static int64_t grid_bytes(const struct k_conv2d *p, const struct kq8_dw_geom *g)
{
    return (int64_t)p->stride_h * g->nq * g->block;
}

/* Per thread: a grid, the padded plane. */
static int64_t thread_bytes(const struct k_conv2d *p, const struct kq8_dw_geom *g)
{
    return grid_bytes(p, g) + (int64_t)p->h * g->prow;
}

size_t kq8_dw_scratch_bytes(const struct k_conv2d *p, int threads)
{
    struct kq8_dw_geom g = geom_of(p);
    return (size_t)(g.table + threads * thread_bytes(p, &g) + 64);
}

void kq8_dw_expand_row_plain(const struct kq8_dw_plane *pl, const int8_t *prow, int q, int flip, int8_t *dst)
{
    const struct k_conv2d *p = pl->p;
    const int sw = p->stride_w, dw = p->dil_w, kw = p->kw, ow = p->ow;
    const uint8_t f = flip ? 0x80 : 0;
    for (int c = 0; c < ow; c++)
        for (int t = 0; t < 4; t++) {
            int kj = 4 * q + t;
            uint8_t v = kj < kw ? (uint8_t)prow[(int64_t)c * sw + (int64_t)kj * dw] : 0;
            dst[4 * c + t] = (int8_t)(v ^ f);
        }
}

/* The plain kernel's rows for g->shuffle layers: shuf[t], the first
 * quad's byte t, is tap t's column offset (negative past the kernel). */
static void plain_row(const int8_t *src, int8_t *dst, int64_t ow, int64_t sw, const int8_t *shuf, int flip)
{
    const uint8_t f = flip ? 0x80 : 0;
    for (int64_t c = 0; c < ow; c++)
        for (int t = 0; t < 4; t++) {
            uint8_t v = shuf[t] < 0 ? 0 : (uint8_t)src[c * sw + shuf[t]];
            dst[4 * c + t] = (int8_t)(v ^ f);
        }
}

void kq8_dw_expand_scalar(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, int8_t *grid)
{
    kq8_dw_expand(pl, r0, nr, grid, 0, plain_row);
}

void kq8_dw_band_scalar(const struct kq8_dw_plane *pl, int64_t r0, int64_t nr, const int8_t *grid)
{
    const struct k_conv2d *p = pl->p;
    const struct k_q8_epilogue *e = pl->e;
    const int ntaps = pl->g->ntaps;
    const int64_t first = r0 * p->ow;
    for (int64_t i = 0; i < nr * p->ow; i++) {
        const int8_t *base = grid + 4 * i;
        int32_t acc = 0;
        for (ptrdiff_t k = 0; k < ntaps; k++) {
            const int8_t *s = base + pl->off[k], *wq = pl->w + 4 * k;
            acc += s[0] * wq[0] + s[1] * wq[1] + s[2] * wq[2] + s[3] * wq[3];
        }
        int64_t o = first + i;
        if (e->out_i32)
            ((int32_t *)pl->y)[o] = acc + pl->bias;
        else if (pl->res)
            ((int8_t *)pl->y)[o] = k_q8_requant_res(acc, pl->bias, pl->mult, pl->res[o], e->res_mult, e->lo, e->hi);
        else
            ((int8_t *)pl->y)[o] = k_q8_requant(acc, pl->bias, pl->mult, e->lo, e->hi);
    }
}

struct dw_job {
    const struct k_conv2d *p;
    struct kq8_dw_geom g;
    const int8_t *x, *w;
    const int32_t *wsum;
    const struct k_q8_epilogue *e;
    const int8_t *res;
    void *y;
    const int64_t *off;
    const int8_t *shuf;
    uint8_t *threads_base;     /* thread t's area at threads_base + t * thread_bytes */
    int64_t units_per_task;
};

/* Plane u's work (kcpu_q8_dw.h); c is u's channel, u % p->c. */
static struct kq8_dw_plane plane_of(const struct dw_job *j, int64_t u, int64_t c, int8_t *pad)
{
    const struct k_conv2d *p = j->p;
    const int64_t plane_out = (int64_t)p->oh * p->ow;
    struct kq8_dw_plane pl = {
        .p = p, .g = &j->g, .off = j->off, .shuf = j->shuf, .x = j->x + u * p->h * p->w,
        .w = j->w + c * j->g.ntaps * 4, .wsum = j->wsum[c], .bias = j->e->bias[c], .mult = j->e->mult[c],
        .e = j->e, .res = j->res ? j->res + u * plane_out : NULL,
        .y = (uint8_t *)j->y + (size_t)(u * plane_out) * (j->e->out_i32 ? 4 : 1), .pad = pad,
    };
    return pl;
}

static void dw_task(void *arg, int64_t task, int thread)
{
    const struct dw_job *j = arg;
    const struct k_conv2d *p = j->p;
    const int64_t band = j->g.band;
    uint8_t *area = j->threads_base + thread * thread_bytes(p, &j->g);
    int8_t *grid = (int8_t *)area, *pad = grid + grid_bytes(p, &j->g);
    memset(pad, 0, (size_t)(p->h * j->g.prow));   /* the borders: kq8_dw_pad writes only the image's columns */
    enum kcpu_isa isa = kcpu_isa();
    /* AVX-512 without VNNI gains nothing over the AVX2 kernel */
    static const struct kq8_dw_isa SCALAR = {kq8_dw_expand_scalar, kq8_dw_band_scalar},
                                   AVX2 = {kq8_dw_expand_avx2, kq8_dw_band_avx2},
                                   AVX512 = {kq8_dw_expand_avx512, kq8_dw_band_avx512};
    const struct kq8_dw_isa *k = isa == KCPU_ISA_AVX512 && kq8_has_vnni() ? &AVX512
                                 : isa >= KCPU_ISA_AVX2                    ? &AVX2
                                                                           : &SCALAR;
    const int64_t u0 = task * j->units_per_task, u1 = kcpu_min64((int64_t)p->n * p->c, u0 + j->units_per_task);
    for (int64_t u = u0, c = u0 % p->c; u < u1; u++, c = c + 1 == p->c ? 0 : c + 1) {   /* no division per plane */
        struct kq8_dw_plane pl = plane_of(j, u, c, pad);
        kq8_dw_pad(&pl);
        for (int64_t r0 = 0; r0 < p->oh; r0 += band) {
            int64_t nr = kcpu_min64(band, p->oh - r0);
            k->expand(&pl, r0, nr, grid);
            k->band(&pl, r0, nr, grid);
        }
    }
}

void kq8_dw_conv(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, const void *packed_w,
                 const struct k_q8_epilogue *e, const int8_t *residual, void *y, void *scratch)
{
    struct dw_job j = {.p = p, .g = geom_of(p), .x = x, .w = packed_w, .e = e, .res = residual, .y = y};
    const int64_t units = (int64_t)p->n * p->c;
    if (units <= 0 || p->oh <= 0 || p->ow <= 0)
        return;
    j.wsum = (const int32_t *)(j.w + (int64_t)p->c * j.g.ntaps * 4);
    /* the per-call table: tap offsets, then the quads' byte shuffles */
    int64_t *off = kcpu_align64(scratch);
    int8_t *shuf = (int8_t *)(off + j.g.ntaps);
    for (int ki = 0; ki < p->kh; ki++)
        for (int q = 0; q < j.g.nq; q++) {
            int64_t dy = (int64_t)ki * p->dil_h;
            off[ki * j.g.nq + q] = (dy % p->stride_h * j.g.nq + q) * j.g.block + dy / p->stride_h * p->ow * 4;
        }
    /* Within a 16-byte load for 4 output columns: quad i, byte t reads
     * offset i * stride_w + t * dil_w; past the kernel, nothing (bit 7
     * set: a zero). Used only when those offsets stay below 16. */
    for (int q = 0; q < j.g.nq; q++)
        for (int i = 0; i < 4; i++)
            for (int t = 0; t < 4; t++)
                shuf[q * 16 + i * 4 + t] = (int8_t)(4 * q + t < p->kw && j.g.shuffle ? i * p->stride_w + t * p->dil_w : INT8_MIN);
    j.off = off;
    j.shuf = shuf;
    j.threads_base = (uint8_t *)off + j.g.table;
    /* Up to four tasks per thread, none below KCPU_MIN_TASK_MACS (waking
     * a worker costs more than a small plane's work), a plane costing
     * PLANE_MACS more than its multiply-adds; more than one task, then a
     * multiple of the threads, or one thread ends up with a task more
     * (576 7x7 planes went in 4 tasks of 178, 178, 178 and 42). */
    int64_t unit_macs = (int64_t)p->oh * p->ow * p->kh * p->kw + PLANE_MACS;
    int64_t threads = kcpu_threads_count(th);
    int64_t tasks = kcpu_min64(4 * threads, kcpu_max64(1, units * unit_macs / KCPU_MIN_TASK_MACS));
    if (tasks > 1)
        tasks = kcpu_ceil_div(tasks, threads) * threads;
    j.units_per_task = kcpu_ceil_div(units, kcpu_min64(tasks, units));
    kcpu_threads_run(th, kcpu_ceil_div(units, j.units_per_task), dw_task, &j);
}
