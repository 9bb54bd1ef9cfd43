/*
 * onnx_node.c - what every ONNX op converter needs: errors that name the
 * node, typed attribute access, the node's inputs as values, and emitting
 * runtime nodes and tensors (onnx_impl.h).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

static const char *node_name(const struct onnx_ctx *c)
{
    return c->node->name && c->node->name[0] ? c->node->name : "(unnamed)";
}

enum rt_status onnx_fail(struct onnx_ctx *c, enum rt_status s, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);   // NOLINT(clang-analyzer-valist.Uninitialized): started above
    va_end(ap);
    return rt_error_set(c->err, s, "%s: node '%.64s' (%.32s, opset %d): %s", c->label, node_name(c),
                        c->node->op_type, c->opset, what);
}

enum rt_status onnx_needs_whole(struct onnx_ctx *c, const char *what)
{
    c->retry_whole = true;
    return onnx_unsupported(c, "%s, which mixes samples along the first axis; the graph then runs whole, one input "
                               "per sample, and needs fully fixed input shapes", what);
}

/* ------------------------------------------------------------ attributes */

const Onnx__AttributeProto *onnx_attr(struct onnx_ctx *c, const char *name)
{
    for (size_t k = 0; k < c->node->n_attribute; k++) {
        const Onnx__AttributeProto *a = c->node->attribute[k];
        if (a->name && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

/* Old exporters leave `type` unset; the field present decides then. */
static bool attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t, bool present)
{
    return a->type == t || (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED && present);
}

bool onnx_attr_int(struct onnx_ctx *c, const char *name, int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = def;
    if (!a)
        return true;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i)) {
        onnx_bad(c, "attribute '%s' must be an int", name);
        return false;
    }
    *out = a->i;
    return true;
}

bool onnx_attr_float(struct onnx_ctx *c, const char *name, float def, float *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = def;
    if (!a)
        return true;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f)) {
        onnx_bad(c, "attribute '%s' must be a float", name);
        return false;
    }
    *out = a->f;
    return true;
}

bool onnx_attr_ints(struct onnx_ctx *c, const char *name, int64_t *out, int cap, int *n)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *n = 0;
    if (!a)
        return true;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, a->n_ints > 0)) {
        onnx_bad(c, "attribute '%s' must be a list of ints", name);
        return false;
    }
    if (a->n_ints > (size_t)cap) {
        onnx_unsupported(c, "attribute '%s' has %zu values, at most %d are supported", name, a->n_ints, cap);
        return false;
    }
    for (size_t k = 0; k < a->n_ints; k++)
        out[k] = a->ints[k];
    *n = (int)a->n_ints;
    return true;
}

bool onnx_attr_choice(struct onnx_ctx *c, const char *name, const char *const *choices, int n, int def, int *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = def;
    if (!a)
        return true;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, a->has_s)) {
        onnx_bad(c, "attribute '%s' must be a string", name);
        return false;
    }
    for (int k = 0; k < n; k++) {
        if (a->s.len == strlen(choices[k]) && memcmp(a->s.data, choices[k], a->s.len) == 0) {
            *out = k;
            return true;
        }
    }
    onnx_unsupported(c, "attribute %s='%.*s' is not supported", name, (int)(a->s.len < 32 ? a->s.len : 32),
                     (const char *)a->s.data);
    return false;
}

/* ------------------------------------------------------------ inputs */

const struct onnx_value *onnx_input(struct onnx_ctx *c, int k)
{
    if (k >= (int)c->node->n_input || c->node->input[k][0] == '\0')
        return NULL;
    return onnx_value_find(c, c->node->input[k]);
}

const char *onnx_output_name(struct onnx_ctx *c, int k)
{
    return k < (int)c->node->n_output ? c->node->output[k] : "";
}

static bool usable(struct onnx_ctx *c, int k, const struct onnx_value *v)
{
    if (!v) {
        onnx_bad(c, "input %d is missing", k);
        return false;
    }
    if (v->kind == OV_REFUSED) {
        onnx_unsupported(c, "input '%.64s' is %s", v->name, v->why);
        return false;
    }
    return true;
}

const struct onnx_value *onnx_act_in(struct onnx_ctx *c, int k)
{
    const struct onnx_value *v = onnx_input(c, k);
    if (!usable(c, k, v))
        return NULL;
    if (v->kind != OV_ACT) {
        onnx_unsupported(c, "input '%.64s' is a constant; this op runs on computed tensors only", v->name);
        return NULL;
    }
    return v;
}

