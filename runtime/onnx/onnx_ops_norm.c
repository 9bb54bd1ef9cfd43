/*
 * onnx_ops_norm.c - layer normalisation: the LayerNormalization op
 * (opset 17), and the same written out in primitive ops, as exporters
 * before opset 17 emit it (torch's LayerNorm, ConvNeXt's, ViT's):
 *
 *   m = ReduceMean(x, trailing axes); d = x - m;
 *   y = d / Sqrt(ReduceMean(d * d or d ^ 2, the same axes) + eps)
 *
 * found at its Div and run as one layer_norm (one pass over the rows
 * instead of nine over the tensor); a Mul and an Add of constants after it
 * become the node's scale and bias. The parts left unread are dropped with
 * the graph's dead nodes.
 */
#include <math.h>
#include <stdlib.h>

#include "runtime/onnx/onnx_impl.h"

/* Constant k broadcast over the dims of ONNX shape s from ax on, written
 * as their onnx_prod(s, ax, rank) elements into out; false when k does not
 * broadcast to s or varies along a dim before ax. */
static bool over_normalised(const struct onnx_value *k, const struct rt_shape *s, int ax, float *out)
{
    int r = s->rank;
    int64_t stride[ONNX_MAX_RANK] = {0}, st = 1;
    if (k->kind != OV_CONST || !k->data->f || k->shape.rank > r)
        return false;
    for (int i = r - 1; i >= 0; i--) {
        int ki = i - (r - k->shape.rank);
        int64_t kd = ki >= 0 ? k->shape.dims[ki] : 1;
        if (kd != 1 && (i < ax || kd != s->dims[i]))
            return false;
        stride[i] = kd == 1 ? 0 : st;
        st *= kd;
    }
    for (int64_t e = 0, cols = onnx_prod(s, ax, r); e < cols; e++) {
        int64_t rest = e, off = 0;
        for (int i = r - 1; i >= ax; i--) {
            off += rest % s->dims[i] * stride[i];
            rest /= s->dims[i];
        }
        out[e] = k->data->f[off];
    }
    return true;
}

/* Sets w (scale or bias of a layer_norm over ONNX shape s from ax on) to
 * constant k broadcast over the normalised dims; *fits false (and nothing
 * set) when k does not fit so. */
static enum rt_status set_operand(struct onnx_ctx *c, struct rt_weight *w, const struct onnx_value *k,
                                  const struct rt_shape *s, int ax, bool *fits)
{
    struct rt_shape ws = {1, {onnx_prod(s, ax, s->rank)}};
    float *buf = malloc(sizeof(float) * (size_t)ws.dims[0]);
    if (!buf)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    *fits = over_normalised(k, s, ax, buf);
    enum rt_status st = *fits ? onnx_weight(c, w, buf, &ws, k->name) : RT_OK;
    free(buf);
    return st;
}

/* ------------------------------------------------------------ LayerNormalization */

/* Y, and the optional Mean and InvStdDev (the same node computing each). */
static enum rt_status layer_normalization(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 2, 3, 3);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    const struct onnx_value *scale = x ? onnx_const_in(c, 1) : NULL, *bias = onnx_input(c, 2);
    int64_t axis, stash;
    float eps;
    int ax;
    if (!scale || !onnx_attr_int(c, "axis", -1, &axis) || !onnx_attr_float(c, "epsilon", 1e-5f, &eps) ||
        !onnx_attr_int(c, "stash_type", 1, &stash) || !onnx_axis(c, axis, x->shape.rank, false, &ax))
        return c->err->status;
    if (bias && !(bias = onnx_const_in(c, 2)))
        return c->err->status;
    if (!(eps >= 0) || !isfinite(eps))
        return onnx_bad(c, "epsilon must be finite and not negative");
    if (stash != 1)   /* the statistics' type: float is what this op computes them in */
        return onnx_unsupported(c, "stash_type %lld (only 1, float)", (long long)stash);
    if (!c->whole && ax == 0)
        return onnx_needs_whole(c, "normalises along the first axis");
    struct rt_shape stat = x->shape;
    for (int i = ax; i < stat.rank; i++)
        stat.dims[i] = 1;
    for (int k = 0; k < 3; k++) {
        if (!onnx_output_name(c, k)[0])
            continue;
        struct rt_node *n = onnx_emit(c, RT_OP_LAYER_NORM, k, k == 0 ? &x->shape : &stat);
        if (!n)
            return c->err->status;
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
        n->a.layer_norm = (struct rt_layer_norm_attrs){c->whole ? ax : ax - 1, eps, (enum k_layer_norm_out)k};
        if (k > 0)
            continue;
        bool fits_s = true, fits_b = true;
        if ((s = set_operand(c, &n->w[RT_W_WEIGHT], scale, &x->shape, ax, &fits_s)) != RT_OK ||
            (bias && (s = set_operand(c, &n->w[RT_W_BIAS], bias, &x->shape, ax, &fits_b)) != RT_OK))
            return s;
        if (!fits_s || !fits_b)
            return onnx_unsupported(c, "%s must be a float constant broadcast over the normalised dims only",
                                    fits_s ? "B" : "Scale");
    }
    return RT_OK;
}

