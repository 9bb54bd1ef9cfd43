/* fp16_bound.c - the FP16 error bounds of fp16_bound.h. */
#include "fp16_bound.h"

#include "runtime/rt_model_impl.h"

int fp16_roundings(const struct rt_model *m) { return rt_model_plan_steps(m) + 1; }

int fp16_conv_steps(const struct rt_model *m)
{
    const struct rt_graph *g = rt_model_graph(m);
    int convs = 0;
    for (int i = 0; i < g->n_nodes; i++)
        convs += g->nodes[i].op == RT_OP_CONV2D;
    return convs;
}

double fp16_bound_vs_fp32(int roundings) { return roundings * FP16_UNIT_ROUNDOFF; }

double fp16_bound_vs_fp16(int shared, int extra)
{
    return shared * 2.0 * FP16_UNIT_ROUNDOFF + extra * FP16_UNIT_ROUNDOFF;
}
