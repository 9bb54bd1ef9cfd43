/*
 * kcpu_concat.c - concatenation along one axis on the CPU (kcpu.h): one
 * memcpy per input and outer position, outer positions split over the threads.
 */
#include <string.h>

#include "kcpu_impl.h"

struct concat_job {
    const struct k_concat *p;
    const float *const *inputs;
    const int64_t *lens;
    int64_t total;             /* sum of lens */
    float *y;
    int64_t outer_per_task;
};

static void concat_task(void *arg, int64_t task, int thread)
{
    const struct concat_job *j = arg;
    const struct k_concat *p = j->p;
    int64_t end = kcpu_min64(p->outer, (task + 1) * j->outer_per_task);
    for (int64_t o = task * j->outer_per_task; o < end; o++) {
        int64_t at = 0;
        for (int i = 0; i < p->count; i++) {
            int64_t run = j->lens[i] * p->inner;
            memcpy(j->y + (o * j->total + at) * p->inner, j->inputs[i] + o * run,
                   (size_t)run * sizeof(float));
            at += j->lens[i];
        }
    }
}

void kcpu_concat_f32(struct kcpu_threads *th, const struct k_concat *p,
                     const float *const *inputs, const int64_t *lens, float *y)
{
    struct concat_job j = {.p = p, .inputs = inputs, .lens = lens, .y = y};
    for (int i = 0; i < p->count; i++)
        j.total += lens[i];
    j.outer_per_task = kcpu_max64(1, KCPU_CHUNK / kcpu_max64(1, j.total * p->inner));
    kcpu_threads_run(th, kcpu_ceil_div(p->outer, j.outer_per_task), concat_task, &j);
}
