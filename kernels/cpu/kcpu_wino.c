/*
 * kcpu_wino.c - the Winograd F(2x2, 3x3) convolution (kcpu_wino.h): the
 * weights' transform, the plan of a call, the threads' tasks, and the
 * plain-C transforms.
 *
 * A task takes a block of consecutive tiles (images, then tile rows, then
 * tiles of a row), makes their V in its thread's scratch, and for output
 * channels a slice at a time runs the 16 GEMMs into M and the output
 * transform, with the bias, residual and activation, into y. There is one
 * pass over the threads and no shared scratch: the input transform pads
 * the rows a run of tiles reads as it goes (a padded copy of the whole
 * input took a pass of its own, and at batch 1 its wait was as long as
 * the layer's saving).
 */
#include <string.h>

#include "kcpu_convpix.h"
#include "kcpu_wino.h"

/* Tiles a task takes at most: 4096 / c rounded to whole 24-tile strips
 * of the AVX2 GEMMs (run_gemms), from 48 to 192. Measured alternating
 * on Zen 3 (1 thread): 48-64 tiles suited 64-512 channels best (larger
 * blocks read V back from L2, smaller ones leave the 24-tile strips short),
 * 128 and more 16-32 channels. */
#define TILES_PER_C 4096
#define MIN_BLOCK 48
#define MAX_BLOCK 192
/* Bytes of a slice's M: the output transform reads it back at once. */
#define M_BYTES ((int64_t)512 * 1024)
#define SLACK 8         /* tiles past a block's end the AVX2 transforms and the AVX-512 GEMMs touch */

/* Fewer channels and the transforms cost what the GEMMs save (measured
 * alternating against the pixel tile on Zen 3, docs/performance.md): 32 ->
 * 32 on 14x14 maps ran 1.0-1.14x its speed on one thread, 0.63-0.69x at
 * batch 1 on two; 64 -> 64 on 56x56 1.56-2.0x. */
#define WINO_MIN_CHANNELS 64
/* A map under 12 columns leaves the transforms' 8-tile vectors half
 * empty (7x7: 4 tiles a row): 64 -> 64 channels on 7x7 maps ran 0.83-1.2x
 * the pixel tile's speed, slower in resnet-mini; from 256 input channels
 * the GEMMs outweigh it (512 -> 512: 1.1-1.34x, Zen 3). Not where the
 * hardware has AVX-512 and the pixel tile's two-row tiles take the map at
 * batch 1: ResNet-18's 512 -> 512 on 7x7 ran 610-670 us a layer in the
 * model against Winograd's ~810 (16 tiles: its 16.8 MB of transformed
 * weights stream from L3 with 16 multiply-adds per float; the direct
 * weights are 9.4 MB with 49). The packing cannot follow the batch, so
 * larger ones lose: ResNet-50's at batch 16 took 11.2 ms a layer against
 * Winograd's 9.3-10.0 (the model as a whole no slower, other layers
 * gained). On AVX2 Winograd stays: 890-950 us against the AVX2 pixel
 * tile's 1,130 on the same Xeon. The hardware decides, not kcpu_isa():
 * the packed weights must not change with the ISA setting. */
#define WINO_MIN_WIDTH 12
#define WINO_NARROW_CHANNELS 256

int kcpu_wino_applies(const struct k_conv2d *p)
{
    if (p->w < WINO_MIN_WIDTH &&
        kcpu_convpix_two_row_tiles(p, kcpu_isa_hardware() == KCPU_ISA_AVX512) && kcpu_convpix_fits_some_isa(p))
        return 0;
    return p->groups == 1 && p->kh == 3 && p->kw == 3 && p->stride_h == 1 && p->stride_w == 1 &&
           p->dil_h == 1 && p->dil_w == 1 && p->pad_t == 1 && p->pad_l == 1 && p->oh == p->h &&
           p->ow == p->w && p->c >= WINO_MIN_CHANNELS && p->oc >= WINO_MIN_CHANNELS && p->h >= 4 &&
           p->w >= 4 && (p->w >= WINO_MIN_WIDTH || p->c >= WINO_NARROW_CHANNELS);
}

