/*
 * graph.c - graph validation, topological order, shape inference and
 * batch-norm folding (see rt_graph.h).
 */
#include "rt_graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_checked.h"

static const char *const OP_NAMES[] = {
#define RT_OP_NAME(e, name) name,
    RT_OP_LIST(RT_OP_NAME)
#undef RT_OP_NAME
};
_Static_assert(sizeof(OP_NAMES) / sizeof(OP_NAMES[0]) == RT_OP_COUNT, "one name per op");

const char *rt_op_name(enum rt_op op) { return (unsigned)op < RT_OP_COUNT ? OP_NAMES[op] : "?"; }

bool rt_op_from_name(const char *name, enum rt_op *out)
{
    for (int i = 0; i < RT_OP_COUNT; i++) {
        if (strcmp(name, OP_NAMES[i]) == 0) {
            *out = (enum rt_op)i;
            return true;
        }
    }
    return false;
}

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

static enum rt_status node_error(struct rt_error *err, const struct rt_node *n, const char *what)
{
    return rt_error_set(err, RT_ERR_BAD_MODEL, "node '%s' (%s): %s", n->name, rt_op_name(n->op), what);
}

static bool weight_is(const struct rt_weight *w, int rank, const int64_t *dims)
{
    if (w->shape.rank != rank)
        return false;
    for (int i = 0; i < rank; i++) {
        if (w->shape.dims[i] != dims[i])
            return false;
    }
    return true;
}

/* Output length of a sliding window, PyTorch conventions (ceil_mode drops a
 * last window that would start inside the right padding). */
static int64_t window_out(int64_t in, int pad_a, int pad_b, int k, int dil, int stride, bool ceil_mode)
{
    int64_t span = in + pad_a + pad_b - (int64_t)dil * (k - 1) - 1;
    if (span < 0)
        return 0;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_a)
        out--;
    return out;
}

static enum rt_status infer_conv(const struct rt_node *n, const struct rt_shape *x, struct rt_shape *out,
                                 struct rt_error *err)
{
    const struct rt_conv_attrs *a = &n->a.conv;
    const struct rt_weight *w = &n->w[RT_W_WEIGHT];
    if (x->rank != 4)
        return node_error(err, n, "input must be [N, C, H, W]");
    if (w->shape.rank != 4)
        return node_error(err, n, "weight must be [OC, C/groups, KH, KW]");
    int64_t c = x->dims[1], oc = w->shape.dims[0];
    if (c % a->groups != 0 || oc % a->groups != 0 || w->shape.dims[1] != c / a->groups)
        return node_error(err, n, "weight shape does not match input channels and groups");
    if (oc < 1 || w->shape.dims[2] < 1 || w->shape.dims[3] < 1 || w->shape.dims[2] > 1024 ||
        w->shape.dims[3] > 1024 || oc > (1 << 20))
        return node_error(err, n, "weight has an empty or absurd dimension");
    if (n->w[RT_W_BIAS].data && !weight_is(&n->w[RT_W_BIAS], 1, &oc))
        return node_error(err, n, "bias must be [OC]");
    int64_t oh = window_out(x->dims[2], a->pad[0], a->pad[2], (int)w->shape.dims[2], a->dilation[0], a->stride[0], false);
    int64_t ow = window_out(x->dims[3], a->pad[1], a->pad[3], (int)w->shape.dims[3], a->dilation[1], a->stride[1], false);
    if (oh < 1 || ow < 1)
        return node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){4, {-1, oc, oh, ow}};
    return RT_OK;
}

