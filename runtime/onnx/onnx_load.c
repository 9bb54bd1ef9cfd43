/*
 * onnx_load.c - an ONNX ModelProto to the runtime's graph (onnx/onnx_load.h).
 *
 * Order of work: check the IR version and the ai.onnx opset; decode the
 * initializers; read the graph inputs and choose batch or whole mode; order
 * the nodes (the file's order is not trusted: missing tensors, tensors
 * produced twice and cycles are errors); convert each node with the
 * converter its op type and opset version select (onnx_ops_*.c), refusing
 * unknown attributes; bind the graph outputs. A graph that mixes samples
 * along its first axis is converted again in whole mode.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/format/file_read.h"
#include "runtime/onnx/onnx_impl.h"
#include "runtime/rt_checked.h"
#include "runtime/rt_model.h"

/* ------------------------------------------------------------ value table */

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

const struct onnx_value *onnx_value_find(const struct onnx_ctx *c, const char *name)
{
    uint32_t mask = (uint32_t)c->index_cap - 1;
    for (uint32_t h = hash_name(name) & mask; c->index[h] >= 0; h = (h + 1) & mask) {
        if (strcmp(c->vals[c->index[h]].name, name) == 0)
            return &c->vals[c->index[h]];
    }
    return NULL;
}

int onnx_value_add(struct onnx_ctx *c, const char *name)
{
    if (name && onnx_value_find(c, name)) {
        rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s' is defined twice", c->label, name);
        return -1;
    }
    if (c->n_vals == c->cap_vals) {
        rt_error_set(c->err, RT_ERR_INTERNAL, "%s: value table full", c->label);
        return -1;
    }
    int v = c->n_vals++;
    memset(&c->vals[v], 0, sizeof(c->vals[v]));
    c->vals[v].name = name ? name : "";
    c->vals[v].tensor = -1;
    if (name) {
        uint32_t mask = (uint32_t)c->index_cap - 1, h = hash_name(name) & mask;
        while (c->index[h] >= 0)
            h = (h + 1) & mask;
        c->index[h] = v;
    }
    return v;
}

static enum rt_status ctx_alloc(struct onnx_ctx *c)
{
    const Onnx__GraphProto *gp = c->graph;
    size_t cap = gp->n_initializer + gp->n_input + 1;
    for (size_t i = 0; i < gp->n_node; i++)
        cap += gp->node[i]->n_output;
    size_t index_cap = 64;
    while (index_cap < 2 * cap)
        index_cap *= 2;
    c->cap_vals = (int)cap;
    c->index_cap = (int)index_cap;
    c->cap_consts = (int)(gp->n_initializer + gp->n_node + 1);
    c->vals = calloc(cap, sizeof(*c->vals));
    c->index = malloc(sizeof(int) * index_cap);
    c->consts = calloc((size_t)c->cap_consts, sizeof(struct onnx_data *));
    if (!c->vals || !c->index || !c->consts)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    memset(c->index, -1, sizeof(int) * index_cap);
    return RT_OK;
}

static void ctx_free(struct onnx_ctx *c)
{
    for (int i = 0; i < c->n_consts; i++) {
        onnx_data_free(c->consts[i]);
        free(c->consts[i]);
    }
    free(c->consts);
    free(c->vals);
    free(c->index);
    c->consts = NULL;
    c->vals = NULL;
    c->index = NULL;
    c->n_vals = c->n_consts = c->cap_nodes = c->synth = 0;
}

/* ------------------------------------------------------------ model checks */

