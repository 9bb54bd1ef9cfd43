/* op_layout.c - ops that move elements without computing: flatten and
 * reshape (views of their input, no step), concat, transpose, slice and
 * pad. */
#include <cjson/cJSON.h>

#include "runtime/ops/ops_impl.h"

/* ---- flatten: [N, ...] -> [N, product] */

static enum rt_status flatten_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                    struct rt_error *err)
{
    (void)err;
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    int64_t p = 1;
    for (int i = 1; i < x->rank; i++)
        p *= x->dims[i];
    *out = (struct rt_shape){2, {-1, p}};
    return RT_OK;
}

static bool flatten_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    (void)n;
    int start;
    return rt_attrs_int(at, "start_dim", 1, 1, 1, &start);
}

const struct rt_op_family rt_family_flatten = {
    .infer = flatten_infer,
    .read_attrs = flatten_read_attrs,
};

/* ---- reshape: dims after the batch in a.reshape, at most one -1 */

static enum rt_status reshape_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                    struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape, *r = &n->a.reshape;
    int64_t total = 1, known = 1;
    int unknown = -1;
    for (int i = 1; i < x->rank; i++)
        total *= x->dims[i];
    for (int i = 0; i < r->rank; i++) {
        if (r->dims[i] == -1) {
            if (unknown >= 0)
                return rt_op_node_error(err, n, "at most one -1 in 'shape'");
            unknown = i;
        } else if (__builtin_mul_overflow(known, r->dims[i], &known)) {
            return rt_op_node_error(err, n, "'shape' overflows");
        }
    }
    if ((unknown >= 0 && total % known != 0) || (unknown < 0 && known != total))
        return rt_op_node_error(err, n, "'shape' does not match the input's element count");
    out->rank = r->rank + 1;
    out->dims[0] = -1;
    for (int i = 0; i < r->rank; i++)
        out->dims[i + 1] = i == unknown ? total / known : r->dims[i];
    return RT_OK;
}

static bool reshape_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    const cJSON *shape = rt_attrs_item(at, "shape");
    int rank = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : 0;
    if (rank < 1 || rank > RT_MAX_DIMS - 1)
        return rt_attrs_fail(at, "'shape' must list 1 to 7 dims after the batch");
    if (rt_attrs_i64s(at, "shape", RT_MAX_DIMS - 1, -1, 1000000000, n->a.reshape.dims) != rank)
        return rt_attrs_fail(at, "'shape' dims must be positive or -1");
    for (int k = 0; k < rank; k++)
        if (n->a.reshape.dims[k] == 0)
            return rt_attrs_fail(at, "'shape' dims must be positive or -1");
    n->a.reshape.rank = rank;
    return true;
}

static bool reshape_write_attrs(const struct rt_node *n, cJSON *a)
{
    cJSON *shape = cJSON_AddArrayToObject(a, "shape");
    bool ok = shape != NULL;
    for (int i = 0; ok && i < n->a.reshape.rank; i++)
        ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)n->a.reshape.dims[i]));
    return ok;
}

const struct rt_op_family rt_family_reshape = {
    .infer = reshape_infer,
    .read_attrs = reshape_read_attrs,
    .write_attrs = reshape_write_attrs,
};

/* ---- concat along a non-batch axis (a.axis, normalised >= 1) */

static enum rt_status concat_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    int axis = n->a.axis < 0 ? n->a.axis + x->rank : n->a.axis;
    if (axis < 1 || axis >= x->rank)
        return rt_op_node_error(err, n, "'axis' must name a non-batch dimension");
    *out = *x;
    for (int i = 1; i < n->n_inputs; i++) {
        const struct rt_shape *y = &g->tensors[n->inputs[i]].shape;
        if (y->rank != x->rank)
            return rt_op_node_error(err, n, "inputs must have the same rank");
        for (int d = 1; d < x->rank; d++) {
            if (d != axis && y->dims[d] != x->dims[d])
                return rt_op_node_error(err, n, "inputs differ outside the concat axis");
        }
        out->dims[axis] += y->dims[axis];
    }
    return RT_OK;
}

static void concat_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    int64_t len;
    rt_op_axis_split(&g->tensors[s->out].shape, s->node->a.axis, &k->concat.k.outer, &len, &k->concat.k.inner);
    k->concat.k.count = s->n_in;
    for (int i = 0; i < s->n_in; i++) {
        int64_t outer, inner;
        rt_op_axis_split(&g->tensors[s->in[i]].shape, s->node->a.axis, &outer, &k->concat.lens[i], &inner);
    }
}

static void concat_at_batch(union rt_step_params *k, int batch) { k->concat.k.outer *= batch; }

bool rt_op_read_axis(struct rt_attrs *at, struct rt_node *n, int def)
{
    return rt_attrs_int(at, "axis", -RT_MAX_DIMS, RT_MAX_DIMS - 1, def, &n->a.axis);
}