const struct onnx_value *onnx_const_in(struct onnx_ctx *c, int k)
{
    const struct onnx_value *v = onnx_input(c, k);
    if (!usable(c, k, v))
        return NULL;
    if (v->kind != OV_CONST) {
        onnx_unsupported(c, "input '%.64s' must be a constant (an initializer or a Constant node)", v->name);
        return NULL;
    }
    return v;
}

bool onnx_const_ints(struct onnx_ctx *c, int k, const char *what, int64_t *out, int cap, int *n)
{
    *n = 0;
    if (!onnx_input(c, k))
        return true;
    const struct onnx_value *v = onnx_const_in(c, k);
    if (!v)
        return false;
    if (!v->data->i || v->data->shape.rank != 1) {
        onnx_bad(c, "'%s' must be a 1-D integer tensor", what);
        return false;
    }
    if (v->data->batch_at) {
        onnx_needs_whole(c, "takes an attribute from the batch size");
        return false;
    }
    if (v->data->elems > cap) {
        onnx_unsupported(c, "'%s' has %lld values, at most %d are supported", what, (long long)v->data->elems, cap);
        return false;
    }
    *n = (int)v->data->elems;
    memcpy(out, v->data->i, sizeof(int64_t) * (size_t)*n);
    return true;
}

/* ------------------------------------------------------------ shapes */

void onnx_slice_range(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *len)
{
    start = start < 0 ? start + d : start;   /* INT64_MIN + d cannot overflow: d >= 0 */
    end = end < 0 ? end + d : end;
    if (step > 0) {
        start = start < 0 ? 0 : start > d ? d : start;
        end = end < 0 ? 0 : end > d ? d : end;
        *len = end > start ? (end - start - 1) / step + 1 : 0;   /* no overflow for huge steps */
    } else {
        start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
        end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
        *len = start > end ? (step < -d ? 1 : (start - end - 1) / -step + 1) : 0;
    }
    *first = start;
}

struct rt_shape onnx_rt_shape(const struct onnx_ctx *c, const struct rt_shape *s)
{
    struct rt_shape r = *s;
    if (c->whole) {
        r.rank = s->rank + 1;
        for (int i = s->rank; i > 0; i--)
            r.dims[i] = s->dims[i - 1];
    }
    r.dims[0] = -1;
    return r;
}

int onnx_rt_axis(const struct onnx_ctx *c, int a) { return c->whole ? a + 1 : a; }

/* ------------------------------------------------------------ emitting */

const struct rt_node *onnx_producer(const struct onnx_ctx *c, int t)
{
    int p = t >= 0 ? c->g->tensors[t].producer : -1;
    return p >= 0 ? &c->g->nodes[p] : NULL;
}

int onnx_readers(const struct onnx_ctx *c, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < c->graph->n_node; i++)
        for (size_t j = 0; j < c->graph->node[i]->n_input; j++)
            n += strcmp(c->graph->node[i]->input[j], name) == 0;
    for (size_t i = 0; i < c->graph->n_output; i++) {
        const char *out = c->graph->output[i]->name;   /* NULL when absent (refused later) */
        n += out && strcmp(out, name) == 0;
    }
    return n;
}

const float *onnx_binary_scalar(const struct rt_node *n, enum k_binop op)
{
    if (!n || n->op != RT_OP_BINARY || n->a.binary.op != op || n->n_inputs != 1 || !n->w[RT_W_WEIGHT].data)
        return NULL;
    const struct rt_shape *s = &n->w[RT_W_WEIGHT].shape;
    int64_t elems = 1;
    for (int d = 0; d < s->rank; d++)
        elems *= s->dims[d];
    return elems == 1 ? n->w[RT_W_WEIGHT].data : NULL;
}

/* A new runtime tensor, named after the ONNX name when that fits and is
 * free, else a generated name that carries its start. */
static int new_tensor(struct onnx_ctx *c, const char *name)
{
    int t = -1;
    if (name && name[0] && strlen(name) < RT_NAME_MAX && rt_graph_tensor(c->g, name, false) < 0)
        t = rt_graph_tensor(c->g, name, true);
    while (t < 0) {
        char synth[RT_NAME_MAX];
        snprintf(synth, sizeof(synth), "%.40s~%d", name && name[0] ? name : "t", ++c->synth);
        if (rt_graph_tensor(c->g, synth, false) >= 0)
            continue;
        t = rt_graph_tensor(c->g, synth, true);
        if (t < 0)
            break;
    }
    if (t < 0)
        rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    return t;
}

