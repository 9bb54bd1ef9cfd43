/* plan.c - fusion, views and arena layout (see rt_plan.h). */
#include "rt_plan.h"

#include <stdlib.h>
#include <string.h>

#include "rt_checked.h"

static enum k_act act_of(const struct rt_node *n)
{
    switch (n->op) {
    case RT_OP_RELU: return K_ACT_RELU;
    case RT_OP_RELU6: return K_ACT_RELU6;
    case RT_OP_SIGMOID: return K_ACT_SIGMOID;
    case RT_OP_TANH: return K_ACT_TANH;
    case RT_OP_GELU: return n->a.gelu_tanh ? K_ACT_GELU_TANH : K_ACT_GELU;
    default: return K_ACT_NONE;
    }
}

/* The single node consuming tensor t, when t is not a model output. */
static int sole_consumer(const struct rt_graph *g, int t, int after)
{
    if (g->tensors[t].n_consumers != 1 || g->tensors[t].output_index >= 0)
        return -1;
    for (int i = after + 1; i < g->n_nodes; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            if (g->nodes[i].inputs[k] == t)
                return i;
        }
    }
    return -1;
}

/* Whether act can join the epilogue of a step writing tensor out: any in
 * float, only the clamps (ReLU, ReLU6) in INT8, where other activations are
 * table steps of their own. */
static bool act_fuses(const struct rt_graph *g, int out, enum k_act act)
{
    return act != K_ACT_NONE &&
           (g->tensors[out].dtype == RT_DTYPE_F32 || act == K_ACT_RELU || act == K_ACT_RELU6);
}

/* Emits steps; absorbed[i] marks nodes folded into an earlier step. */
static int build_steps(const struct rt_graph *g, struct rt_plan *p, bool fuse, bool *absorbed)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct rt_node *nd = &g->nodes[i];
        if (absorbed[i])
            continue;
        if (nd->op == RT_OP_FLATTEN || nd->op == RT_OP_RESHAPE) {
            p->root[nd->output] = p->root[nd->inputs[0]];
            continue;
        }
        struct rt_step *s = &p->steps[n++];
        memset(s, 0, sizeof(*s));
        s->op = nd->op;
        s->node = nd;
        s->n_in = nd->n_inputs;
        memcpy(s->in, nd->inputs, sizeof(int) * (size_t)nd->n_inputs);
        s->out = nd->output;
        s->residual = -1;
        s->act = act_of(nd);
        s->q8 = nd->op == RT_OP_QUANTIZE || nd->op == RT_OP_DEQUANTIZE ||
                g->tensors[nd->inputs[0]].dtype == RT_DTYPE_I8;
        if (!fuse || (nd->op != RT_OP_CONV2D && nd->op != RT_OP_LINEAR))
            continue;
        int c = sole_consumer(g, s->out, i);
        if (c >= 0 && g->nodes[c].op == RT_OP_ADD) {
            const struct rt_node *add = &g->nodes[c];
            int other = add->inputs[0] == s->out ? add->inputs[1] : add->inputs[0];
            int prod = g->tensors[other].producer;
            /* the residual must exist when this step runs */
            if (other != s->out && prod < i) {
                s->residual = other;
                s->out = add->output;
                absorbed[c] = true;
                c = sole_consumer(g, s->out, c);
            } else {
                c = -1;
            }
        }
        if (c >= 0 && act_fuses(g, s->out, act_of(&g->nodes[c]))) {
            s->act = act_of(&g->nodes[c]);
            s->out = g->nodes[c].output;
            absorbed[c] = true;
        }
    }
    return n;
}

struct block {
    size_t offset, size;
    int last_use;
};

/* Greedy first-fit by definition order; a block is free once its last
 * reader has run (never reused by the step that reads it). */
static enum rt_status layout_arena(const struct rt_graph *g, struct rt_plan *p, struct rt_error *err)
{
    int nt = g->n_tensors;
    int *def = malloc(sizeof(int) * (size_t)nt), *last = malloc(sizeof(int) * (size_t)nt);
    struct block *live = malloc(sizeof(*live) * (size_t)nt);
    if (!def || !last || !live) {
        free(def), free(last), free(live);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int t = 0; t < nt; t++) {
        def[t] = g->tensors[t].input_index >= 0 ? -1 : -2;   /* -2: never materialised */
        last[t] = -1;
    }
    for (int s = 0; s < p->n_steps; s++) {
        const struct rt_step *st = &p->steps[s];
        def[p->root[st->out]] = s;
        for (int k = 0; k < st->n_in; k++)
            last[p->root[st->in[k]]] = s;
        if (st->residual >= 0)
            last[p->root[st->residual]] = s;
    }
    for (int t = 0; t < nt; t++) {
        if (g->tensors[t].output_index >= 0)
            last[p->root[t]] = p->n_steps;   /* read by copy-out */
    }
    int n_live = 0;
    size_t top = 0;
    enum rt_status status = RT_OK;
    for (int s = -1; s < p->n_steps && status == RT_OK; s++) {
        /* release blocks whose last reader ran before step s */
        for (int b = 0; b < n_live;) {
            if (live[b].last_use < s)
                live[b] = live[--n_live];
            else
                b++;
        }
        for (int t = 0; t < nt; t++) {
            if (def[t] != s || p->root[t] != t)
                continue;
            size_t size;
            if (!rt_mul_size((size_t)g->tensors[t].sample_elems, rt_dtype_size(g->tensors[t].dtype), &size) ||
                !rt_align_size(size, RT_ARENA_ALIGN, &size)) {
                status = rt_error_set(err, RT_ERR_BAD_MODEL, "tensor '%s' is too large", g->tensors[t].name);
                break;
            }
            /* first gap that fits, scanning blocks by offset */
            size_t at = 0;
            bool moved = true;
            while (moved) {
                moved = false;
                for (int b = 0; b < n_live; b++) {
                    if (at < live[b].offset + live[b].size && live[b].offset < at + size) {
                        at = live[b].offset + live[b].size;
                        moved = true;
                    }
                }
            }
            live[n_live++] = (struct block){at, size, last[t] < 0 ? s : last[t]};
            p->offset[t] = at;
            if (at + size > top)
                top = at + size;
        }
    }
    p->sample_bytes = top;
    free(def), free(last), free(live);
    return status;
}

