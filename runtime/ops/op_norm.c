/* op_norm.c - batch_norm (constant parameters, folded or run as a per-channel
 * affine) and batch_norm_dyn (parameters computed at run time). */
#include <cjson/cJSON.h>
#include <math.h>

#include "runtime/ops/ops_impl.h"

/* ---- batch_norm: x [N, C, ...]; weight, bias, running mean and var [C].
 * After rt_graph_finish one left unfolded holds its scale and shift in
 * weight and bias. */

static enum rt_status batch_norm_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                       struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    if (x->rank < 2)
        return rt_op_node_error(err, n, "input needs a channel dimension");
    for (int r = 0; r < RT_W_COUNT; r++) {
        if (!rt_op_weight_is(&n->w[r], 1, &x->dims[1]))
            return rt_op_node_error(err, n, "parameters must be [C] with C the input channels");
    }
    *out = *x;
    return RT_OK;
}

static void batch_norm_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *x = &g->tensors[s->in[0]];
    k->affine = (struct k_channel_affine){.n = 1, .c = (int)x->shape.dims[1],
                                          .inner = x->sample_elems / x->shape.dims[1]};
}

static void batch_norm_at_batch(union rt_step_params *k, int batch) { k->affine.n *= batch; }

static bool batch_norm_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    const cJSON *eps = rt_attrs_item(at, "eps");
    n->a.eps = 1e-5f;
    if (eps && (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !isfinite(eps->valuedouble)))
        return rt_attrs_fail(at, "'eps' must be a positive number");
    if (eps)
        n->a.eps = (float)eps->valuedouble;
    return true;
}

/* A batch norm left standalone by folding is written with mean 0, var 1 and
 * an eps too small to change 1 + eps (model_write.c). */
static bool batch_norm_write_attrs(const struct rt_node *n, cJSON *a)
{
    return cJSON_AddNumberToObject(a, "eps", n->w[RT_W_MEAN].data ? n->a.eps : 1e-30) != NULL;
}

static const struct rt_weight_key BATCH_NORM_WEIGHTS[] = {
    {"weight", RT_W_WEIGHT, true},
    {"bias", RT_W_BIAS, true},
    {"running_mean", RT_W_MEAN, true},
    {"running_var", RT_W_VAR, true},
    {NULL, 0, false},
};

const struct rt_op_family rt_family_batch_norm = {
    .infer = batch_norm_infer,
    .params = batch_norm_params,
    .at_batch = batch_norm_at_batch,
    .weights = BATCH_NORM_WEIGHTS,
    .read_attrs = batch_norm_read_attrs,
    .write_attrs = batch_norm_write_attrs,
};

/* ---- batch_norm_dyn: x per-sample [N, C, ...]; scale, bias, mean, var
 * inputs 1-4, per-sample [C]; eps in a.eps */

static enum rt_status batch_norm_dyn_infer(const struct rt_graph *g, const struct rt_node *n,
                                           struct rt_shape *out, struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    if (x->rank < 3)
        return rt_op_node_error(err, n, "input must be per-sample [N, C, ...]");
    for (int k = 1; k < 5; k++) {
        const struct rt_shape *p = &g->tensors[n->inputs[k]].shape;
        if (p->rank != 2 || p->dims[1] != x->dims[2])
            return rt_op_node_error(err, n, "parameters must be per-sample [C] with C the input channels");
    }
    *out = *x;
    return RT_OK;
}

static void batch_norm_dyn_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *x = &g->tensors[s->in[0]];
    int64_t in_n = x->shape.dims[1], c = x->shape.dims[2];
    k->bn = (struct k_batch_norm){.n = 1, .in_n = in_n, .c = c, .inner = x->sample_elems / (in_n * c),
                                  .eps = s->node->a.eps};
}

static void batch_norm_dyn_at_batch(union rt_step_params *k, int batch) { k->bn.n *= batch; }

const struct rt_op_family rt_family_batch_norm_dyn = {
    .infer = batch_norm_dyn_infer,
    .params = batch_norm_dyn_params,
    .at_batch = batch_norm_dyn_at_batch,
};