static enum rt_status check_model(struct onnx_ctx *c, const Onnx__ModelProto *m)
{
    if (!m->graph) {   /* the status spelled out: later steps rely on a graph */
        rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: no graph", c->label);
        return RT_ERR_BAD_MODEL;
    }
    c->graph = m->graph;
    if (!m->has_ir_version || m->ir_version < 3)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: IR version %lld is not supported (3 or newer)",
                            c->label, (long long)m->ir_version);
    c->opset = 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0)
            c->opset = o->has_version && o->version > 0 && o->version < 1000 ? (int)o->version : -1;
    }
    /* no ai.onnx import (opset 0) is valid for a graph of other domains' ops */
    if (c->opset < 0 || c->opset > ONNX_OPSET_MAX)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: ai.onnx opset %d is not supported (1 to %d)", c->label,
                            c->opset, ONNX_OPSET_MAX);
    if (c->graph->n_node > ONNX_MAX_NODES)
        return rt_error_set(c->err, RT_ERR_TOO_LARGE, "%s: %zu nodes, at most %d are supported", c->label,
                            c->graph->n_node, ONNX_MAX_NODES);
    if (c->graph->n_sparse_initializer)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: sparse initializers are not supported", c->label);
    return RT_OK;
}

/* A graph input or output: FP32 tensor, its dims (-1 where symbolic) and
 * the symbol of the first dim. */
struct io_info {
    int rank;
    int64_t dims[RT_MAX_DIMS];
    const char *sym0;              /* dim_param of dim 0, or "" */
    bool has_shape;
};

static enum rt_status io_read(struct onnx_ctx *c, const Onnx__ValueInfoProto *vi, const char *kind,
                              struct io_info *out)
{
    memset(out, 0, sizeof(*out));
    const char *name = vi->name ? vi->name : "";
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph %s '%.64s' is not a tensor", c->label, kind, name);
    const Onnx__TypeProto__Tensor *tt = t->tensor_type;
    if (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph %s '%.64s' is %s; inferd serves FP32 tensors",
                            c->label, kind, name, onnx_type_name(tt->elem_type));
    out->sym0 = "";
    if (!tt->shape)
        return RT_OK;
    out->has_shape = true;
    if (tt->shape->n_dim > ONNX_MAX_RANK)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph %s '%.64s' has more than %d dimensions", c->label,
                            kind, name, ONNX_MAX_RANK);
    out->rank = (int)tt->shape->n_dim;
    for (int d = 0; d < out->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        out->dims[d] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0 || dim->dim_value > ONNX_MAX_DIM)
                return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: graph %s '%.64s': dimension %d is %lld", c->label,
                                    kind, name, d, (long long)dim->dim_value);
            if (dim->dim_value == 0)
                return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph %s '%.64s' is empty (dimension %d is 0)",
                                    c->label, kind, name, d);
            out->dims[d] = dim->dim_value;
        } else if (d == 0 && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            out->sym0 = dim->dim_param;
        }
    }
    return RT_OK;
}

static bool is_initializer(const struct onnx_ctx *c, const char *name)
{
    const struct onnx_value *v = onnx_value_find(c, name);
    return v && v->kind == OV_CONST;
}

/* Batch mode needs every input's first dim to be one symbol or one size;
 * whole mode needs every dim fixed. */
static enum rt_status choose_mode(struct onnx_ctx *c, bool *batch_ok, bool *whole_ok)
{
    const Onnx__GraphProto *gp = c->graph;
    *batch_ok = *whole_ok = true;
    const char *sym = NULL;
    int64_t fixed = 0;
    int n = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        if (!gp->input[i]->name || is_initializer(c, gp->input[i]->name))
            continue;
        struct io_info io;
        enum rt_status s = io_read(c, gp->input[i], "input", &io);
        if (s != RT_OK)
            return s;
        if (!io.has_shape)
            return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph input '%.64s' has no shape", c->label,
                                gp->input[i]->name);
        for (int d = 1; d < io.rank; d++) {
            if (io.dims[d] < 0)
                return rt_error_set(c->err, RT_ERR_UNSUPPORTED,
                                    "%s: graph input '%.64s': dimension %d is symbolic; only the first may be",
                                    c->label, gp->input[i]->name, d);
        }
        if (io.rank > 0 && io.dims[0] < 0)
            *whole_ok = false;
        if (io.rank > 0 && n == 0) {
            sym = io.dims[0] < 0 ? io.sym0 : NULL;
            fixed = io.dims[0];
        }
        if (io.rank == 0 || io.dims[0] != fixed || (sym && strcmp(sym, io.sym0) != 0))
            *batch_ok = false;
        n++;
    }
    if (n == 0)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: the graph has no inputs", c->label);
    if (n > RT_MAX_IO)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: %d graph inputs, at most %d are supported", c->label, n,
                            RT_MAX_IO);
    c->batch_fixed = fixed;
    if (!*batch_ok && !*whole_ok)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED,
                            "%s: the inputs' first dimensions differ, and symbolic dims leave no whole-graph shape",
                            c->label);
    return RT_OK;
}

