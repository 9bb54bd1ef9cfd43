/*
 * kcpu_dwconv.c - depthwise and grouped convolution on the CPU, direct
 * (see kcpu_dwconv.h for why and the data layout).
 *
 * Per unit (an image, a group and a block of up to KCPU_DW_MAX_MO of the
 * group's output channels, so that each grid load feeds several), a task
 *   1. copies the group's cg input planes into its thread's grid, unless
 *      the grid holds them from the unit before: for each stride phase
 *      (a, b) that some tap reads, rows of row_len floats where cell (i, j)
 *      is padded input (i * stride_h + a, j * stride_w + b), zero outside
 *      the image, then a zeroed slack for the last vector's overrun;
 *   2. runs the ISA's block kernel over the block's output channels.
 * Blocks are units of their own so that a batch of one image still gives
 * every thread work where a group has several blocks (a grayscale stem's
 * 16 to 64 output channels are one group).
 * Tap (ci, ki, kj) of output (r, col) reads phase ((ki * dil_h) % stride_h,
 * (kj * dil_w) % stride_w) at row r + ki * dil_h / stride_h and column
 * col + kj * dil_w / stride_w: with flat index r * row_len + col, a fixed
 * offset per tap, shared by all units and computed once per call.
 *
 * Depthwise 3x3 layers at stride 1 or 2 (MobileNet's) skip both steps on
 * AVX-512 and AVX2: kcpu_dw3x3_avx512 reads each channel's plane directly
 * with masked loads, kcpu_dw3x3_avx2 with masks on its taps, and both
 * store the finished rows (the grid copy, the accumulator pass and the
 * per-row epilogue calls were more than half of their time on AVX-512; on
 * AVX2 the copy of a stride-2 grid went float by float).
 */
#include <string.h>

#include "kcpu_dwconv.h"

/* Output channels per group this kernel takes. Measured on 3x3 grouped
 * layers (32 groups, 7x7 to 56x56, 2 threads): up to 8 it beats the
 * packed GEMM, whose 8-row panels it would leave part empty; at 16 and 32
 * the two were within the (shared machine's) noise, so the GEMM keeps them. */
#define MAX_MG 8

/* Output channels of a dense convolution of one input channel this kernel
 * takes (a grayscale stem): on Zen 1, 3x3 layers of 16 to 64 channels on
 * 28x28 to 112x112 maps, batches 1 and 8, ran in 0.47-0.70x the pixel
 * tile's time on one thread (docs/performance.md); wider was not measured. */
#define MAX_SINGLE_INPUT_OC 64

struct dw_plan {
    int64_t cg, mg, ntaps;
    int64_t mo;                /* output channels a block takes: mg split evenly, at most KCPU_DW_MAX_MO */
    int64_t blocks;            /* blocks a group's output channels make */
    int64_t rows, row_len;     /* one phase: rows of row_len floats */
    int64_t phase, chan;       /* floats per phase (slack included), per input channel */
    int64_t count;             /* positions computed per output channel (multiple of 16) */
    int64_t thread_floats;     /* per-thread scratch: grid, then accumulators */
    int64_t table_floats;      /* the shared offset table, in floats */
};

static struct dw_plan plan(const struct k_conv2d *p)
{
    struct dw_plan d;
    d.cg = p->c / p->groups;
    d.mg = p->oc / p->groups;
    d.ntaps = d.cg * p->kh * p->kw;
    d.mo = d.mg > 0 ? kcpu_ceil_div(d.mg, kcpu_ceil_div(d.mg, KCPU_DW_MAX_MO)) : 1;
    d.blocks = kcpu_ceil_div(d.mg, d.mo);
    d.rows = p->oh + (int64_t)(p->kh - 1) * p->dil_h / p->stride_h;
    d.row_len = p->ow + (int64_t)(p->kw - 1) * p->dil_w / p->stride_w;
    d.count = kcpu_ceil_div((int64_t)(p->oh - 1) * d.row_len + p->ow, 16) * 16;
    /* A tap's last vector starts below count and reaches at most
     * rows * row_len + 14: 16 zero floats of slack cover it. */
    d.phase = kcpu_ceil_div(d.rows * d.row_len + 16, 16) * 16;
    d.chan = (int64_t)p->stride_h * p->stride_w * d.phase;
    d.thread_floats = d.cg * d.chan + KCPU_DW_MAX_MO * d.count;
    d.table_floats = kcpu_ceil_div(d.ntaps * (int64_t)sizeof(int64_t), 64) * 16;
    return d;
}

/* A dense convolution of one input channel is one group of cg = 1: LeNet-5's
 * conv1 (1 -> 6 channels, 5x5 on 28x28) ran at 59 GFLOP/s as an implicit
 * GEMM of 6-row panels and depth 25 (4.0 us a sample at batch 16, 1
 * thread), here at 92 (2.6 us; `inferctl profile model_repository/lenet5`). */
