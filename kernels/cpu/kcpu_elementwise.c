/*
 * kcpu_elementwise.c - activation, add, per-channel affine, softmax and
 * concat on the CPU: simple parallel loops over chunks, with the inner loops
 * vectorised per ISA where the arithmetic is worth it (act, add, affine).
 */
#include <math.h>
#include <string.h>

#include "kcpu_impl.h"

/* Elements per task: large enough to amortise a task claim, small enough
 * that a few tasks exist per thread for mid-sized tensors. */
#define CHUNK 16384

void kcpu_act_scalar(enum k_act act, int64_t count, const float *x, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = kcpu_act1(act, x[i]);
}

static void act_run(enum k_act act, int64_t count, const float *x, float *y)
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
    int64_t i = task * CHUNK;
    act_run(j->act, kcpu_min64(CHUNK, j->count - i), j->a + i, j->y + i);
}

void kcpu_act_f32(struct kcpu_pool *pool, enum k_act act, int64_t count,
                  const float *x, float *y)
{
    if (act == K_ACT_NONE) {
        if (x != y)
            memmove(y, x, (size_t)count * sizeof(float));
        return;
    }
    struct ew_job j = {.act = act, .count = count, .a = x, .y = y};
    kcpu_pool_run(pool, kcpu_ceil_div(count, CHUNK), act_task, &j);
}

static void add_task(void *arg, int64_t task, int thread)
{
    const struct ew_job *j = arg;
    int64_t i = task * CHUNK;
    add_run(kcpu_min64(CHUNK, j->count - i), j->a + i, j->b + i, j->y + i);
}

void kcpu_add_f32(struct kcpu_pool *pool, int64_t count, const float *a,
                  const float *b, float *y)
{
    struct ew_job j = {.count = count, .a = a, .b = b, .y = y};
    kcpu_pool_run(pool, kcpu_ceil_div(count, CHUNK), add_task, &j);
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

void kcpu_channel_affine_f32(struct kcpu_pool *pool,
                             const struct k_channel_affine *p, const float *x,
                             const float *scale, const float *shift, float *y)
{
    struct affine_job j = {.p = p, .x = x, .scale = scale, .shift = shift, .y = y,
                           .planes_per_task = kcpu_max64(1, CHUNK / kcpu_max64(1, p->inner))};
    kcpu_pool_run(pool, kcpu_ceil_div((int64_t)p->n * p->c, j.planes_per_task), affine_task, &j);
}

struct softmax_job {
    const struct k_softmax *p;
    const float *x;
    float *y;
    int64_t rows_per_task;     /* (outer, inner) positions per task */
};

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
        softmax_row(p->axis_len, p->inner, j->x + base, j->y + base);
    }
}

void kcpu_softmax_f32(struct kcpu_pool *pool, const struct k_softmax *p,
                      const float *x, float *y)
{
    struct softmax_job j = {.p = p, .x = x, .y = y,
                            .rows_per_task = kcpu_max64(1, CHUNK / kcpu_max64(1, p->axis_len))};
    kcpu_pool_run(pool, kcpu_ceil_div(p->outer * p->inner, j.rows_per_task), softmax_task, &j);
}

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

void kcpu_concat_f32(struct kcpu_pool *pool, const struct k_concat *p,
                     const float *const *inputs, const int64_t *lens, float *y)
{
    struct concat_job j = {.p = p, .inputs = inputs, .lens = lens, .y = y};
    for (int i = 0; i < p->count; i++)
        j.total += lens[i];
    j.outer_per_task = kcpu_max64(1, CHUNK / kcpu_max64(1, j.total * p->inner));
    kcpu_pool_run(pool, kcpu_ceil_div(p->outer, j.outer_per_task), concat_task, &j);
}