/* ------------------------------------------------------------ conversion */

static enum rt_status decode_initializers(struct onnx_ctx *c)
{
    const Onnx__GraphProto *gp = c->graph;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !t->name[0])
            return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: initializer %zu has no name", c->label, i);
        struct onnx_data *d = calloc(1, sizeof(*d));
        if (!d)
            return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
        c->consts[c->n_consts++] = d;
        enum rt_status s = onnx_data_decode(t, c->label, t->name, d, c->err);
        if (s != RT_OK)
            return s;
        int v = onnx_value_add(c, t->name);
        if (v < 0)
            return c->err->status;
        c->vals[v].kind = OV_CONST;
        c->vals[v].data = d;
        c->vals[v].shape = d->shape;
    }
    return RT_OK;
}

static enum rt_status bind_inputs(struct onnx_ctx *c)
{
    const Onnx__GraphProto *gp = c->graph;
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = gp->input[i]->name;
        if (!name || is_initializer(c, name))
            continue;
        struct io_info io;
        enum rt_status s = io_read(c, gp->input[i], "input", &io);
        if (s != RT_OK)
            return s;
        if (strlen(name) >= RT_NAME_MAX || !name[0])
            return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph input '%.64s...': names are 1 to 63 bytes",
                                c->label, name);
        int v = onnx_value_add(c, name);
        if (v < 0)
            return c->err->status;
        struct onnx_value *val = &c->vals[v];
        val->kind = OV_ACT;
        val->shape.rank = io.rank;
        memcpy(val->shape.dims, io.dims, sizeof(io.dims));
        if (!c->whole)
            val->shape.dims[0] = ONNX_BATCH;
        int t = rt_graph_tensor(c->g, name, true);
        if (t < 0)
            return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: graph input '%s' is named twice", c->label, name);
        val->tensor = t;
        struct rt_io_desc *d = &c->cfg->inputs[c->cfg->n_inputs];
        memcpy(d->name, name, strlen(name) + 1);
        d->dtype = RT_DTYPE_F32;
        d->shape = onnx_rt_shape(c, &val->shape);
        if (!rt_dims_product(d->shape.dims + 1, d->shape.rank - 1, &d->sample_elems) || d->sample_elems > (1 << 28))
            return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph input '%s' is too large", c->label, name);
        c->g->tensors[t].input_index = c->cfg->n_inputs++;
        c->g->tensors[t].shape = d->shape;
        c->g->tensors[t].sample_elems = d->sample_elems;
    }
    return RT_OK;
}

/* Producer table for ordering: output name -> node, open addressing. */
struct producers {
    const char **name;
    int *node;
    uint32_t mask;
};

static int producer_of(const struct producers *p, const char *name)
{
    for (uint32_t h = hash_name(name) & p->mask; p->name[h]; h = (h + 1) & p->mask) {
        if (strcmp(p->name[h], name) == 0)
            return p->node[h];
    }
    return -1;
}

static const char *op_of(const Onnx__NodeProto *n) { return n->op_type ? n->op_type : "?"; }
static const char *name_of(const Onnx__NodeProto *n) { return n->name && n->name[0] ? n->name : "(unnamed)"; }

