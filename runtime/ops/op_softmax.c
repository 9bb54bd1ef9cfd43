/* op_softmax.c - softmax along a non-batch axis (a.axis), and log_softmax
 * (ONNX LogSoftmax; the same with the log flag). */
#include "runtime/ops/ops_impl.h"

static enum rt_status softmax_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                    struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    int axis = n->a.axis < 0 ? n->a.axis + x->rank : n->a.axis;
    if (axis < 1 || axis >= x->rank)
        return rt_op_node_error(err, n, "'axis' must name a non-batch dimension");
    *out = *x;
    return RT_OK;
}

static void softmax_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    rt_op_axis_split(&g->tensors[s->out].shape, s->node->a.axis, &k->softmax.outer, &k->softmax.axis_len,
                     &k->softmax.inner);
    k->softmax.log = s->op == RT_OP_LOG_SOFTMAX;
}

static void softmax_at_batch(union rt_step_params *k, int batch) { k->softmax.outer *= batch; }

static bool softmax_read_attrs(struct rt_attrs *at, struct rt_node *n) { return rt_op_read_axis(at, n, -1); }

const struct rt_op_family rt_family_softmax = {
    .infer = softmax_infer,
    .params = softmax_params,
    .at_batch = softmax_at_batch,
    .read_attrs = softmax_read_attrs,
    .write_attrs = rt_op_write_axis,
};

const struct rt_op_family rt_family_log_softmax = {
    .infer = softmax_infer,
    .params = softmax_params,
    .at_batch = softmax_at_batch,
};
