/*
 * kcpu_slice.c - slice along one axis on the CPU (kcpu.h): each output row
 * of `inner` floats is one contiguous input row, copied; the rows are split
 * over the threads. At step 1 an outer index's len rows are one run (a
 * slice of the last axis, attention's q, k and v out of one projection,
 * is then one copy per row of the input instead of one per element).
 */
#include <string.h>

#include "kcpu_impl.h"

struct slice_job {
    const struct k_slice *p;
    const float *x;
    float *y;
    int64_t rows_per_task;
};

static void slice_task(void *arg, int64_t task, int thread)
{
    const struct slice_job *j = arg;
    const struct k_slice *p = j->p;
    int64_t end = kcpu_min64(p->outer * p->len, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t o = r / p->len, i = r % p->len;
        memcpy(j->y + r * p->inner, j->x + (o * p->in_len + p->start + i * p->step) * p->inner,
               sizeof(float) * (size_t)p->inner);
    }
}

/* Step 1: outer index o's len * inner floats are one run in x and in y. */
static void run_task(void *arg, int64_t task, int thread)
{
    const struct slice_job *j = arg;
    const struct k_slice *p = j->p;
    int64_t run = p->len * p->inner, end = kcpu_min64(p->outer, (task + 1) * j->rows_per_task);
    for (int64_t o = task * j->rows_per_task; o < end; o++)
        memcpy(j->y + o * run, j->x + (o * p->in_len + p->start) * p->inner, sizeof(float) * (size_t)run);
}

void kcpu_slice_f32(struct kcpu_threads *th, const struct k_slice *p, const float *x, float *y)
{
    struct slice_job j = {.p = p, .x = x, .y = y};
    int64_t rows = p->outer * p->len;
    if (rows <= 0 || p->inner <= 0)
        return;
    if (p->step == 1) {   /* an outer index's len rows as one */
        j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / (p->len * p->inner));
        kcpu_threads_run(th, kcpu_ceil_div(p->outer, j.rows_per_task), run_task, &j);
        return;
    }
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / p->inner);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), slice_task, &j);
}
