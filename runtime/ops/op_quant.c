/* op_quant.c - quantize and dequantize: the float edges of INT8 models,
 * inserted by rt_graph_apply_precision (model.json cannot name them). */
#include <stdlib.h>

#include "runtime/ops/ops_impl.h"

/* quantize: F32 -> I8 at the output's scale. */
static enum rt_status quantize_q8_prepare(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                          struct rt_error *err)
{
    (void)err;
    q->scale = (float)(1.0 / g->tensors[s->out].scale);
    return RT_OK;
}

const struct rt_op_family rt_family_quantize = {
    .infer = rt_op_infer_same,
    .params = rt_op_params_count,
    .at_batch = rt_op_count_at_batch,
    .q8_prepare = quantize_q8_prepare,
};

/* dequantize: I8 -> F32 at the input's scale, or the I32 accumulators of a
 * conv2d / linear (the classifier) per output channel: a conv's channels are
 * dim 1 of NCHW, a linear layer's the last dim of [N, ..., M]. */
static void dequantize_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *in = &g->tensors[s->in[0]];
    if (in->dtype == RT_DTYPE_I8) {
        k->channels = (struct rt_channels){1, 1, in->sample_elems};
    } else if (g->nodes[in->producer].op == RT_OP_LINEAR) {
        int64_t c = in->shape.dims[in->shape.rank - 1];
        k->channels = (struct rt_channels){in->sample_elems / c, c, 1};
    } else {
        k->channels = (struct rt_channels){1, in->shape.dims[1], in->sample_elems / in->shape.dims[1]};
    }
}

static void dequantize_at_batch(union rt_step_params *k, int batch) { k->channels.n *= batch; }

static enum rt_status dequantize_q8_prepare(const struct rt_graph *g, const struct rt_step *s,
                                            struct rt_q8_step *q, struct rt_error *err)
{
    const struct rt_tensor *in = &g->tensors[s->in[0]];
    if (in->dtype == RT_DTYPE_I8) {
        q->scale = in->scale;
        return RT_OK;
    }
    /* I32 accumulators: scale s_x * s_w[c] per channel */
    const struct rt_node *mm = &g->nodes[in->producer];
    const struct rt_weight *w = &mm->w[RT_W_WEIGHT];
    double s_x = g->tensors[mm->inputs[0]].scale;
    q->chan_scale = malloc(sizeof(float) * (size_t)w->shape.dims[0]);
    if (!q->chan_scale)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    for (int64_t c = 0; c < w->shape.dims[0]; c++)
        q->chan_scale[c] = (float)(s_x * (double)w->scale[c]);
    return RT_OK;
}

const struct rt_op_family rt_family_dequantize = {
    .infer = rt_op_infer_same,
    .params = dequantize_params,
    .at_batch = dequantize_at_batch,
    .q8_prepare = dequantize_q8_prepare,
};
