/*
 * graph.c - graph validation, topological order, shape inference and
 * batch-norm folding (see core/graph.h).
 */
#include "runtime/core/graph.h"
#include "runtime/rt_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ops/ops_impl.h"
#include "runtime/rt_checked.h"

/* ------------------------------------------------------------ tensor names */

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool index_grow(struct rt_graph *g)
{
    int cap = g->index_cap ? g->index_cap * 2 : 64;
    int *idx = malloc(sizeof(int) * (size_t)cap);
    if (!idx)
        return false;
    for (int i = 0; i < cap; i++)
        idx[i] = -1;
    for (int t = 0; t < g->n_tensors; t++) {
        uint32_t h = hash_name(g->tensors[t].name) & (uint32_t)(cap - 1);
        while (idx[h] >= 0)
            h = (h + 1) & (uint32_t)(cap - 1);
        idx[h] = t;
    }
    free(g->index);
    g->index = idx;
    g->index_cap = cap;
    return true;
}

int rt_graph_tensor(struct rt_graph *g, const char *name, bool create)
{
    if (g->index_cap) {
        uint32_t h = hash_name(name) & (uint32_t)(g->index_cap - 1);
        for (; g->index[h] >= 0; h = (h + 1) & (uint32_t)(g->index_cap - 1)) {
            if (strcmp(g->tensors[g->index[h]].name, name) == 0)
                return g->index[h];
        }
    }
    if (!create || strlen(name) >= RT_NAME_MAX)
        return -1;
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? g->cap_tensors * 2 : 32;
        struct rt_tensor *t = realloc(g->tensors, sizeof(*t) * (size_t)cap);
        if (!t)
            return -1;
        g->tensors = t;
        g->cap_tensors = cap;
    }
    if ((g->n_tensors + 1) * 2 > g->index_cap && !index_grow(g))
        return -1;
    int id = g->n_tensors++;
    struct rt_tensor *t = &g->tensors[id];
    memset(t, 0, sizeof(*t));
    memcpy(t->name, name, strlen(name) + 1);
    t->producer = -1;
    t->input_index = -1;
    t->output_index = -1;
    uint32_t h = hash_name(name) & (uint32_t)(g->index_cap - 1);
    while (g->index[h] >= 0)
        h = (h + 1) & (uint32_t)(g->index_cap - 1);
    g->index[h] = id;
    return id;
}

void rt_graph_free(struct rt_graph *g)
{
    for (int i = 0; i < g->n_owned; i++)
        free(g->owned[i]);
    free(g->owned);
    free(g->nodes);
    free(g->tensors);
    free(g->index);
    memset(g, 0, sizeof(*g));
}

float *rt_graph_alloc(struct rt_graph *g, size_t count)
{
    float **owned = realloc(g->owned, sizeof(*owned) * (size_t)(g->n_owned + 1));
    if (!owned)
        return NULL;
    g->owned = owned;
    float *buf = malloc(sizeof(float) * (count ? count : 1));
    if (buf)
        g->owned[g->n_owned++] = buf;
    return buf;
}

/* ------------------------------------------------------------ shape inference */

/* Equal dims after the batch. */
static bool same_shape(const struct rt_shape *a, const struct rt_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 1; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i])
            return false;
    }
    return true;
}

enum rt_status rt_graph_infer_node(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    if ((unsigned)n->op >= RT_OP_COUNT)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "node '%s': unknown op", n->name);
    const struct rt_op_info *op = rt_op_info(n->op);
    if (n->n_inputs < op->min_inputs || n->n_inputs > op->max_inputs) {
        char what[64];
        if (op->min_inputs == op->max_inputs)
            snprintf(what, sizeof(what), "takes %d input%s", op->min_inputs, op->min_inputs == 1 ? "" : "s");
        else
            snprintf(what, sizeof(what), "takes %d to %d inputs", op->min_inputs, op->max_inputs);
        return rt_op_node_error(err, n, what);
    }
    return op->family->infer(g, n, out, err);
}

/* ------------------------------------------------------------ passes */

