/*
 * graph_precision.c - the graph pass from a finished FP32 graph to its FP16
 * or INT8 form (see graph_precision.h).
 *
 * INT8 rebuilds the node list in order. Each node asks for its inputs in
 * the type its kernels take (I8 for the integer ops, F32 otherwise); a
 * tensor of the other type gets a twin, made once by a quantize or
 * dequantize node placed just before its first reader. A model output
 * keeps its name and stays F32: the node computing it writes an I8 (or
 * I32) twin that a dequantize turns into the output.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_quant.h"
#include "runtime/precision/graph_precision.h"
#include "runtime/rt_model.h"

static enum rt_status round_weights_f16(struct rt_graph *g, struct rt_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        for (int r = 0; r < RT_W_COUNT; r++) {
            struct rt_weight *w = &g->nodes[i].w[r];
            int64_t n = 1;
            for (int d = 0; d < w->shape.rank; d++)
                n *= w->shape.dims[d];
            if (!w->data)
                continue;
            float *h = rt_graph_alloc(g, (size_t)n);
            if (!h)
                return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
            for (int64_t k = 0; k < n; k++)
                h[k] = k_f16_round(w->data[k]);
            w->data = h;
        }
    }
    return RT_OK;
}

struct lower {
    struct rt_graph *g;
    struct rt_node *nodes;     /* the new list */
    int n;
    int *twin_q8, *twin_f32;   /* per tensor id: its I8 / F32 twin, or -1 */
    int serial;                /* for new tensor names */
    const char *label;
    struct rt_error *err;
};

/* A new tensor shaped like `like`; -1 when out of memory. */
static int new_tensor(struct lower *l, int like, enum rt_dtype dtype, float scale)
{
    char name[RT_NAME_MAX];
    do
        snprintf(name, sizeof(name), "#%d", l->serial++);
    while (rt_graph_tensor(l->g, name, false) >= 0);
    int t = rt_graph_tensor(l->g, name, true);
    if (t < 0)
        return -1;
    struct rt_tensor *nt = &l->g->tensors[t], *lt = &l->g->tensors[like];
    nt->shape = lt->shape;
    nt->sample_elems = lt->sample_elems;
    nt->dtype = dtype;
    nt->scale = scale;
    l->twin_q8[t] = l->twin_f32[t] = -1;
    return t;
}

static void emit_convert(struct lower *l, enum rt_op op, int in, int out)
{
    struct rt_node *n = &l->nodes[l->n++];
    memset(n, 0, sizeof(*n));
    n->op = op;
    snprintf(n->name, sizeof(n->name), "%s %s", rt_op_name(op), l->g->tensors[in].name);
    n->n_inputs = 1;
    n->inputs[0] = in;
    n->output = out;
}

static enum rt_status missing_scale(struct lower *l, int t, const struct rt_node *n)
{
    return rt_error_set(l->err, RT_ERR_BAD_MODEL,
                        "%s: quantization: no activation scale for tensor '%s' (read or written by INT8 node '%s')",
                        l->label, l->g->tensors[t].name, n->name);
}

/* Tensor t as I8 (want_q8) or F32, converting once; -1 on error (err set). */
static int as_type(struct lower *l, int t, bool want_q8, const struct rt_node *reader)
{
    struct rt_tensor *tt = &l->g->tensors[t];
    if (want_q8 ? tt->dtype == RT_DTYPE_I8 : tt->dtype == RT_DTYPE_F32)
        return t;
    int *twin = want_q8 ? &l->twin_q8[t] : &l->twin_f32[t];
    if (*twin >= 0)
        return *twin;
    /* an I32 tensor has only float readers, by construction */
    RT_ASSERT(!want_q8 || tt->dtype == RT_DTYPE_F32);
    if (want_q8 && !(tt->scale > 0)) {
        missing_scale(l, t, reader);
        return -1;
    }
    int nt = new_tensor(l, t, want_q8 ? RT_DTYPE_I8 : RT_DTYPE_F32, want_q8 ? l->g->tensors[t].scale : 0);
    if (nt < 0) {
        rt_error_set(l->err, RT_ERR_NO_MEMORY, "out of memory");
        return -1;
    }
    emit_convert(l, want_q8 ? RT_OP_QUANTIZE : RT_OP_DEQUANTIZE, t, nt);
    *twin = nt;
    return nt;
}

