/*
 * kcpu_reduce.c - reductions over one axis run on the CPU (k_reduce: ONNX
 * ReduceSum, ReduceMean, ...). Outer rows in parallel; within a row, up to
 * INNER_BLOCK outputs at a time, their accumulators (double, as the
 * reference's) updated input row by input row, so x is read in order
 * whatever the inner size. These ops come from ONNX graphs; kref_reduce.c
 * is their oracle.
 */
#include <math.h>

#include "kcpu_impl.h"

#define INNER_BLOCK 256

struct reduce_job {
    const struct k_reduce *p;
    const float *x;
    float *y;
    int64_t rows_per_task;
};

/* acc[i] folded with v, op's way (max and min keep a NaN once seen). */
static inline double fold(enum k_redop op, double acc, double v, double top)
{
    switch (op) {
    case K_RED_MAX: return acc != acc || v != v ? acc + v : v > acc ? v : acc;
    case K_RED_MIN: return acc != acc || v != v ? acc + v : v < acc ? v : acc;
    case K_RED_PROD: return acc * v;
    case K_RED_L1: return acc + fabs(v);
    case K_RED_L2:
    case K_RED_SUM_SQUARE: return acc + v * v;
    case K_RED_LOG_SUM_EXP: return acc + exp(v - top);
    default: return acc + v;
    }
}

static double finish(enum k_redop op, double acc, double top, int64_t len)
{
    switch (op) {
    case K_RED_MEAN: return acc / (double)len;
    case K_RED_L2: return sqrt(acc);
    case K_RED_LOG_SUM: return log(acc);
    case K_RED_LOG_SUM_EXP: return top + log(acc);
    default: return acc;
    }
}

/* Outputs i0 .. i0 + n - 1 of outer row x (its [len][inner] block). */
static void block(const struct k_reduce *p, const float *x, int64_t i0, int64_t n, float *y)
{
    double acc[INNER_BLOCK], top[INNER_BLOCK];
    const double start = p->op == K_RED_MAX ? -INFINITY : p->op == K_RED_MIN ? INFINITY : p->op == K_RED_PROD ? 1 : 0;
    for (int64_t i = 0; i < n; i++) {
        acc[i] = start;
        top[i] = 0;
    }
    if (p->op == K_RED_LOG_SUM_EXP) {   /* each output's largest input first: e^(x - top) cannot overflow */
        for (int64_t i = 0; i < n; i++)
            top[i] = -INFINITY;
        for (int64_t k = 0; k < p->len; k++)
            for (int64_t i = 0; i < n; i++)
                top[i] = fmax(top[i], x[k * p->inner + i0 + i]);
        for (int64_t i = 0; i < n; i++)
            top[i] = isfinite(top[i]) ? top[i] : 0;
    }
    for (int64_t k = 0; k < p->len; k++) {
        const float *row = x + k * p->inner + i0;
        for (int64_t i = 0; i < n; i++)
            acc[i] = fold(p->op, acc[i], row[i], top[i]);
    }
    for (int64_t i = 0; i < n; i++)
        y[i0 + i] = (float)finish(p->op, acc[i], top[i], p->len);
}

static void reduce_task(void *arg, int64_t task, int thread)
{
    const struct reduce_job *j = arg;
    const struct k_reduce *p = j->p;
    int64_t end = kcpu_min64(p->outer, (task + 1) * j->rows_per_task);
    for (int64_t o = task * j->rows_per_task; o < end; o++)
        for (int64_t i0 = 0; i0 < p->inner; i0 += INNER_BLOCK)
            block(p, j->x + o * p->len * p->inner, i0, kcpu_min64(INNER_BLOCK, p->inner - i0), j->y + o * p->inner);
}

void kcpu_reduce_f32(struct kcpu_threads *th, const struct k_reduce *p, const float *x, float *y)
{
    struct reduce_job j = {.p = p, .x = x, .y = y};
    if (p->outer <= 0 || p->inner <= 0)
        return;
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / kcpu_max64(1, p->len * p->inner));
    kcpu_threads_run(th, kcpu_ceil_div(p->outer, j.rows_per_task), reduce_task, &j);
}