/* Removes nodes that no model output depends on. */
static void remove_dead_nodes(struct rt_graph *g)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (int t = 0; t < g->n_tensors; t++)
            g->tensors[t].n_consumers = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            if (g->nodes[i].removed)
                continue;
            for (int k = 0; k < g->nodes[i].n_inputs; k++)
                g->tensors[g->nodes[i].inputs[k]].n_consumers++;
        }
        for (int i = 0; i < g->n_nodes; i++) {
            struct rt_node *n = &g->nodes[i];
            const struct rt_tensor *o = &g->tensors[n->output];
            if (!n->removed && o->n_consumers == 0 && o->output_index < 0) {
                n->removed = true;
                changed = true;
            }
        }
    }
}

/* Kahn's algorithm over live nodes; rewrites g->nodes in execution order. */
static enum rt_status topo_sort(struct rt_graph *g, const char *label, struct rt_error *err)
{
    int n = g->n_nodes;
    int *pending = calloc((size_t)n + 1, sizeof(int));
    int *queue = malloc(sizeof(int) * ((size_t)n + 1));
    struct rt_node *sorted = malloc(sizeof(*sorted) * ((size_t)n + 1));
    /* consumers as CSR: for each tensor, the nodes that read it */
    int *start = calloc((size_t)g->n_tensors + 1, sizeof(int));
    int edges = 0;
    for (int i = 0; i < n; i++)
        edges += g->nodes[i].removed ? 0 : g->nodes[i].n_inputs;
    int *cons = malloc(sizeof(int) * ((size_t)edges + 1));
    if (!pending || !queue || !sorted || !start || !cons) {
        free(pending), free(queue), free(sorted), free(start), free(cons);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        if (g->nodes[i].removed)
            continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            start[g->nodes[i].inputs[k] + 1]++;
    }
    for (int t = 0; t < g->n_tensors; t++)
        start[t + 1] += start[t];
    int *fill = calloc((size_t)g->n_tensors + 1, sizeof(int));
    if (!fill) {
        free(pending), free(queue), free(sorted), free(start), free(cons);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    int head = 0, tail = 0, live = 0;
    for (int i = 0; i < n; i++) {
        const struct rt_node *nd = &g->nodes[i];
        if (nd->removed)
            continue;
        live++;
        for (int k = 0; k < nd->n_inputs; k++) {
            int t = nd->inputs[k];
            cons[start[t] + fill[t]++] = i;
            if (g->tensors[t].producer >= 0)
                pending[i]++;
        }
        if (pending[i] == 0)
            queue[tail++] = i;
    }
    int count = 0;
    while (head < tail) {
        int i = queue[head++];
        sorted[count++] = g->nodes[i];
        int t = g->nodes[i].output;
        for (int e = start[t]; e < start[t + 1]; e++) {
            if (--pending[cons[e]] == 0)
                queue[tail++] = cons[e];
        }
    }
    enum rt_status s = RT_OK;
    if (count != live) {
        for (int i = 0; i < n; i++) {
            if (!g->nodes[i].removed && pending[i] > 0) {
                s = rt_error_set(err, RT_ERR_BAD_MODEL, "%s: node '%s' is part of a cycle", label,
                                 g->nodes[i].name);
                break;
            }
        }
    } else {
        memcpy(g->nodes, sorted, sizeof(*sorted) * (size_t)count);
        g->n_nodes = count;
        for (int i = 0; i < count; i++)
            g->tensors[g->nodes[i].output].producer = i;
    }
    free(pending), free(queue), free(sorted), free(start), free(cons), free(fill);
    return s;
}

/* conv -> batch_norm (conv output used only there) becomes one conv with
 * scaled weights and a new bias, computed in double. */
static enum rt_status fold_batch_norms(struct rt_graph *g, struct rt_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        struct rt_node *bn = &g->nodes[i];
        if (bn->removed || bn->op != RT_OP_BATCH_NORM)
            continue;
        int t = bn->inputs[0];
        int p = g->tensors[t].producer;
        int64_t c = g->tensors[t].shape.dims[1];
        const float *gamma = bn->w[RT_W_WEIGHT].data, *beta = bn->w[RT_W_BIAS].data;
        const float *mean = bn->w[RT_W_MEAN].data, *var = bn->w[RT_W_VAR].data;
        float *scale = rt_graph_alloc(g, (size_t)c), *shift = rt_graph_alloc(g, (size_t)c);
        if (!scale || !shift)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        for (int64_t k = 0; k < c; k++) {
            double s = (double)gamma[k] / sqrt((double)var[k] + (double)bn->a.eps);
            if (!isfinite(s) || var[k] < 0)
                return rt_op_node_error(err, bn, "running_var must be non-negative and finite");
            scale[k] = (float)s;
            shift[k] = (float)((double)beta[k] - (double)mean[k] * s);
        }
        struct rt_node *conv = p >= 0 ? &g->nodes[p] : NULL;
        /* an I8 weight (INT8 model) cannot absorb a float affine: the
         * quantisation tool writes models with batch norms already folded */
        if (conv && conv->op == RT_OP_CONV2D && conv->w[RT_W_WEIGHT].data && g->tensors[t].n_consumers == 1 &&
            g->tensors[t].output_index < 0) {
            struct rt_weight *w = &conv->w[RT_W_WEIGHT];
            int64_t per_oc = w->shape.dims[1] * w->shape.dims[2] * w->shape.dims[3];
            float *nw = rt_graph_alloc(g, (size_t)(c * per_oc)), *nb = rt_graph_alloc(g, (size_t)c);
            if (!nw || !nb)
                return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
            const float *old_b = conv->w[RT_W_BIAS].data;
            for (int64_t k = 0; k < c; k++) {
                double s = (double)gamma[k] / sqrt((double)var[k] + (double)bn->a.eps);
                for (int64_t e = 0; e < per_oc; e++)
                    nw[k * per_oc + e] = (float)((double)w->data[k * per_oc + e] * s);
                nb[k] = (float)(((old_b ? (double)old_b[k] : 0.0) - (double)mean[k]) * s + (double)beta[k]);
            }
            w->data = nw;
            conv->w[RT_W_BIAS].data = nb;
            conv->w[RT_W_BIAS].shape = (struct rt_shape){1, {c}};
            conv->output = bn->output;
            g->tensors[bn->output].producer = p;
            g->tensors[t].n_consumers = 0;
            bn->removed = true;
        } else {
            /* standalone: keep as a per-channel affine */
            bn->w[RT_W_WEIGHT].data = scale;
            bn->w[RT_W_BIAS].data = shift;
            bn->w[RT_W_MEAN].data = NULL;
            bn->w[RT_W_VAR].data = NULL;
        }
    }
    return RT_OK;
}

