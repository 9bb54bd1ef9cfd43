/*
 * kref_elementwise.c - reference activations, element-wise add and the
 * per-channel affine: the oracle for the vectorised CPU and CUDA versions.
 */
#include <math.h>

#include "kref.h"

/* Evaluated in double so that the optimised kernels are compared against a
 * value that carries no float rounding of its own beyond the final cast. */
double kref_act_f64(enum k_act act, double x)
{
    switch (act) {
    case K_ACT_NONE:
        return x;
    case K_ACT_RELU:
        return x < 0 ? 0.0 : x;
    case K_ACT_RELU6:
        return x < 0 ? 0.0 : x > 6 ? 6.0 : x;
    case K_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case K_ACT_TANH:
        return tanh(x);
    /* Both GELUs in forms equal to the textbook ones that do not cancel in
     * the negative tail, where 1 + erf and 1 + tanh lose every digit. */
    case K_ACT_GELU: /* x/2 (1 + erf(x / sqrt 2)) */
        return 0.5 * x * erfc(-x / sqrt(2.0));
    case K_ACT_GELU_TANH: { /* x/2 (1 + tanh(u)) == x sigmoid(2u) */
        const double k = sqrt(2.0 / 3.14159265358979323846);
        return x / (1.0 + exp(-2.0 * k * (x + 0.044715 * x * x * x)));
    }
    case K_ACT_HARDSWISH:
        return x * (x + 3 < 0 ? 0.0 : x + 3 > 6 ? 6.0 : x + 3) / 6.0;
    case K_ACT_SILU:
        return x / (1.0 + exp(-x));
    case K_ACT_COUNT:
        break;
    }
    return NAN;
}

float kref_act_f32(enum k_act act, float x) { return (float)kref_act_f64(act, x); }

void kref_act_f32_n(enum k_act act, int64_t count, const float *x, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = kref_act_f32(act, x[i]);
}

void kref_add_f32(int64_t count, const float *a, const float *b, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = (float)((double)a[i] + (double)b[i]);
}

void kref_channel_affine_f32(const struct k_channel_affine *p, const float *x,
                             const float *scale, const float *shift, float *y)
{
    for (int n = 0; n < p->n; n++)
        for (int c = 0; c < p->c; c++) {
            int64_t base = ((int64_t)n * p->c + c) * p->inner;
            for (int64_t i = 0; i < p->inner; i++)
                y[base + i] = (float)((double)x[base + i] * scale[c] + shift[c]);
        }
}