struct wino_plan {
    int64_t tiles_x, tiles_y, tiles;   /* per image */
    int64_t rows_ld;                   /* floats of a padded input row (AVX2) */
    int64_t panels;                    /* KCPU_MR-row panels of U[xi] */
    int64_t block;                     /* tiles a task takes, at most */
    int64_t ld;                        /* floats between V's (and M's) rows */
    int64_t slice;                     /* output channels per pass of the GEMMs */
    int64_t v_xi;                      /* floats between V's xi planes */
};

static struct wino_plan plan(const struct k_conv2d *p)
{
    struct wino_plan c;
    c.tiles_x = (p->w + 1) / 2;
    c.tiles_y = (p->h + 1) / 2;
    c.tiles = c.tiles_x * c.tiles_y;
    c.rows_ld = 2 * kcpu_ceil_div(c.tiles_x, 8) * 8 + 24;
    c.panels = kcpu_ceil_div(p->oc, KCPU_MR);
    c.block = kcpu_min64(MAX_BLOCK, kcpu_max64(MIN_BLOCK, TILES_PER_C / p->c / 24 * (int64_t)24));
    c.ld = c.block + SLACK;
    /* The input transform stores a vector to each of the 16 planes in
     * turn: planes a multiple of 4 KiB apart put all 16 in one set of the
     * 8-way L1 (with 64 input channels and 48-tile blocks, 2 sets: the
     * transform ran 8 times slower). 5 lines past a 4 KiB multiple, they
     * land in 16 sets. */
    c.v_xi = kcpu_ceil_div((int64_t)p->c * c.ld, 1024) * 1024 + 80;   /* 5 lines of 16 floats */
    int64_t slice = M_BYTES / ((int64_t)sizeof(float) * 16 * c.ld) / KCPU_MR * KCPU_MR;
    c.slice = kcpu_min64(c.panels * KCPU_MR, kcpu_max64(KCPU_MR, slice));
    return c;
}

size_t kcpu_wino_packed_floats(const struct k_conv2d *p)
{
    return (size_t)16 * (size_t)(plan(p).panels * KCPU_MR) * (size_t)p->c;
}

void kcpu_wino_pack(const struct k_conv2d *p, const float *w, float *packed)
{
    struct wino_plan c = plan(p);
    int64_t xi_floats = c.panels * KCPU_MR * p->c;
    memset(packed, 0, kcpu_wino_packed_floats(p) * sizeof(float));
    for (int64_t o = 0; o < p->oc; o++)
        for (int64_t ci = 0; ci < p->c; ci++) {
            const float *g = w + (o * p->c + ci) * 9;
            double gg[4][3], u[4][4];   /* G g, then (G g) G^T */
            for (int j = 0; j < 3; j++) {
                gg[0][j] = g[j];
                gg[1][j] = 0.5 * ((double)g[j] + g[3 + j] + g[6 + j]);
                gg[2][j] = 0.5 * ((double)g[j] - g[3 + j] + g[6 + j]);
                gg[3][j] = g[6 + j];
            }
            for (int i = 0; i < 4; i++) {
                u[i][0] = gg[i][0];
                u[i][1] = 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]);
                u[i][2] = 0.5 * (gg[i][0] - gg[i][1] + gg[i][2]);
                u[i][3] = gg[i][2];
            }
            float *dst = packed + ((o / KCPU_MR) * p->c + ci) * KCPU_MR + o % KCPU_MR;
            for (int xi = 0; xi < 16; xi++)
                dst[xi * xi_floats] = (float)u[xi / 4][xi % 4];
        }
}

/* Per-thread floats: a block's V, a slice's M, 4 padded input rows. */
static int64_t thread_floats(const struct k_conv2d *p, const struct wino_plan *c)
{
    return (16 * c->v_xi + 16 * c->slice * c->ld + 4 * c->rows_ld + 15) / 16 * 16;
}

size_t kcpu_wino_scratch_bytes(const struct k_conv2d *p, int threads)
{
    struct wino_plan c = plan(p);
    return (size_t)(threads * thread_floats(p, &c)) * sizeof(float) + 64;
}