/* Whether kernel tap k (0-based) of a window along one axis reads an input
 * element for some output: in + pad_b... positions oy * s - pad + k * d. */
static bool tap_reads_input(int64_t in, int64_t out, int s, int pad, int d, int k)
{
    int64_t lo = (int64_t)k * d - pad;   /* the position output 0 reads */
    int64_t first = lo >= 0 ? 0 : (-lo + s - 1) / s;
    return first < out && lo + first * s < in;
}

/* The taps of one axis that read only padding, dropped where the pads
 * allow: *a leading and *b trailing of k. */
static void unused_taps(int64_t in, int64_t out, int s, int pad_a, int pad_b, int d, int k, int *a, int *b)
{
    *a = *b = 0;
    while (*a < k - 1 && !tap_reads_input(in, out, s, pad_a, d, *a) && pad_a - (*a + 1) * d >= 0)
        (*a)++;
    while (*a + *b < k - 1 && !tap_reads_input(in, out, s, pad_a, d, k - 1 - *b) && pad_b - (*b + 1) * d >= 0)
        (*b)++;
}

/* A dilated convolution whose outer taps read only zero padding (an atrous
 * rate at or past the map's size: DeepLab's ASPP at 24 and 36 on 14 x 14)
 * keeps only the taps that read the input, with its pads reduced to match:
 * the same output, the same sums without their zero terms, at a fraction of
 * the work (a 3 x 3 at rate 36 becomes a 1 x 1). */
