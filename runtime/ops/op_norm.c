/* op_norm.c - batch_norm (constant parameters, folded or run as a per-channel
 * affine), batch_norm_dyn (parameters computed at run time) and layer_norm. */
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

/* ---- layer_norm: x per-sample [..., normalised dims from a.first]; the
 * optional scale and bias [normalised elements]. */
static int64_t layer_norm_cols(const struct rt_shape *x, int first)
{
    int64_t cols = 1;
    for (int i = first + 1; i < x->rank; i++)
        cols *= x->dims[i];
    return cols;
}

static enum rt_status layer_norm_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                       struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_layer_norm_attrs *a = &n->a.layer_norm;
    if (a->first < 0 || a->first > x->rank - 2)
        return rt_op_node_error(err, n, "normalises dims the input does not have");
    if (!(a->eps >= 0) || !isfinite(a->eps) || (unsigned)a->out > K_LN_INV_STD)
        return rt_op_node_error(err, n, "epsilon must be finite and not negative");
    int64_t cols = layer_norm_cols(x, a->first);
    for (int r = RT_W_WEIGHT; r <= RT_W_BIAS; r++)
        if (n->w[r].data && !rt_op_weight_is(&n->w[r], 1, &cols))
            return rt_op_node_error(err, n, r == RT_W_WEIGHT ? "scale must have one value per normalised element"
                                                             : "bias must have one value per normalised element");
    *out = *x;
    for (int i = a->first + 1; a->out != K_LN_Y && i < x->rank; i++)
        out->dims[i] = 1;
    return RT_OK;
}

static void layer_norm_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *x = &g->tensors[s->in[0]];
    const struct rt_layer_norm_attrs *a = &s->node->a.layer_norm;
    int64_t cols = layer_norm_cols(&x->shape, a->first);
    k->layer_norm = (struct k_layer_norm){x->sample_elems / cols, cols, a->eps, a->out};
}

static void layer_norm_at_batch(union rt_step_params *k, int batch) { k->layer_norm.rows *= batch; }

/* Three passes over the input and the affine: eight operations an element. */
static double layer_norm_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    return 8.0 * (double)k->layer_norm.rows * (double)k->layer_norm.cols;
}

const struct rt_op_family rt_family_layer_norm = {
    .infer = layer_norm_infer,
    .params = layer_norm_params,
    .at_batch = layer_norm_at_batch,
    .flops = layer_norm_flops,
};
