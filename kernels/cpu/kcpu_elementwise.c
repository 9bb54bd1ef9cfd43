/*
 * kcpu_elementwise.c - activation, add and per-channel affine on the CPU:
 * parallel loops over chunks, the inner loops vectorised per ISA.
 */
#include <string.h>

#include "kcpu_impl.h"

void kcpu_act_scalar(enum k_act act, int64_t count, const float *x, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = kcpu_act1(act, x[i]);
}

void kcpu_act_run(enum k_act act, int64_t count, const float *x, float *y)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        kcpu_act_avx512(act, count, x, y);
        return;
    case KCPU_ISA_AVX2:
        kcpu_act_avx2(act, count, x, y);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    kcpu_act_scalar(act, count, x, y);
}

static void add_run(int64_t count, const float *a, const float *b, float *y)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        kcpu_add_avx512(count, a, b, y);
        return;
    case KCPU_ISA_AVX2:
        kcpu_add_avx2(count, a, b, y);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    for (int64_t i = 0; i < count; i++)
        y[i] = a[i] + b[i];
}

static void affine_run(int64_t count, const float *x, float s, float t, float *y)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        kcpu_affine_avx512(count, x, s, t, y);
        return;
    case KCPU_ISA_AVX2:
        kcpu_affine_avx2(count, x, s, t, y);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    for (int64_t i = 0; i < count; i++)
        y[i] = x[i] * s + t;
}

struct ew_job {
    enum k_act act;
    int64_t count;
    const float *a, *b;
    float *y;
};

static void act_task(void *arg, int64_t task, int thread)
{
    const struct ew_job *j = arg;
    int64_t i = task * KCPU_CHUNK;
    kcpu_act_run(j->act, kcpu_min64(KCPU_CHUNK, j->count - i), j->a + i, j->y + i);
}

void kcpu_act_f32(struct kcpu_threads *th, enum k_act act, int64_t count,
                  const float *x, float *y)
{
    if (act == K_ACT_NONE) {
        if (x != y)
            memmove(y, x, (size_t)count * sizeof(float));
        return;
    }
    struct ew_job j = {.act = act, .count = count, .a = x, .y = y};
    kcpu_threads_run(th, kcpu_ceil_div(count, KCPU_CHUNK), act_task, &j);
}

static void add_task(void *arg, int64_t task, int thread)
{
    const struct ew_job *j = arg;
    int64_t i = task * KCPU_CHUNK;
    add_run(kcpu_min64(KCPU_CHUNK, j->count - i), j->a + i, j->b + i, j->y + i);
}

void kcpu_add_f32(struct kcpu_threads *th, int64_t count, const float *a,
                  const float *b, float *y)
{
    struct ew_job j = {.count = count, .a = a, .b = b, .y = y};
    kcpu_threads_run(th, kcpu_ceil_div(count, KCPU_CHUNK), add_task, &j);
}

struct affine_job {
    const struct k_channel_affine *p;
    const float *x, *scale, *shift;
    float *y;
    int64_t planes_per_task;
};

static void affine_task(void *arg, int64_t task, int thread)
{
    const struct affine_job *j = arg;
    int64_t planes = (int64_t)j->p->n * j->p->c, inner = j->p->inner;
    int64_t end = kcpu_min64(planes, (task + 1) * j->planes_per_task);
    for (int64_t pl = task * j->planes_per_task; pl < end; pl++) {
        int c = (int)(pl % j->p->c);
        affine_run(inner, j->x + pl * inner, j->scale[c], j->shift[c], j->y + pl * inner);
    }
}

void kcpu_channel_affine_f32(struct kcpu_threads *th,
                             const struct k_channel_affine *p, const float *x,
                             const float *scale, const float *shift, float *y)
{
    struct affine_job j = {.p = p, .x = x, .scale = scale, .shift = shift, .y = y,
                           .planes_per_task = kcpu_max64(1, KCPU_CHUNK / kcpu_max64(1, p->inner))};
    kcpu_threads_run(th, kcpu_ceil_div((int64_t)p->n * p->c, j.planes_per_task), affine_task, &j);
}
