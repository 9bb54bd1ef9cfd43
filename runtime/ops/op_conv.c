/* op_conv.c - conv2d (constant weights), conv2d_dyn (weights computed at run
 * time) and conv_transpose2d. */
#include <cjson/cJSON.h>

#include "runtime/ops/ops_impl.h"

/* ---- conv2d: x [N, C, H, W], weight [OC, C/groups, KH, KW], bias [OC] */

static enum rt_status conv2d_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_conv_attrs *a = &n->a.conv;
    const struct rt_weight *w = &n->w[RT_W_WEIGHT];
    if (x->rank != 4)
        return rt_op_node_error(err, n, "input must be [N, C, H, W]");
    if (w->shape.rank != 4)
        return rt_op_node_error(err, n, "weight must be [OC, C/groups, KH, KW]");
    int64_t c = x->dims[1], oc = w->shape.dims[0];
    if (c % a->groups != 0 || oc % a->groups != 0 || w->shape.dims[1] != c / a->groups)
        return rt_op_node_error(err, n, "weight shape does not match input channels and groups");
    if (oc < 1 || w->shape.dims[2] < 1 || w->shape.dims[3] < 1 || w->shape.dims[2] > 1024 ||
        w->shape.dims[3] > 1024 || oc > (1 << 20))
        return rt_op_node_error(err, n, "weight has an empty or absurd dimension");
    if (n->w[RT_W_BIAS].data && !rt_op_weight_is(&n->w[RT_W_BIAS], 1, &oc))
        return rt_op_node_error(err, n, "bias must be [OC]");
    int64_t oh = rt_op_window_out(x->dims[2], a->pad[0], a->pad[2], (int)w->shape.dims[2], a->dilation[0],
                                  a->stride[0], false);
    int64_t ow = rt_op_window_out(x->dims[3], a->pad[1], a->pad[3], (int)w->shape.dims[3], a->dilation[1],
                                  a->stride[1], false);
    if (oh < 1 || ow < 1)
        return rt_op_node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){4, {-1, oc, oh, ow}};
    return RT_OK;
}

/* x: the input's per-sample dims from its channel on; w: the weight's from OC on. */
static struct k_conv2d conv_params(int n, const int64_t *x, const int64_t *y, const int64_t *w,
                                   const struct rt_conv_attrs *a, enum k_act act)
{
    return (struct k_conv2d){
        .n = n, .c = (int)x[0], .h = (int)x[1], .w = (int)x[2],
        .oc = (int)y[0], .oh = (int)y[1], .ow = (int)y[2],
        .kh = (int)w[2], .kw = (int)w[3],
        .stride_h = a->stride[0], .stride_w = a->stride[1],
        .pad_t = a->pad[0], .pad_l = a->pad[1],
        .dil_h = a->dilation[0], .dil_w = a->dilation[1],
        .groups = a->groups, .act = act,
    };
}

static void conv2d_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    k->conv = conv_params(1, g->tensors[s->in[0]].shape.dims + 1, g->tensors[s->out].shape.dims + 1,
                          s->node->w[RT_W_WEIGHT].shape.dims, &s->node->a.conv, s->act);
}

/* A chain's depthwise grows with the batch too (zeros without a chain). */
static void conv2d_at_batch(union rt_step_params *k, int batch)
{
    k->conv.n *= batch;
    k->chain.dw.n *= batch;
}

static bool conv2d_read_attrs(struct rt_attrs *at, struct rt_node *n)
{
    static const int ONE2[2] = {1, 1}, ZERO4[4] = {0, 0, 0, 0};
    struct rt_conv_attrs *a = &n->a.conv;
    int np;
    if (!rt_attrs_ints(at, "stride", 2, 0, 1, 1024, ONE2, a->stride) ||
        !(np = rt_attrs_ints(at, "padding", 2, 4, 0, 1024, ZERO4, a->pad)) ||
        !rt_attrs_ints(at, "dilation", 2, 0, 1, 1024, ONE2, a->dilation) ||
        !rt_attrs_int(at, "groups", 1, 1 << 20, 1, &a->groups))
        return false;
    if (np == 2) {   /* [h, w] -> symmetric [top, left, bottom, right] */
        a->pad[2] = a->pad[0];
        a->pad[3] = a->pad[1];
    }
    return true;
}

