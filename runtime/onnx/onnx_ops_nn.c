/*
 * onnx_ops_nn.c - ONNX ops with weights or windows: Conv, ConvTranspose,
 * MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, Gemm, MatMul.
 *
 * The runtime's kernels are 2-D: a 1-D op runs as 2-D with a height of 1
 * (views on both sides, no copy). Window geometry follows the ONNX spec:
 * auto_pad SAME_UPPER / SAME_LOWER / VALID, asymmetric pads [begin...,
 * end...], dilations, ceil_mode. Where a runtime kernel's convention could
 * differ from ONNX (the last window of ceil_mode, the divisor of an average
 * with count_include_pad over asymmetric pads), the geometry is checked and
 * refused when it would; never silently wrong.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

/* One spatial dim of a window op, after auto_pad. */
struct win {
    int64_t in, k, s, d, pb, pe, out;
};

static const char *const AUTO_PAD[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};

/* Reads strides, dilations (when allowed), pads and auto_pad for nsp
 * spatial dims of x with kernel k[]; fills w[] (out by floor). */
static enum rt_status window_attrs(struct onnx_ctx *c, const struct rt_shape *x, int nsp, const int64_t *k,
                                   bool dilations, struct win *w)
{
    int64_t strides[RT_MAX_DIMS] = {0}, dil[RT_MAX_DIMS] = {0}, pads[2 * RT_MAX_DIMS] = {0};
    int ns = 0, nd = 0, np = 0, ap = 0;
    if (!onnx_attr_ints(c, "strides", strides, RT_MAX_DIMS, &ns) ||
        !onnx_attr_ints(c, "dilations", dil, RT_MAX_DIMS, &nd) ||
        !onnx_attr_ints(c, "pads", pads, 2 * RT_MAX_DIMS, &np) || !onnx_attr_choice(c, "auto_pad", AUTO_PAD, 4, 0, &ap))
        return c->err->status;
    if ((ns && ns != nsp) || (nd && nd != nsp) || (np && np != 2 * nsp))
        return onnx_bad(c, "strides, dilations and pads must have one value per spatial dim (pads two)");
    if (nd && !dilations)
        return onnx_unsupported(c, "attribute 'dilations' is not supported at this opset");
    for (int i = 0; i < nsp; i++) {
        struct win *v = &w[i];
        v->in = x->dims[2 + i];
        v->k = k[i];
        v->s = ns ? strides[i] : 1;
        v->d = nd ? dil[i] : 1;
        v->pb = np ? pads[i] : 0;
        v->pe = np ? pads[nsp + i] : 0;
        if (v->k < 1 || v->k > 1024 || v->s < 1 || v->s > 1024 || v->d < 1 || v->d > 1024 || v->pb < 0 ||
            v->pe < 0 || v->pb > 1024 || v->pe > 1024)
            return onnx_bad(c, "kernel, strides, dilations or pads out of range");
        int64_t span = v->d * (v->k - 1) + 1;
        if (ap != 0 && (v->pb || v->pe))
            return onnx_bad(c, "pads together with auto_pad");
        if (ap == 1 || ap == 2) {   /* output ceil(in / stride), padding split with the odd cell at the end or start */
            int64_t out = (v->in + v->s - 1) / v->s, total = (out - 1) * v->s + span - v->in;
            total = total > 0 ? total : 0;
            v->pb = ap == 1 ? total / 2 : total - total / 2;
            v->pe = total - v->pb;
        }
        int64_t room = v->in + v->pb + v->pe - span;
        if (room < 0)
            return onnx_bad(c, "kernel larger than the padded input");
        v->out = room / v->s + 1;
    }
    return RT_OK;
}

/* The input as per-sample [C, H, W] (H = 1 for 1-D); dims out. */
static void sample_dims(const struct rt_shape *x, int nsp, const struct win *w, int64_t c_dim, bool out,
                        int64_t *dims)
{
    const struct win *last = &w[nsp == 1 ? 0 : 1];
    dims[0] = c_dim;
    dims[1] = nsp == 1 ? 1 : out ? w[0].out : w[0].in;
    dims[2] = out ? last->out : last->in;
}

static struct rt_shape out_shape(const struct rt_shape *x, int nsp, const struct win *w, int64_t c_dim)
{
    struct rt_shape o = {nsp + 2, {x->dims[0], c_dim}};
    for (int i = 0; i < nsp; i++)
        o.dims[2 + i] = w[i].out;
    return o;
}

static enum rt_status spatial_input(struct onnx_ctx *c, const struct onnx_value *x, int *nsp)
{
    if (x->shape.rank < 3)
        return onnx_bad(c, "input must be [N, C, spatial...]");
    if (x->shape.rank > 4)
        return onnx_unsupported(c, "%d-D windows are not supported (1-D and 2-D are)", x->shape.rank - 2);
    *nsp = x->shape.rank - 2;
    return RT_OK;
}

/* 2-D runtime geometry from nsp ONNX dims: a 1-D window is 1 x k. */
static void to_2d(int nsp, const struct win *w, int *k, int *s, int *pad, int *d)
{
    const struct win one = {.k = 1, .s = 1, .d = 1};
    const struct win *h = nsp == 1 ? &one : &w[0], *v = &w[nsp == 1 ? 0 : 1];
    k[0] = (int)h->k, k[1] = (int)v->k;
    s[0] = (int)h->s, s[1] = (int)v->s;
    d[0] = (int)h->d, d[1] = (int)v->d;
    pad[0] = (int)h->pb, pad[1] = (int)v->pb, pad[2] = (int)h->pe, pad[3] = (int)v->pe;
}

