/*
 * kcpu_resize.c - resampling on the CPU (k_resize: ONNX Resize, Upsample).
 * Both axes are separable: per axis a table gives each output position its
 * input positions (clamped) and weights, built once a run in scratch.
 *
 * Rows first (output rows no more than input rows): an output row is its
 * input rows blended by the row weights into one row of the input's width
 * (or, with one tap of weight 1, that input row itself), and each output
 * column a blend of that row's elements.
 *
 * Columns first (more output rows than input rows, as upsampling: each
 * input row serves several output rows): an input row is resampled along
 * its columns once into a per-thread cache of as many rows as there are
 * taps (a row's taps are consecutive rows, clamped, so row mod taps is a
 * slot of its own), and an output row is the weighted sum of its cached
 * rows, a vector loop (kcpu_blend_rows_*) instead of a gather per element.
 */
#include <math.h>

#include "kcpu_impl.h"

struct taps {
    int n;              /* per output position */
    int32_t *at;        /* [out][n] input positions */
    float *w;           /* [out][n] weights */
};

struct resize_job {
    const struct k_resize *p;
    const float *x;
    float *y;
    struct taps rows, cols;
    float *blend;       /* per thread: one row of the input's width */
    int64_t rows_per_task;
};

static int taps_per_position(enum k_resize_mode mode)
{
    return mode == K_RESIZE_CUBIC ? 4 : mode == K_RESIZE_LINEAR ? 2 : 1;
}

static bool columns_first(const struct k_resize *p) { return p->axis[0].out > p->axis[0].in; }

/* Floats of one thread's rows: the blended row of the input's width, or
 * the cache of column-resampled rows. */
static size_t blend_floats(const struct k_resize *p)
{
    return columns_first(p) ? (size_t)taps_per_position(p->mode) * (size_t)p->axis[1].out : (size_t)p->axis[1].in;
}

/* Scratch: both axes' positions, then both axes' weights, then a row per
 * thread. */
size_t kcpu_resize_scratch_bytes(const struct k_resize *p, int threads)
{
    size_t taps = (size_t)taps_per_position(p->mode) * (size_t)(p->axis[0].out + p->axis[1].out);
    return taps * (sizeof(int32_t) + sizeof(float)) + blend_floats(p) * sizeof(float) * (size_t)(threads > 0 ? threads : 1);
}

static double keys_cubic(double a, double d)
{
    d = fabs(d);
    return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0;
}

/* The table of axis a; coordinates and weights in double, as the
 * reference computes them, weights stored as float. */
static void build_taps(const struct k_resize *p, const struct k_resize_axis *a, struct taps *t)
{
    const int n = t->n;
    for (int64_t o = 0; o < a->out; o++) {
        double c;
        switch (p->coord) {
        case K_COORD_PYTORCH_HALF_PIXEL: c = a->resized > 1 ? ((double)o + 0.5) / a->scale - 0.5 : 0; break;
        case K_COORD_ALIGN_CORNERS:
            c = a->resized != 1 ? (double)o * (double)(a->in - 1) / (a->resized - 1) : 0;
            break;
        case K_COORD_ASYMMETRIC: c = (double)o / a->scale; break;
        case K_COORD_TF_HALF_PIXEL_FOR_NN: c = ((double)o + 0.5) / a->scale; break;
        default: c = ((double)o + 0.5) / a->scale - 0.5; break;
        }
        double f = floor(c), frac = c - f, w[4] = {1, 0, 0, 0}, sum = 0;
        int64_t first = (int64_t)f;
        if (p->mode == K_RESIZE_NEAREST) {
            int up;
            switch (a->round) {
            case K_ROUND_CEIL: up = frac > 0; break;
            case K_ROUND_FLOOR: up = 0; break;
            case K_ROUND_PREFER_CEIL: up = frac >= 0.5; break;
            default: up = frac > 0.5; break;
            }
            first += up;
        } else if (p->mode == K_RESIZE_LINEAR) {
            w[0] = 1 - frac;
            w[1] = frac;
        } else {
            first -= 1;
            for (int k = 0; k < 4; k++)
                w[k] = keys_cubic(p->cubic_a, frac - (k - 1));
        }
        for (int k = 0; k < n; k++) {
            int64_t at = first + k;
            if (p->exclude_outside && (at < 0 || at >= a->in))
                w[k] = 0;
            sum += w[k];
            t->at[o * n + k] = (int32_t)(at < 0 ? 0 : at >= a->in ? a->in - 1 : at);
        }
        for (int k = 0; k < n; k++)
            t->w[o * n + k] = (float)(p->exclude_outside && sum != 0 ? w[k] / sum : w[k]);
    }
}