void kcpu_wino_in_scalar(const struct kcpu_wino_in *a)
{
    for (int64_t ch = 0; ch < a->c; ch++)
        for (int64_t t = 0; t < a->count; t++) {
            const float *x = a->x + ch * a->h * a->w;
            float d[4][4], w[4][4];   /* the window; B^T d, then times B */
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    int64_t r = a->row0 + i, q = a->col0 + 2 * t + j;
                    d[i][j] = r >= 0 && r < a->h && q >= 0 && q < a->w ? x[r * a->w + q] : 0.0f;
                }
            for (int j = 0; j < 4; j++) {
                w[0][j] = d[0][j] - d[2][j];
                w[1][j] = d[1][j] + d[2][j];
                w[2][j] = d[2][j] - d[1][j];
                w[3][j] = d[1][j] - d[3][j];
            }
            float *v = a->v + ch * a->ldv + t;
            for (int i = 0; i < 4; i++) {
                v[(4 * i + 0) * a->xi_stride] = w[i][0] - w[i][2];
                v[(4 * i + 1) * a->xi_stride] = w[i][1] + w[i][2];
                v[(4 * i + 2) * a->xi_stride] = w[i][2] - w[i][1];
                v[(4 * i + 3) * a->xi_stride] = w[i][1] - w[i][3];
            }
        }
}

void kcpu_wino_out_scalar(const struct kcpu_wino_out *a)
{
    for (int64_t o = 0; o < a->oc; o++)
        for (int64_t t = 0; t < a->count; t++) {
            const float *m = a->m + o * a->ldm + t;
            float s[4], d[4], y[2][2];   /* A^T M, then times A */
            for (int j = 0; j < 4; j++) {
                float m0 = m[j * a->xi_stride], m1 = m[(4 + j) * a->xi_stride];
                float m2 = m[(8 + j) * a->xi_stride], m3 = m[(12 + j) * a->xi_stride];
                s[j] = m0 + m1 + m2;
                d[j] = m1 - m2 - m3;
            }
            y[0][0] = s[0] + s[1] + s[2];
            y[0][1] = s[1] - s[2] - s[3];
            y[1][0] = d[0] + d[1] + d[2];
            y[1][1] = d[1] - d[2] - d[3];
            float bias = a->bias ? a->bias[o] : 0.0f;
            for (int r = 0; r < a->rows; r++)
                for (int q = 0; q < 2 && 2 * t + q < a->cols; q++) {
                    int64_t at = o * a->plane + r * a->ow + 2 * t + q;
                    float v = y[r][q] + bias;
                    if (a->res)
                        v += a->res[at];
                    a->y[at] = kcpu_act1(a->act, v);
                }
        }
}

/* The 16 GEMMs of a block for a slice of output channels: M[xi][o][t] =
 * sum_ch U[xi][o][ch] V[xi][ch][t] for o < 8 * panels (U's panels from the
 * slice's first), t < n (a multiple of the ISA's vector; V's columns up to
 * there are written). */
struct gemms {
    const float *u;            /* U[0], the slice's first panel */
    int64_t u_xi;              /* floats between U's xi planes */
    const float *v;
    int64_t v_xi;
    float *m;
    int64_t m_xi;
    int64_t ldm;               /* floats between M's channel rows */
    int64_t ld;                /* floats between V's rows */
    int64_t k;                 /* input channels */
    int64_t panels, n;
};

/* The next strip's width for left columns (a multiple of the vector, vl
 * floats): 3 vectors where what is left then is not 1 wide, else 2 or
 * what is left (on Zen 3 with AVX2, a 16-float strip's 8 FMA chains are
 * about what its two FMA pipes need; 4 chains run at half the rate). */
static int64_t strip_width(int64_t left, int64_t vl)
{
    return left == 3 * vl || left >= 5 * vl ? 3 * vl : left >= 2 * vl ? 2 * vl : left;
}

/* Depth per pass: a strip's V stays in L1 while every panel of the slice
 * passes over it, U's panels in L2. AVX2: 128 (a 24-float strip's V, 12
 * KiB; with the whole depth in one pass, 512 input channels read V from
 * L2 for every panel, Zen 3). AVX-512: as deep as keeps 8192 floats of
 * the widest strip's V, so a narrow block (a 7x7 map at batch 1: 16
 * tiles) reads each panel's whole depth in one pass; with 128, ResNet-50's
 * 7x7 stage took 2.35 ms a layer instead of 1.95 in the model. */
#define KC_AVX2 128
#define V_L1_FLOATS 8192