/* Kahn's algorithm over the file's nodes; order receives node indices. */
static enum rt_status order_nodes(struct onnx_ctx *c, int *order)
{
    const Onnx__GraphProto *gp = c->graph;
    int n = (int)gp->n_node;
    size_t outs = 0, edges = 0;
    for (int i = 0; i < n; i++) {
        outs += gp->node[i]->n_output;
        edges += gp->node[i]->n_input;
    }
    size_t cap = 16;
    while (cap < 2 * outs)
        cap *= 2;
    struct producers p = {calloc(cap, sizeof(char *)), malloc(sizeof(int) * cap), (uint32_t)cap - 1};
    int *pending = calloc((size_t)n + 1, sizeof(int)), *start = calloc((size_t)n + 2, sizeof(int));
    int *cons = malloc(sizeof(int) * (edges + 1)), *fill = calloc((size_t)n + 1, sizeof(int));
    enum rt_status s = RT_OK;
    if (!p.name || !p.node || !pending || !start || !cons || !fill) {
        s = rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && s == RT_OK; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        for (size_t k = 0; k < nd->n_output && s == RT_OK; k++) {
            const char *o = nd->output[k];
            if (!o[0])
                continue;
            if (producer_of(&p, o) >= 0 || onnx_value_find(c, o))
                s = rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s' is produced twice (node '%.64s')",
                                 c->label, o, name_of(nd));
            uint32_t h = hash_name(o) & p.mask;
            while (p.name[h])
                h = (h + 1) & p.mask;
            p.name[h] = o;
            p.node[h] = i;
        }
    }
    /* edges producer -> consumer as CSR, counted per producer */
    for (int i = 0; i < n && s == RT_OK; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        for (size_t k = 0; k < nd->n_input && s == RT_OK; k++) {
            const char *in = nd->input[k];
            int pr = in[0] ? producer_of(&p, in) : -1;
            if (pr >= 0) {
                start[pr + 1]++;
                pending[i]++;
            } else if (in[0] && !onnx_value_find(c, in)) {
                s = rt_error_set(c->err, RT_ERR_BAD_MODEL,
                                 "%s: node '%.64s' (%.32s): input '%.64s' is produced by no node and is no graph "
                                 "input or initializer", c->label, name_of(nd), op_of(nd), in);
            }
        }
    }
    if (s != RT_OK)
        goto done;
    for (int i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (int i = 0; i < n; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        for (size_t k = 0; k < nd->n_input; k++) {
            int pr = nd->input[k][0] ? producer_of(&p, nd->input[k]) : -1;
            if (pr >= 0)
                cons[start[pr] + fill[pr]++] = i;
        }
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        if (pending[i] == 0)
            order[tail++] = i;
    }
    while (head < tail) {
        int i = order[head++];
        for (int e = start[i]; e < start[i + 1]; e++) {
            if (--pending[cons[e]] == 0)
                order[tail++] = cons[e];
        }
    }
    for (int i = 0; i < n && tail < n; i++) {
        if (pending[i] > 0) {
            s = rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: node '%.64s' (%.32s) is part of a cycle", c->label,
                             name_of(gp->node[i]), op_of(gp->node[i]));
            break;
        }
    }
done:
    free(p.name), free(p.node), free(pending), free(start), free(cons), free(fill);
    return s;
}

static const struct onnx_op *find_op(const char *type)
{
    const struct onnx_op *const tables[] = {ONNX_OPS_NN,    ONNX_OPS_EW,     ONNX_OPS_MATH,
                                            ONNX_OPS_SHAPE, ONNX_OPS_RESIZE, ONNX_OPS_NORM, ONNX_OPS_FOLD};
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        for (const struct onnx_op *op = tables[t]; op->type; op++) {
            if (strcmp(op->type, type) == 0)
                return op;
        }
    }
    return NULL;
}

/* Whether name is in the comma-separated list. */
static bool listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && memcmp(p, name, n) == 0)
            return true;
        p += n + (end ? 1 : 0);
    }
    return false;
}