int kcpu_dwconv_applies(const struct k_conv2d *p)
{
    if (p->groups == 1 && p->c == 1)
        return p->oc <= MAX_SINGLE_INPUT_OC;
    return p->groups > 1 && p->oc / p->groups <= MAX_MG;
}

size_t kcpu_dwconv_packed_floats(const struct k_conv2d *p)
{
    return (size_t)p->oc * (size_t)plan(p).ntaps;
}

void kcpu_dwconv_pack(const struct k_conv2d *p, const float *w, float *packed)
{
    memcpy(packed, w, kcpu_dwconv_packed_floats(p) * sizeof(float));
}

size_t kcpu_dwconv_scratch_bytes(const struct k_conv2d *p, int threads)
{
    struct dw_plan d = plan(p);
    return (size_t)(d.table_floats + threads * d.thread_floats) * sizeof(float) + 64;
}

/* Whether some tap of an axis reads stride phase ph. */
static int phase_used(int k, int dil, int stride, int ph)
{
    for (int t = 0; t < k; t++)
        if (t * dil % stride == ph)
            return 1;
    return 0;
}

/* dst[t] = src[iw0 + t * sw] where 0 <= iw0 + t * sw < w, else 0, t < len.
 * Rows are short (7 to 114 floats): one masked-vector pass beats three
 * libc calls. */
static void fill_row(const float *src, int w, int64_t iw0, int sw, float *dst, int64_t len)
{
    if (sw <= 2 && kcpu_isa() == KCPU_ISA_AVX512) {
        kcpu_pad_row_avx512(src, w, (int)iw0, sw, dst, len);
    } else if (sw == 1) {
        int64_t lo = kcpu_min64(len, kcpu_max64(0, -iw0));
        int64_t hi = kcpu_max64(lo, kcpu_min64(len, w - iw0));
        memset(dst, 0, (size_t)lo * sizeof(float));
        memcpy(dst + lo, src + iw0 + lo, (size_t)(hi - lo) * sizeof(float));
        memset(dst + hi, 0, (size_t)(len - hi) * sizeof(float));
    } else {
        for (int64_t t = 0, iw = iw0; t < len; t++, iw += sw)
            dst[t] = iw >= 0 && iw < w ? src[iw] : 0.0f;
    }
}

/* Step 1: the padded, phase-split grid of the cg planes starting at x. */
static void fill_grid(const struct k_conv2d *p, const struct dw_plan *d, const float *x, float *grid)
{
    int64_t plane = (int64_t)p->h * p->w, used = d->rows * d->row_len;
    for (int64_t ci = 0; ci < d->cg; ci++)
        for (int a = 0; a < p->stride_h; a++)
            for (int b = 0; b < p->stride_w; b++) {
                if (!phase_used(p->kh, p->dil_h, p->stride_h, a) || !phase_used(p->kw, p->dil_w, p->stride_w, b))
                    continue;
                float *ph = grid + ci * d->chan + (a * p->stride_w + b) * d->phase;
                for (int64_t r = 0; r < d->rows; r++) {
                    int64_t ih = r * p->stride_h + a - p->pad_t;
                    if (ih < 0 || ih >= p->h)
                        memset(ph + r * d->row_len, 0, (size_t)d->row_len * sizeof(float));
                    else
                        fill_row(x + ci * plane + ih * p->w, p->w, b - p->pad_l, p->stride_w,
                                 ph + r * d->row_len, d->row_len);
                }
                memset(ph + used, 0, (size_t)(d->phase - used) * sizeof(float));
            }
}

void kcpu_dw_block_scalar(const struct kcpu_dw_block *b)
{
    int64_t plane = (int64_t)b->oh * b->ow;
    for (int o = 0; o < b->mo; o++) {
        float *acc = b->acc + o * b->count;
        float bias = b->bias ? b->bias[o] : 0.0f;
        for (int64_t t = 0; t < b->count; t++)
            acc[t] = bias;
        for (int64_t k = 0; k < b->ntaps; k++) {
            const float *src = b->grid + b->off[k];
            float wk = b->w[o * b->ntaps + k];
            for (int64_t t = 0; t < b->count; t++)
                acc[t] += wk * src[t];
        }
        for (int r = 0; r < b->oh; r++) {
            const float *a = acc + r * b->row_len;
            const float *res = b->res ? b->res + o * plane + (int64_t)r * b->ow : NULL;
            float *y = b->y + o * plane + (int64_t)r * b->ow;
            for (int t = 0; t < b->ow; t++)
                y[t] = kcpu_act1(b->act, a[t] + (res ? res[t] : 0.0f));
        }
    }
}

struct dw_job {
    const struct k_conv2d *p;
    struct dw_plan d;
    const float *x, *w, *bias, *residual;
    float *y;
    const int64_t *off;
    int direct3x3;             /* kcpu_dw3x3_* per channel instead of grid + block */
    float *thread_base;        /* thread t's grid at thread_base + t * d.thread_floats */
    int64_t units_per_task;
};