static enum rt_status infer_pool(const struct rt_node *n, const struct rt_shape *x, struct rt_shape *out,
                                 struct rt_error *err)
{
    const struct rt_pool_attrs *a = &n->a.pool;
    if (x->rank != 4)
        return node_error(err, n, "input must be [N, C, H, W]");
    /* so that no window lies wholly in the padding (PyTorch asks for at most
     * half the kernel, ONNX for less than all of it) */
    int64_t span_h = (int64_t)a->dilation[0] * (a->kernel[0] - 1) + 1;
    int64_t span_w = (int64_t)a->dilation[1] * (a->kernel[1] - 1) + 1;
    if (a->pad[0] >= span_h || a->pad[2] >= span_h || a->pad[1] >= span_w || a->pad[3] >= span_w)
        return node_error(err, n, "padding must be smaller than the kernel");
    int64_t oh = window_out(x->dims[2], a->pad[0], a->pad[2], a->kernel[0], a->dilation[0], a->stride[0], a->ceil_mode);
    int64_t ow = window_out(x->dims[3], a->pad[1], a->pad[3], a->kernel[1], a->dilation[1], a->stride[1], a->ceil_mode);
    if (oh < 1 || ow < 1)
        return node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){4, {-1, x->dims[1], oh, ow}};
    return RT_OK;
}

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

/* numpy broadcasting of the per-sample dims (after the batch) of x and of
 * the second operand: the activation input 1, or the constant weight. */
static enum rt_status infer_binary(const struct rt_graph *g, const struct rt_node *n, const struct rt_shape *x,
                                   struct rt_shape *out, struct rt_error *err)
{
    const struct rt_weight *c = &n->w[RT_W_WEIGHT];
    const struct rt_shape *y = c->data ? NULL : &g->tensors[n->inputs[1]].shape;
    int rx = x->rank - 1, ry = y ? y->rank - 1 : c->shape.rank;
    const int64_t *dx = x->dims + 1, *dy = y ? y->dims + 1 : c->shape.dims;
    if ((unsigned)n->a.binary.op >= K_BIN_COUNT)
        return node_error(err, n, "unknown binary operation");
    int r = rx > ry ? rx : ry;
    if (r + 1 > RT_MAX_DIMS)
        return node_error(err, n, "broadcast result has too many dimensions");
    out->rank = r + 1;
    out->dims[0] = -1;
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - rx) >= 0 ? dx[i - (r - rx)] : 1;
        int64_t b = i - (r - ry) >= 0 ? dy[i - (r - ry)] : 1;
        if (a != b && a != 1 && b != 1)
            return node_error(err, n, "operand shapes do not broadcast");
        out->dims[i + 1] = a == 1 ? b : a;
    }
    return RT_OK;
}

/* matmul: per-sample [..., M, K] . [..., K, N] (either transposed), the
 * leading dims broadcast as numpy does. */
static enum rt_status infer_matmul(const struct rt_graph *g, const struct rt_node *n, const struct rt_shape *x,
                                   struct rt_shape *out, struct rt_error *err)
{
    const struct rt_shape *y = &g->tensors[n->inputs[1]].shape;
    const struct rt_matmul_attrs *a = &n->a.matmul;
    int rx = x->rank - 1, ry = y->rank - 1;
    if (rx < 2 || ry < 2)
        return node_error(err, n, "operands must be per-sample [..., M, K] and [..., K, N]");
    int64_t m = x->dims[a->trans_a ? rx : rx - 1], k = x->dims[a->trans_a ? rx - 1 : rx];
    int64_t k2 = y->dims[a->trans_b ? ry : ry - 1], nn = y->dims[a->trans_b ? ry - 1 : ry];
    if (k != k2)
        return node_error(err, n, "inner dimensions differ");
    int bx = rx - 2, by = ry - 2, r = bx > by ? bx : by;
    if (r + 3 > RT_MAX_DIMS || r > K_BINARY_MAX_DIMS)
        return node_error(err, n, "too many dimensions");
    out->rank = r + 3;
    out->dims[0] = -1;
    for (int i = 0; i < r; i++) {
        int64_t da = i - (r - bx) >= 0 ? x->dims[1 + i - (r - bx)] : 1;
        int64_t db = i - (r - by) >= 0 ? y->dims[1 + i - (r - by)] : 1;
        if (da != db && da != 1 && db != 1)
            return node_error(err, n, "batch dimensions do not broadcast");
        out->dims[1 + i] = da == 1 ? db : da;
    }
    out->dims[r + 1] = m;
    out->dims[r + 2] = nn;
    return RT_OK;
}

/* conv2d_dyn: x per-sample [N, C, H, W], weight [OC, C/groups, KH, KW],
 * bias [OC]. */