/* dst[o] for each output column o: the blend of src's elements the column
 * taps name. */
static void resample_columns(const struct taps *cols, int64_t out_w, const float *src, float *dst)
{
    const int32_t *ax = cols->at;
    const float *wx = cols->w;
    if (cols->n == 1) {
        for (int64_t o = 0; o < out_w; o++)
            dst[o] = src[ax[o]];
        return;
    }
    for (int64_t o = 0; o < out_w; o++) {
        float v = 0;
        for (int k = 0; k < cols->n; k++)
            v += wx[o * cols->n + k] * src[ax[o * cols->n + k]];
        dst[o] = v;
    }
}

void kcpu_blend_rows_scalar(int n, const float *const *rows, const float *w, int64_t len, float *dst)
{
    for (int64_t i = 0; i < len; i++) {
        float v = w[0] * rows[0][i];
        for (int k = 1; k < n; k++)
            v += w[k] * rows[k][i];
        dst[i] = v;
    }
}

static void blend_rows(int n, const float *const *rows, const float *w, int64_t len, float *dst)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        kcpu_blend_rows_avx512(n, rows, w, len, dst);
        return;
    case KCPU_ISA_AVX2:
        kcpu_blend_rows_avx2(n, rows, w, len, dst);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    kcpu_blend_rows_scalar(n, rows, w, len, dst);
}

static void resize_task(void *arg, int64_t task, int thread)
{
    const struct resize_job *j = arg;
    const struct k_resize *p = j->p;
    const int64_t in_h = p->axis[0].in, in_w = p->axis[1].in, out_h = p->axis[0].out, out_w = p->axis[1].out;
    const int ny = j->rows.n;
    const bool cols_first = columns_first(p);
    float *blend = j->blend + (size_t)thread * blend_floats(p);
    int64_t cached[4] = {-1, -1, -1, -1};   /* columns first: the input row (of all planes) in each slot */
    const float *src[4];
    int64_t end = kcpu_min64(p->n * out_h, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t s = r / out_h, oy = r % out_h;
        const float *plane = j->x + s * in_h * in_w;
        const int32_t *ay = j->rows.at + oy * ny;
        const float *wy = j->rows.w + oy * ny;
        float *dst = j->y + r * out_w;
        if (cols_first) {
            for (int k = 0; k < ny; k++) {
                int slot = ay[k] % ny;
                src[k] = blend + (size_t)slot * (size_t)out_w;
                if (cached[slot] != s * in_h + ay[k]) {
                    resample_columns(&j->cols, out_w, plane + (int64_t)ay[k] * in_w, blend + (size_t)slot * (size_t)out_w);
                    cached[slot] = s * in_h + ay[k];
                }
            }
            blend_rows(ny, src, wy, out_w, dst);
            continue;
        }
        const float *row = plane + (int64_t)ay[0] * in_w;
        if (ny > 1) {
            for (int k = 0; k < ny; k++)
                src[k] = plane + (int64_t)ay[k] * in_w;
            blend_rows(ny, src, wy, in_w, blend);
            row = blend;
        }
        resample_columns(&j->cols, out_w, row, dst);
    }
}

void kcpu_resize_f32(struct kcpu_threads *th, const struct k_resize *p, const float *x, float *y, void *scratch)
{
    const int n = taps_per_position(p->mode);
    const int64_t taps0 = n * p->axis[0].out, taps1 = n * p->axis[1].out;
    int32_t *at = scratch;
    void *weights = at + taps0 + taps1;
    float *w = weights;
    struct resize_job j = {.p = p, .x = x, .y = y, .blend = w + taps0 + taps1};
    j.rows = (struct taps){n, at, w};
    j.cols = (struct taps){n, at + taps0, w + taps0};
    int64_t rows = p->n * p->axis[0].out;
    if (rows <= 0 || p->axis[1].out <= 0)
        return;
    build_taps(p, &p->axis[0], &j.rows);
    build_taps(p, &p->axis[1], &j.cols);
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / (p->axis[1].out * n));
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), resize_task, &j);
}