static void run_gemms(const struct gemms *g, int avx512)
{
    const int64_t vl = avx512 ? 16 : 8, rows = avx512 ? KCPU_MR : 4;
    const int64_t depth = avx512 ? V_L1_FLOATS / strip_width(g->n, vl) : KC_AVX2;
    const int64_t passes = kcpu_ceil_div(g->k, depth), kc = kcpu_ceil_div(g->k, passes);
    for (int xi = 0; xi < 16; xi++)
        for (int64_t k0 = 0; k0 < g->k; k0 += kc) {
            const int64_t k = kcpu_min64(g->k, k0 + kc) - k0;
            for (int64_t t = 0, width; t < g->n; t += width) {
                width = strip_width(g->n - t, vl);
                const float *b = g->v + xi * g->v_xi + k0 * g->ld + t;
                for (int64_t r = 0; r < KCPU_MR * g->panels; r += rows) {
                    const float *a = g->u + xi * g->u_xi + (r / KCPU_MR * g->k + k0) * KCPU_MR + r % KCPU_MR;
                    float *c = g->m + xi * g->m_xi + r * g->ldm + t;
                    if (avx512)
                        kcpu_wino_tile_avx512((int)(width / vl), k0 == 0, k, a, b, g->ld, c, g->ldm);
                    else
                        kcpu_wino_tile_avx2((int)(width / vl), k0 == 0, k, a, b, g->ld, c, g->ldm);
                }
            }
        }
}

struct wino_job {
    const struct k_conv2d *p;
    struct wino_plan c;
    const float *x, *u, *bias, *residual;
    float *y;
    float *work;
    int64_t block;             /* tiles per task */
    int64_t parts;             /* tasks a block's output channels are split over */
    enum kcpu_isa isa;         /* read once: AVX2 and AVX-512 take the AVX2 transforms */
};

/* A run: tiles [t, t + count) of the block lie in one tile row. */
struct run {
    int64_t img, ty, tx, count;
};

static struct run run_at(const struct wino_job *j, int64_t first, int64_t t, int64_t end)
{
    const struct wino_plan *c = &j->c;
    int64_t g = first + t, r = g % c->tiles;
    struct run run = {.img = g / c->tiles, .ty = r / c->tiles_x, .tx = r % c->tiles_x};
    run.count = kcpu_min64(c->tiles_x - run.tx, end - t);
    return run;
}

static void wino_task(void *arg, int64_t task, int thread)
{
    const struct wino_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct wino_plan *c = &j->c;
    const int simd = j->isa != KCPU_ISA_SCALAR, avx512 = j->isa == KCPU_ISA_AVX512;
    int64_t part = task % j->parts, first = task / j->parts * j->block;
    int64_t count = kcpu_min64(j->block, (int64_t)p->n * c->tiles - first);
    float *v = j->work + thread * thread_floats(p, c);
    float *m = v + 16 * c->v_xi;
    int64_t v_xi = c->v_xi, m_xi = c->ld, ldm = 16 * c->ld;   /* M is [o][xi][t] */
    int64_t written = 0;   /* V's columns the AVX2 transform wrote */
    for (int64_t t = 0; t < count;) {
        struct run r = run_at(j, first, t, count);
        written = t + (r.count + 7) / 8 * 8;
        struct kcpu_wino_in in = {
            .x = j->x + r.img * p->c * p->h * p->w, .h = p->h, .w = p->w,
            .row0 = 2 * r.ty - 1, .col0 = 2 * r.tx - 1, .c = p->c, .count = r.count,
            .rows = m + 16 * c->slice * c->ld, .rows_ld = c->rows_ld,
            .v = v + t, .ldv = c->ld, .xi_stride = v_xi,
        };
        if (simd)
            kcpu_wino_in_avx2(&in);
        else
            kcpu_wino_in_scalar(&in);
        t += r.count;
    }
    /* The GEMMs take whole vectors of columns (8 floats, 16 on AVX-512;
     * V's and M's rows have room, c->ld >= the plan's block + 8): zeros in
     * any they would read that no transform wrote. */
    int64_t n = avx512 ? (count + 15) / 16 * 16 : (count + 7) / 8 * 8;
    if (simd && written < n)
        for (int64_t row = 0; row < 16 * (int64_t)p->c; row++)
            memset(v + row / p->c * v_xi + row % p->c * c->ld + written, 0, (size_t)(n - written) * sizeof(float));
    int64_t plane = (int64_t)p->oh * p->ow, xi_floats = c->panels * KCPU_MR * p->c;
    /* This part's output channels: whole panels. */
    int64_t o_first = part * c->panels / j->parts * KCPU_MR;
    int64_t o_end = kcpu_min64(p->oc, (part + 1) * c->panels / j->parts * KCPU_MR);
    for (int64_t o0 = o_first; o0 < o_end; o0 += c->slice) {
        int64_t oc = kcpu_min64(c->slice, o_end - o0);
        if (simd) {
            const struct gemms gm = {
                .u = j->u + o0 * p->c, .u_xi = xi_floats, .v = v, .v_xi = v_xi, .m = m, .m_xi = m_xi,
                .ldm = ldm, .ld = c->ld, .k = p->c, .panels = kcpu_ceil_div(oc, KCPU_MR), .n = n,
            };
            run_gemms(&gm, avx512);
        } else {
            for (int xi = 0; xi < 16; xi++) {
                struct kcpu_gemm gm = {
                    .m = (int)oc, .k = p->c,
                    .a = j->u + xi * xi_floats + o0 * p->c, .a_step = KCPU_MR,
                    .b = v + xi * v_xi, .ldb = c->ld, .b_strip = KCPU_NR,
                    .j0 = 0, .n = count,
                    .seg_len = count, .row_len = count, .row_valid = count, .rows_valid = 1,
                    .ldc = ldm, .c = m + xi * m_xi, .act = K_ACT_NONE,
                };
                kcpu_gemm_scalar(&gm);
            }
        }
        for (int64_t t = 0; t < count;) {
            struct run r = run_at(j, first, t, count);
            int64_t at = (r.img * p->oc + o0) * plane + 2 * r.ty * p->ow + 2 * r.tx;
            struct kcpu_wino_out out = {
                .m = m + t, .ldm = ldm, .xi_stride = m_xi, .oc = oc, .count = r.count,
                .y = j->y + at, .res = j->residual ? j->residual + at : NULL,
                .bias = j->bias ? j->bias + o0 : NULL,
                .plane = plane, .ow = p->ow, .rows = 2 * r.ty + 1 < p->oh ? 2 : 1,
                .cols = kcpu_min64(2 * r.count, p->ow - 2 * r.tx), .act = p->act,
            };
            if (simd)
                kcpu_wino_out_avx2(&out);
            else
                kcpu_wino_out_scalar(&out);
            t += r.count;
        }
    }
}

