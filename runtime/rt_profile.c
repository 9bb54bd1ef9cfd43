/*
 * rt_profile.c - what a plan step is and what it costs (rt_model_step_desc):
 * its op, the work fused into it, its shapes, the backend's kernel, its
 * arithmetic and its least memory traffic. The timing itself belongs to the
 * executor (rt_model.c) and the backends.
 */
#include <string.h>

#include "runtime/backend/backend.h"
#include "runtime/ops/ops_impl.h"
#include "runtime/rt_model_impl.h"

/* The op that applies act alone, by name ("relu"), for epilogues. */
static const char *act_name(enum k_act act)
{
    if (act == K_ACT_GELU_TANH)
        return "gelu_tanh";   /* gelu's tanh form has no op of its own */
    for (int op = 0; op < RT_OP_COUNT; op++) {
        if (rt_op_has((enum rt_op)op, RT_T_ACT) && rt_op_info((enum rt_op)op)->act == act)
            return rt_op_name((enum rt_op)op);
    }
    return "?";
}

/* "bias+add+relu": what a GEMM step does after its products. */
static void epilogue(const struct rt_step *s, char *out, size_t cap)
{
    out[0] = '\0';
    if (!rt_op_has(s->op, RT_T_GEMM))
        return;
    const char *parts[5];
    int n = 0;
    if (s->node->w[RT_W_BIAS].data)
        parts[n++] = "bias";
    if (s->residual >= 0)
        parts[n++] = "add";
    if (s->act != K_ACT_NONE)
        parts[n++] = act_name(s->act);
    if (s->q8)
        parts[n++] = "requant";
    if (s->chain)
        parts[n++] = "dw3x3";
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "+" : "", parts[i]);
}

/* Bytes of one element of tensor t where the backend keeps it: FP16 models
 * store FP32 graph tensors as half on a GPU (the CPU emulates in FP32; the
 * figure is the least traffic, so the smaller). */
static double elem_bytes(const struct rt_plan *p, int t)
{
    enum rt_dtype dt = p->g->tensors[t].dtype;
    bool fp16 = p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    return fp16 && dt == RT_DTYPE_F32 ? 2.0 : (double)rt_dtype_size(dt);
}

static double tensor_bytes(const struct rt_plan *p, int t, int batch)
{
    return (double)p->g->tensors[t].sample_elems * batch * elem_bytes(p, t);
}

static struct rt_shape shape_at(const struct rt_plan *p, int t, int batch)
{
    struct rt_shape s = p->g->tensors[t].shape;
    s.dims[0] = batch;
    return s;
}

enum rt_status rt_model_step_desc(const struct rt_model *m, int step, int batch, struct rt_step_desc *out,
                                  struct rt_error *err)
{
    const struct rt_plan *p = rt_model_plan(m);
    if (step < 0 || step >= p->n_steps)
        return rt_error_set(err, RT_ERR_INVALID, "step %d outside [0, %d)", step, p->n_steps);
    if (batch < 1 || batch > rt_model_config(m)->max_batch_size)
        return rt_error_set(err, RT_ERR_INVALID, "batch size %d outside [1, %d]", batch,
                            rt_model_config(m)->max_batch_size);
    const struct rt_step *s = &p->steps[step];
    memset(out, 0, sizeof(*out));
    out->name = s->node->name;
    out->op = rt_op_name(s->op);
    epilogue(s, out->epilogue, sizeof(out->epilogue));
    struct rt_backend *b = rt_model_backend(m);
    if (b->iface->describe_step)
        b->iface->describe_step(b, p, s, batch, out->kernel, sizeof(out->kernel));

    out->n_in = s->n_in;
    out->bytes = tensor_bytes(p, s->out, batch) + rt_step_weight_bytes(p, s);
    for (int k = 0; k < s->n_in; k++) {
        if (k < RT_STEP_SHAPES)
            out->in[k] = shape_at(p, s->in[k], batch);
        out->bytes += tensor_bytes(p, s->in[k], batch);
    }
    if (s->residual >= 0)
        out->bytes += tensor_bytes(p, s->residual, batch);
    out->out = shape_at(p, s->out, batch);

    union rt_step_params k = rt_step_params(s, batch);
    const struct rt_op_family *f = rt_op_info(s->op)->family;
    out->flops = f->flops ? f->flops(s, &k, batch) : (double)p->g->tensors[s->out].sample_elems * batch;
    return RT_OK;
}
