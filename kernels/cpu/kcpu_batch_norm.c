/*
 * kcpu_batch_norm.c - batch normalisation whose scale, bias, mean and
 * variance are run-time tensors (ONNX graphs that compute them; kcpu.h).
 * Batch norms with constant parameters are folded at load or run as
 * kcpu_channel_affine_f32. One task per (sample, channel) plane.
 */
#include <math.h>

#include "kcpu.h"

struct bn_job {
    const struct k_batch_norm *p;
    const float *x, *scale, *bias, *mean, *var;
    float *y;
};

static void bn_channel(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct bn_job *j = arg;
    const struct k_batch_norm *p = j->p;
    int64_t ch = task % p->c, s = task / (p->c * p->in_n);
    int64_t pc = s * p->c + ch;
    float mu = j->mean[pc], sc = j->scale[pc], bi = j->bias[pc];
    float den = sqrtf(j->var[pc] + p->eps);
    const float *x = j->x + task * p->inner;
    float *y = j->y + task * p->inner;
    for (int64_t e = 0; e < p->inner; e++)
        y[e] = (x[e] - mu) / den * sc + bi;
}

void kcpu_batch_norm_f32(struct kcpu_threads *th, const struct k_batch_norm *p, const float *x, const float *scale,
                         const float *bias, const float *mean, const float *var, float *y)
{
    struct bn_job j = {p, x, scale, bias, mean, var, y};
    kcpu_threads_run(th, (int64_t)p->n * p->in_n * p->c, bn_channel, &j);
}
