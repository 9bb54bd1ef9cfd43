/* ops/op_table.c - the op table (ops/op_table.h) and helpers its families share (ops_impl.h). */
#include <cjson/cJSON.h>
#include <string.h>

#include "runtime/ops/ops_impl.h"

static const struct rt_op_info OPS[RT_OP_COUNT] = {
#define RT_OP_ENTRY(op, name, lo, hi, traits, act, family) \
    [RT_OP_##op] = {name, lo, hi, traits, act, &rt_family_##family},
    RT_OP_LIST(RT_OP_ENTRY)
#undef RT_OP_ENTRY
};

const struct rt_op_info *rt_op_info(enum rt_op op) { return &OPS[op]; }

const char *rt_op_name(enum rt_op op) { return (unsigned)op < RT_OP_COUNT ? OPS[op].name : "?"; }

bool rt_op_from_name(const char *name, enum rt_op *out)
{
    for (int i = 0; i < RT_OP_COUNT; i++) {
        if (strcmp(name, OPS[i].name) == 0) {
            *out = (enum rt_op)i;
            return true;
        }
    }
    return false;
}

enum rt_status rt_op_node_error(struct rt_error *err, const struct rt_node *n, const char *what)
{
    return rt_error_set(err, RT_ERR_BAD_MODEL, "node '%s' (%s): %s", n->name, rt_op_name(n->op), what);
}

bool rt_op_weight_is(const struct rt_weight *w, int rank, const int64_t *dims)
{
    if (w->shape.rank != rank)
        return false;
    for (int i = 0; i < rank; i++) {
        if (w->shape.dims[i] != dims[i])
            return false;
    }
    return true;
}

int64_t rt_op_window_out(int64_t in, int pad_a, int pad_b, int k, int dil, int stride, bool ceil_mode)
{
    int64_t span = in + pad_a + pad_b - (int64_t)dil * (k - 1) - 1;
    if (span < 0)
        return 0;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_a)
        out--;
    return out;
}

void rt_op_axis_split(const struct rt_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    if (axis < 0)
        axis += s->rank;
    *outer = 1;
    *inner = 1;
    for (int d = 1; d < axis; d++)
        *outer *= s->dims[d];
    for (int d = axis + 1; d < s->rank; d++)
        *inner *= s->dims[d];
    *len = s->dims[axis];
}

bool rt_op_attach(cJSON *obj, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, key, item))
        return true;
    cJSON_Delete(item);
    return false;
}

void rt_op_params_count(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    k->count = g->tensors[s->out].sample_elems;
}

void rt_op_count_at_batch(union rt_step_params *k, int batch) { k->count *= batch; }
