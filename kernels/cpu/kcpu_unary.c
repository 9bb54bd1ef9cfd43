/*
 * kcpu_unary.c - element-wise functions of one operand (k_unary: ONNX Abs,
 * Exp, Elu, LeakyRelu, ...) on the CPU: chunks of the tensor in parallel,
 * each function a float loop of its own (GCC 12 at -O2 vectorises abs and
 * neg; the rest run scalar, libm's float functions for the transcendental
 * ones). These ops come from ONNX graphs, rarely on a hot path;
 * kref_unary.c, in double, is their oracle.
 */
#include <math.h>

#include "kcpu_impl.h"

struct unary_job {
    const struct k_unary *p;
    const float *x;
    float *y;
};

/* y[i] = expr of v = x[i] over n elements. */
#define LOOP(expr)                          \
    for (int64_t i = 0; i < n; i++) {       \
        const float v = x[i];               \
        y[i] = (expr);                      \
    }

static void run(const struct k_unary *p, int64_t n, const float *x, float *y)
{
    const float a = p->alpha, b = p->beta;
    switch (p->op) {
    case K_UN_ABS: LOOP(fabsf(v)) return;
    case K_UN_NEG: LOOP(-v) return;
    case K_UN_EXP: LOOP(expf(v)) return;
    case K_UN_LOG: LOOP(logf(v)) return;
    case K_UN_SQRT: LOOP(sqrtf(v)) return;
    case K_UN_RECIPROCAL: LOOP(1.0f / v) return;
    case K_UN_FLOOR: LOOP(floorf(v)) return;
    case K_UN_CEIL: LOOP(ceilf(v)) return;
    case K_UN_ERF: LOOP(erff(v)) return;
    case K_UN_SOFTPLUS: LOOP(v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v))) return;
    case K_UN_SOFTSIGN: LOOP(v / (1.0f + fabsf(v))) return;
    case K_UN_ELU: LOOP(v < 0 ? a * expm1f(v) : v) return;
    case K_UN_SELU: LOOP(b * (v <= 0 ? a * expm1f(v) : v)) return;
    case K_UN_CELU: LOOP(v > 0 ? v : a * expm1f(v / a)) return;
    case K_UN_LEAKY_RELU: LOOP(v < 0 ? a * v : v) return;
    case K_UN_HARD_SIGMOID: LOOP(a * v + b < 0 ? 0.0f : a * v + b > 1 ? 1.0f : a * v + b) return;   /* NaN stays */
    case K_UN_THRESHOLDED_RELU: LOOP(v > a ? v : 0.0f) return;
    case K_UN_COUNT: break;
    }
}

static void unary_task(void *arg, int64_t task, int thread)
{
    const struct unary_job *j = arg;
    int64_t first = task * KCPU_CHUNK, n = kcpu_min64(KCPU_CHUNK, j->p->count - first);
    run(j->p, n, j->x + first, j->y + first);
}

void kcpu_unary_f32(struct kcpu_threads *th, const struct k_unary *p, const float *x, float *y)
{
    struct unary_job j = {.p = p, .x = x, .y = y};
    if (p->count > 0)
        kcpu_threads_run(th, kcpu_ceil_div(p->count, KCPU_CHUNK), unary_task, &j);
}
