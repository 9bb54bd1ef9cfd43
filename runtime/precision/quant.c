/*
 * quant.c - the numbers every backend derives at load for an INT8 step
 * (see precision/quant.h): fixed-point multipliers, int32 biases, activation
 * tables, per-channel dequantisation scales. Computed in double on the host
 * once, so CPU and CUDA run from identical integers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/kref.h"
#include "runtime/ops/ops_impl.h"
#include "runtime/precision/quant.h"

struct k_q8_mult rt_q8_mult(double M)
{
    struct k_q8_mult q = {0, 62};
    if (!(M > 0) || !isfinite(M))
        return q;
    int e;
    double f = frexp(M, &e);                      /* M = f * 2^e, f in [0.5, 1) */
    long long m = llround(ldexp(f, 31));          /* exact product, rounded half away */
    if (m == (1LL << 31)) {
        m = 1LL << 30;
        e++;
    }
    int shift = 31 - e;
    if (shift > 62)                               /* |x * M| < 1/2 for every int32 x */
        return q;
    if (shift < 1) {                              /* M >= 2^30: saturates all the same */
        shift = 1;
        m = (1LL << 31) - 1;
    }
    q.m = (int32_t)m;
    q.shift = shift;
    return q;
}

int32_t rt_q8_bias(double bias, double acc_scale)
{
    double v = round(bias / acc_scale);
    if (!(v > -K_Q8_BIAS_MAX))
        return v != v ? 0 : -K_Q8_BIAS_MAX;
    return v > K_Q8_BIAS_MAX ? K_Q8_BIAS_MAX : (int32_t)v;
}

int32_t rt_q8_round(double v, double scale)
{
    double q = round(v / scale);
    return (int32_t)(q != q ? 0 : q < K_Q8_MIN ? K_Q8_MIN : q > K_Q8_MAX ? K_Q8_MAX : q);
}

void rt_q8_lut(enum k_act act, double s_in, double s_out, int8_t lut[256])
{
    for (int q = -128; q < 128; q++)
        lut[q + 128] = (int8_t)rt_q8_round(kref_act_f64(act, q * s_in), s_out);
}

void rt_q8_quantize_weights(const float *w, int64_t oc, int64_t per_oc, int8_t *q, float *scale)
{
    for (int64_t o = 0; o < oc; o++) {
        const float *row = w + o * per_oc;
        double top = 0;
        for (int64_t k = 0; k < per_oc; k++)
            top = fmax(top, fabs((double)row[k]));
        float s = (float)(top / 127.0);
        scale[o] = s > 0 ? s : 1.0f;   /* an all-zero (or all-denormal) row quantises to zeros */
        for (int64_t k = 0; k < per_oc; k++)
            q[o * per_oc + k] = (int8_t)rt_q8_round(row[k], scale[o]);
    }
}

void rt_q8_step_free(struct rt_q8_step *q)
{
    free(q->bias);
    free(q->mult);
    free(q->chan_scale);
    memset(q, 0, sizeof(*q));
}

enum rt_status rt_q8_step_prepare(const struct rt_plan *p, const struct rt_step *s, struct rt_q8_step *q,
                                  struct rt_error *err)
{
    memset(q, 0, sizeof(*q));
    const struct rt_op_family *f = rt_op_info(s->op)->family;
    enum rt_status st = f->q8_prepare ? f->q8_prepare(p->g, s, q, err) : RT_OK;
    if (st != RT_OK)
        rt_q8_step_free(q);
    return st;
}
