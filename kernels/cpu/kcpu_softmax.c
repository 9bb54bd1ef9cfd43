/*
 * kcpu_softmax.c - softmax and log-softmax along one axis on the CPU
 * (kcpu.h): rows of the axis split over the threads; max-subtracted,
 * summed in double. A softmax along the last axis (attention's, a
 * classifier's) runs vectorised per ISA (softmax_avx2.c,
 * softmax_avx512.c: a vector exp, summed in float lanes).
 */
#include <math.h>

#include "kcpu_impl.h"

struct softmax_job {
    const struct k_softmax *p;
    const float *x;
    float *y;
    int64_t rows_per_task;     /* (outer, inner) positions per task */
};

/* One log-softmax along the axis at stride `inner`; y may equal x. */
static void log_softmax_row(int64_t len, int64_t stride, const float *x, float *y)
{
    float mx = -INFINITY;
    for (int64_t a = 0; a < len; a++)
        mx = fmaxf(mx, x[a * stride]);
    double sum = 0;
    for (int64_t a = 0; a < len; a++)
        sum += expf(x[a * stride] - mx);
    // cppcheck-suppress invalidFunctionArg ; sum >= 1: the largest element adds e^0
    float shift = mx + (float)log(sum);
    for (int64_t a = 0; a < len; a++)
        y[a * stride] = x[a * stride] - shift;
}

/* One softmax along the axis at stride `inner`; y may equal x. */
static void softmax_row(int64_t len, int64_t stride, const float *x, float *y)
{
    float mx = -INFINITY;
    for (int64_t a = 0; a < len; a++)
        mx = fmaxf(mx, x[a * stride]);
    double sum = 0;
    for (int64_t a = 0; a < len; a++) {
        float e = expf(x[a * stride] - mx);
        y[a * stride] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int64_t a = 0; a < len; a++)
        y[a * stride] *= inv;
}

static void softmax_task(void *arg, int64_t task, int thread)
{
    const struct softmax_job *j = arg;
    const struct k_softmax *p = j->p;
    int64_t end = kcpu_min64(p->outer * p->inner, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t o = r / p->inner, in = r % p->inner;
        int64_t base = o * p->axis_len * p->inner + in;
        if (p->inner == 1 && !p->log && kcpu_isa() == KCPU_ISA_AVX512)
            kcpu_softmax_row_avx512(p->axis_len, j->x + base, j->y + base);
        else if (p->inner == 1 && !p->log && kcpu_isa() == KCPU_ISA_AVX2)
            kcpu_softmax_row_avx2(p->axis_len, j->x + base, j->y + base);
        else
            (p->log ? log_softmax_row : softmax_row)(p->axis_len, p->inner, j->x + base, j->y + base);
    }
}

void kcpu_softmax_f32(struct kcpu_threads *th, const struct k_softmax *p,
                      const float *x, float *y)
{
    struct softmax_job j = {.p = p, .x = x, .y = y,
                            .rows_per_task = kcpu_max64(1, KCPU_CHUNK / kcpu_max64(1, p->axis_len))};
    kcpu_threads_run(th, kcpu_ceil_div(p->outer * p->inner, j.rows_per_task), softmax_task, &j);
}