static void dw_task(void *arg, int64_t task, int thread)
{
    const struct dw_job *j = arg;
    const struct k_conv2d *p = j->p;
    const struct dw_plan *d = &j->d;
    float *grid = j->thread_base + thread * d->thread_floats;
    int64_t plane_in = (int64_t)p->h * p->w, plane_out = (int64_t)p->oh * p->ow;
    int64_t units = (int64_t)p->n * p->groups * d->blocks;
    int64_t filled = -1;   /* the image and group (n * groups + g) whose planes the grid holds */
    enum kcpu_isa isa = kcpu_isa();
    for (int64_t u = task * j->units_per_task; u < kcpu_min64(units, (task + 1) * j->units_per_task); u++) {
        int64_t ng = u / d->blocks, o0 = u % d->blocks * d->mo;
        int64_t n = ng / p->groups, g = ng % p->groups;
        if (j->direct3x3) {   /* one channel per group: ng is the output plane */
            int64_t out = (n * p->oc + g) * plane_out;
            const float *x = j->x + (n * p->c + g) * plane_in, *w9 = j->w + g * 9;
            const float *res = j->residual ? j->residual + out : NULL;
            float bias = j->bias ? j->bias[g] : 0.0f;
            if (isa == KCPU_ISA_AVX512)
                kcpu_dw3x3_avx512(p, x, w9, bias, res, j->y + out);
            else
                kcpu_dw3x3_avx2(p, x, w9, bias, res, j->y + out);
            continue;
        }
        if (ng != filled) {
            fill_grid(p, d, j->x + (n * p->c + g * d->cg) * plane_in, grid);
            filled = ng;
        }
        int64_t oc = g * d->mg + o0;
        int64_t out = (n * p->oc + oc) * plane_out;
        struct kcpu_dw_block b = {
            .mo = (int)kcpu_min64(d->mo, d->mg - o0), .ntaps = d->ntaps, .off = j->off,
            .grid = grid, .w = j->w + oc * d->ntaps, .bias = j->bias ? j->bias + oc : NULL,
            .count = d->count, .acc = grid + d->cg * d->chan, .oh = p->oh, .ow = p->ow,
            .row_len = d->row_len, .res = j->residual ? j->residual + out : NULL, .y = j->y + out,
            .act = p->act,
        };
        if (isa == KCPU_ISA_AVX512)
            kcpu_dw_block_avx512(&b);
        else if (isa == KCPU_ISA_AVX2)
            kcpu_dw_block_avx2(&b);
        else
            kcpu_dw_block_scalar(&b);
    }
}

void kcpu_dwconv_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x,
                     const float *packed_w, const float *bias, const float *residual, float *y,
                     void *scratch)
{
    struct dw_job j = {.p = p, .d = plan(p), .x = x, .w = packed_w, .bias = bias, .residual = residual, .y = y};
    const struct dw_plan *d = &j.d;
    enum kcpu_isa isa = kcpu_isa();
    int64_t units = (int64_t)p->n * p->groups * d->blocks;
    if (units <= 0 || p->oh <= 0 || p->ow <= 0)
        return;
    void *base = kcpu_align64(scratch);   /* the offset table, then the threads' grids */
    int64_t *off = base;
    for (int64_t ci = 0, k = 0; ci < d->cg; ci++)
        for (int ki = 0; ki < p->kh; ki++)
            for (int kj = 0; kj < p->kw; kj++) {
                int64_t dy = (int64_t)ki * p->dil_h, dx = (int64_t)kj * p->dil_w;
                int64_t phase = dy % p->stride_h * p->stride_w + dx % p->stride_w;
                off[k++] = ci * d->chan + phase * d->phase + dy / p->stride_h * d->row_len + dx / p->stride_w;
            }
    j.off = off;
    j.direct3x3 = (isa == KCPU_ISA_AVX512 || isa == KCPU_ISA_AVX2) && d->cg == 1 && d->mg == 1 && p->kh == 3 &&
                  p->kw == 3 && p->dil_h == 1 && p->dil_w == 1 && p->stride_h == p->stride_w &&
                  (p->stride_h == 1 || p->stride_h == 2);
    j.thread_base = (float *)base + d->table_floats;
    /* Four tasks per thread, none below KCPU_MIN_TASK_MACS (waking a
     * worker costs more than a small unit's work). */
    int64_t unit_macs = kcpu_max64(1, d->mo * p->oh * p->ow * d->ntaps);
    int64_t want = 4 * (int64_t)kcpu_threads_count(th);
    j.units_per_task = kcpu_max64(kcpu_ceil_div(units, want), KCPU_MIN_TASK_MACS / unit_macs);
    j.units_per_task = kcpu_max64(1, j.units_per_task);
    kcpu_threads_run(th, kcpu_ceil_div(units, j.units_per_task), dw_task, &j);
}