/* Conv whose weight (and bias) are computed tensors: conv2d_dyn over the
 * whole ONNX input [N, C, ...] as one sample (whole mode). */
static enum rt_status conv_dyn(struct onnx_ctx *c, const struct onnx_value *x, const struct onnx_value *w,
                               const struct onnx_value *b)
{
    if (!c->whole)
        return onnx_needs_whole(c, "takes its weight from a computed tensor");
    int nsp = 0;
    enum rt_status s = spatial_input(c, x, &nsp);
    if (s != RT_OK)
        return s;
    if (b && b->kind != OV_ACT)
        return onnx_unsupported(c, "a constant bias with a computed weight");
    int64_t group, ks[RT_MAX_DIMS];
    int nk;
    if (!onnx_attr_int(c, "group", 1, &group) || !onnx_attr_ints(c, "kernel_shape", ks, RT_MAX_DIMS, &nk))
        return c->err->status;
    const struct rt_shape *ws = &w->shape;
    if (ws->rank != nsp + 2)
        return onnx_bad(c, "weight must be [M, C/group, k...]");
    int64_t ch = x->shape.dims[1], m = ws->dims[0];
    if (group < 1 || ch % group != 0 || m % group != 0 || ws->dims[1] * group != ch)
        return onnx_bad(c, "weight shape does not match the input channels and group");
    if (nk && (nk != nsp || memcmp(ks, ws->dims + 2, sizeof(int64_t) * (size_t)nsp) != 0))
        return onnx_bad(c, "kernel_shape differs from the weight's");
    if (b && (b->shape.rank != 1 || b->shape.dims[0] != m))
        return onnx_bad(c, "bias must be [M]");
    struct win wn[2] = {{0}, {0}};
    if ((s = window_attrs(c, &x->shape, nsp, ws->dims + 2, true, wn)) != RT_OK)
        return s;
    int64_t in_dims[4] = {x->shape.dims[0]}, o_dims[4] = {x->shape.dims[0]};
    sample_dims(&x->shape, nsp, wn, ch, false, in_dims + 1);
    sample_dims(&x->shape, nsp, wn, m, true, o_dims + 1);
    int64_t w_dims[4] = {m, ws->dims[1], nsp == 1 ? 1 : ws->dims[2], ws->dims[nsp + 1]};
    struct rt_shape oshape = out_shape(&x->shape, nsp, wn, m);
    int tx, tw;
    if ((s = onnx_reshape_in(c, x, in_dims, 4, &tx)) != RT_OK || (s = onnx_reshape_in(c, w, w_dims, 4, &tw)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, RT_OP_CONV2D_DYN, 0, &oshape, o_dims, 4);
    if (!n)
        return c->err->status;
    n->n_inputs = b ? 3 : 2;
    n->inputs[0] = tx;
    n->inputs[1] = tw;
    if (b)
        n->inputs[2] = b->tensor;
    struct rt_conv_attrs *a = &n->a.conv;
    int kern[2];
    to_2d(nsp, wn, kern, a->stride, a->pad, a->dilation);
    a->groups = (int)group;
    return RT_OK;
}

/* Conv and ConvTranspose's constant operands: the weight (rank nsp + 2,
 * agreeing with kernel_shape), the optional bias, and group; false with
 * err set. */
struct conv_operands {
    const struct onnx_value *x, *w, *b;
    int nsp;
    int64_t group;
};

static bool conv_operands(struct onnx_ctx *c, struct conv_operands *o)
{
    int64_t ks[RT_MAX_DIMS];
    int nk;
    *o = (struct conv_operands){.x = onnx_arity(c, 2, 3, 1) == RT_OK ? onnx_act_in(c, 0) : NULL};
    if (!o->x || !(o->w = onnx_const_in(c, 1)) || spatial_input(c, o->x, &o->nsp) != RT_OK)
        return false;
    if ((o->b = onnx_input(c, 2)) && !(o->b = onnx_const_in(c, 2)))
        return false;
    if (!onnx_attr_int(c, "group", 1, &o->group) || !onnx_attr_ints(c, "kernel_shape", ks, RT_MAX_DIMS, &nk))
        return false;
    const struct rt_shape *ws = &o->w->data->shape;
    if (!o->w->data->f || ws->rank != o->nsp + 2)
        return onnx_bad(c, "weight must be a float tensor of %d dims", o->nsp + 2), false;
    if (nk && (nk != o->nsp || memcmp(ks, ws->dims + 2, sizeof(int64_t) * (size_t)o->nsp) != 0))
        return onnx_bad(c, "kernel_shape differs from the weight's"), false;
    if (o->group < 1 || o->group > o->x->shape.dims[1] || o->x->shape.dims[1] % o->group != 0)
        return onnx_bad(c, "weight shape does not match the input channels and group"), false;
    return true;
}

/* Output 0: o's input through runtime op (conv2d or conv_transpose2d) of
 * geometry wn to m channels, o's weight and bias as 2-D; the node, or NULL
 * with err set. */
static struct rt_node *emit_conv(struct onnx_ctx *c, enum rt_op op, const struct conv_operands *o,
                                 const struct win *wn, int64_t m)
{
    if (o->b && (!o->b->data->f || o->b->data->elems != m)) {
        onnx_bad(c, "bias must be a float [M]");
        return NULL;
    }
    int64_t in_dims[3], o_dims[3], ch = o->x->shape.dims[1];
    sample_dims(&o->x->shape, o->nsp, wn, ch, false, in_dims);
    sample_dims(&o->x->shape, o->nsp, wn, m, true, o_dims);
    struct rt_shape oshape = out_shape(&o->x->shape, o->nsp, wn, m);
    int t;
    struct rt_node *n = onnx_samples_in(c, o->x, in_dims, 3, &t) == RT_OK
                            ? onnx_emit_samples(c, op, 0, &oshape, o_dims, 3)
                            : NULL;
    if (!n)
        return NULL;
    n->n_inputs = 1;
    n->inputs[0] = t;
    struct rt_conv_attrs *a = op == RT_OP_CONV2D ? &n->a.conv : &n->a.conv_transpose.conv;
    int kern[2];
    to_2d(o->nsp, wn, kern, a->stride, a->pad, a->dilation);
    a->groups = (int)o->group;
    const int64_t *wd = o->w->data->shape.dims;
    struct rt_shape ws = {4, {wd[0], wd[1], kern[0], kern[1]}}, bs = {1, {m}};
    if (onnx_weight(c, &n->w[RT_W_WEIGHT], o->w->data->f, &ws, o->w->name) != RT_OK ||
        (o->b && onnx_weight(c, &n->w[RT_W_BIAS], o->b->data->f, &bs, o->b->name) != RT_OK))
        return NULL;
    return n;
}

static enum rt_status conv(struct onnx_ctx *c)
{
    const struct onnx_value *w_in = onnx_arity(c, 2, 3, 1) == RT_OK ? onnx_input(c, 1) : NULL;
    if (w_in && w_in->kind == OV_ACT) {
        const struct onnx_value *x = onnx_act_in(c, 0);
        return x ? conv_dyn(c, x, w_in, onnx_input(c, 2)) : c->err->status;
    }
    struct conv_operands o;
    struct win wn[RT_MAX_DIMS] = {{0}};   /* (nsp <= 2: spatial_input) */
    enum rt_status s;
    if (!conv_operands(c, &o))
        return c->err->status;
    int64_t m = o.w->data->shape.dims[0];
    if (m % o.group != 0 || o.w->data->shape.dims[1] * o.group != o.x->shape.dims[1])
        return onnx_bad(c, "weight shape does not match the input channels and group");
    if ((s = window_attrs(c, &o.x->shape, o.nsp, o.w->data->shape.dims + 2, true, wn)) != RT_OK)
        return s;
    return emit_conv(c, RT_OP_CONV2D, &o, wn, m) ? RT_OK : c->err->status;
}

/* ConvTranspose's geometry per spatial dim: strides, dilations,
 * output_padding, and pads given, derived from output_shape, or split by
 * auto_pad (SAME_UPPER puts the odd cell at the end) around an output of
 * in * stride; w[i].out is the output length. */
static enum rt_status transpose_attrs(struct onnx_ctx *c, const struct rt_shape *x, int nsp, const int64_t *k,
                                      struct win *w, int64_t *out_pad)
{
    int64_t strides[RT_MAX_DIMS] = {0}, dil[RT_MAX_DIMS] = {0}, pads[2 * RT_MAX_DIMS] = {0};
    int64_t opad[RT_MAX_DIMS] = {0}, oshape[RT_MAX_DIMS] = {0};
    int ns = 0, nd = 0, np = 0, nop = 0, nos = 0, ap = 0;
    if (!onnx_attr_ints(c, "strides", strides, RT_MAX_DIMS, &ns) ||
        !onnx_attr_ints(c, "dilations", dil, RT_MAX_DIMS, &nd) ||
        !onnx_attr_ints(c, "pads", pads, 2 * RT_MAX_DIMS, &np) ||
        !onnx_attr_ints(c, "output_padding", opad, RT_MAX_DIMS, &nop) ||
        !onnx_attr_ints(c, "output_shape", oshape, RT_MAX_DIMS, &nos) ||
        !onnx_attr_choice(c, "auto_pad", AUTO_PAD, 4, 0, &ap))
        return c->err->status;
    if (nos == nsp + 2)   /* an output_shape of the whole output: its spatial dims */
        memmove(oshape, oshape + 2, sizeof(int64_t) * (size_t)nsp), nos = nsp;
    if ((ns && ns != nsp) || (nd && nd != nsp) || (np && np != 2 * nsp) || (nop && nop != nsp) ||
        (nos && nos != nsp))
        return onnx_bad(c, "strides, dilations, output_padding, output_shape and pads must have one value per "
                           "spatial dim (pads two)");
    if (np && (ap != 0 || nos))
        return onnx_bad(c, "pads together with auto_pad or output_shape");
    for (int i = 0; i < nsp; i++) {
        struct win *v = &w[i];
        v->in = x->dims[2 + i];
        v->k = k[i];
        v->s = ns ? strides[i] : 1;
        v->d = nd ? dil[i] : 1;
        v->pb = np ? pads[i] : 0;
        v->pe = np ? pads[nsp + i] : 0;
        out_pad[i] = nop ? opad[i] : 0;
        if (v->k < 1 || v->k > 1024 || v->s < 1 || v->s > 1024 || v->d < 1 || v->d > 1024 || v->pb < 0 ||
            v->pe < 0 || v->pb > 1024 || v->pe > 1024)
            return onnx_bad(c, "kernel, strides, dilations or pads out of range");
        if (out_pad[i] < 0 || out_pad[i] >= (v->s > v->d ? v->s : v->d))
            return onnx_bad(c, "output_padding must be below the stride or the dilation");
        int64_t full = v->s * (v->in - 1) + out_pad[i] + v->d * (v->k - 1) + 1;
        if (nos || ap == 1 || ap == 2) {
            /* a negative total (an output_shape past the full output) adds
             * cells that only the bias reaches; halves round down */
            int64_t want = nos ? oshape[i] : v->in * v->s, total = full - want;
            int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
            if (want < 1 || want > (1 << 24) || total < -1024)
                return onnx_bad(c, "output_shape out of range");
            v->pb = ap == 1 ? half : total - half;
            v->pe = total - v->pb;
        }
        v->out = full - v->pb - v->pe;
        if (v->out < 1)
            return onnx_bad(c, "the pads leave no output");
    }
    return RT_OK;
}

/* ConvTranspose (weight [C, M/group, k...] and bias [M] constants) as
 * conv_transpose2d; 1-D runs as 2-D with a height of 1. */
static enum rt_status conv_transpose(struct onnx_ctx *c)
{
    struct conv_operands o;
    struct win wn[RT_MAX_DIMS] = {{0}};   /* (nsp <= 2: spatial_input) */
    int64_t out_pad[2] = {0, 0};
    enum rt_status s;
    if (!conv_operands(c, &o))
        return c->err->status;
    int64_t m = o.w->data->shape.dims[1] * o.group;
    if (o.w->data->shape.dims[0] != o.x->shape.dims[1])
        return onnx_bad(c, "weight shape does not match the input channels and group");
    if ((s = transpose_attrs(c, &o.x->shape, o.nsp, o.w->data->shape.dims + 2, wn, out_pad)) != RT_OK)
        return s;
    struct rt_node *n = emit_conv(c, RT_OP_CONV_TRANSPOSE2D, &o, wn, m);
    if (!n)
        return c->err->status;
    n->a.conv_transpose.out_pad[0] = o.nsp == 1 ? 0 : (int)out_pad[0];   /* 1-D: one row, its padding below */
    n->a.conv_transpose.out_pad[1] = (int)out_pad[o.nsp == 1 ? 0 : 1];
    return RT_OK;
}

/* The runtime's window count in ceil mode drops a last window that would
 * start inside the end padding (PyTorch); the ONNX formula keeps it. */
static bool ceil_agrees(const struct win *v, int64_t *out)
{
    int64_t room = v->in + v->pb + v->pe - (v->d * (v->k - 1) + 1), s = v->s > 0 ? v->s : 1;
    int64_t n = (room + s - 1) / s + 1;
    *out = n;
    return (n - 1) * s < v->in + v->pb;
}

/* count_include_pad divides by the window clipped to the padded input,
 * whose end the kernels place at size + begin pad: the same as ONNX's
 * size + end pad for every window, or refused. */
static bool divisor_agrees(const struct win *v)
{
    for (int64_t o = 0; o < v->out; o++) {
        int64_t start = o * v->s - v->pb, end = start + v->k;
        int64_t rt_end = end < v->in + v->pb ? end : v->in + v->pb;
        int64_t onnx_end = end < v->in + v->pe ? end : v->in + v->pe;
        if (rt_end != onnx_end)
            return false;
    }
    return true;
}

static enum rt_status pool(struct onnx_ctx *c, bool max)
{
    enum rt_status s = onnx_arity(c, 1, 1, max ? 2 : 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int nsp = 0, nk, ap;
    int64_t ks[RT_MAX_DIMS], ceil_mode, cip;
    if (!x || spatial_input(c, x, &nsp) != RT_OK)
        return c->err->status;
    if (!onnx_attr_ints(c, "kernel_shape", ks, RT_MAX_DIMS, &nk) || !onnx_attr_int(c, "ceil_mode", 0, &ceil_mode) ||
        !onnx_attr_int(c, "count_include_pad", 0, &cip) ||
        !onnx_attr_choice(c, "auto_pad", AUTO_PAD, 4, 0, &ap))
        return c->err->status;
    if (nk != nsp)
        return onnx_bad(c, "kernel_shape must have one value per spatial dim");
    if ((ceil_mode && c->version < 10) || (cip && c->version < 7))
        return onnx_unsupported(c, "ceil_mode or count_include_pad before their opset");
    struct win wn[2] = {{0}, {0}};
    if ((s = window_attrs(c, &x->shape, nsp, ks, max && c->version >= 10, wn)) != RT_OK)
        return s;
    /* SAME fixes the output at ceil(in / stride) whatever ceil_mode says */
    bool ceil = ceil_mode && (ap == 0 || ap == 3);
    for (int i = 0; i < nsp && ceil; i++) {
        if (!ceil_agrees(&wn[i], &wn[i].out))
            return onnx_unsupported(c, "ceil_mode with a last window that starts in the padding");
    }
    for (int i = 0; i < nsp && !max && cip; i++) {
        if (!divisor_agrees(&wn[i]))
            return onnx_unsupported(c, "count_include_pad over asymmetric padding");
    }
    if ((s = onnx_refuse_outputs(c, 1, "the argmax indices of MaxPool")) != RT_OK)
        return s;
    int64_t ch = x->shape.dims[1], in_dims[3], o_dims[3];
    sample_dims(&x->shape, nsp, wn, ch, false, in_dims);
    sample_dims(&x->shape, nsp, wn, ch, true, o_dims);
    struct rt_shape oshape = out_shape(&x->shape, nsp, wn, ch);
    int t;
    if ((s = onnx_samples_in(c, x, in_dims, 3, &t)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, max ? RT_OP_MAX_POOL2D : RT_OP_AVG_POOL2D, 0, &oshape, o_dims, 3);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = t;
    struct rt_pool_attrs *a = &n->a.pool;
    to_2d(nsp, wn, a->kernel, a->stride, a->pad, a->dilation);
    a->ceil_mode = ceil;
    a->count_include_pad = cip != 0;
    return RT_OK;
}

static enum rt_status max_pool(struct onnx_ctx *c) { return pool(c, true); }
static enum rt_status avg_pool(struct onnx_ctx *c) { return pool(c, false); }

/* The mean over all spatial dims: 2-D global pooling of [C, 1, prod]. */
static enum rt_status global_avg_pool(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    if (x->shape.rank < 3)
        return onnx_bad(c, "input must be [N, C, spatial...]");
    int64_t ch = x->shape.dims[1];
    int64_t in_dims[3] = {ch, 1, onnx_prod(&x->shape, 2, x->shape.rank)}, o_dims[3] = {ch, 1, 1};
    if (x->shape.rank == 4)
        in_dims[1] = x->shape.dims[2], in_dims[2] = x->shape.dims[3];
    struct rt_shape oshape = x->shape;
    for (int i = 2; i < oshape.rank; i++)
        oshape.dims[i] = 1;
    int t;
    if ((s = onnx_samples_in(c, x, in_dims, 3, &t)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, RT_OP_GLOBAL_AVG_POOL, 0, &oshape, o_dims, 3);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = t;
    return RT_OK;
}

/* BatchNormalization with computed scale, B, mean and var: batch_norm_dyn
 * over the whole ONNX input [N, C, ...] as one sample (whole mode). */
static enum rt_status batch_norm_dyn(struct onnx_ctx *c, const struct onnx_value *x)
{
    float eps;
    int64_t spatial, training;
    if (!onnx_attr_float(c, "epsilon", 1e-5f, &eps) || !onnx_attr_int(c, "spatial", 1, &spatial) ||
        !onnx_attr_int(c, "training_mode", 0, &training))
        return c->err->status;
    if (!spatial || training)
        return onnx_unsupported(c, "spatial=0 and training_mode=1 are not supported");
    if (!(eps > 0))
        return onnx_bad(c, "epsilon must be positive");
    if (!c->whole)
        return onnx_needs_whole(c, "takes its parameters from computed tensors");
    if (x->shape.rank < 2)
        return onnx_bad(c, "input must be [N, C, ...]");
    for (int k = 1; k <= 4; k++) {
        const struct onnx_value *v = onnx_input(c, k);
        if (v->shape.rank != 1 || v->shape.dims[0] != x->shape.dims[1])
            return onnx_bad(c, "scale, B, mean and var must be [C]");
    }
    enum rt_status s = onnx_refuse_outputs(c, 1, "a training statistic of BatchNormalization");
    if (s != RT_OK)
        return s;
    int t;
    if ((s = onnx_reshape_in(c, x, x->shape.dims, x->shape.rank, &t)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit(c, RT_OP_BATCH_NORM_DYN, 0, &x->shape);
    if (!n)
        return c->err->status;
    n->n_inputs = 5;
    n->inputs[0] = t;
    for (int k = 1; k <= 4; k++)
        n->inputs[k] = onnx_input(c, k)->tensor;
    n->a.eps = eps;
    return RT_OK;
}

/* Inference form: y = scale * (x - mean) / sqrt(var + epsilon) + B per
 * channel; graph.c folds it into a preceding convolution. */
static enum rt_status batch_norm(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 5, 5, 5);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    const struct onnx_value *p[4];
    int acts = 0;
    for (int k = 0; k < 4; k++) {
        const struct onnx_value *v = onnx_input(c, k + 1);
        acts += v && v->kind == OV_ACT;
    }
    if (acts)
        return acts == 4 ? batch_norm_dyn(c, x) : onnx_unsupported(c, "a mix of constant and computed parameters");
    for (int k = 0; k < 4; k++) {
        if (!(p[k] = onnx_const_in(c, k + 1)))
            return c->err->status;
    }
    float eps;
    int64_t spatial, training;
    if (!onnx_attr_float(c, "epsilon", 1e-5f, &eps) || !onnx_attr_int(c, "spatial", 1, &spatial) ||
        !onnx_attr_int(c, "training_mode", 0, &training))
        return c->err->status;
    if (!spatial || training)
        return onnx_unsupported(c, "spatial=0 and training_mode=1 are not supported");
    if (!(eps > 0))
        return onnx_bad(c, "epsilon must be positive");
    if (x->shape.rank < 2)
        return onnx_bad(c, "input must be [N, C, ...]");
    int64_t ch = x->shape.dims[1];
    for (int k = 0; k < 4; k++) {
        if (!p[k]->data->f || p[k]->data->elems != ch)
            return onnx_bad(c, "scale, B, mean and var must be float [C]");
    }
    if ((s = onnx_refuse_outputs(c, 1, "a training statistic of BatchNormalization")) != RT_OK)
        return s;
    int t;
    if ((s = onnx_samples_in(c, x, x->shape.dims + 1, x->shape.rank - 1, &t)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, RT_OP_BATCH_NORM, 0, &x->shape, x->shape.dims + 1, x->shape.rank - 1);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = t;
    n->a.eps = eps;
    struct rt_shape cs = {1, {ch}};
    static const enum rt_wrole ROLE[4] = {RT_W_WEIGHT, RT_W_BIAS, RT_W_MEAN, RT_W_VAR};
    for (int k = 0; k < 4 && s == RT_OK; k++)
        s = onnx_weight(c, &n->w[ROLE[k]], p[k]->data->f, &cs, p[k]->name);
    return s;
}

/* ------------------------------------------------------------ Gemm, MatMul */

/* A linear node y = x . wt^T (+ bias) of output k or a temporary; wt is
 * [n, kk], already laid out (transposed and scaled) by the caller. */
static struct rt_node *emit_linear(struct onnx_ctx *c, const struct onnx_value *x, const struct rt_shape *out,
                                   bool temp, int *tensor)
{
    struct rt_node *n = temp ? onnx_emit_temp(c, RT_OP_LINEAR, tensor) : onnx_emit(c, RT_OP_LINEAR, 0, out);
    if (n) {
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
    }
    return n;
}

/* B [K, N] (or [N, K] when trans) times alpha, as the linear weight [N, K]. */
static enum rt_status linear_weight(struct onnx_ctx *c, struct rt_weight *w, const struct onnx_value *b, bool trans,
                                    float alpha)
{
    const struct onnx_data *d = b->data;
    int64_t kk = trans ? d->shape.dims[1] : d->shape.dims[0], nn = trans ? d->shape.dims[0] : d->shape.dims[1];
    struct rt_shape ws = {2, {nn, kk}};
    enum rt_status s = onnx_weight(c, w, d->f, &ws, b->name);
    if (s != RT_OK)
        return s;
    float *dst = (float *)w->data;
    for (int64_t i = 0; i < nn; i++) {
        for (int64_t j = 0; j < kk; j++)
            dst[i * kk + j] = alpha * (trans ? d->f[i * kk + j] : d->f[j * nn + i]);
    }
    return RT_OK;
}

/* Whether a C of shape cs broadcasts one way to [m, n] (ONNX Gemm). */
static bool c_broadcasts(const struct rt_shape *cs, int64_t m, int64_t n)
{
    const int64_t want[2] = {m, n};
    if (cs->rank > 2)
        return false;
    for (int i = 0; i < cs->rank; i++) {
        int64_t d = cs->dims[i], w = want[2 - cs->rank + i];
        if (d != 1 && d != w)
            return false;
    }
    return true;
}

/* Gemm with a computed B: a matmul (transposes and alpha in the op), then
 * beta * C added with broadcasting (whole mode). */
static enum rt_status gemm_dyn(struct onnx_ctx *c, const struct onnx_value *a, const struct onnx_value *b,
                               const struct onnx_value *cc, float alpha, float beta, bool ta, bool tb, bool bc)
{
    if (!c->whole)
        return onnx_needs_whole(c, "multiplies two computed tensors");
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return onnx_bad(c, "A and B must be 2-D");
    int64_t mm = a->shape.dims[ta ? 1 : 0], kk = a->shape.dims[ta ? 0 : 1];
    int64_t nn = b->shape.dims[tb ? 0 : 1];
    if (b->shape.dims[tb ? 1 : 0] != kk)
        return onnx_bad(c, "inner dimensions of A and B differ");
    struct rt_shape out = {2, {mm, nn}};
    if (cc && cc->kind == OV_REFUSED)
        return onnx_unsupported(c, "C is %s", cc->why);
    bool has_c = cc && beta != 0;
    if (has_c) {
        if (cc->kind == OV_CONST && !cc->data->f)
            return onnx_bad(c, "C must be float");
        if (!c_broadcasts(&cc->shape, mm, nn))
            return onnx_bad(c, "C does not broadcast to [M, N]");
        if (c->version < 7 && !bc && (cc->shape.rank != 2 || cc->shape.dims[0] != mm || cc->shape.dims[1] != nn))
            return onnx_bad(c, "C must be [M, N] when broadcast=0");
    }
    int t = -1;
    struct rt_node *n = has_c ? onnx_emit_temp(c, RT_OP_MATMUL, &t) : onnx_emit(c, RT_OP_MATMUL, 0, &out);
    if (!n)
        return c->err->status;
    n->n_inputs = 2;
    n->inputs[0] = a->tensor;
    n->inputs[1] = b->tensor;
    n->a.matmul = (struct rt_matmul_attrs){.trans_a = ta, .trans_b = tb, .alpha = alpha};
    if (!has_c)
        return RT_OK;
    struct onnx_value prod = {.name = "", .kind = OV_ACT, .shape = out, .tensor = t};
    if (cc->kind == OV_ACT) {
        if (beta == 1)
            return onnx_emit_binary(c, K_BIN_ADD, &prod, cc, 0, NULL);
        float bv = beta;
        struct onnx_data bd = {.shape = {0, {0}}, .elems = 1, .type = 1, .f = &bv};
        struct onnx_value bcv = {.name = "beta", .kind = OV_CONST, .shape = bd.shape, .data = &bd};
        struct onnx_value scaled;
        enum rt_status s = onnx_emit_binary(c, K_BIN_MUL, cc, &bcv, -1, &scaled);
        return s != RT_OK ? s : onnx_emit_binary(c, K_BIN_ADD, &prod, &scaled, 0, NULL);
    }
    struct onnx_data scaled = *cc->data;
    float *buf = malloc(sizeof(float) * (size_t)(scaled.elems + 1));
    if (!buf)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    for (int64_t j = 0; j < scaled.elems; j++)
        buf[j] = beta * cc->data->f[j];
    scaled.f = buf;
    struct onnx_value cv = {.name = cc->name, .kind = OV_CONST, .shape = scaled.shape, .data = &scaled};
    enum rt_status s = onnx_emit_binary(c, K_BIN_ADD, &prod, &cv, 0, NULL);
    free(buf);
    return s;
}

static enum rt_status gemm(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, c->version < 11 ? 3 : 2, 3, 1);
    const struct onnx_value *b_in = s == RT_OK ? onnx_input(c, 1) : NULL;
    if (b_in && b_in->kind == OV_ACT) {
        const struct onnx_value *a = onnx_act_in(c, 0);
        float alpha, beta;
        int64_t ta, tb, bc;
        if (!a || !onnx_attr_float(c, "alpha", 1, &alpha) || !onnx_attr_float(c, "beta", 1, &beta) ||
            !onnx_attr_int(c, "transA", 0, &ta) || !onnx_attr_int(c, "transB", 0, &tb) ||
            !onnx_attr_int(c, "broadcast", 0, &bc))
            return c->err->status;
        return gemm_dyn(c, a, b_in, onnx_input(c, 2), alpha, beta, ta != 0, tb != 0, bc != 0);
    }
    const struct onnx_value *a = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    const struct onnx_value *b = a ? onnx_const_in(c, 1) : NULL, *cc = onnx_input(c, 2);
    float alpha, beta;
    int64_t ta, tb, bc;
    if (!b || !onnx_attr_float(c, "alpha", 1, &alpha) || !onnx_attr_float(c, "beta", 1, &beta) ||
        !onnx_attr_int(c, "transA", 0, &ta) || !onnx_attr_int(c, "transB", 0, &tb) ||
        !onnx_attr_int(c, "broadcast", 0, &bc))
        return c->err->status;
    if (ta)
        return onnx_unsupported(c, "transA=1 with a computed A");
    if (a->shape.rank != 2 || !b->data->f || b->data->shape.rank != 2)
        return onnx_bad(c, "A and B must be 2-D and B float");
    int64_t kk = a->shape.dims[1], nn = b->data->shape.dims[tb ? 0 : 1];
    if (b->data->shape.dims[tb ? 1 : 0] != kk)
        return onnx_bad(c, "inner dimensions of A and B differ");
    struct rt_shape out = {2, {a->shape.dims[0], nn}};
    /* C: a bias when it is one row (broadcast over the rows), else an add */
    bool has_c = cc && beta != 0, row_bias = false;
    if (cc && cc->kind == OV_REFUSED)
        return onnx_unsupported(c, "C is %s", cc->why);
    if (has_c && cc->kind == OV_CONST) {
        const struct onnx_data *d = cc->data;
        int64_t rows = d->shape.rank == 2 ? d->shape.dims[0] : 1;
        int64_t cols = d->shape.rank >= 1 ? d->shape.dims[d->shape.rank - 1] : 1;
        if (!d->f || d->shape.rank > 2 || (cols != 1 && cols != nn))
            return onnx_bad(c, "C does not broadcast to [M, N]");
        if (c->version < 7 && !bc && (d->shape.rank != 2 || cols != nn))
            return onnx_bad(c, "C must be [M, N] when broadcast=0");
        if (rows != 1 && !c->whole)
            return onnx_needs_whole(c, "adds a C that differs per row");
        if (rows != 1 && rows != out.dims[0])
            return onnx_bad(c, "C does not broadcast to [M, N]");
        row_bias = rows == 1;
    }
    if (has_c && cc->kind == OV_ACT && beta != 1)
        return onnx_unsupported(c, "beta != 1 with a computed C");
    int t = -1;
    struct rt_node *n = emit_linear(c, a, &out, has_c && !row_bias, &t);
    if (!n || linear_weight(c, &n->w[RT_W_WEIGHT], b, tb != 0, alpha) != RT_OK)
        return c->err->status;
    if (row_bias) {   /* beta * C broadcast to [N] (C may be one value) */
        float *bias = rt_graph_alloc(c->g, (size_t)nn);
        if (!bias)
            return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
        for (int64_t j = 0; j < nn; j++)
            bias[j] = beta * cc->data->f[cc->data->elems == 1 ? 0 : j];
        struct rt_weight *w = &n->w[RT_W_BIAS];
        w->data = bias;
        w->shape = (struct rt_shape){1, {nn}};
        snprintf(w->name, sizeof(w->name), "%.127s", cc->name);
        return RT_OK;
    }
    if (!has_c)
        return RT_OK;
    struct onnx_value prod = {.name = "", .kind = OV_ACT, .shape = out, .tensor = t};
    if (cc->kind == OV_ACT)
        return onnx_emit_binary(c, K_BIN_ADD, &prod, cc, 0, NULL);
    struct onnx_data scaled = *cc->data;
    float *buf = malloc(sizeof(float) * (size_t)(scaled.elems + 1));
    if (!buf)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    for (int64_t j = 0; j < scaled.elems; j++)
        buf[j] = beta * cc->data->f[j];
    scaled.f = buf;
    struct onnx_value cv = {.name = cc->name, .kind = OV_CONST, .shape = scaled.shape, .data = &scaled};
    s = onnx_emit_binary(c, K_BIN_ADD, &prod, &cv, 0, NULL);
    free(buf);
    return s;
}

/* MatMul of two computed tensors: numpy semantics, a 1-D operand promoted
 * to a matrix ([1, K] on the left, [K, 1] on the right) whose added dim is
 * dropped from the result. Whole mode, or batch mode where both operands
 * have the same rank of at least 3 (attention's [N, heads, T, d]
 * products): the batch is then a leading dim of both, and each sample
 * multiplies its own matrices. */
static enum rt_status matmul_dyn(struct onnx_ctx *c, const struct onnx_value *a, const struct onnx_value *b)
{
    int skip = 0;   /* leading ONNX dims that are batch mode's batch */
    if (!c->whole) {
        if (a->shape.rank != b->shape.rank || a->shape.rank < 3)
            return onnx_needs_whole(c, "multiplies two computed tensors that do not share a leading batch dim");
        skip = 1;
    }
    int ra = a->shape.rank - skip, rb = b->shape.rank - skip;
    if (ra < 1 || rb < 1)
        return onnx_bad(c, "A and B must have at least one dimension");
    int64_t ad[RT_MAX_DIMS], bd[RT_MAX_DIMS];
    int na = ra < 2 ? 2 : ra, nb = rb < 2 ? 2 : rb;
    if (ra == 1)
        ad[0] = 1, ad[1] = a->shape.dims[skip];
    else
        memcpy(ad, a->shape.dims + skip, sizeof(int64_t) * (size_t)ra);
    if (rb == 1)
        bd[0] = b->shape.dims[skip], bd[1] = 1;
    else
        memcpy(bd, b->shape.dims + skip, sizeof(int64_t) * (size_t)rb);
    if (ad[na - 1] != bd[nb - 2])
        return onnx_bad(c, "inner dimensions of A and B differ");
    int r = (na > nb ? na : nb) - 2;
    if (r + 2 + skip > ONNX_MAX_RANK)
        return onnx_unsupported(c, "too many dimensions");
    int64_t sd[RT_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int64_t x = i - (r - (na - 2)) >= 0 ? ad[i - (r - (na - 2))] : 1;
        int64_t y = i - (r - (nb - 2)) >= 0 ? bd[i - (r - (nb - 2))] : 1;
        if (x != y && x != 1 && y != 1)
            return onnx_bad(c, "batch dimensions of A and B do not broadcast");
        sd[i] = x == 1 ? y : x;
    }
    sd[r] = ad[na - 2];
    sd[r + 1] = bd[nb - 1];
    struct rt_shape out = {0, {0}};
    if (skip)
        out.dims[out.rank++] = ONNX_BATCH;
    for (int i = 0; i < r; i++)
        out.dims[out.rank++] = sd[i];
    if (ra > 1)
        out.dims[out.rank++] = sd[r];
    if (rb > 1)
        out.dims[out.rank++] = sd[r + 1];
    int t_a, t_b;
    enum rt_status s;
    if ((s = onnx_reshape_in(c, a, ad, na, &t_a)) != RT_OK || (s = onnx_reshape_in(c, b, bd, nb, &t_b)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, RT_OP_MATMUL, 0, &out, sd, r + 2);
    if (!n)
        return c->err->status;
    n->n_inputs = 2;
    n->inputs[0] = t_a;
    n->inputs[1] = t_b;
    n->a.matmul = (struct rt_matmul_attrs){.alpha = 1.0f};
    return RT_OK;
}

/* A constant right operand makes a linear; a 1-D one [K] is a linear of
 * one output whose last dim is then dropped. */
static enum rt_status matmul(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    const struct onnx_value *b_in = s == RT_OK ? onnx_input(c, 1) : NULL;
    if (b_in && b_in->kind == OV_ACT) {
        const struct onnx_value *a = onnx_act_in(c, 0);
        return a ? matmul_dyn(c, a, b_in) : c->err->status;
    }
    const struct onnx_value *a = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    const struct onnx_value *b = a ? onnx_const_in(c, 1) : NULL;
    if (!b)
        return c->err->status;
    const struct onnx_data *d = b->data;
    if (!d->f || d->shape.rank < 1)
        return onnx_bad(c, "B must be a float tensor");
    if (d->shape.rank > 2)
        return onnx_unsupported(c, "a batched constant right operand");
    if (a->shape.rank < 1)
        return onnx_bad(c, "A must have at least one dimension");
    if (!c->whole && a->shape.rank < 2)
        return onnx_needs_whole(c, "contracts a 1-D operand along the first axis");
    int64_t kk = a->shape.dims[a->shape.rank - 1], nn = d->shape.rank == 2 ? d->shape.dims[1] : 1;
    if (d->shape.dims[0] != kk)
        return onnx_bad(c, "inner dimensions of A and B differ");
    struct rt_shape out = a->shape;
    if (d->shape.rank == 2)
        out.dims[out.rank - 1] = nn;
    else
        out.rank--;
    struct onnx_value bb = *b;
    struct onnx_data d2 = *d;
    d2.shape = (struct rt_shape){2, {kk, nn}};
    bb.data = &d2;
    /* per-sample linear dims: the ONNX dims after the batch, last one nn */
    struct rt_shape rs = onnx_rt_shape(c, &a->shape);
    rs.dims[rs.rank - 1] = nn;
    struct rt_node *n = onnx_emit_samples(c, RT_OP_LINEAR, 0, &out, rs.dims + 1, rs.rank - 1);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = a->tensor;
    return linear_weight(c, &n->w[RT_W_WEIGHT], &bb, false, 1.0f);
}

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_NN[] = {
    {"Conv", {1, 11}, conv, "auto_pad,dilations,group,kernel_shape,pads,strides"},
    {"ConvTranspose", {1, 11}, conv_transpose,
     "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides"},
    {"MaxPool", {1, 8, 10, 11, 12}, max_pool, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides"},
    {"AveragePool", {1, 7, 10, 11}, avg_pool, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides"},
    {"GlobalAveragePool", {1}, global_avg_pool, ""},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}, batch_norm,
     "epsilon,momentum,spatial,is_test,consumed_inputs,training_mode"},
    {"Gemm", {1, 6, 7, 9, 11, 13}, gemm, "alpha,beta,transA,transB,broadcast"},
    {"MatMul", {1, 9, 13}, matmul, ""},
    {NULL, {0}, NULL, NULL},
};
