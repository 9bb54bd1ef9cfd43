/*
 * kcpu_layer_norm.c - layer normalisation on the CPU (k_layer_norm): rows
 * split over the threads, each row in three passes: the sum for a first
 * mean m0; the sums of d = x - m0 and of d^2, whose mean c corrects it
 * (m = m0 + c, the variance about m is mean(d^2) - c^2, c being tiny, so
 * without the cancellation of mean(x^2) - m^2); then the output from
 * (x - m0) - c, not x - m: m rounded to a float is off by half an ulp of
 * the mean, which is many of the deviation's ulps when the mean is large
 * against the spread (values 100-101: 1.2e-5 of the output's range), while
 * x - m0 is exact there. The row passes are vectorised per ISA
 * (layer_norm_avx2.c, layer_norm_avx512.c).
 */
#include "kcpu_impl.h"

struct ln_job {
    const struct k_layer_norm *p;
    const float *x, *scale, *bias;
    float *y;
    int64_t rows_per_task;
};

void kcpu_layer_norm_row_scalar(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                                float stats[2])
{
    float sum = 0, dsum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++)
        sum += x[i];
    float mean = sum / (float)n;
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - mean;
        dsum += d;
        sq += d * d;
    }
    float c = dsum / (float)n;
    stats[0] = mean + c;
    stats[1] = 1 / sqrtf(sq / (float)n - c * c + eps);
    for (int64_t i = 0; y && i < n; i++)
        y[i] = (x[i] - mean - c) * stats[1] * (s ? s[i] : 1.0f) + (b ? b[i] : 0.0f);
}

static void ln_task(void *arg, int64_t task, int thread)
{
    const struct ln_job *j = arg;
    const struct k_layer_norm *p = j->p;
    void (*row)(int64_t, float, const float *, const float *, const float *, float *, float *) =
        kcpu_isa() == KCPU_ISA_AVX512 ? kcpu_layer_norm_row_avx512
        : kcpu_isa() == KCPU_ISA_AVX2 ? kcpu_layer_norm_row_avx2
                                      : kcpu_layer_norm_row_scalar;
    int64_t n = p->cols, end = kcpu_min64(p->rows, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        float stats[2];
        row(n, p->eps, j->x + r * n, j->scale, j->bias, p->out == K_LN_Y ? j->y + r * n : NULL, stats);
        if (p->out != K_LN_Y)
            j->y[r] = stats[p->out == K_LN_MEAN ? 0 : 1];
    }
}

void kcpu_layer_norm_f32(struct kcpu_threads *th, const struct k_layer_norm *p, const float *x, const float *scale,
                         const float *bias, float *y)
{
    struct ln_job j = {.p = p, .x = x, .scale = scale, .bias = bias, .y = y,
                       .rows_per_task = kcpu_max64(1, KCPU_CHUNK / kcpu_max64(1, p->cols))};
    kcpu_threads_run(th, kcpu_ceil_div(p->rows, j.rows_per_task), ln_task, &j);
}