static enum rt_status trim_conv_taps(struct rt_graph *g, struct rt_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        struct rt_node *n = &g->nodes[i];
        struct rt_weight *w = &n->w[RT_W_WEIGHT];
        if (n->removed || n->op != RT_OP_CONV2D || !w->data)
            continue;
        const struct rt_shape *x = &g->tensors[n->inputs[0]].shape, *y = &g->tensors[n->output].shape;
        struct rt_conv_attrs *c = &n->a.conv;
        int kh = (int)w->shape.dims[2], kw = (int)w->shape.dims[3], t, b, l, r;
        unused_taps(x->dims[2], y->dims[2], c->stride[0], c->pad[0], c->pad[2], c->dilation[0], kh, &t, &b);
        unused_taps(x->dims[3], y->dims[3], c->stride[1], c->pad[1], c->pad[3], c->dilation[1], kw, &l, &r);
        if (t + b + l + r == 0)
            continue;
        int nh = kh - t - b, nw = kw - l - r;
        int64_t planes = w->shape.dims[0] * w->shape.dims[1];
        float *d = rt_graph_alloc(g, (size_t)(planes * nh * nw));
        if (!d)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        for (int64_t p = 0; p < planes; p++)
            for (int ky = 0; ky < nh; ky++)
                for (int kx = 0; kx < nw; kx++)
                    d[(p * nh + ky) * nw + kx] = w->data[(p * kh + ky + t) * kw + kx + l];
        w->data = d;
        w->shape.dims[2] = nh;
        w->shape.dims[3] = nw;
        c->pad[0] -= t * c->dilation[0], c->pad[2] -= b * c->dilation[0];
        c->pad[1] -= l * c->dilation[1], c->pad[3] -= r * c->dilation[1];
        if (nh == 1)
            c->dilation[0] = 1;
        if (nw == 1)
            c->dilation[1] = 1;
    }
    return RT_OK;
}

enum rt_status rt_graph_finish(struct rt_graph *g, struct rt_model_config *cfg, const char *label,
                               struct rt_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const struct rt_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            const struct rt_tensor *t = &g->tensors[n->inputs[k]];
            if (t->producer < 0 && t->input_index < 0)
                return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: node '%s': input tensor '%s' is produced by no node",
                                    label, n->name, t->name);
        }
    }
    remove_dead_nodes(g);
    enum rt_status s = topo_sort(g, label, err);
    if (s != RT_OK)
        return s;
    for (int i = 0; i < g->n_nodes; i++) {
        struct rt_node *n = &g->nodes[i];
        struct rt_tensor *o = &g->tensors[n->output];
        if (rt_graph_infer_node(g, n, &o->shape, err) != RT_OK)
            return rt_error_prefix(err, "%s", label);
        if (!rt_dims_product(o->shape.dims + 1, o->shape.rank - 1, &o->sample_elems) ||
            o->sample_elems > (1 << 28) || o->sample_elems < 1) {
            rt_op_node_error(err, n, "output tensor is empty or too large");
            return rt_error_prefix(err, "%s", label);
        }
        if (o->output_index >= 0) {
            const struct rt_io_desc *d = &cfg->outputs[o->output_index];
            if (!same_shape(&o->shape, &d->shape))
                return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: output '%s': shape differs from what the graph computes",
                                    label, d->name);
        }
    }
    s = fold_batch_norms(g, err);
    if (s == RT_OK)
        s = trim_conv_taps(g, err);
    if (s != RT_OK)
        return s;
    /* compact: drop folded nodes, keep order */
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!g->nodes[i].removed)
            g->nodes[k++] = g->nodes[i];
    }
    g->n_nodes = k;
    for (int t = 0; t < g->n_tensors; t++)
        g->tensors[t].n_consumers = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        g->tensors[g->nodes[i].output].producer = i;
        for (int j = 0; j < g->nodes[i].n_inputs; j++)
            g->tensors[g->nodes[i].inputs[j]].n_consumers++;
    }
    return RT_OK;
}
