/*
 * kcpu_convpix.c - the pixel-tile convolution (see kcpu_convpix.h): the
 * plan, the zero-padded input grid, and the split into tasks.
 *
 * A call first copies a padded input into the grid (one task per few
 * (image, channel) planes), then runs tasks of consecutive tiles of one
 * channel block; each output row is split into tiles of near-equal length.
 */
#include <string.h>

#include "kcpu_convpix.h"

struct pix_plan {
    int vecs, rows;            /* channel vectors per block, pixels per (full) tile */
    int64_t row_tiles;         /* tiles per output row */
    int64_t kg;                /* reduction: c * kh * kw */
    int64_t pixels;            /* oh * ow */
    int64_t tiles, blocks;
    int padded;                /* the input is copied into a grid first */
    int64_t gh, gw;            /* rows and columns of a (grid or input) plane */
};

/* Channel vectors per block: the most, up to 4, that divide the output
 * channels' vectors. */
static int block_vecs(const struct k_conv2d *p)
{
    int q = p->oc / 16;
    return q % 4 == 0 ? 4 : q % 3 == 0 ? 3 : q % 2 == 0 ? 2 : 1;
}

/* Shapes the kernel computes, on any ISA (scratch is sized for them so
 * that the ISA may change after sizing). Measured against the GEMM paths
 * (docs/performance.md): with 3 or 4 channel vectors it wins on maps of up
 * to 28x28 outputs, whose strips the GEMM leaves part empty or whose grid
 * columns it drops, and loses on 56x56; with 1 or 2 it wins or ties on
 * ResNet-mini's 28x28 and 14x14 layers; it loses where the reduction is a
 * few taps (ResNet-mini's 1-channel stem). */
static int shape_fits(const struct k_conv2d *p)
{
    int plain_1x1 = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_t == 0 &&
                    p->pad_l == 0 && p->oh == p->h && p->ow == p->w;
    if (p->groups != 1 || p->oc <= 0 || p->oc % 16 != 0 || plain_1x1 || p->stride_w > 2 ||
        (int64_t)p->c * p->kh * p->kw < 64)
        return 0;
    return block_vecs(p) <= 2 || (int64_t)p->oh * p->ow <= 28 * 28;
}

int kcpu_convpix_applies(const struct k_conv2d *p)
{
    return kcpu_isa() == KCPU_ISA_AVX512 && shape_fits(p);
}

