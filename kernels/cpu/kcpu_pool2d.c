/*
 * kcpu_pool2d.c - max, average and global average pooling on the CPU,
 * parallel over (image, channel) planes. Same semantics as kref_pool.c
 * (padding never wins a max; the average divisor follows PyTorch's
 * count_include_pad rules with the padded input [-pad, size + pad)).
 *
 * The window's valid range is computed per output instead of testing every
 * cell; 2x2 stride-2 unpadded max pooling (LeNet, VGG) has its own loop.
 * Global average pooling sums each plane in vector lanes (kcpu_sum_avx2 /
 * kcpu_sum_avx512): EfficientNet-B0 has 17 of them on planes of 49 to 12,544.
 */
#include <math.h>

#include "kcpu_impl.h"

#define PLANE_WORK 8192  /* output elements per task, at least one plane */

struct pool_job {
    const struct k_pool2d *p;
    const float *x;
    float *y;
    int64_t planes_per_task;
};

static int64_t pool_tasks(struct pool_job *j)
{
    int64_t plane = (int64_t)j->p->oh * j->p->ow;
    j->planes_per_task = kcpu_max64(1, PLANE_WORK / kcpu_max64(1, plane));
    return kcpu_ceil_div((int64_t)j->p->n * j->p->c, j->planes_per_task);
}

static void max_plane_2x2(const struct k_pool2d *p, const float *xp, float *yp)
{
    for (int oh = 0; oh < p->oh; oh++) {
        const float *r0 = xp + (int64_t)(2 * oh) * p->w, *r1 = r0 + p->w;
        float *yr = yp + (int64_t)oh * p->ow;
        for (int64_t ow = 0; ow < p->ow; ow++) {
            float a = r0[2 * ow] > r0[2 * ow + 1] ? r0[2 * ow] : r0[2 * ow + 1];
            float b = r1[2 * ow] > r1[2 * ow + 1] ? r1[2 * ow] : r1[2 * ow + 1];
            yr[ow] = a > b ? a : b;
        }
    }
}

static void max_plane(const struct k_pool2d *p, const float *xp, float *yp)
{
    for (int oh = 0; oh < p->oh; oh++) {
        int h0 = oh * p->stride_h - p->pad_t, klo, khi;
        kcpu_window_clip(h0, p->kh, p->dil_h, p->h, &klo, &khi);
        for (int ow = 0; ow < p->ow; ow++) {
            int w0 = ow * p->stride_w - p->pad_l, jlo, jhi;
            kcpu_window_clip(w0, p->kw, p->dil_w, p->w, &jlo, &jhi);
            float best = -INFINITY;
            for (int ki = klo; ki < khi; ki++) {
                const float *row = xp + (int64_t)(h0 + ki * p->dil_h) * p->w + w0;
                for (int kj = jlo; kj < jhi; kj++)
                    if (row[(int64_t)kj * p->dil_w] > best)
                        best = row[(int64_t)kj * p->dil_w];
            }
            yp[(int64_t)oh * p->ow + ow] = best;
        }
    }
}

static void max_task(void *arg, int64_t task, int thread)
{
    const struct pool_job *j = arg;
    const struct k_pool2d *p = j->p;
    int64_t end = kcpu_min64((int64_t)p->n * p->c, (task + 1) * j->planes_per_task);
    int two_by_two = p->kh == 2 && p->kw == 2 && p->stride_h == 2 && p->stride_w == 2 &&
                     p->pad_t == 0 && p->pad_l == 0 && p->dil_h == 1 && p->dil_w == 1 &&
                     2 * p->oh <= p->h && 2 * p->ow <= p->w;
    int rows = kcpu_max_pool_rows_fits(p);
    for (int64_t pl = task * j->planes_per_task; pl < end; pl++) {
        const float *xp = j->x + pl * p->h * p->w;
        float *yp = j->y + pl * p->oh * p->ow;
        if (two_by_two && kcpu_isa() == KCPU_ISA_AVX512)
            kcpu_max_pool_2x2_avx512(p, 0, xp, yp);
        else if (two_by_two)
            max_plane_2x2(p, xp, yp);
        else if (rows)
            kcpu_max_pool_rows(p, 0, xp, yp);
        else
            max_plane(p, xp, yp);
    }
}

