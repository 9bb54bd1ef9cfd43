/*
 * kcpu_convpix.c - the pixel-tile convolution (see kcpu_convpix.h): the
 * plan, the threads' zero-padded slices, and the split into tasks.
 *
 * Output rows are taken in bands of one image, and a task is a run of
 * consecutive bands of one channel block: the pool deals each thread a
 * contiguous run of tasks, so a thread reads and writes the same part of
 * every layer's tensors. A padded input is copied band by band into the
 * thread's own zero-padded slice just before its tiles read it (copied once
 * by one thread into a shared grid, it crossed between the cores' caches,
 * which cost two threads more than the copy: docs/performance.md). Bands
 * are as tall as the threads' share of an image allows (a band's halo rows
 * are copied twice), up to what fits SLICE_BYTES.
 */
#include <string.h>

#include "kcpu_convpix.h"

/* The most bytes a band's slice takes: it stays in L2 beside the weights. */
#define SLICE_BYTES ((int64_t)256 * 1024)

struct pix_plan {
    int vecs, rows;            /* channel vectors per block, pixels per (full) tile */
    int64_t kg;                /* reduction: c * kh * kw */
    int64_t pixels;            /* oh * ow */
    int64_t blocks;
    int64_t band_max;          /* output rows a band may have */
    int two_rows;              /* AVX-512 tiles of two 7-pixel rows (kcpu_pix_tile.next_row) */
    int padded;                /* the input is copied into per-thread slices first */
    int64_t gh, gw;            /* rows and columns of a plane the taps read: a slice's, or the input's */
};