static struct pix_plan plan(const struct k_conv2d *p)
{
    struct pix_plan c;
    c.vecs = block_vecs(p);
    c.rows = kcpu_pix_rows(c.vecs);
    c.kg = (int64_t)p->c * p->kh * p->kw;
    c.pixels = (int64_t)p->oh * p->ow;
    /* Each output row in runs of near-equal length. */
    c.rows = (int)kcpu_ceil_div(p->ow, kcpu_ceil_div(p->ow, c.rows));
    c.row_tiles = kcpu_ceil_div(p->ow, c.rows);
    c.tiles = p->n * p->oh * c.row_tiles;
    c.blocks = p->oc / (16 * c.vecs);
    /* The rows and columns the windows reach, from the padded origin. */
    c.gh = (int64_t)(p->oh - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
    c.gw = (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1;
    c.padded = p->pad_t > 0 || p->pad_l > 0 || c.gh > p->h || c.gw > p->w;
    if (!c.padded) {
        c.gh = p->h;
        c.gw = p->w;
    }
    return c;
}

static int64_t table_floats(const struct pix_plan *c)
{
    return kcpu_ceil_div(c->kg * (int64_t)sizeof(int64_t), 64) * 16;
}

size_t kcpu_convpix_scratch_bytes(const struct k_conv2d *p, int threads)
{
    (void)threads;
    if (!shape_fits(p))
        return 0;
    struct pix_plan c = plan(p);
    int64_t grid = c.padded ? (int64_t)p->n * p->c * c.gh * c.gw : 0;
    return (size_t)(table_floats(&c) + grid) * sizeof(float) + 64;
}

struct pix_job {
    const struct k_conv2d *p;
    struct pix_plan c;
    const float *x, *packed_w, *bias, *residual;
    float *y;
    const int64_t *boff;
    const float *src;          /* the grid, or x */
    float *grid;
    int64_t planes_per_task;   /* grid copy */
    int64_t tiles_per_task, groups;
};

/* One (image, channel) plane of the grid: the input at (-pad_t, -pad_l).
 * Rows are a few dozen floats: the AVX-512 row copy pads them in one
 * masked pass (three libc calls a row cost more than the copy). */
static void pad_plane(const struct pix_job *j, int64_t plane)
{
    const struct k_conv2d *p = j->p;
    const struct pix_plan *c = &j->c;
    const float *src = j->x + plane * p->h * p->w;
    float *dst = j->grid + plane * c->gh * c->gw;
    for (int64_t r = 0; r < c->gh; r++, dst += c->gw) {
        int64_t ih = r - p->pad_t;
        if (ih < 0 || ih >= p->h)
            memset(dst, 0, (size_t)c->gw * sizeof(float));
        else
            kcpu_pad_row_avx512(src + ih * p->w, p->w, -p->pad_l, 1, dst, c->gw);
    }
}

static void pad_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct pix_job *j = arg;
    int64_t planes = (int64_t)j->p->n * j->p->c;
    for (int64_t pl = task * j->planes_per_task; pl < kcpu_min64(planes, (task + 1) * j->planes_per_task); pl++)
        pad_plane(j, pl);
}

static void tile_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct pix_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct pix_plan *c = &j->c;
    int64_t block = task / j->groups, group = task % j->groups;
    int64_t ch0 = block * c->vecs * 16;
    struct kcpu_pix_tile t = {
        .vecs = c->vecs, .stride = p->stride_w, .k = c->kg,
        .w = j->packed_w + ch0 * c->kg,   /* panel ch0 / KCPU_MR */
        .panel_stride = c->kg * KCPU_MR,
        .boff = j->boff,
        .bias = j->bias ? j->bias + ch0 : NULL,
        .ldy = c->pixels,
        .act = p->act,
    };
    int64_t image = (int64_t)p->c * c->gh * c->gw;
    int64_t first = group * j->tiles_per_task, last = kcpu_min64(c->tiles, first + j->tiles_per_task);
    for (int64_t tile = first; tile < last; tile++) {
        int64_t row = tile / c->row_tiles, ow = tile % c->row_tiles * c->rows;
        int64_t img = row / p->oh, oh = row % p->oh;
        int64_t out = (img * p->oc + ch0) * c->pixels + oh * p->ow + ow;
        t.pixels = (int)kcpu_min64(c->rows, p->ow - ow);
        t.origin = j->src + img * image + oh * p->stride_h * c->gw + ow * p->stride_w;
        t.y = j->y + out;
        t.res = j->residual ? j->residual + out : NULL;
        kcpu_pix_tile_avx512(&t);
    }
}

void kcpu_convpix_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                      const float *packed_w, const float *bias, const float *residual, float *y,
                      void *scratch)
{
    struct pix_job j = {.p = p, .c = plan(p), .x = x, .packed_w = packed_w, .bias = bias,
                        .residual = residual, .y = y, .src = x};
    const struct pix_plan *c = &j.c;
    if (c->tiles <= 0)
        return;
    int64_t *boff = kcpu_align64(scratch);
    for (int64_t ci = 0, k = 0; ci < p->c; ci++)
        for (int64_t ki = 0; ki < p->kh; ki++)
            for (int64_t kj = 0; kj < p->kw; kj++)
                boff[k++] = (ci * c->gh + ki * p->dil_h) * c->gw + kj * p->dil_w;
    j.boff = boff;
    if (c->padded) {
        j.grid = (float *)boff + table_floats(c);
        j.src = j.grid;
        j.planes_per_task = kcpu_max64(1, KCPU_CHUNK / (c->gh * c->gw));
        kcpu_threads_run(th, kcpu_ceil_div((int64_t)p->n * p->c, j.planes_per_task), pad_task, &j);
    }
    /* One task per thread and block: consecutive tiles on one thread share
     * the output's cache lines (a 7x7 channel row is 196 bytes), which two
     * threads writing them in turn would pass back and forth. None below
     * KCPU_MIN_TASK_MACS. */
    int64_t tile_macs = (int64_t)c->rows * c->vecs * 16 * c->kg;
    int64_t want = kcpu_ceil_div((int64_t)kcpu_threads_count(th), c->blocks);
    j.tiles_per_task = kcpu_max64(kcpu_ceil_div(c->tiles, want), kcpu_ceil_div(KCPU_MIN_TASK_MACS, tile_macs));
    j.groups = kcpu_ceil_div(c->tiles, j.tiles_per_task);
    kcpu_threads_run(th, c->blocks * j.groups, tile_task, &j);
}