void kcpu_max_pool2d_f32(struct kcpu_threads *th, const struct k_pool2d *p,
                         const float *x, float *y)
{
    struct pool_job j = {.p = p, .x = x, .y = y};
    kcpu_threads_run(th, pool_tasks(&j), max_task, &j);
}

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

static void avg_task(void *arg, int64_t task, int thread)
{
    const struct pool_job *j = arg;
    const struct k_pool2d *p = j->p;
    int64_t end = kcpu_min64((int64_t)p->n * p->c, (task + 1) * j->planes_per_task);
    for (int64_t pl = task * j->planes_per_task; pl < end; pl++) {
        const float *xp = j->x + pl * p->h * p->w;
        float *yp = j->y + pl * p->oh * p->ow;
        for (int oh = 0; oh < p->oh; oh++) {
            int h0 = oh * p->stride_h - p->pad_t;
            int h1 = imin(h0 + p->kh, p->h + p->pad_t);
            int rows = h1 - h0;
            h0 = imax(h0, 0);
            h1 = imin(h1, p->h);
            for (int ow = 0; ow < p->ow; ow++) {
                int w0 = ow * p->stride_w - p->pad_l;
                int w1 = imin(w0 + p->kw, p->w + p->pad_l);
                int padded_cells = rows * (w1 - w0);
                w0 = imax(w0, 0);
                w1 = imin(w1, p->w);
                float sum = 0;
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++)
                        sum += xp[(int64_t)ih * p->w + iw];
                int cells = p->count_include_pad ? padded_cells : (h1 - h0) * (w1 - w0);
                yp[(int64_t)oh * p->ow + ow] = cells > 0 ? sum / (float)cells : 0.0f;
            }
        }
    }
}

void kcpu_avg_pool2d_f32(struct kcpu_threads *th, const struct k_pool2d *p,
                         const float *x, float *y)
{
    struct pool_job j = {.p = p, .x = x, .y = y};
    kcpu_threads_run(th, pool_tasks(&j), avg_task, &j);
}

struct gap_job {
    int64_t planes, hw, planes_per_task;
    const float *x;
    float *y;
    enum kcpu_isa isa;   /* read once a call */
};

/* Four partial sums: shorter dependency chains and less rounding. */
static float sum_scalar(int64_t count, const float *x)
{
    float s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= count; i += 4)
        for (int t = 0; t < 4; t++)
            s[t] += x[i + t];
    for (; i < count; i++)
        s[0] += x[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static void gap_task(void *arg, int64_t task, int thread)
{
    const struct gap_job *j = arg;
    int64_t end = kcpu_min64(j->planes, (task + 1) * j->planes_per_task);
    for (int64_t pl = task * j->planes_per_task; pl < end; pl++) {
        const float *xp = j->x + pl * j->hw;
        float sum = j->isa == KCPU_ISA_AVX512 ? kcpu_sum_avx512(j->hw, xp)
                    : j->isa == KCPU_ISA_AVX2 ? kcpu_sum_avx2(j->hw, xp)
                                              : sum_scalar(j->hw, xp);
        j->y[pl] = sum / (float)j->hw;
    }
}

void kcpu_global_avg_pool_f32(struct kcpu_threads *th, int n, int c, int64_t hw,
                              const float *x, float *y)
{
    struct gap_job j = {.planes = (int64_t)n * c, .hw = hw, .x = x, .y = y,
                        .planes_per_task = kcpu_max64(1, (int64_t)16 * PLANE_WORK / kcpu_max64(1, hw)),
                        .isa = kcpu_isa()};
    kcpu_threads_run(th, kcpu_ceil_div(j.planes, j.planes_per_task), gap_task, &j);
}