static enum rt_status build(const struct rt_graph *g, bool fuse, struct rt_plan *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    out->g = g;
    out->steps = calloc((size_t)g->n_nodes + 1, sizeof(*out->steps));
    out->root = malloc(sizeof(int) * ((size_t)g->n_tensors + 1));
    out->offset = calloc((size_t)g->n_tensors + 1, sizeof(size_t));
    bool *absorbed = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!out->steps || !out->root || !out->offset || !absorbed) {
        free(absorbed);
        rt_plan_free(out);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int t = 0; t < g->n_tensors; t++)
        out->root[t] = t;
    out->n_steps = build_steps(g, out, fuse, absorbed);
    free(absorbed);
    enum rt_status s = layout_arena(g, out, err);
    if (s != RT_OK)
        rt_plan_free(out);
    return s;
}

enum rt_status rt_plan_build(const struct rt_graph *g, struct rt_plan *out, struct rt_error *err)
{
    return build(g, true, out, err);
}

enum rt_status rt_plan_build_unfused(const struct rt_graph *g, struct rt_plan *out, struct rt_error *err)
{
    return build(g, false, out, err);
}

void rt_plan_free(struct rt_plan *p)
{
    free(p->steps);
    free(p->root);
    free(p->offset);
    memset(p, 0, sizeof(*p));
}

struct k_conv2d rt_step_conv2d(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_shape *x = &p->g->tensors[s->in[0]].shape, *y = &p->g->tensors[s->out].shape;
    const struct rt_conv_attrs *a = &s->node->a.conv;
    const struct rt_shape *w = &s->node->w[RT_W_WEIGHT].shape;
    return (struct k_conv2d){
        .n = batch, .c = (int)x->dims[1], .h = (int)x->dims[2], .w = (int)x->dims[3],
        .oc = (int)y->dims[1], .oh = (int)y->dims[2], .ow = (int)y->dims[3],
        .kh = (int)w->dims[2], .kw = (int)w->dims[3],
        .stride_h = a->stride[0], .stride_w = a->stride[1],
        .pad_t = a->pad[0], .pad_l = a->pad[1],
        .dil_h = a->dilation[0], .dil_w = a->dilation[1],
        .groups = a->groups, .act = s->act,
    };
}

/* A rank > 2 input [N, ..., K] is N * ... rows of K. */
struct k_linear rt_step_linear(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_tensor *x = &p->g->tensors[s->in[0]], *y = &p->g->tensors[s->out];
    int64_t k = x->shape.dims[x->shape.rank - 1];
    return (struct k_linear){.n = (int)(batch * (x->sample_elems / k)), .k = (int)k,
                             .m = (int)y->shape.dims[y->shape.rank - 1], .act = s->act};
}

struct k_binary rt_step_binary(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_graph *g = p->g;
    const struct rt_node *nd = s->node;
    const struct rt_tensor *y = &g->tensors[s->out], *x = &g->tensors[s->in[0]];
    const struct rt_tensor *x1 = s->n_in > 1 ? &g->tensors[s->in[1]] : NULL;
    const struct rt_shape *c = &nd->w[RT_W_WEIGHT].shape;
    struct k_binary k = {.n = batch, .rank = y->shape.rank - 1, .op = nd->a.binary.op,
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
    return k;
}

struct k_pool2d rt_step_pool2d(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_shape *x = &p->g->tensors[s->in[0]].shape, *y = &p->g->tensors[s->out].shape;
    const struct rt_pool_attrs *a = &s->node->a.pool;
    return (struct k_pool2d){
        .n = batch, .c = (int)x->dims[1], .h = (int)x->dims[2], .w = (int)x->dims[3],
        .oh = (int)y->dims[2], .ow = (int)y->dims[3],
        .kh = a->kernel[0], .kw = a->kernel[1],
        .stride_h = a->stride[0], .stride_w = a->stride[1],
        .pad_t = a->pad[0], .pad_l = a->pad[1],
        .dil_h = a->dilation[0], .dil_w = a->dilation[1],
        .count_include_pad = a->count_include_pad,
    };
}
