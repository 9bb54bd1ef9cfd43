/* op_pool.c - max_pool2d, avg_pool2d and global_avg_pool over [N, C, H, W]. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "runtime/ops/ops_impl.h"

static enum rt_status pool2d_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_pool_attrs *a = &n->a.pool;
    if (x->rank != 4)
        return rt_op_node_error(err, n, "input must be [N, C, H, W]");
    /* so that no window lies wholly in the padding (PyTorch asks for at most
     * half the kernel, ONNX for less than all of it) */
    int64_t span_h = (int64_t)a->dilation[0] * (a->kernel[0] - 1) + 1;
    int64_t span_w = (int64_t)a->dilation[1] * (a->kernel[1] - 1) + 1;
    if (a->pad[0] >= span_h || a->pad[2] >= span_h || a->pad[1] >= span_w || a->pad[3] >= span_w)
        return rt_op_node_error(err, n, "padding must be smaller than the kernel");
    int64_t oh = rt_op_window_out(x->dims[2], a->pad[0], a->pad[2], a->kernel[0], a->dilation[0], a->stride[0],
                                  a->ceil_mode);
    int64_t ow = rt_op_window_out(x->dims[3], a->pad[1], a->pad[3], a->kernel[1], a->dilation[1], a->stride[1],
                                  a->ceil_mode);
    if (oh < 1 || ow < 1)
        return rt_op_node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){4, {-1, x->dims[1], oh, ow}};
    return RT_OK;
}

static void pool2d_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape, *y = &g->tensors[s->out].shape;
    const struct rt_pool_attrs *a = &s->node->a.pool;
    k->pool = (struct k_pool2d){
        .n = 1, .c = (int)x->dims[1], .h = (int)x->dims[2], .w = (int)x->dims[3],
        .oh = (int)y->dims[2], .ow = (int)y->dims[3],
        .kh = a->kernel[0], .kw = a->kernel[1],
        .stride_h = a->stride[0], .stride_w = a->stride[1],
        .pad_t = a->pad[0], .pad_l = a->pad[1],
        .dil_h = a->dilation[0], .dil_w = a->dilation[1],
        .count_include_pad = a->count_include_pad,
    };
}

static void pool2d_at_batch(union rt_step_params *k, int batch) { k->pool.n *= batch; }

/* One comparison or addition per window element of every output. */
static double pool2d_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    const struct k_pool2d *p = &k->pool;
    return (double)p->n * p->c * p->oh * p->ow * p->kh * (double)p->kw;
}

static bool pool2d_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    static const int ONE2[2] = {1, 1}, ZERO4[4] = {0, 0, 0, 0};
    struct rt_pool_attrs *a = &n->a.pool;
    int np;
    if (!rt_attrs_ints(at, "kernel", 2, 0, 1, 1024, NULL, a->kernel) ||
        !rt_attrs_ints(at, "stride", 2, 0, 1, 1024, a->kernel, a->stride) ||
        !(np = rt_attrs_ints(at, "padding", 2, 4, 0, 1024, ZERO4, a->pad)) ||
        !rt_attrs_ints(at, "dilation", 2, 0, 1, 1024, ONE2, a->dilation) ||
        !rt_attrs_bool(at, "ceil_mode", false, &a->ceil_mode) ||
        !rt_attrs_bool(at, "count_include_pad", true, &a->count_include_pad))
        return false;
    if (np == 2) {
        a->pad[2] = a->pad[0];
        a->pad[3] = a->pad[1];
    }
    return true;
}

static bool pool2d_write_attrs(const struct rt_node *n, cJSON *a)
{
    const struct rt_pool_attrs *p = &n->a.pool;
    return rt_op_attach(a, "kernel", cJSON_CreateIntArray(p->kernel, 2)) &&
           rt_op_attach(a, "stride", cJSON_CreateIntArray(p->stride, 2)) &&
           rt_op_attach(a, "padding", cJSON_CreateIntArray(p->pad, 4)) &&
           cJSON_AddBoolToObject(a, "ceil_mode", p->ceil_mode);
}

