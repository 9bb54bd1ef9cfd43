/*
 * kref_unary.c - reference element-wise functions of one operand (ONNX
 * Abs, Exp, Elu, LeakyRelu, ...): each in double from its textbook
 * formula, rounded to float once; the oracle for kcpu_unary.c.
 */
#include <math.h>

#include "kref.h"

static double apply(const struct k_unary *p, double x)
{
    const double a = p->alpha, b = p->beta;
    switch (p->op) {
    case K_UN_ABS: return fabs(x);
    case K_UN_NEG: return -x;
    case K_UN_EXP: return exp(x);
    case K_UN_LOG: return log(x);
    case K_UN_SQRT: return sqrt(x);
    case K_UN_RECIPROCAL: return 1.0 / x;
    case K_UN_FLOOR: return floor(x);
    case K_UN_CEIL: return ceil(x);
    case K_UN_ERF: return erf(x);
    case K_UN_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));   /* no overflow for large x */
    case K_UN_SOFTSIGN: return x / (1.0 + fabs(x));
    case K_UN_ELU: return x < 0 ? a * expm1(x) : x;
    case K_UN_SELU: return b * (x <= 0 ? a * expm1(x) : x);
    case K_UN_CELU: return x > 0 ? x : a * expm1(x / a);
    case K_UN_LEAKY_RELU: return x < 0 ? a * x : x;
    case K_UN_HARD_SIGMOID: {
        double v = a * x + b;
        return v < 0 ? 0.0 : v > 1 ? 1.0 : v;
    }
    case K_UN_THRESHOLDED_RELU: return x > a ? x : 0.0;
    case K_UN_COUNT: break;
    }
    return NAN;
}

void kref_unary_f32(const struct k_unary *p, const float *x, float *y)
{
    for (int64_t i = 0; i < p->count; i++)
        y[i] = (float)apply(p, x[i]);
}