static enum rt_status convert_node(struct onnx_ctx *c, int index)
{
    const Onnx__NodeProto *nd = c->graph->node[index];
    c->node = nd;
    c->node_index = index;
    c->version = c->opset;
    c->sub = 0;
    if (!nd->op_type)
        return onnx_bad(c, "no op type");
    if (nd->domain && nd->domain[0] && strcmp(nd->domain, "ai.onnx") != 0)
        return onnx_unsupported(c, "domain '%.40s' is not supported (ai.onnx only)", nd->domain);
    if (c->opset == 0)
        return onnx_bad(c, "the model imports no ai.onnx opset");
    const struct onnx_op *op = find_op(nd->op_type);
    if (!op) {
        if (strncmp(nd->op_type, "QLinear", 7) == 0 || strstr(nd->op_type, "QuantizeLinear"))
            return onnx_unsupported(c, "quantized ONNX operators are not supported; serve the FP32 model with "
                                       "\"precision\": \"int8\" in model.json instead");
        return onnx_unsupported(c, "op type '%.32s' is not supported", nd->op_type);
    }
    c->version = 0;
    for (int k = 0; k < 8 && op->versions[k] && op->versions[k] <= c->opset; k++)
        c->version = op->versions[k];
    if (c->version == 0)
        return onnx_unsupported(c, "this op needs opset %d or newer", op->versions[0]);
    for (size_t k = 0; k < nd->n_attribute; k++) {
        const Onnx__AttributeProto *a = nd->attribute[k];
        if (!a->name || !listed(op->attrs, a->name))
            return onnx_unsupported(c, "attribute '%.32s' is not supported", a->name ? a->name : "");
        if (a->ref_attr_name)
            return onnx_unsupported(c, "attribute '%.32s' refers to a function attribute", a->name);
    }
    onnx_convert_fn fold = onnx_folder(c);
    enum rt_status s = fold ? fold(c) : op->fn(c);
    if (s != RT_OK)
        return s;
    for (size_t k = 0; k < nd->n_output; k++) {
        if (nd->output[k][0] && !onnx_value_find(c, nd->output[k]))
            return onnx_fail(c, RT_ERR_INTERNAL, "output '%.64s' was left undefined", nd->output[k]);
    }
    return RT_OK;
}

static bool same_dims(const struct rt_shape *a, const struct rt_shape *b, int from)
{
    if (a->rank != b->rank)
        return false;
    for (int i = from; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i])
            return false;
    }
    return true;
}

static enum rt_status bind_outputs(struct onnx_ctx *c)
{
    const Onnx__GraphProto *gp = c->graph;
    if (gp->n_output < 1 || gp->n_output > RT_MAX_IO)
        return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: %zu graph outputs; 1 to %d are supported", c->label,
                            gp->n_output, RT_MAX_IO);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        struct io_info io;
        enum rt_status s = io_read(c, gp->output[i], "output", &io);
        if (s != RT_OK)
            return s;
        const struct onnx_value *v = onnx_value_find(c, name);
        if (!v)
            return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: graph output '%.64s' is produced by no node", c->label,
                                name);
        if (v->kind != OV_ACT)
            return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph output '%.64s' is %s", c->label, name,
                                v->kind == OV_CONST ? "a constant" : v->why);
        if (strlen(name) >= RT_NAME_MAX)
            return rt_error_set(c->err, RT_ERR_UNSUPPORTED, "%s: graph output '%.64s...': names are 1 to 63 bytes",
                                c->label, name);
        /* a declared shape must agree with the computed one (the batch aside) */
        struct rt_shape declared = {io.rank, {0}};
        memcpy(declared.dims, io.dims, sizeof(io.dims));
        for (int d = 0; d < io.rank; d++) {
            if (declared.dims[d] < 0 || (d == 0 && !c->whole))
                declared.dims[d] = v->shape.dims[d];
        }
        if (io.has_shape && !same_dims(&declared, &v->shape, 0))
            return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: graph output '%.64s': declared shape differs from the "
                                "computed one", c->label, name);
        struct rt_shape rs = onnx_rt_shape(c, &v->shape);
        int t = v->tensor;
        if (strcmp(c->g->tensors[t].name, name) != 0 || c->g->tensors[t].output_index >= 0 ||
            c->g->tensors[t].producer < 0) {
            /* the value lives under another name (Identity) or is an input: a view names it */
            if (rt_graph_tensor(c->g, name, false) >= 0)
                return rt_error_set(c->err, RT_ERR_UNSUPPORTED,
                                    "%s: graph output '%.64s' is also a graph input or collides with a tensor name",
                                    c->label, name);
            int out = rt_graph_tensor(c->g, name, true);
            char vname[RT_NAME_MAX];
            snprintf(vname, sizeof(vname), "%.56s#out", name);
            struct rt_node *n = out < 0 ? NULL : onnx_append_node(c, RT_OP_RESHAPE, out, vname);
            if (!n)
                return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
            n->n_inputs = 1;
            n->inputs[0] = t;
            n->a.reshape.rank = rs.rank - 1;
            memcpy(n->a.reshape.dims, rs.dims + 1, sizeof(int64_t) * (size_t)(rs.rank - 1));
            t = out;
        }
        struct rt_io_desc *d = &c->cfg->outputs[i];
        memcpy(d->name, name, strlen(name) + 1);
        d->dtype = RT_DTYPE_F32;
        d->shape = rs;
        d->sample_elems = 1;
        for (int k = 1; k < rs.rank; k++)
            d->sample_elems *= rs.dims[k];
        c->g->tensors[t].output_index = (int)i;
        c->cfg->n_outputs = (int)i + 1;
    }
    return RT_OK;
}

