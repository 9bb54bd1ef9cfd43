/* plan.c - fusion, views and arena layout (see core/plan.h). */
#include "runtime/core/plan.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/ops/ops_impl.h"
#include "runtime/rt_checked.h"
#include "runtime/rt_model.h"

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
        if (rt_op_has(nd->op, RT_T_VIEW)) {
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
        s->act = rt_node_act(nd);
        s->q8 = nd->op == RT_OP_QUANTIZE || nd->op == RT_OP_DEQUANTIZE ||
                g->tensors[nd->inputs[0]].dtype == RT_DTYPE_I8;
        if (!fuse || !rt_op_has(nd->op, RT_T_GEMM))
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
        if (c >= 0 && act_fuses(g, s->out, rt_node_act(&g->nodes[c]))) {
            s->act = rt_node_act(&g->nodes[c]);
            s->out = g->nodes[c].output;
            absorbed[c] = true;
        }
    }
    return n;
}

/* Whether step s is a conv2d whose epilogue at most clamps: a chain's
 * part. */
static bool plain_f32_conv(const struct rt_graph *g, const struct rt_step *s)
{
    return s->op == RT_OP_CONV2D && !s->q8 && s->residual < 0 && g->tensors[s->out].dtype == RT_DTYPE_F32 &&
           (s->act == K_ACT_NONE || s->act == K_ACT_RELU || s->act == K_ACT_RELU6);
}

/* Joins each conv2d step to the next where that one alone reads its
 * output (not a model output, nor a view's storage) and the backend's rule
 * takes the pair; returns the steps left. Runs once the steps have their
 * parameters. */
static int chain_steps(const struct rt_graph *g, struct rt_plan *p, rt_chain_rule chains)
{
    int n = 0;
    for (int i = 0; i < p->n_steps; i++) {
        struct rt_step *s = &p->steps[n++];
        if (s != &p->steps[i])
            *s = p->steps[i];
        if (i + 1 >= p->n_steps)
            continue;
        const struct rt_step *next = &p->steps[i + 1];
        const struct rt_tensor *mid = &g->tensors[s->out];
        if (!plain_f32_conv(g, s) || !plain_f32_conv(g, next) || next->n_in != 1 || next->in[0] != s->out ||
            mid->n_consumers != 1 || mid->output_index >= 0 || p->root[s->out] != s->out ||
            !chains(&s->k.conv, &next->k.conv))
            continue;
        s->chain = next->node;
        s->k.chain.dw = next->k.conv;
        s->out = next->out;
        i++;
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

static enum rt_status build(const struct rt_graph *g, bool fuse, rt_chain_rule chains, struct rt_plan *out,
                            struct rt_error *err)
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
    for (int i = 0; i < out->n_steps; i++) {
        struct rt_step *st = &out->steps[i];
        const struct rt_op_family *f = rt_op_info(st->op)->family;
        if (f->params)
            f->params(g, st, &st->k);
    }
    if (chains)
        out->n_steps = chain_steps(g, out, chains);
    enum rt_status s = layout_arena(g, out, err);
    if (s != RT_OK)
        rt_plan_free(out);
    return s;
}

enum rt_status rt_plan_build(const struct rt_graph *g, rt_chain_rule chains, struct rt_plan *out,
                             struct rt_error *err)
{
    return build(g, true, chains, out, err);
}

enum rt_status rt_plan_build_unfused(const struct rt_graph *g, struct rt_plan *out, struct rt_error *err)
{
    return build(g, false, NULL, out, err);
}

void rt_plan_free(struct rt_plan *p)
{
    free(p->steps);
    free(p->root);
    free(p->offset);
    memset(p, 0, sizeof(*p));
}

double rt_step_weight_bytes(const struct rt_plan *p, const struct rt_step *s)
{
    const bool fp16 = p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    double total = 0;
    const struct rt_node *nodes[2] = {s->node, s->chain};
    for (int i = 0; i < 2 && nodes[i]; i++)
        for (int r = 0; r < RT_W_COUNT; r++) {
            const struct rt_weight *w = &nodes[i]->w[r];
            if (!w->data && !w->q)
                continue;
            double elems = 1;
            for (int d = 0; d < w->shape.rank; d++)
                elems *= (double)w->shape.dims[d];
            total += elems * (r == RT_W_WEIGHT && w->q ? 1.0 : r == RT_W_WEIGHT && fp16 ? 2.0 : 4.0);
        }
    return total;
}

union rt_step_params rt_step_params(const struct rt_step *s, int batch)
{
    union rt_step_params k = s->k;
    const struct rt_op_family *f = rt_op_info(s->op)->family;
    if (f->at_batch)
        f->at_batch(&k, batch);
    return k;
}