struct rt_node *onnx_append_node(struct onnx_ctx *c, enum rt_op op, int out, const char *name)
{
    struct rt_graph *g = c->g;
    if (g->n_nodes == c->cap_nodes) {
        int cap = c->cap_nodes ? c->cap_nodes * 2 : 64;
        struct rt_node *nodes = cap <= 4 * ONNX_MAX_NODES ? realloc(g->nodes, sizeof(*nodes) * (size_t)cap) : NULL;
        if (!nodes) {
            rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
            return NULL;
        }
        g->nodes = nodes;
        c->cap_nodes = cap;
    }
    struct rt_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->output = out;
    g->tensors[out].producer = g->n_nodes++;
    return n;
}

/* Runtime nodes are named after the ONNX node; the second and later ones
 * it becomes carry a #k suffix. */
static struct rt_node *append_node(struct onnx_ctx *c, enum rt_op op, int out)
{
    char name[RT_NAME_MAX];
    if (c->sub++ == 0)
        snprintf(name, sizeof(name), "%.63s", node_name(c));
    else
        snprintf(name, sizeof(name), "%.56s#%d", node_name(c), c->sub);
    return onnx_append_node(c, op, out, name);
}

/* Registers output k as activation t of ONNX shape s, which must be a
 * positive size below ONNX_MAX_ELEMS (so later products cannot overflow). */
static bool define_act(struct onnx_ctx *c, int out_k, int t, const struct rt_shape *s)
{
    int64_t elems = 1;
    if (s->rank > ONNX_MAX_RANK) {
        onnx_unsupported(c, "output '%.64s' has more than %d dimensions", onnx_output_name(c, out_k), ONNX_MAX_RANK);
        return false;
    }
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] == ONNX_BATCH && i == 0 && !c->whole)
            continue;
        if (s->dims[i] < 1 || __builtin_mul_overflow(elems, s->dims[i], &elems) || elems > ONNX_MAX_ELEMS) {
            onnx_unsupported(c, "output '%.64s' would be empty or too large", onnx_output_name(c, out_k));
            return false;
        }
    }
    int v = onnx_value_add(c, onnx_output_name(c, out_k));
    if (v < 0)
        return false;
    c->vals[v].kind = OV_ACT;
    c->vals[v].tensor = t;
    c->vals[v].shape = *s;
    return true;
}

struct rt_node *onnx_emit(struct onnx_ctx *c, enum rt_op op, int out_k, const struct rt_shape *s)
{
    const char *name = onnx_output_name(c, out_k);
    if (!name[0]) {
        onnx_bad(c, "output %d has no name", out_k);
        return NULL;
    }
    int t = new_tensor(c, name);
    if (t < 0 || !define_act(c, out_k, t, s))
        return NULL;
    return append_node(c, op, t);
}

struct rt_node *onnx_emit_elementwise(struct onnx_ctx *c, enum rt_op op)
{
    const struct onnx_value *x = onnx_arity(c, 1, 1, 1) == RT_OK ? onnx_act_in(c, 0) : NULL;
    struct rt_node *n = x ? onnx_emit(c, op, 0, &x->shape) : NULL;
    if (n) {
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
    }
    return n;
}

struct rt_node *onnx_emit_temp(struct onnx_ctx *c, enum rt_op op, int *tensor)
{
    int t = new_tensor(c, NULL);
    if (t < 0)
        return NULL;
    *tensor = t;
    return append_node(c, op, t);
}

enum rt_status onnx_view(struct onnx_ctx *c, int in, const int64_t *dims, int rank, int out_k,
                         const struct rt_shape *s, int *tensor)
{
    if (rank > RT_MAX_DIMS - 1)
        return onnx_unsupported(c, "a tensor of more than %d dimensions after the batch", RT_MAX_DIMS - 1);
    int t = -1;
    struct rt_node *n = out_k >= 0 ? onnx_emit(c, RT_OP_RESHAPE, out_k, s) : onnx_emit_temp(c, RT_OP_RESHAPE, &t);
    if (!n)
        return c->err->status;
    if (tensor)
        *tensor = n->output;
    n->n_inputs = 1;
    n->inputs[0] = in;
    n->a.reshape.rank = rank;
    memcpy(n->a.reshape.dims, dims, sizeof(int64_t) * (size_t)rank);
    return RT_OK;
}

struct rt_node *onnx_emit_samples(struct onnx_ctx *c, enum rt_op op, int out_k, const struct rt_shape *s,
                                  const int64_t *dims, int rank)
{
    struct rt_shape rs = onnx_rt_shape(c, s);
    bool same = rs.rank - 1 == rank;
    for (int i = 0; same && i < rank; i++)
        same = rs.dims[i + 1] == dims[i];
    if (same)
        return onnx_emit(c, op, out_k, s);
    /* the view first, then the node it reads: the returned pointer stays valid */
    int t = new_tensor(c, NULL);
    if (t < 0 || onnx_view(c, t, rs.dims + 1, rs.rank - 1, out_k, s, NULL) != RT_OK)
        return NULL;
    return append_node(c, op, t);
}

