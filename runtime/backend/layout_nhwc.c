/* layout_nhwc.c - the channels-last layout pass (see layout_nhwc.h). */
#include "runtime/backend/layout_nhwc.h"

#include "runtime/ops/op_table.h"

/* What a step allows of the layouts of its rank-4 tensors. */
enum step_rule {
    RULE_CONV,   /* x NHWC if the kernel can read it; y and residual alike */
    RULE_CONV_OUT, /* NHWC only if the kernel takes it: y and residual alike, x NHWC only into NHWC y */
    RULE_SAME,   /* every rank-4 tensor in one layout */
    RULE_READS,  /* x either, y NCHW (global average pooling) */
    RULE_NCHW,   /* every tensor NCHW */
};

static bool is_channel_concat(const struct rt_plan *p, const struct rt_step *s)
{
    int rank = p->g->tensors[s->out].shape.rank, axis = s->node->a.axis;
    return (axis < 0 ? axis + rank : axis) == 1;
}

/* The GPU's float steps (INT8 steps stay NCHW there). */
static enum step_rule float_rule_of(const struct rt_plan *p, const struct rt_step *s)
{
    if (s->q8)
        return RULE_NCHW;
    if (rt_op_has(s->op, RT_T_ACT))
        return RULE_SAME;
    switch (s->op) {
    case RT_OP_CONV2D:
        return RULE_CONV;
    case RT_OP_ADD:
    case RT_OP_BATCH_NORM:
    case RT_OP_MAX_POOL2D:
    case RT_OP_AVG_POOL2D:
        return RULE_SAME;
    case RT_OP_CONCAT:
        return is_channel_concat(p, s) ? RULE_SAME : RULE_NCHW;
    case RT_OP_GLOBAL_AVG_POOL:
        return RULE_READS;
    default:
        return RULE_NCHW;
    }
}

/* The CPU's INT8 steps (float steps stay NCHW there). */
static enum step_rule q8_rule_of(const struct rt_step *s)
{
    if (!s->q8)
        return RULE_NCHW;
    if (rt_op_has(s->op, RT_T_ACT))
        return RULE_SAME;
    switch (s->op) {
    case RT_OP_CONV2D:
        return RULE_CONV_OUT;
    case RT_OP_ADD:
    case RT_OP_MAX_POOL2D:
        return RULE_SAME;
    case RT_OP_GLOBAL_AVG_POOL:
        return RULE_READS;
    default:
        return RULE_NCHW;
    }
}

/* Sets t to NCHW; true when that changed it. */
static bool to_nchw(bool *nhwc, int t)
{
    bool was = t >= 0 && nhwc[t];
    if (was)
        nhwc[t] = false;
    return was;
}

/* Makes step s's rule hold; true when a tensor changed. */
static bool enforce(const struct rt_plan *p, const struct rt_step *s, enum rt_nhwc_steps which,
                    rt_nhwc_conv_rule conv_takes_nhwc, void *user, bool *nhwc)
{
    bool changed = false;
    switch (which == RT_NHWC_Q8_STEPS ? q8_rule_of(s) : float_rule_of(p, s)) {
    case RULE_CONV:
        if (nhwc[s->in[0]] && !conv_takes_nhwc(&s->k.conv, user))
            changed |= to_nchw(nhwc, s->in[0]);
        if (s->residual >= 0 && nhwc[s->residual] != nhwc[s->out])
            changed |= to_nchw(nhwc, s->residual) | to_nchw(nhwc, s->out);
        break;
    case RULE_CONV_OUT:
        if (!conv_takes_nhwc(&s->k.conv, user) || (s->residual >= 0 && !nhwc[s->residual]))
            changed |= to_nchw(nhwc, s->out);
        if (!nhwc[s->out])
            changed |= to_nchw(nhwc, s->in[0]) | to_nchw(nhwc, s->residual);
        break;
    case RULE_SAME: {
        bool all = nhwc[s->out];
        for (int i = 0; i < s->n_in; i++)
            all = all && nhwc[s->in[i]];
        if (!all) {
            changed |= to_nchw(nhwc, s->out);
            for (int i = 0; i < s->n_in; i++)
                changed |= to_nchw(nhwc, s->in[i]);
        }
        break;
    }
    case RULE_READS:
        changed |= to_nchw(nhwc, s->out);
        break;
    case RULE_NCHW:
        changed |= to_nchw(nhwc, s->out) | to_nchw(nhwc, s->residual);
        for (int i = 0; i < s->n_in; i++)
            changed |= to_nchw(nhwc, s->in[i]);
        break;
    }
    return changed;
}

void rt_nhwc_plan(const struct rt_plan *p, enum rt_nhwc_steps which, rt_nhwc_conv_rule conv_takes_nhwc, void *user,
                  bool *nhwc)
{
    const struct rt_graph *g = p->g;
    for (int t = 0; t < g->n_tensors; t++)
        nhwc[t] = false;
    /* candidates: rank-4 tensors a step writes, inside the model */
    for (int i = 0; i < p->n_steps; i++) {
        const struct rt_tensor *y = &g->tensors[p->steps[i].out];
        nhwc[p->steps[i].out] = y->shape.rank == 4 && y->input_index < 0 && y->output_index < 0;
    }
    /* views read their source in NCHW order */
    for (int t = 0; t < g->n_tensors; t++)
        if (p->root[t] != t)
            nhwc[t] = nhwc[p->root[t]] = false;
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < p->n_steps; i++)
            changed |= enforce(p, &p->steps[i], which, conv_takes_nhwc, user, nhwc);
    }
}
