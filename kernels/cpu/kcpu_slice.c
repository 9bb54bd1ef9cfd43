/*
 * kcpu_slice.c - slice along one axis on the CPU (kcpu.h): each output row
 * of `inner` floats is one contiguous input row, copied; the rows are split
 * over the threads.
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

void kcpu_slice_f32(struct kcpu_threads *th, const struct k_slice *p, const float *x, float *y)
{
    struct slice_job j = {.p = p, .x = x, .y = y};
    int64_t rows = p->outer * p->len;
    if (rows <= 0 || p->inner <= 0)
        return;
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / p->inner);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), slice_task, &j);
}