enum rt_status onnx_samples_in(struct onnx_ctx *c, const struct onnx_value *x, const int64_t *dims, int rank,
                               int *tensor)
{
    if (c->whole && x->shape.dims[0] != 1)
        return onnx_unsupported(c, "computes over a first axis of %lld samples in a graph that runs whole",
                                (long long)x->shape.dims[0]);
    struct rt_shape rs = onnx_rt_shape(c, &x->shape);
    bool same = !c->whole && rs.rank - 1 == rank;
    for (int i = 0; same && i < rank; i++)
        same = rs.dims[i + 1] == dims[i];
    if (same) {
        *tensor = x->tensor;
        return RT_OK;
    }
    return onnx_view(c, x->tensor, dims, rank, -1, NULL, tensor);
}

enum rt_status onnx_alias(struct onnx_ctx *c, int out_k, const struct onnx_value *v)
{
    const char *name = onnx_output_name(c, out_k);
    if (!name[0])
        return RT_OK;
    struct onnx_value copy = *v;
    int i = onnx_value_add(c, name);
    if (i < 0)
        return c->err->status;
    copy.name = c->vals[i].name;
    c->vals[i] = copy;
    return RT_OK;
}

enum rt_status onnx_define_const(struct onnx_ctx *c, int out_k, struct onnx_data *d)
{
    struct onnx_data *own = malloc(sizeof(*own));
    if (!own || c->n_consts == c->cap_consts) {
        free(own);
        onnx_data_free(d);
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    }
    *own = *d;
    c->consts[c->n_consts++] = own;
    int i = onnx_value_add(c, onnx_output_name(c, out_k));
    if (i < 0)
        return c->err->status;
    c->vals[i].kind = OV_CONST;
    c->vals[i].data = own;
    c->vals[i].shape = own->shape;
    return RT_OK;
}

enum rt_status onnx_refuse_outputs(struct onnx_ctx *c, int first, const char *why)
{
    for (int k = first; k < (int)c->node->n_output; k++) {
        if (!c->node->output[k][0])
            continue;
        int i = onnx_value_add(c, c->node->output[k]);
        if (i < 0)
            return c->err->status;
        c->vals[i].kind = OV_REFUSED;
        c->vals[i].why = why;
    }
    return RT_OK;
}

enum rt_status onnx_weight(struct onnx_ctx *c, struct rt_weight *w, const float *data, const struct rt_shape *shape,
                           const char *name)
{
    int64_t count = 1;
    for (int i = 0; i < shape->rank; i++)
        count *= shape->dims[i];
    float *buf = rt_graph_alloc(c->g, (size_t)count);
    if (!buf)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    memcpy(buf, data, sizeof(float) * (size_t)count);
    w->data = buf;
    w->shape = *shape;
    snprintf(w->name, sizeof(w->name), "%.127s", name);
    return RT_OK;
}

enum rt_status onnx_reshape_in(struct onnx_ctx *c, const struct onnx_value *x, const int64_t *dims, int rank,
                               int *tensor)
{
    struct rt_shape rs = onnx_rt_shape(c, &x->shape);
    bool same = rs.rank - 1 == rank;
    for (int i = 0; same && i < rank; i++)
        same = rs.dims[i + 1] == dims[i];
    if (same) {
        *tensor = x->tensor;
        return RT_OK;
    }
    return onnx_view(c, x->tensor, dims, rank, -1, NULL, tensor);
}

enum rt_status onnx_arity(struct onnx_ctx *c, int min_in, int max_in, int max_out)
{
    /* the status spelled out: converters index inputs on the strength of it */
    if ((int)c->node->n_input < min_in || (int)c->node->n_input > max_in) {
        onnx_bad(c, "takes %d to %d inputs, not %zu", min_in, max_in, c->node->n_input);
        return RT_ERR_BAD_MODEL;
    }
    if (c->node->n_output < 1 || (int)c->node->n_output > max_out) {
        onnx_bad(c, "takes 1 to %d outputs, not %zu", max_out, c->node->n_output);
        return RT_ERR_BAD_MODEL;
    }
    return RT_OK;
}

int64_t onnx_prod(const struct rt_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dims[i];
    return p;
}

bool onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, bool inclusive, int *out)
{
    int64_t hi = inclusive ? rank : rank - 1;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > hi) {
        onnx_bad(c, "axis out of range for rank %d", rank);
        return false;
    }
    *out = (int)axis;
    return true;
}
