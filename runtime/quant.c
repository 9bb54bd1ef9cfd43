/*
 * quant.c - the numbers every backend derives at load for an INT8 step
 * (see rt_quant.h): fixed-point multipliers, int32 biases, activation
 * tables, per-channel dequantisation scales. Computed in double on the host
 * once, so CPU and CUDA run from identical integers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_quant.h"

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

static double act_f64(enum k_act act, double x)
{
    switch (act) {
    case K_ACT_RELU:
        return x < 0 ? 0 : x;
    case K_ACT_RELU6:
        return x < 0 ? 0 : x > 6 ? 6 : x;
    case K_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case K_ACT_TANH:
        return tanh(x);
    case K_ACT_GELU:
        return 0.5 * x * erfc(-x / sqrt(2.0));
    case K_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    default:
        return x;
    }
}

void rt_q8_lut(enum k_act act, double s_in, double s_out, int8_t lut[256])
{
    for (int q = -128; q < 128; q++)
        lut[q + 128] = (int8_t)rt_q8_round(act_f64(act, q * s_in), s_out);
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

static enum rt_status no_memory(struct rt_q8_step *q, struct rt_error *err)
{
    rt_q8_step_free(q);
    return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
}

static enum rt_status prepare_matmul(const struct rt_plan *p, const struct rt_step *s, struct rt_q8_step *q,
                                     struct rt_error *err)
{
    const struct rt_graph *g = p->g;
    const struct rt_weight *w = &s->node->w[RT_W_WEIGHT], *b = &s->node->w[RT_W_BIAS];
    int64_t oc = w->shape.dims[0];
    double s_in = g->tensors[s->in[0]].scale, s_out = g->tensors[s->out].scale;
    q->bias = malloc(sizeof(int32_t) * (size_t)oc);
    q->mult = malloc(sizeof(struct k_q8_mult) * (size_t)oc);
    if (!q->bias || !q->mult)
        return no_memory(q, err);
    bool i32 = g->tensors[s->out].dtype == RT_DTYPE_I32;
    for (int64_t c = 0; c < oc; c++) {
        double acc_scale = s_in * (double)w->scale[c];
        q->bias[c] = b->data ? rt_q8_bias(b->data[c], acc_scale) : 0;
        q->mult[c] = i32 ? rt_q8_mult(1) : rt_q8_mult(acc_scale / s_out);
    }
    q->epi = (struct k_q8_epilogue){.bias = q->bias, .mult = q->mult, .lo = K_Q8_MIN, .hi = K_Q8_MAX,
                                    .out_i32 = i32};
    if (s->residual >= 0)
        q->epi.res_mult = rt_q8_mult(g->tensors[s->residual].scale / s_out);
    if (s->act == K_ACT_RELU || s->act == K_ACT_RELU6)
        q->epi.lo = 0;
    if (s->act == K_ACT_RELU6)
        q->epi.hi = rt_q8_round(6.0, s_out);
    return RT_OK;
}

enum rt_status rt_q8_step_prepare(const struct rt_plan *p, const struct rt_step *s, struct rt_q8_step *q,
                                  struct rt_error *err)
{
    const struct rt_graph *g = p->g;
    memset(q, 0, sizeof(*q));
    double s_in = g->tensors[s->in[0]].scale, s_out = g->tensors[s->out].scale;
    switch (s->op) {
    case RT_OP_CONV2D:
    case RT_OP_LINEAR:
        return prepare_matmul(p, s, q, err);
    case RT_OP_QUANTIZE:
        q->scale = (float)(1.0 / s_out);
        return RT_OK;
    case RT_OP_DEQUANTIZE: {
        const struct rt_tensor *in = &g->tensors[s->in[0]];
        if (in->dtype == RT_DTYPE_I8) {
            q->scale = (float)s_in;
            return RT_OK;
        }
        /* I32 accumulators of a conv2d / linear: scale s_x * s_w[c] per channel */
        const struct rt_node *mm = &g->nodes[in->producer];
        const struct rt_weight *w = &mm->w[RT_W_WEIGHT];
        double s_x = g->tensors[mm->inputs[0]].scale;
        q->chan_scale = malloc(sizeof(float) * (size_t)w->shape.dims[0]);
        if (!q->chan_scale)
            return no_memory(q, err);
        for (int64_t c = 0; c < w->shape.dims[0]; c++)
            q->chan_scale[c] = (float)(s_x * (double)w->scale[c]);
        return RT_OK;
    }
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
        rt_q8_lut(s->act, s_in, s_out, q->lut);
        return RT_OK;
    case RT_OP_AVG_POOL2D: {
        int cells = s->node->a.pool.kernel[0] * s->node->a.pool.kernel[1];
        if (!(q->mult = calloc((size_t)cells + 1, sizeof(*q->mult))))
            return no_memory(q, err);
        for (int c = 1; c <= cells; c++)
            q->mult[c] = rt_q8_mult(s_in / ((double)c * s_out));
        return RT_OK;
    }
    case RT_OP_GLOBAL_AVG_POOL: {
        const struct rt_shape *x = &g->tensors[s->in[0]].shape;
        if (!(q->mult = malloc(sizeof(*q->mult))))
            return no_memory(q, err);
        q->mult[0] = rt_q8_mult(s_in / ((double)(x->dims[2] * x->dims[3]) * s_out));
        return RT_OK;
    }
    case RT_OP_ADD:
    case RT_OP_CONCAT:
        if (!(q->mult = malloc(sizeof(*q->mult) * (size_t)s->n_in)))
            return no_memory(q, err);
        for (int i = 0; i < s->n_in; i++)
            q->mult[i] = rt_q8_mult(g->tensors[s->in[i]].scale / s_out);
        return RT_OK;
    default:
        return RT_OK;
    }
}