static enum rt_status infer_conv_dyn(const struct rt_graph *g, const struct rt_node *n, const struct rt_shape *x,
                                     struct rt_shape *out, struct rt_error *err)
{
    const struct rt_conv_attrs *a = &n->a.conv;
    const struct rt_shape *w = &g->tensors[n->inputs[1]].shape;
    if (x->rank != 5)
        return node_error(err, n, "input must be per-sample [N, C, H, W]");
    if (w->rank != 5)
        return node_error(err, n, "weight must be per-sample [OC, C/groups, KH, KW]");
    int64_t c = x->dims[2], oc = w->dims[1];
    if (a->groups < 1 || c % a->groups != 0 || oc % a->groups != 0 || w->dims[2] != c / a->groups)
        return node_error(err, n, "weight shape does not match input channels and groups");
    if (oc < 1 || w->dims[3] < 1 || w->dims[4] < 1 || w->dims[3] > 1024 || w->dims[4] > 1024 || oc > (1 << 20))
        return node_error(err, n, "weight has an empty or absurd dimension");
    if (n->n_inputs == 3) {
        const struct rt_shape *b = &g->tensors[n->inputs[2]].shape;
        if (b->rank != 2 || b->dims[1] != oc)
            return node_error(err, n, "bias must be per-sample [OC]");
    }
    int64_t oh = window_out(x->dims[3], a->pad[0], a->pad[2], (int)w->dims[3], a->dilation[0], a->stride[0], false);
    int64_t ow = window_out(x->dims[4], a->pad[1], a->pad[3], (int)w->dims[4], a->dilation[1], a->stride[1], false);
    if (oh < 1 || ow < 1)
        return node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){5, {-1, x->dims[1], oc, oh, ow}};
    return RT_OK;
}

