/*
 * kref_reduce.c - reference reductions over one axis run (ONNX ReduceSum,
 * ReduceMean, ...): each output element from its len inputs in order, in
 * double, rounded once. The oracle for kcpu_reduce.c.
 */
#include <math.h>

#include "kref.h"

static double reduce(enum k_redop op, const float *x, int64_t len, int64_t step)
{
    if (op == K_RED_MAX || op == K_RED_MIN) {   /* NaN propagates, as numpy's max and min */
        double m = op == K_RED_MAX ? -INFINITY : INFINITY;
        for (int64_t k = 0; k < len; k++) {
            double v = x[k * step];
            if (v != v)
                return v;
            m = op == K_RED_MAX ? (v > m ? v : m) : (v < m ? v : m);
        }
        return m;
    }
    double top = -INFINITY;   /* log_sum_exp: e^(x - top) cannot overflow */
    for (int64_t k = 0; op == K_RED_LOG_SUM_EXP && k < len; k++)
        top = x[k * step] > top ? x[k * step] : top;
    if (op == K_RED_LOG_SUM_EXP && !isfinite(top))
        top = 0;
    double acc = op == K_RED_PROD ? 1.0 : 0.0;
    for (int64_t k = 0; k < len; k++) {
        double v = x[k * step];
        switch (op) {
        case K_RED_PROD: acc *= v; break;
        case K_RED_L1: acc += fabs(v); break;
        case K_RED_L2:
        case K_RED_SUM_SQUARE: acc += v * v; break;
        case K_RED_LOG_SUM_EXP: acc += exp(v - top); break;
        default: acc += v; break;
        }
    }
    switch (op) {
    case K_RED_MEAN: return acc / (double)len;
    case K_RED_L2: return sqrt(acc);
    case K_RED_LOG_SUM: return log(acc);
    case K_RED_LOG_SUM_EXP: return top + log(acc);
    default: return acc;
    }
}

void kref_reduce_f32(const struct k_reduce *p, const float *x, float *y)
{
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->inner; i++)
            y[o * p->inner + i] = (float)reduce(p->op, x + o * p->len * p->inner + i, p->len, p->inner);
}