static bool conv2d_write_attrs(const struct rt_node *n, cJSON *a)
{
    const struct rt_conv_attrs *c = &n->a.conv;
    return rt_op_attach(a, "stride", cJSON_CreateIntArray(c->stride, 2)) &&
           rt_op_attach(a, "padding", cJSON_CreateIntArray(c->pad, 4)) &&
           rt_op_attach(a, "dilation", cJSON_CreateIntArray(c->dilation, 2)) &&
           cJSON_AddNumberToObject(a, "groups", c->groups);
}

/* Two per multiply-add of one output pixel's window, over every output. */
static double conv_flops(const struct k_conv2d *c)
{
    int window = c->c / c->groups * c->kh * c->kw;   /* exact: groups divide the channels */
    return 2.0 * c->n * c->oc * c->oh * c->ow * window;
}

static double conv2d_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    return conv_flops(&k->conv) + (s->chain ? conv_flops(&k->chain.dw) : 0.0);
}

const struct rt_op_family rt_family_conv2d = {
    .infer = conv2d_infer,
    .params = conv2d_params,
    .at_batch = conv2d_at_batch,
    .weights = rt_op_gemm_weights,
    .read_attrs = conv2d_read_attrs,
    .write_attrs = conv2d_write_attrs,
    .q8_prepare = rt_op_q8_prepare_gemm,
    .flops = conv2d_flops,
};

/* ---- conv2d_dyn: x per-sample [N, C, H, W], weight [OC, C/groups, KH, KW],
 * optional bias [OC], all run-time tensors (one per sample) */

static enum rt_status conv2d_dyn_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                       struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_conv_attrs *a = &n->a.conv;
    const struct rt_shape *w = &g->tensors[n->inputs[1]].shape;
    if (x->rank != 5)
        return rt_op_node_error(err, n, "input must be per-sample [N, C, H, W]");
    if (w->rank != 5)
        return rt_op_node_error(err, n, "weight must be per-sample [OC, C/groups, KH, KW]");
    int64_t c = x->dims[2], oc = w->dims[1];
    if (a->groups < 1 || c % a->groups != 0 || oc % a->groups != 0 || w->dims[2] != c / a->groups)
        return rt_op_node_error(err, n, "weight shape does not match input channels and groups");
    if (oc < 1 || w->dims[3] < 1 || w->dims[4] < 1 || w->dims[3] > 1024 || w->dims[4] > 1024 || oc > (1 << 20))
        return rt_op_node_error(err, n, "weight has an empty or absurd dimension");
    if (n->n_inputs == 3) {
        const struct rt_shape *b = &g->tensors[n->inputs[2]].shape;
        if (b->rank != 2 || b->dims[1] != oc)
            return rt_op_node_error(err, n, "bias must be per-sample [OC]");
    }
    int64_t oh = rt_op_window_out(x->dims[3], a->pad[0], a->pad[2], (int)w->dims[3], a->dilation[0], a->stride[0],
                                  false);
    int64_t ow = rt_op_window_out(x->dims[4], a->pad[1], a->pad[3], (int)w->dims[4], a->dilation[1], a->stride[1],
                                  false);
    if (oh < 1 || ow < 1)
        return rt_op_node_error(err, n, "kernel larger than the padded input");
    *out = (struct rt_shape){5, {-1, x->dims[1], oc, oh, ow}};
    return RT_OK;
}

/* One sample's convolution: n = the sample's images; backends loop over the
 * batch, packing each sample's weights. */
static void conv2d_dyn_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *t = g->tensors;
    const struct rt_shape *x = &t[s->in[0]].shape;
    k->conv_dyn = (struct rt_conv_dyn_params){
        .conv = conv_params((int)x->dims[1], x->dims + 2, t[s->out].shape.dims + 2, t[s->in[1]].shape.dims + 1,
                            &s->node->a.conv, K_ACT_NONE),
        .x_elems = t[s->in[0]].sample_elems,
        .w_elems = t[s->in[1]].sample_elems,
        .b_elems = s->n_in > 2 ? t[s->in[2]].sample_elems : 0,
        .y_elems = t[s->out].sample_elems,
    };
}