static int normalise_axis(int axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

enum rt_status rt_graph_infer_node(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    int want_inputs = n->op == RT_OP_ADD ? 2 : n->op == RT_OP_CONCAT ? -1 : 1;
    if (n->op == RT_OP_BINARY)
        want_inputs = n->w[RT_W_WEIGHT].data ? 1 : 2;
    if (n->op == RT_OP_MATMUL)
        want_inputs = 2;
    if (n->op == RT_OP_BATCH_NORM_DYN)
        want_inputs = 5;
    if (n->op == RT_OP_CONV2D_DYN) {
        if (n->n_inputs != 2 && n->n_inputs != 3)
            return node_error(err, n, "takes an input, a weight and an optional bias");
        want_inputs = -1;
    }
    if (want_inputs > 2 && n->n_inputs != want_inputs)
        return node_error(err, n, "takes an input and four parameters");
    if (want_inputs > 0 && n->n_inputs != want_inputs)
        return node_error(err, n, want_inputs == 2 ? "takes two inputs" : "takes one input");
    switch (n->op) {
    case RT_OP_CONV2D:
        return infer_conv(n, x, out, err);
    case RT_OP_LINEAR: {
        /* [N, ..., K] -> [N, ..., M], as torch.nn.Linear and ONNX MatMul
         * with a constant right operand: each row of K is one product */
        const struct rt_weight *w = &n->w[RT_W_WEIGHT];
        if (x->rank < 2)
            return node_error(err, n, "input must be [N, ..., K]");
        if (w->shape.rank != 2 || w->shape.dims[1] != x->dims[x->rank - 1] || w->shape.dims[0] < 1)
            return node_error(err, n, "weight must be [M, K] with K the input features");
        if (n->w[RT_W_BIAS].data && !weight_is(&n->w[RT_W_BIAS], 1, &w->shape.dims[0]))
            return node_error(err, n, "bias must be [M]");
        *out = *x;
        out->dims[x->rank - 1] = w->shape.dims[0];
        return RT_OK;
    }
    case RT_OP_BATCH_NORM:
        if (x->rank < 2)
            return node_error(err, n, "input needs a channel dimension");
        for (int r = 0; r < RT_W_COUNT; r++) {
            if (!weight_is(&n->w[r], 1, &x->dims[1]))
                return node_error(err, n, "parameters must be [C] with C the input channels");
        }
        *out = *x;
        return RT_OK;
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
    case RT_OP_QUANTIZE:
    case RT_OP_DEQUANTIZE:
        *out = *x;
        return RT_OK;
    case RT_OP_MAX_POOL2D:
    case RT_OP_AVG_POOL2D:
        return infer_pool(n, x, out, err);
    case RT_OP_GLOBAL_AVG_POOL:
        if (x->rank != 4)
            return node_error(err, n, "input must be [N, C, H, W]");
        *out = (struct rt_shape){4, {-1, x->dims[1], 1, 1}};
        return RT_OK;
    case RT_OP_ADD:
        if (!same_shape(x, &g->tensors[n->inputs[1]].shape))
            return node_error(err, n, "inputs must have the same shape");
        *out = *x;
        return RT_OK;
    case RT_OP_FLATTEN: {
        int64_t p = 1;
        for (int i = 1; i < x->rank; i++)
            p *= x->dims[i];
        *out = (struct rt_shape){2, {-1, p}};
        return RT_OK;
    }
    case RT_OP_RESHAPE: {
        const struct rt_shape *r = &n->a.reshape;
        int64_t total = 1, known = 1;
        int unknown = -1;
        for (int i = 1; i < x->rank; i++)
            total *= x->dims[i];
        for (int i = 0; i < r->rank; i++) {
            if (r->dims[i] == -1) {
                if (unknown >= 0)
                    return node_error(err, n, "at most one -1 in 'shape'");
                unknown = i;
            } else if (__builtin_mul_overflow(known, r->dims[i], &known)) {
                return node_error(err, n, "'shape' overflows");
            }
        }
        if ((unknown >= 0 && total % known != 0) || (unknown < 0 && known != total))
            return node_error(err, n, "'shape' does not match the input's element count");
        out->rank = r->rank + 1;
        out->dims[0] = -1;
        for (int i = 0; i < r->rank; i++)
            out->dims[i + 1] = i == unknown ? total / known : r->dims[i];
        return RT_OK;
    }
    case RT_OP_CONCAT: {
        int axis = normalise_axis(n->a.axis, x->rank);
        if (axis < 1 || axis >= x->rank)
            return node_error(err, n, "'axis' must name a non-batch dimension");
        *out = *x;
        for (int i = 1; i < n->n_inputs; i++) {
            const struct rt_shape *y = &g->tensors[n->inputs[i]].shape;
            if (y->rank != x->rank)
                return node_error(err, n, "inputs must have the same rank");
            for (int d = 1; d < x->rank; d++) {
                if (d != axis && y->dims[d] != x->dims[d])
                    return node_error(err, n, "inputs differ outside the concat axis");
            }
            out->dims[axis] += y->dims[axis];
        }
        return RT_OK;
    }
    case RT_OP_SOFTMAX: {
        int axis = normalise_axis(n->a.axis, x->rank);
        if (axis < 1 || axis >= x->rank)
            return node_error(err, n, "'axis' must name a non-batch dimension");
        *out = *x;
        return RT_OK;
    }
    case RT_OP_BINARY:
        return infer_binary(g, n, x, out, err);
    case RT_OP_MATMUL:
        return infer_matmul(g, n, x, out, err);
    case RT_OP_CONV2D_DYN:
        return infer_conv_dyn(g, n, x, out, err);
    case RT_OP_BATCH_NORM_DYN:
        if (x->rank < 3)
            return node_error(err, n, "input must be per-sample [N, C, ...]");
        for (int k = 1; k < 5; k++) {
            const struct rt_shape *p = &g->tensors[n->inputs[k]].shape;
            if (p->rank != 2 || p->dims[1] != x->dims[2])
                return node_error(err, n, "parameters must be per-sample [C] with C the input channels");
        }
        *out = *x;
        return RT_OK;
    case RT_OP_COUNT:
        break;
    }
    return node_error(err, n, "unknown op");
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
                return node_error(err, bn, "running_var must be non-negative and finite");
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
            node_error(err, n, "output tensor is empty or too large");
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