void kcpu_wino_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                   const float *packed_w, const float *bias, const float *residual, float *y,
                   void *scratch)
{
    struct wino_job j = {.p = p, .c = plan(p), .x = x, .u = packed_w, .bias = bias,
                         .residual = residual, .y = y, .isa = kcpu_isa()};
    const struct wino_plan *c = &j.c;
    if (p->n <= 0)
        return;
    j.work = kcpu_align64(scratch);
    /* Blocks as large as the plan allows, as many as a multiple of the
     * threads (the tasks are alike, so that none waits on a last one), in
     * whole 8-tile vectors of the GEMMs' columns. Few tiles a task (under
     * 32) and the vectors give way to balance: 49 tiles on two threads are
     * 25 + 24, not 32 + 17. Blocks under 16 tiles leave the GEMMs' strips
     * short: where the threads would get less (a 7x7 map at batch 1), a
     * block's output channels are split over them instead, each part
     * making its block's V again. (Twice as many parts as threads, and
     * 8-tile rounding at any size, took 1.2-1.35x the time on 7x7 and
     * 14x14 maps of 64-128 channels at batch 1 on two threads on Zen 1;
     * unrounded blocks of 33-44 tiles read 1.09-1.25x, against two builds
     * whose unchanged steps differed by up to 1.07x: docs/performance.md.) */
    int64_t tiles = (int64_t)p->n * c->tiles, threads = kcpu_threads_count(th);
    int64_t tasks = kcpu_ceil_div(kcpu_ceil_div(tiles, c->block), threads) * threads;
    int64_t even = kcpu_ceil_div(tiles, tasks);
    j.block = kcpu_min64(c->block, even >= 32 ? kcpu_ceil_div(even, 8) * 8 : kcpu_max64(kcpu_min64(tiles, 16), even));
    int64_t blocks = kcpu_ceil_div(tiles, j.block);
    j.parts = 1;
    if (blocks < threads)
        j.parts = kcpu_min64(c->panels, kcpu_ceil_div(threads, blocks));
    kcpu_threads_run(th, blocks * j.parts, wino_task, &j);
}
