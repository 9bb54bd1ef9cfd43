/* op_reduce.c - reduce: a reduction (sum, mean, max, ...) over a run of
 * adjacent dims after the batch (ONNX ReduceSum, ReduceMean, ...). */
#include "runtime/ops/ops_impl.h"

static enum rt_status reduce_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_reduce_attrs *a = &n->a.reduce;
    if ((unsigned)a->op >= K_RED_COUNT)
        return rt_op_node_error(err, n, "unknown reduction");
    if (a->first < 0 || a->count < 1 || a->first + a->count > x->rank - 1)
        return rt_op_node_error(err, n, "reduces dims the input does not have");
    out->rank = 1;
    out->dims[0] = -1;
    for (int i = 1; i < x->rank; i++) {
        bool reduced = i - 1 >= a->first && i - 1 < a->first + a->count;
        if (!reduced || a->keepdims)
            out->dims[out->rank++] = reduced ? 1 : x->dims[i];
    }
    return RT_OK;
}

static void reduce_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    const struct rt_reduce_attrs *a = &s->node->a.reduce;
    struct k_reduce r = {1, 1, 1, a->op};
    for (int i = 1; i < x->rank; i++) {
        int d = i - 1;
        int64_t *part = d < a->first ? &r.outer : d < a->first + a->count ? &r.len : &r.inner;
        *part *= x->dims[i];
    }
    k->reduce = r;
}

static void reduce_at_batch(union rt_step_params *k, int batch) { k->reduce.outer *= batch; }

const struct rt_op_family rt_family_reduce = {
    .infer = reduce_infer,
    .params = reduce_params,
    .at_batch = reduce_at_batch,
};