static bool max_pool2d_write_attrs(const struct rt_node *n, cJSON *a)
{
    return pool2d_write_attrs(n, a) && rt_op_attach(a, "dilation", cJSON_CreateIntArray(n->a.pool.dilation, 2));
}

/* max pooling in INT8 selects input codes: nothing to derive. */
const struct rt_op_family rt_family_max_pool2d = {
    .infer = pool2d_infer,
    .params = pool2d_params,
    .at_batch = pool2d_at_batch,
    .read_attrs = pool2d_read_attrs,
    .write_attrs = max_pool2d_write_attrs,
    .flops = pool2d_flops,
};

static bool avg_pool2d_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    if (!pool2d_read_attrs(at, n))
        return false;
    if (n->a.pool.dilation[0] != 1 || n->a.pool.dilation[1] != 1)
        return rt_attrs_fail(at, "average pooling takes no dilation");
    return true;
}

static bool avg_pool2d_write_attrs(const struct rt_node *n, cJSON *a)
{
    return pool2d_write_attrs(n, a) && cJSON_AddBoolToObject(a, "count_include_pad", n->a.pool.count_include_pad);
}

/* INT8: one multiplier per count of cells a window covers. */
static enum rt_status avg_pool2d_q8_prepare(const struct rt_graph *g, const struct rt_step *s,
                                            struct rt_q8_step *q, struct rt_error *err)
{
    double s_in = g->tensors[s->in[0]].scale, s_out = g->tensors[s->out].scale;
    int cells = s->node->a.pool.kernel[0] * s->node->a.pool.kernel[1];
    if (!(q->mult = calloc((size_t)cells + 1, sizeof(*q->mult))))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    for (int c = 1; c <= cells; c++)
        q->mult[c] = rt_q8_mult(s_in / ((double)c * s_out));
    return RT_OK;
}

const struct rt_op_family rt_family_avg_pool2d = {
    .infer = pool2d_infer,
    .params = pool2d_params,
    .at_batch = pool2d_at_batch,
    .read_attrs = avg_pool2d_read_attrs,
    .write_attrs = avg_pool2d_write_attrs,
    .q8_prepare = avg_pool2d_q8_prepare,
    .flops = pool2d_flops,
};

/* ---- global_avg_pool: [N, C, H, W] -> [N, C, 1, 1] */

static enum rt_status global_avg_pool_infer(const struct rt_graph *g, const struct rt_node *n,
                                            struct rt_shape *out, struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    if (x->rank != 4)
        return rt_op_node_error(err, n, "input must be [N, C, H, W]");
    *out = (struct rt_shape){4, {-1, x->dims[1], 1, 1}};
    return RT_OK;
}

static void global_avg_pool_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    k->channels = (struct rt_channels){1, x->dims[1], x->dims[2] * x->dims[3]};
}

static void channels_at_batch(union rt_step_params *k, int batch) { k->channels.n *= batch; }

/* One addition per input element. */
static double global_avg_pool_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    return (double)k->channels.n * (double)k->channels.c * (double)k->channels.inner;
}

static enum rt_status global_avg_pool_q8_prepare(const struct rt_graph *g, const struct rt_step *s,
                                                 struct rt_q8_step *q, struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[s->in[0]].shape;
    if (!(q->mult = malloc(sizeof(*q->mult))))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    q->mult[0] = rt_q8_mult(g->tensors[s->in[0]].scale /
                            ((double)(x->dims[2] * x->dims[3]) * g->tensors[s->out].scale));
    return RT_OK;
}

const struct rt_op_family rt_family_global_avg_pool = {
    .infer = global_avg_pool_infer,
    .params = global_avg_pool_params,
    .at_batch = channels_at_batch,
    .q8_prepare = global_avg_pool_q8_prepare,
    .flops = global_avg_pool_flops,
};
