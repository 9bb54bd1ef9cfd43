/* op_binary.c - add (same shapes; model.json) and binary (numpy broadcasting
 * add, sub, mul, div, max, min; ONNX). */
#include <stdlib.h>

#include "runtime/ops/ops_impl.h"

enum rt_status rt_op_q8_prepare_rescale(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                        struct rt_error *err)
{
    if (!(q->mult = malloc(sizeof(*q->mult) * (size_t)s->n_in)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < s->n_in; i++)
        q->mult[i] = rt_q8_mult(g->tensors[s->in[i]].scale / g->tensors[s->out].scale);
    return RT_OK;
}

static enum rt_status add_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                struct rt_error *err)
{
    const struct rt_shape *a = &g->tensors[n->inputs[0]].shape, *b = &g->tensors[n->inputs[1]].shape;
    bool same = a->rank == b->rank;
    for (int i = 1; same && i < a->rank; i++)
        same = a->dims[i] == b->dims[i];
    if (!same)
        return rt_op_node_error(err, n, "inputs must have the same shape");
    *out = *a;
    return RT_OK;
}

const struct rt_op_family rt_family_add = {
    .infer = add_infer,
    .params = rt_op_params_count,
    .at_batch = rt_op_count_at_batch,
    .q8_prepare = rt_op_q8_prepare_rescale,
};

/* binary: the second operand is input 1, or the constant w[RT_W_WEIGHT]
 * (broadcast against each sample); numpy broadcasting of the per-sample dims. */
static enum rt_status binary_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_weight *c = &n->w[RT_W_WEIGHT];
    if (n->n_inputs != (c->data ? 1 : 2))
        return rt_op_node_error(err, n, c->data ? "takes one input" : "takes two inputs");
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_shape *y = c->data ? NULL : &g->tensors[n->inputs[1]].shape;
    int rx = x->rank - 1, ry = y ? y->rank - 1 : c->shape.rank;
    const int64_t *dx = x->dims + 1, *dy = y ? y->dims + 1 : c->shape.dims;
    if ((unsigned)n->a.binary.op >= K_BIN_COUNT)
        return rt_op_node_error(err, n, "unknown binary operation");
    int r = rx > ry ? rx : ry;
    if (r + 1 > RT_MAX_DIMS)
        return rt_op_node_error(err, n, "broadcast result has too many dimensions");
    out->rank = r + 1;
    out->dims[0] = -1;
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - rx) >= 0 ? dx[i - (r - rx)] : 1;
        int64_t b = i - (r - ry) >= 0 ? dy[i - (r - ry)] : 1;
        if (a != b && a != 1 && b != 1)
            return rt_op_node_error(err, n, "operand shapes do not broadcast");
        out->dims[i + 1] = a == 1 ? b : a;
    }
    return RT_OK;
}

/* a is the left operand: input 0, or the constant weight when const_left;
 * b the right one: input 1, the constant, or input 0 when const_left. */
static void binary_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *kp)
{
    const struct rt_node *nd = s->node;
    const struct rt_tensor *y = &g->tensors[s->out], *x = &g->tensors[s->in[0]];
    const struct rt_tensor *x1 = s->n_in > 1 ? &g->tensors[s->in[1]] : NULL;
    const struct rt_shape *c = &nd->w[RT_W_WEIGHT].shape;
    struct k_binary k = {.n = 1, .rank = y->shape.rank - 1, .op = nd->a.binary.op,
                         .a_sample = x->sample_elems, .b_sample = x1 ? x1->sample_elems : 0};
    /* each operand's per-sample dims (a tensor's after its batch dim, all of
     * the constant's), right-aligned against the output's */
    const int64_t *dims[2] = {x->shape.dims + 1, x1 ? x1->shape.dims + 1 : c->dims};
    int rank[2] = {x->shape.rank - 1, x1 ? x1->shape.rank - 1 : c->rank};
    int64_t *stride[2] = {k.a_stride, k.b_stride};
    for (int o = 0; o < 2; o++) {
        int64_t step = 1;
        for (int d = k.rank - 1; d >= 0; d--) {
            int src = d - (k.rank - rank[o]);
            int64_t len = src >= 0 ? dims[o][src] : 1;
            stride[o][d] = len == 1 ? 0 : step;
            step *= len;
        }
    }
    for (int d = 0; d < k.rank; d++)
        k.dims[d] = y->shape.dims[d + 1];
    if (s->n_in == 1 && nd->a.binary.const_left) {
        for (int d = 0; d < k.rank; d++) {
            int64_t t = k.a_stride[d];
            k.a_stride[d] = k.b_stride[d];
            k.b_stride[d] = t;
        }
        k.b_sample = k.a_sample;
        k.a_sample = 0;
    }
    kp->binary = k;
}

static void binary_at_batch(union rt_step_params *k, int batch) { k->binary.n *= batch; }

const struct rt_op_family rt_family_binary = {
    .infer = binary_infer,
    .params = binary_params,
    .at_batch = binary_at_batch,
};