/* Emits node n (a copy) with its inputs converted and its output typed. */
static enum rt_status lower_node(struct lower *l, struct rt_node n, const bool *int8_reader)
{
    struct rt_graph *g = l->g;
    bool q8 = rt_op_has(n.op, RT_T_INT8);
    for (int k = 0; k < n.n_inputs; k++) {
        if ((n.inputs[k] = as_type(l, n.inputs[k], q8, &n)) < 0)
            return l->err->status;
    }
    int out = n.output;
    if (!q8) {
        l->nodes[l->n++] = n;
        return RT_OK;
    }
    bool matmul = rt_op_has(n.op, RT_T_GEMM);
    if (matmul) {
        const struct rt_shape *w = &n.w[RT_W_WEIGHT].shape;
        int64_t depth = w->rank == 4 ? w->dims[1] * w->dims[2] * w->dims[3] : w->dims[1];
        if (depth > K_Q8_MAX_DEPTH)
            return rt_error_set(l->err, RT_ERR_UNSUPPORTED, "%s: node '%s': INT8 reduction depth %lld exceeds %d",
                                l->label, n.name, (long long)depth, K_Q8_MAX_DEPTH);
    }
    enum rt_dtype dt = matmul && !int8_reader[out] ? RT_DTYPE_I32 : RT_DTYPE_I8;
    float scale = 0;
    if (dt == RT_DTYPE_I8 && rt_op_has(n.op, RT_T_KEEPS_SCALE)) {
        scale = g->tensors[n.inputs[0]].scale;
        if (g->tensors[out].scale > 0 && g->tensors[out].scale != scale)
            return rt_error_set(l->err, RT_ERR_BAD_MODEL,
                                "%s: quantization: activation scale of '%s' must equal its input's (%s keeps the scale)",
                                l->label, g->tensors[out].name, rt_op_name(n.op));
    } else if (dt == RT_DTYPE_I8) {
        scale = g->tensors[out].scale;
        if (!(scale > 0))
            return missing_scale(l, out, &n);
    }
    if (g->tensors[out].output_index >= 0) {
        int twin = new_tensor(l, out, dt, scale);
        if (twin < 0)
            return rt_error_set(l->err, RT_ERR_NO_MEMORY, "out of memory");
        n.output = twin;
        l->nodes[l->n++] = n;
        l->twin_q8[out] = dt == RT_DTYPE_I8 ? twin : -1;
        l->twin_f32[twin] = out;
        emit_convert(l, RT_OP_DEQUANTIZE, twin, out);
        return RT_OK;
    }
    g->tensors[out].dtype = dt;
    g->tensors[out].scale = scale;
    l->nodes[l->n++] = n;
    return RT_OK;
}

static enum rt_status lower_int8(struct rt_graph *g, const char *label, struct rt_error *err)
{
    /* each node adds at most a conversion per input and one for its output */
    size_t cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += (size_t)g->nodes[i].n_inputs + 2;
    size_t tcap = (size_t)g->n_tensors * 3 + 1;   /* every tensor gains at most two twins */
    struct lower l = {.g = g, .label = label, .err = err};
    l.nodes = calloc(cap + 1, sizeof(*l.nodes));
    l.twin_q8 = malloc(sizeof(int) * tcap);
    l.twin_f32 = malloc(sizeof(int) * tcap);
    bool *int8_reader = calloc(tcap, sizeof(bool));
    enum rt_status s = RT_OK;
    if (!l.nodes || !l.twin_q8 || !l.twin_f32 || !int8_reader) {
        s = rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t t = 0; t < tcap; t++)
        l.twin_q8[t] = l.twin_f32[t] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs && rt_op_has(g->nodes[i].op, RT_T_INT8); k++)
            int8_reader[g->nodes[i].inputs[k]] = true;
    }
    for (int i = 0; i < g->n_nodes && s == RT_OK; i++)
        s = lower_node(&l, g->nodes[i], int8_reader);
    if (s != RT_OK)
        goto done;
    free(g->nodes);
    g->nodes = l.nodes;
    g->n_nodes = l.n;
    l.nodes = NULL;
    for (int t = 0; t < g->n_tensors; t++) {
        g->tensors[t].producer = -1;
        g->tensors[t].n_consumers = 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        g->tensors[g->nodes[i].output].producer = i;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            g->tensors[g->nodes[i].inputs[k]].n_consumers++;
    }
done:
    free(l.nodes);
    free(l.twin_q8);
    free(l.twin_f32);
    free(int8_reader);
    return s;
}

enum rt_status rt_graph_apply_precision(struct rt_graph *g, const struct rt_model_config *cfg,
                                        const char *label, struct rt_error *err)
{
    switch (cfg->precision) {
    case RT_PRECISION_FP16:
        return round_weights_f16(g, err);
    case RT_PRECISION_INT8:
        return lower_int8(g, label, err);
    case RT_PRECISION_FP32:
        break;
    }
    return RT_OK;
}