bool rt_op_write_axis(const struct rt_node *n, cJSON *a)
{
    return cJSON_AddNumberToObject(a, "axis", n->a.axis) != NULL;
}

static bool concat_read_attrs(struct rt_attrs *at, struct rt_node *n) { return rt_op_read_axis(at, n, 1); }

const struct rt_op_family rt_family_concat = {
    .infer = concat_infer,
    .params = concat_params,
    .at_batch = concat_at_batch,
    .read_attrs = concat_read_attrs,
    .write_attrs = rt_op_write_axis,
    .q8_prepare = rt_op_q8_prepare_rescale,
};

/* ---- transpose: the dims after the batch permuted by a.perm (ONNX only) */

static enum rt_status transpose_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                      struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    int rank = x->rank - 1;
    bool seen[RT_MAX_DIMS] = {false};
    if (rank > K_BINARY_MAX_DIMS)
        return rt_op_node_error(err, n, "too many dimensions");
    out->rank = x->rank;
    out->dims[0] = -1;
    for (int i = 0; i < rank; i++) {
        int p = n->a.perm[i];
        if (p < 0 || p >= rank || seen[p])
            return rt_op_node_error(err, n, "'perm' is not a permutation of the dims after the batch");
        seen[p] = true;
        out->dims[i + 1] = x->dims[p + 1];
    }
    return RT_OK;
}

static void transpose_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    struct k_transpose t = {.n = 1, .rank = x->rank - 1};
    for (int i = 0; i < t.rank; i++) {
        t.dims[i] = x->dims[i + 1];
        t.perm[i] = s->node->a.perm[i];
    }
    k->transpose = t;
}

static void transpose_at_batch(union rt_step_params *k, int batch) { k->transpose.n *= batch; }

const struct rt_op_family rt_family_transpose = {
    .infer = transpose_infer,
    .params = transpose_params,
    .at_batch = transpose_at_batch,
};

/* ---- slice: a.slice along one dim after the batch (ONNX only) */

static enum rt_status slice_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                  struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_slice_attrs *a = &n->a.slice;
    if (a->axis < 0 || a->axis >= x->rank - 1)
        return rt_op_node_error(err, n, "slices a dim the input does not have");
    int64_t d = x->dims[a->axis + 1], last = a->start + (a->len - 1) * a->step;
    if (a->len < 1 || a->step == 0 || a->start < 0 || a->start >= d || last < 0 || last >= d)
        return rt_op_node_error(err, n, "the slice leaves the input");
    *out = *x;
    out->dims[a->axis + 1] = a->len;
    return RT_OK;
}

static void slice_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    const struct rt_slice_attrs *a = &s->node->a.slice;
    struct k_slice r = {1, x->dims[a->axis + 1], 1, a->start, a->step, a->len};
    for (int i = 1; i < x->rank; i++) {
        if (i - 1 < a->axis)
            r.outer *= x->dims[i];
        else if (i - 1 > a->axis)
            r.inner *= x->dims[i];
    }
    k->slice = r;
}

static void slice_at_batch(union rt_step_params *k, int batch) { k->slice.outer *= batch; }

const struct rt_op_family rt_family_slice = {
    .infer = slice_infer,
    .params = slice_params,
    .at_batch = slice_at_batch,
};

/* ---- pad: a.pad around the dims after the batch (ONNX only) */

static enum rt_status pad_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_pad_attrs *a = &n->a.pad;
    if (x->rank - 1 > K_BINARY_MAX_DIMS || (unsigned)a->mode > K_PAD_REFLECT)
        return rt_op_node_error(err, n, "unknown padding");
    *out = *x;
    for (int d = 0; d < x->rank - 1; d++) {
        int64_t len = x->dims[d + 1];
        /* (a tensor's elements stay under 2^28: the graph's check after this) */
        if (a->begin[d] < 0 || a->end[d] < 0 || a->begin[d] > (1 << 28) || a->end[d] > (1 << 28) ||
            (a->mode == K_PAD_REFLECT && len > 1 && (a->begin[d] >= len || a->end[d] >= len)))
            return rt_op_node_error(err, n, "pads must be non-negative (and below the dim to reflect)");
        out->dims[d + 1] = a->begin[d] + len + a->end[d];
    }
    return RT_OK;
}

static void pad_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    const struct rt_pad_attrs *a = &s->node->a.pad;
    struct k_pad p = {.n = 1, .rank = x->rank - 1, .mode = a->mode, .value = a->value};
    for (int d = 0; d < p.rank; d++) {
        p.dims[d] = x->dims[d + 1];
        p.begin[d] = a->begin[d];
        p.end[d] = a->end[d];
    }
    k->pad = p;
}

static void pad_at_batch(union rt_step_params *k, int batch) { k->pad.n *= batch; }

const struct rt_op_family rt_family_pad = {
    .infer = pad_infer,
    .params = pad_params,
    .at_batch = pad_at_batch,
};