/* ------------------------------------------------------------ written out */

/* The mean over the trailing dims (keepdims) computing tensor t, or NULL;
 * rank: the per-sample rank of its input. */
static const struct rt_node *trailing_mean(const struct onnx_ctx *c, int t, int rank)
{
    const struct rt_node *n = onnx_producer(c, t);
    return n && n->op == RT_OP_REDUCE && n->a.reduce.op == K_RED_MEAN && n->a.reduce.keepdims &&
                   n->a.reduce.first + n->a.reduce.count == rank
               ? n
               : NULL;
}

/* Whether tensor t is x - mean(x) over the trailing dims; *x, *first
 * receive x and the mean's first dim. */
static bool is_centred(const struct onnx_ctx *c, int t, int rank, int *x, int *first)
{
    const struct rt_node *sub = onnx_producer(c, t), *m;
    if (!sub || sub->op != RT_OP_BINARY || sub->a.binary.op != K_BIN_SUB || sub->n_inputs != 2 ||
        !(m = trailing_mean(c, sub->inputs[1], rank)) || m->inputs[0] != sub->inputs[0])
        return false;
    *x = sub->inputs[0];
    *first = m->a.reduce.first;
    return true;
}

/* Whether tensor t is sqrt(mean(d * d) + eps), the mean over the trailing
 * dims from first; *eps receives eps. */
static bool is_deviation_of(const struct onnx_ctx *c, int t, int d, int rank, int first, float *eps)
{
    const struct rt_node *sq = onnx_producer(c, t), *add, *var, *d2;
    if (!sq || sq->op != RT_OP_UNARY || sq->a.unary.op != K_UN_SQRT)
        return false;
    add = onnx_producer(c, sq->inputs[0]);
    const float *e = onnx_binary_scalar(add, K_BIN_ADD);
    if (!e || !(*e >= 0) || !isfinite(*e))
        return false;
    var = trailing_mean(c, add->inputs[0], rank);
    d2 = var ? onnx_producer(c, var->inputs[0]) : NULL;
    if (!d2 || var->a.reduce.first != first || d2->op != RT_OP_BINARY || d2->a.binary.op != K_BIN_MUL ||
        d2->n_inputs != 2 || d2->inputs[0] != d || d2->inputs[1] != d)
        return false;
    *eps = *e;
    return true;
}

bool onnx_layer_norm_div(struct onnx_ctx *c, enum rt_status *s)
{
    const struct onnx_value *d = onnx_input(c, 0), *dev = onnx_input(c, 1);
    int x, first, rank = d ? d->shape.rank - !c->whole : 0;
    float eps;
    if (c->node->n_input != 2 || !d || !dev || d->kind != OV_ACT || dev->kind != OV_ACT ||
        !is_centred(c, d->tensor, rank, &x, &first) || !is_deviation_of(c, dev->tensor, d->tensor, rank, first, &eps))
        return false;
    struct rt_node *n = onnx_emit(c, RT_OP_LAYER_NORM, 0, &d->shape);
    *s = n ? RT_OK : c->err->status;
    if (n) {
        n->n_inputs = 1;
        n->inputs[0] = x;
        n->a.layer_norm = (struct rt_layer_norm_attrs){first, eps, K_LN_Y};
    }
    return true;
}

bool onnx_layer_norm_affine(struct onnx_ctx *c, enum k_binop op, enum rt_status *s)
{
    const struct onnx_value *a = onnx_input(c, 0), *b = onnx_input(c, 1);
    if (c->node->n_input != 2 || !a || !b)
        return false;
    const struct onnx_value *y = a->kind == OV_ACT ? a : b, *k = y == a ? b : a;
    struct rt_node *n = (struct rt_node *)onnx_producer(c, y->kind == OV_ACT ? y->tensor : -1);
    if (!n || n->op != RT_OP_LAYER_NORM || n->a.layer_norm.out != K_LN_Y || n->w[RT_W_BIAS].data ||
        (op == K_BIN_MUL && n->w[RT_W_WEIGHT].data) || onnx_readers(c, y->name) != 1)
        return false;
    bool fits = false;
    int ax = n->a.layer_norm.first + !c->whole;
    *s = set_operand(c, &n->w[op == K_BIN_MUL ? RT_W_WEIGHT : RT_W_BIAS], k, &y->shape, ax, &fits);
    if (*s != RT_OK || !fits)
        return *s != RT_OK;
    *s = onnx_alias(c, 0, y);
    return true;
}

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_NORM[] = {
    {"LayerNormalization", {17}, layer_normalization, "axis,epsilon,stash_type"},
    {NULL, {0}, NULL, NULL},
};
