/*
 * kcpu_transpose.c - axis permutation on the CPU (kcpu.h): the output in
 * rows of its last axis, parallel over rows; a row's first input element
 * is found once, and the row then reads the input at the stride of the
 * axis it came from (1 where the last axis stays last: a plain copy).
 */
#include <string.h>

#include "kcpu_impl.h"

struct transpose_job {
    const struct k_transpose *p;
    const float *x;
    float *y;
    int64_t stride[K_BINARY_MAX_DIMS];   /* the input's, per input axis */
    int64_t per_sample, rows_per_sample, len, rows_per_task;
};

static void transpose_task(void *arg, int64_t task, int thread)
{
    const struct transpose_job *j = arg;
    const struct k_transpose *p = j->p;
    const int last = p->rank - 1;
    const int64_t step = j->stride[p->perm[last]];
    int64_t end = kcpu_min64((int64_t)p->n * j->rows_per_sample, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t s = r / j->rows_per_sample, rest = r % j->rows_per_sample, at = s * j->per_sample;
        for (int d = last - 1; d >= 0; d--) {
            int64_t len = p->dims[p->perm[d]];
            at += rest % len * j->stride[p->perm[d]];
            rest /= len;
        }
        const float *src = j->x + at;
        float *dst = j->y + r * j->len;
        if (step == 1) {
            memcpy(dst, src, sizeof(float) * (size_t)j->len);
        } else {
            for (int64_t i = 0; i < j->len; i++)
                dst[i] = src[i * step];
        }
    }
}

void kcpu_transpose_f32(struct kcpu_threads *th, const struct k_transpose *p, const float *x, float *y)
{
    struct transpose_job j = {.p = p, .x = x, .y = y, .per_sample = 1, .rows_per_sample = 1, .len = 1};
    for (int d = p->rank - 1; d >= 0; d--) {
        j.stride[d] = j.per_sample;
        j.per_sample *= p->dims[d];
    }
    if (p->rank > 0) {
        j.len = p->dims[p->perm[p->rank - 1]];
        j.rows_per_sample = j.len > 0 ? j.per_sample / j.len : 0;
    }
    int64_t rows = (int64_t)p->n * j.rows_per_sample;
    if (rows == 0 || j.len == 0)
        return;
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / j.len);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), transpose_task, &j);
}