/* Slice rows a band of `rows` output rows reads. */
static int64_t band_reach(const struct k_conv2d *p, int64_t rows)
{
    return (rows - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
}

/* Channel vectors per block: the most, up to `most`, that divide the
 * output channels' vectors. */
static int block_vecs_up_to(const struct k_conv2d *p, int most)
{
    int q = p->oc / 16;
    for (int v = most; v > 1; v--)
        if (q % v == 0)
            return v;
    return 1;
}

int kcpu_convpix_two_row_tiles(const struct k_conv2d *p, int avx512)
{
    return avx512 && p->ow == 7 && p->oc % 32 == 0;
}

/* Two-row tiles at batch 1 only: at batch 64 resnet-mini's three 64 -> 64
 * layers on 7x7 ran 772-826 us in the model with them against 656-685 with
 * one-row tiles of 4 vectors, though faster alone (626 against 657), and
 * the first layer after them 195 us against 145. */
static int two_rows_here(const struct k_conv2d *p, int avx512)
{
    return p->n == 1 && kcpu_convpix_two_row_tiles(p, avx512);
}

/* On AVX2 a block is one vector (kcpu_pix_tile_avx2). */
static int block_vecs(const struct k_conv2d *p, int avx512)
{
    return two_rows_here(p, avx512) ? 2 : block_vecs_up_to(p, avx512 ? 4 : 1);
}

/* Shapes the kernel computes, on any ISA (scratch is sized for them so
 * that the ISA may change after sizing). Measured against the GEMM paths
 * (docs/performance.md): with 3 or 4 channel vectors it wins on maps of up
 * to 28x28 outputs, whose strips the GEMM leaves part empty or whose grid
 * columns it drops, and loses on 56x56; with 1 or 2 it wins or ties on
 * ResNet-mini's 28x28 and 14x14 layers; it wins on strided 1x1 layers
 * from 16 channels (ResNet-mini's downsamples: 5.7-5.9 -> 3.3-3.5 us),
 * which the GEMM reads by phase. Where the reduction is a few taps
 * (ResNet-mini's 1-channel stem, MobileNetV2's 3-channel one) it loses on
 * AVX-512 but wins on AVX2 (1.10-1.47x the implicit GEMM, alternating,
 * 2026-11-28). A
 * plain 1x1 stays with the direct GEMM but on 14x14 and 7x7 maps from 128
 * input channels (ResNet-50's and MobileNetV2's: 10-29 % faster there;
 * with 64 or 96 channels, or on 28x28 maps, slower). */
static int shape_fits(const struct k_conv2d *p, int avx512)
{
    int plain_1x1 = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_t == 0 &&
                    p->pad_l == 0 && p->oh == p->h && p->ow == p->w;
    int64_t taps = (int64_t)p->c * p->kh * p->kw, pixels = (int64_t)p->oh * p->ow;
    if (p->groups != 1 || p->oc <= 0 || p->oc % 16 != 0 || p->stride_w > 2 ||
        taps < (p->kh == 1 && p->kw == 1 ? 16 : avx512 ? 64 : 9) || (int64_t)(p->kh - 1) * p->dil_h > 8)
        return 0;
    const int vecs = block_vecs_up_to(p, avx512 ? 4 : 1);   /* the channels' blocks, before any two-row tiles */
    if (plain_1x1)   /* where the GEMM's last strip is part-empty and the reduction long */
        return vecs >= 3 && pixels <= (int64_t)14 * 14 && p->c >= 128;
    return vecs <= 2 || pixels <= (int64_t)28 * 28;
}

int kcpu_convpix_applies(const struct k_conv2d *p)
{
    const enum kcpu_isa isa = kcpu_isa();
    return (isa == KCPU_ISA_AVX512 || isa == KCPU_ISA_AVX2) && shape_fits(p, isa == KCPU_ISA_AVX512);
}

int kcpu_convpix_fits_some_isa(const struct k_conv2d *p) { return shape_fits(p, 1) || shape_fits(p, 0); }

static struct pix_plan plan_vecs(const struct k_conv2d *p, int vecs, int avx512)
{
    struct pix_plan c;
    c.vecs = vecs;
    c.two_rows = vecs == 2 && two_rows_here(p, avx512);
    c.kg = (int64_t)p->c * p->kh * p->kw;
    c.pixels = (int64_t)p->oh * p->ow;
    /* Each output row in runs of near-equal length, none above what a tile holds. */
    c.rows = (int)kcpu_ceil_div(p->ow, kcpu_ceil_div(p->ow, kcpu_pix_rows(c.vecs, avx512)));
    c.blocks = p->oc / (16 * c.vecs);
    int64_t gw = (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1;
    c.padded = p->pad_t > 0 || p->pad_l > 0 || band_reach(p, p->oh) > p->h || gw > p->w;
    c.band_max = p->oh;
    while (c.band_max > 1 && (int64_t)p->c * band_reach(p, c.band_max) * gw * (int64_t)sizeof(float) > SLICE_BYTES)
        c.band_max--;
    int64_t gh = band_reach(p, c.band_max);
    c.gh = c.padded ? gh : p->h;
    c.gw = c.padded ? gw : p->w;
    return c;
}

static struct pix_plan plan(const struct k_conv2d *p, int avx512)
{
    return plan_vecs(p, block_vecs(p, avx512), avx512);
}

#define HELD_STRIDE 8      /* int64s between the threads' held marks: a cache line */

static int64_t table_floats(const struct pix_plan *c)
{
    return kcpu_ceil_div(c->kg * (int64_t)sizeof(int64_t), 64) * 16;
}

/* Floats of one thread's slice (64-byte multiple). */
static int64_t slice_floats(const struct k_conv2d *p, const struct pix_plan *c)
{
    /* + 8: the slack the AVX2 band copy's last row spills into */
    return c->padded ? kcpu_ceil_div((int64_t)p->c * c->gh * c->gw + 8, 16) * 16 : 0;
}

size_t kcpu_convpix_scratch_bytes(const struct k_conv2d *p, int threads)
{
    /* either ISA's shapes and plan: the ISA may change after sizing */
    if (!kcpu_convpix_fits_some_isa(p))
        return 0;
    struct pix_plan c = plan(p, 1);
    return (size_t)(table_floats(&c) + threads * slice_floats(p, &c)) * sizeof(float) +
           (size_t)threads * HELD_STRIDE * sizeof(int64_t) + 64;
}

struct pix_job {
    const struct k_conv2d *p;
    struct pix_plan c;
    const float *x, *packed_w, *bias, *residual;
    float *y;
    const int64_t *boff;
    float *slices;             /* per thread, when padded */
    int64_t *held;             /* per thread, a line apart: 1 + the band its slice holds, or 0 */
    int64_t band_rows, bands;  /* output rows per band, bands per image */
    int64_t bands_per_task, groups;
    int64_t blocks_per_task;   /* channel blocks a task runs over each of its bands */
    int avx512;                /* else AVX2 */
};

/* The AVX2 tiles of output rows oh0 .. oh1-1 (their windows from top):
 * the band's pixels in plane order, in near-equal runs of up to
 * KCPU_PIX_AVX2_ROWS that carry on across rows. */
static void avx2_tiles(const struct pix_job *j, struct kcpu_pix_tile *t, const float *top, int64_t img, int64_t ch0,
                       int64_t oh0, int64_t oh1)
{
    const struct k_conv2d *p = j->p;
    const struct pix_plan *c = &j->c;
    const int64_t ow = p->ow, rs = p->stride_h * c->gw, cs = p->stride_w;
    const int64_t first = oh0 * ow, count = (oh1 - oh0) * ow;
    const int64_t tiles = kcpu_ceil_div(count, KCPU_PIX_AVX2_ROWS), size = kcpu_ceil_div(count, tiles);
    const int64_t out0 = (img * p->oc + ch0) * c->pixels + first;
    for (int64_t f = 0, oh = 0, col = 0; f < count; f += size) {
        /* pixel f is (oh0 + oh, col); the tile's pixels from there */
        t->pixels = (int)kcpu_min64(size, count - f);
        t->origin = top + oh * rs + col * cs;
        for (int r = 0, o = (int)oh, q = (int)col; r < t->pixels; r++) {
            t->poff[r] = (o - oh) * rs + (q - col) * cs;
            if (++q == ow)
                q = 0, o++;
        }
        t->y = j->y + out0 + f;
        t->res = j->residual ? j->residual + out0 + f : NULL;
        kcpu_pix_tile_avx2(t);
        for (col += t->pixels; col >= ow; col -= ow)
            oh++;
    }
}

/* The tiles of channel block `block` over output rows oh0 .. oh1-1 of
 * image img, their windows from top. */
static void block_tiles(const struct pix_job *j, int64_t block, const float *top, int64_t img, int64_t oh0,
                        int64_t oh1)
{
    const struct k_conv2d *p = j->p;
    const struct pix_plan *c = &j->c;
    int64_t ch0 = block * c->vecs * 16;
    struct kcpu_pix_tile t = {
        .vecs = c->vecs, .stride = p->stride_w, .k = c->kg,
        .w = j->packed_w + ch0 * c->kg,   /* pair ch0 / 16 */
        .pair_stride = c->kg * KCPU_PAIR,
        .boff = j->boff,
        .bias = j->bias ? j->bias + ch0 : NULL,
        .ldy = c->pixels,
        .act = p->act,
    };
    if (!j->avx512) {
        avx2_tiles(j, &t, top, img, ch0, oh0, oh1);
        return;
    }
    struct kcpu_pix_tile group[KCPU_PIX_GROUP];
    int count = 0;
    for (int64_t oh = oh0, rows; oh < oh1; oh += rows) {
        rows = c->two_rows && oh + 1 < oh1 ? 2 : 1;
        for (int64_t ow = 0; ow < p->ow; ow += c->rows) {
            int64_t out = (img * p->oc + ch0) * c->pixels + oh * p->ow + ow;
            struct kcpu_pix_tile *g = &group[count++];
            *g = t;
            g->pixels = rows == 2 ? 2 * p->ow : (int)kcpu_min64(c->rows, p->ow - ow);
            g->next_row = rows == 2 ? p->stride_h * c->gw : 0;
            g->origin = top + (oh - oh0) * p->stride_h * c->gw + ow * p->stride_w;
            g->y = j->y + out;
            g->res = j->residual ? j->residual + out : NULL;
            if (count == KCPU_PIX_GROUP) {
                kcpu_pix_tiles_avx512(group, count);
                count = 0;
            }
        }
    }
    if (count > 0)
        kcpu_pix_tiles_avx512(group, count);
}

static void band_task(void *arg, int64_t task, int thread)
{
    const struct pix_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct pix_plan *c = &j->c;
    int64_t block0 = task / j->groups * j->blocks_per_task, group = task % j->groups;
    int64_t block1 = kcpu_min64(c->blocks, block0 + j->blocks_per_task);
    float *slice = j->slices ? j->slices + thread * slice_floats(p, c) : NULL;
    int64_t *held = j->held + (int64_t)thread * HELD_STRIDE;
    int64_t first = group * j->bands_per_task, last = kcpu_min64(p->n * j->bands, first + j->bands_per_task);
    for (int64_t band = first; band < last; band++) {
        int64_t img = band / j->bands, oh0 = band % j->bands * j->band_rows;
        int64_t oh1 = kcpu_min64(p->oh, oh0 + j->band_rows);
        /* Where output row oh0's windows start: the slice, or the input. */
        const float *top = j->x + (img * p->c * p->h + oh0 * p->stride_h) * p->w;
        /* The slice still holds this band where the thread's previous task
         * was another channel block of it (a map of few rows at batch 1:
         * each block's task copied the whole band again). */
        if (slice && *held != band + 1) {
            struct kcpu_pix_band b = {
                .x = j->x + img * p->c * p->h * p->w, .c = p->c, .h = p->h, .w = p->w,
                .pad_t = p->pad_t, .pad_l = p->pad_l,
                .g0 = oh0 * p->stride_h, .rows = band_reach(p, oh1 - oh0),
                .slice = slice, .gh = c->gh, .gw = c->gw,
            };
            if (j->avx512)
                kcpu_pix_band_avx512(&b);
            else
                kcpu_pix_band_avx2(&b);
            *held = band + 1;
        }
        if (slice)
            top = slice;
        for (int64_t block = block0; block < block1; block++)
            block_tiles(j, block, top, img, oh0, oh1);
    }
}

void kcpu_convpix_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                      const float *packed_w, const float *bias, const float *residual, float *y,
                      void *scratch)
{
    const int avx512 = kcpu_isa() == KCPU_ISA_AVX512;   /* read once: the plan and the tiles agree */
    struct pix_job j = {.p = p, .c = plan(p, avx512), .x = x, .packed_w = packed_w, .bias = bias,
                        .residual = residual, .y = y, .avx512 = avx512};
    const struct pix_plan *c = &j.c;
    if (p->n <= 0 || p->oh <= 0 || p->ow <= 0)
        return;
    /* Fewer images than threads: an image's rows are split among them,
     * unless they do not split evenly (a 7x7 map: 4 rows against 3) and the
     * channels do (smaller blocks if need be): then by channel blocks. */
    int threads = kcpu_threads_count(th);
    int64_t split = kcpu_ceil_div(threads, p->n);
    if (split > 1 && p->oh % split != 0) {
        for (int v = c->vecs; v >= 1; v--) {
            struct pix_plan b = plan_vecs(p, block_vecs_up_to(p, v), avx512);
            if (b.blocks % threads == 0) {
                j.c = b;
                split = 1;
                break;
            }
        }
    }
    /* Scratch: the tap offsets, the threads' slices, their held marks. */
    char *base = kcpu_align64(scratch);
    int64_t *boff = (int64_t *)(void *)base;
    for (int64_t ci = 0, k = 0; ci < p->c; ci++)
        for (int64_t ki = 0; ki < p->kh; ki++)
            for (int64_t kj = 0; kj < p->kw; kj++)
                boff[k++] = (ci * c->gh + ki * p->dil_h) * c->gw + kj * p->dil_w;
    j.boff = boff;
    j.slices = c->padded ? (float *)(void *)(base + table_floats(c) * (int64_t)sizeof(float)) : NULL;
    j.held = (int64_t *)(void *)(base + (table_floats(c) + threads * slice_floats(p, c)) * (int64_t)sizeof(float));
    memset(j.held, 0, (size_t)threads * HELD_STRIDE * sizeof(int64_t));
    /* Bands: an image split among the threads as above; tasks: one band
     * each, the pool deals them out in runs (never below
     * KCPU_MIN_TASK_MACS). */
    j.band_rows = kcpu_min64(c->band_max, kcpu_ceil_div(p->oh, split));
    j.bands = kcpu_ceil_div(p->oh, j.band_rows);
    int64_t band_macs = j.band_rows * p->ow * c->vecs * 16 * c->kg;
    j.bands_per_task = kcpu_ceil_div(KCPU_MIN_TASK_MACS, band_macs);
    j.groups = kcpu_ceil_div(p->n * j.bands, j.bands_per_task);
    /* A band copied once serves every channel block of its task where the
     * band groups alone give each thread four tasks to share out (AVX2's
     * 16-channel blocks copied each band 2 to 4 times); else a task is one
     * block's, and many small tasks balance the threads (ResNet-50 at batch
     * 1 has two band groups: two tasks were slower). */
    j.blocks_per_task = j.groups >= 4 * (int64_t)threads ? c->blocks : 1;
    kcpu_threads_run(th, kcpu_ceil_div(c->blocks, j.blocks_per_task) * j.groups, band_task, &j);
}