/* k holds one sample's convolution (never scaled): batch of them. */
static double conv2d_dyn_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    return batch * conv_flops(&k->conv_dyn.conv);
}

const struct rt_op_family rt_family_conv2d_dyn = {
    .infer = conv2d_dyn_infer,
    .params = conv2d_dyn_params,
    .flops = conv2d_dyn_flops,
};

/* ---- conv_transpose2d: x [N, C, H, W], weight [C, OC/groups, KH, KW], bias
 * [OC]; output_padding in a.conv_transpose (ONNX only) */

static enum rt_status conv_transpose2d_infer(const struct rt_graph *g, const struct rt_node *n,
                                             struct rt_shape *out, struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_conv_transpose_attrs *t = &n->a.conv_transpose;
    const struct rt_conv_attrs *a = &t->conv;
    const struct rt_weight *w = &n->w[RT_W_WEIGHT];
    if (x->rank != 4)
        return rt_op_node_error(err, n, "input must be [N, C, H, W]");
    if (w->shape.rank != 4)
        return rt_op_node_error(err, n, "weight must be [C, OC/groups, KH, KW]");
    int64_t c = x->dims[1], oc = w->shape.dims[1] * a->groups;
    if (a->groups < 1 || c % a->groups != 0 || w->shape.dims[0] != c)
        return rt_op_node_error(err, n, "weight shape does not match input channels and groups");
    if (oc < 1 || w->shape.dims[2] < 1 || w->shape.dims[3] < 1 || w->shape.dims[2] > 1024 ||
        w->shape.dims[3] > 1024 || oc > (1 << 20))
        return rt_op_node_error(err, n, "weight has an empty or absurd dimension");
    if (n->w[RT_W_BIAS].data && !rt_op_weight_is(&n->w[RT_W_BIAS], 1, &oc))
        return rt_op_node_error(err, n, "bias must be [OC]");
    int64_t len[2];
    for (int d = 0; d < 2; d++) {
        if (a->stride[d] < 1 || a->dilation[d] < 1 || t->out_pad[d] < 0 ||
            t->out_pad[d] >= (a->stride[d] > a->dilation[d] ? a->stride[d] : a->dilation[d]))
            return rt_op_node_error(err, n, "output padding must be below the stride or the dilation");
        len[d] = (x->dims[2 + d] - 1) * a->stride[d] - a->pad[d] - a->pad[d + 2] +
                 (int64_t)a->dilation[d] * (w->shape.dims[2 + d] - 1) + t->out_pad[d] + 1;
        if (len[d] < 1 || len[d] > (1 << 24))
            return rt_op_node_error(err, n, "the pads leave no output");
    }
    *out = (struct rt_shape){4, {-1, oc, len[0], len[1]}};
    return RT_OK;
}

static void conv_transpose2d_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const int64_t *wd = s->node->w[RT_W_WEIGHT].shape.dims;
    const int64_t w_as_conv[4] = {0, 0, wd[2], wd[3]};   /* conv_params reads the kernel's size only */
    k->conv = conv_params(1, g->tensors[s->in[0]].shape.dims + 1, g->tensors[s->out].shape.dims + 1, w_as_conv,
                          &s->node->a.conv_transpose.conv, K_ACT_NONE);
}

static void conv_transpose2d_at_batch(union rt_step_params *k, int batch) { k->conv.n *= batch; }

/* As many multiply-adds as the convolution it transposes. */
static double conv_transpose2d_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    const struct k_conv2d *p = &k->conv;
    (void)s, (void)batch;
    int per_group = p->oc / p->groups;   /* exact: groups divide the channels */
    return 2.0 * p->n * p->c * p->h * p->w * per_group * p->kh * p->kw;
}

const struct rt_op_family rt_family_conv_transpose2d = {
    .infer = conv_transpose2d_infer,
    .params = conv_transpose2d_params,
    .at_batch = conv_transpose2d_at_batch,
    .flops = conv_transpose2d_flops,
};
