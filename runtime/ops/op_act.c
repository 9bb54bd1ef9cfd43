/* op_act.c - the element-wise activations (relu, relu6, sigmoid, tanh,
 * gelu): one family, the function applied is the table's act; and unary,
 * ONNX's other functions of one operand (abs, exp, elu, leaky_relu, ...),
 * the function named by the node's attributes. */
#include <cjson/cJSON.h>
#include <string.h>

#include "runtime/ops/ops_impl.h"

enum rt_status rt_op_infer_same(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                struct rt_error *err)
{
    (void)err;
    *out = g->tensors[n->inputs[0]].shape;
    return RT_OK;
}

/* INT8: a 256-entry table from input to output code. */
static enum rt_status act_q8_prepare(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                     struct rt_error *err)
{
    (void)err;
    rt_q8_lut(s->act, g->tensors[s->in[0]].scale, g->tensors[s->out].scale, q->lut);
    return RT_OK;
}

const struct rt_op_family rt_family_act = {
    .infer = rt_op_infer_same,
    .params = rt_op_params_count,
    .at_batch = rt_op_count_at_batch,
    .q8_prepare = act_q8_prepare,
};

/* gelu: approximate "none" (erf) or "tanh". */
static bool gelu_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    const cJSON *ap = rt_attrs_item(at, "approximate");
    if (ap && !(cJSON_IsString(ap) &&
                (strcmp(ap->valuestring, "none") == 0 || strcmp(ap->valuestring, "tanh") == 0)))
        return rt_attrs_fail(at, "'approximate' must be \"none\" or \"tanh\"");
    n->a.gelu_tanh = ap && strcmp(ap->valuestring, "tanh") == 0;
    return true;
}

static bool gelu_write_attrs(const struct rt_node *n, cJSON *a)
{
    return cJSON_AddStringToObject(a, "approximate", n->a.gelu_tanh ? "tanh" : "none") != NULL;
}

const struct rt_op_family rt_family_gelu = {
    .infer = rt_op_infer_same,
    .params = rt_op_params_count,
    .at_batch = rt_op_count_at_batch,
    .read_attrs = gelu_read_attrs,
    .write_attrs = gelu_write_attrs,
    .q8_prepare = act_q8_prepare,
};

static enum rt_status unary_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                  struct rt_error *err)
{
    if ((unsigned)n->a.unary.op >= K_UN_COUNT)
        return rt_op_node_error(err, n, "unknown unary function");
    return rt_op_infer_same(g, n, out, err);
}

static void unary_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_unary_attrs *a = &s->node->a.unary;
    k->unary = (struct k_unary){g->tensors[s->out].sample_elems, a->op, a->alpha, a->beta};
}

static void unary_at_batch(union rt_step_params *k, int batch) { k->unary.count *= batch; }

const struct rt_op_family rt_family_unary = {
    .infer = unary_infer,
    .params = unary_params,
    .at_batch = unary_at_batch,
};

enum k_act rt_node_act(const struct rt_node *n)
{
    enum k_act act = rt_op_info(n->op)->act;
    return act == K_ACT_GELU && n->a.gelu_tanh ? K_ACT_GELU_TANH : act;
}
