/*
 * kref_binary.c - reference element-wise binary ops with numpy broadcasting:
 * every output element is found by walking its index, nothing clever. The
 * arithmetic is done in double and rounded once, so it is the correctly
 * rounded float result the CPU and CUDA versions are held to.
 */
#include <math.h>

#include "kref.h"

static double apply(enum k_binop op, double a, double b)
{
    switch (op) {
    case K_BIN_ADD: return a + b;
    case K_BIN_SUB: return a - b;
    case K_BIN_MUL: return a * b;
    case K_BIN_DIV: return a / b;
    /* NaN propagates, as numpy's maximum / minimum (and ONNX Max / Min) do */
    case K_BIN_MAX: return a != a || b != b ? a + b : a > b ? a : b;
    case K_BIN_MIN: return a != a || b != b ? a + b : a < b ? a : b;
    case K_BIN_PRELU: return a < 0 ? a * b : a;
    case K_BIN_POW: return pow(a, b);
    case K_BIN_COUNT: break;
    }
    return NAN;
}

void kref_binary_f32(const struct k_binary *p, const float *a, const float *b, float *y)
{
    int64_t per_sample = 1;
    for (int d = 0; d < p->rank; d++)
        per_sample *= p->dims[d];
    for (int s = 0; s < p->n; s++) {
        for (int64_t i = 0; i < per_sample; i++) {
            /* split i into per-dim indices, last dim fastest */
            int64_t rest = i, ao = s * p->a_sample, bo = s * p->b_sample;
            for (int d = p->rank - 1; d >= 0; d--) {
                int64_t idx = rest % p->dims[d];
                rest /= p->dims[d];
                ao += idx * p->a_stride[d];
                bo += idx * p->b_stride[d];
            }
            y[s * per_sample + i] = (float)apply(p->op, a[ao], b[bo]);
        }
    }
}