/* One conversion; the first attempt also picks the mode (whole_ok tells
 * whether whole mode is possible should batch mode fail). */
static enum rt_status convert(struct onnx_ctx *c, bool first, bool *whole_ok)
{
    enum rt_status s = ctx_alloc(c);
    if (s == RT_OK)
        s = decode_initializers(c);
    if (s == RT_OK && first) {
        bool batch_ok;
        s = choose_mode(c, &batch_ok, whole_ok);
        c->whole = !batch_ok;
    }
    if (s == RT_OK)
        s = bind_inputs(c);
    if (s != RT_OK)
        return s;
    int *order = calloc(c->graph->n_node + 1, sizeof(int));
    if (!order)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    s = order_nodes(c, order);
    for (size_t i = 0; i < c->graph->n_node && s == RT_OK; i++)
        s = convert_node(c, order[i]);
    free(order);
    if (s == RT_OK)
        s = bind_outputs(c);
    return s;
}

enum rt_status rt_onnx_parse(const uint8_t *data, size_t len, const char *label, struct rt_model_config *cfg,
                             struct rt_graph *g, struct rt_error *err)
{
    struct onnx_proto *p = onnx_unpack(&onnx__model_proto__descriptor, data, len, label, err);
    if (!p)
        return err->status;
    struct onnx_ctx c = {.label = label, .err = err, .g = g, .cfg = cfg};
    enum rt_status s = check_model(&c, (const Onnx__ModelProto *)p->msg);
    bool whole_ok = false;
    if (s == RT_OK)
        s = convert(&c, true, &whole_ok);
    if (s != RT_OK && c.retry_whole && !c.whole && whole_ok) {
        ctx_free(&c);
        rt_graph_free(g);
        cfg->n_inputs = cfg->n_outputs = 0;
        c.whole = true;
        c.retry_whole = false;
        s = convert(&c, false, &whole_ok);
    }
    ctx_free(&c);
    onnx_proto_free(p);
    return s;
}

enum rt_status rt_onnx_load(const char *path, const char *label, struct rt_model_config *cfg, struct rt_graph *g,
                            struct rt_error *err)
{
    char *buf;
    size_t n;
    enum rt_status s = rt_read_file(path, label, RT_ONNX_MAX_BYTES, &buf, &n, err);
    if (s == RT_OK)
        s = rt_onnx_parse((const uint8_t *)buf, n, label, cfg, g, err);
    free(buf);
    return s;
}
