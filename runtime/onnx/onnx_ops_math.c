/*
 * onnx_ops_math.c - ONNX element-wise math beyond the activations: the
 * functions of one operand (Abs, Neg, Exp, Log, Sqrt, Reciprocal, Floor,
 * Ceil, Erf, Softplus, Softsign, Elu, Selu, Celu, LeakyRelu, HardSigmoid,
 * ThresholdedRelu) as the runtime's unary op, PRelu as a binary op, and
 * the variadic Max, Min, Sum and Mean as chains of binary ops, and the
 * Reduce* ops as the runtime's reduce.
 */
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

/* ------------------------------------------------------------ unary */

static enum rt_status unary(struct onnx_ctx *c, enum k_unop op, float alpha, float beta)
{
    struct rt_node *n = onnx_emit_elementwise(c, RT_OP_UNARY);
    if (!n)
        return c->err->status;
    n->a.unary = (struct rt_unary_attrs){op, alpha, beta};
    return RT_OK;
}

static enum rt_status abs_op(struct onnx_ctx *c) { return unary(c, K_UN_ABS, 0, 0); }
static enum rt_status neg(struct onnx_ctx *c) { return unary(c, K_UN_NEG, 0, 0); }
static enum rt_status exp_op(struct onnx_ctx *c) { return unary(c, K_UN_EXP, 0, 0); }
static enum rt_status log_op(struct onnx_ctx *c) { return unary(c, K_UN_LOG, 0, 0); }
static enum rt_status sqrt_op(struct onnx_ctx *c) { return unary(c, K_UN_SQRT, 0, 0); }
static enum rt_status reciprocal(struct onnx_ctx *c) { return unary(c, K_UN_RECIPROCAL, 0, 0); }
static enum rt_status floor_op(struct onnx_ctx *c) { return unary(c, K_UN_FLOOR, 0, 0); }
static enum rt_status ceil_op(struct onnx_ctx *c) { return unary(c, K_UN_CEIL, 0, 0); }
static enum rt_status erf_op(struct onnx_ctx *c) { return unary(c, K_UN_ERF, 0, 0); }
static enum rt_status softplus(struct onnx_ctx *c) { return unary(c, K_UN_SOFTPLUS, 0, 0); }
static enum rt_status softsign(struct onnx_ctx *c) { return unary(c, K_UN_SOFTSIGN, 0, 0); }

/* A function whose parameters are the attributes "alpha" and b_name (NULL:
 * none), with the spec's defaults. */
static enum rt_status unary_attrs(struct onnx_ctx *c, enum k_unop op, float alpha_def, const char *b_name,
                                  float b_def)
{
    float alpha, beta = b_def;
    if (!onnx_attr_float(c, "alpha", alpha_def, &alpha) || (b_name && !onnx_attr_float(c, b_name, b_def, &beta)))
        return c->err->status;
    return unary(c, op, alpha, beta);
}

static enum rt_status elu(struct onnx_ctx *c) { return unary_attrs(c, K_UN_ELU, 1.0f, NULL, 0); }
static enum rt_status selu(struct onnx_ctx *c)
{
    return unary_attrs(c, K_UN_SELU, 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f);
}
static enum rt_status leaky_relu(struct onnx_ctx *c) { return unary_attrs(c, K_UN_LEAKY_RELU, 0.01f, NULL, 0); }
static enum rt_status hard_sigmoid(struct onnx_ctx *c) { return unary_attrs(c, K_UN_HARD_SIGMOID, 0.2f, "beta", 0.5f); }
static enum rt_status thresholded_relu(struct onnx_ctx *c)
{
    return unary_attrs(c, K_UN_THRESHOLDED_RELU, 1.0f, NULL, 0);
}

static enum rt_status celu(struct onnx_ctx *c)
{
    float alpha;
    if (!onnx_attr_float(c, "alpha", 1.0f, &alpha))
        return c->err->status;
    if (alpha == 0)
        return onnx_bad(c, "'alpha' must not be 0 (it divides the input)");
    return unary(c, K_UN_CELU, alpha, 0);
}

/* ------------------------------------------------------------ PRelu */

/* x < 0 ? x * slope : x, the slope broadcast to x's shape. Before opset 7
 * a slope of x's channel count applies along axis 1 (PyTorch's PReLU, as
 * the ONNX suite's exports of it expect); from 7 numpy's rule, one way. */
static enum rt_status prelu(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    const struct onnx_value *slope = x ? onnx_input(c, 1) : NULL;
    if (!x)
        return c->err->status;
    if (!slope)
        return onnx_bad(c, "needs a slope");
    if (slope->kind == OV_REFUSED)
        return onnx_unsupported(c, "the slope is %s", slope->why);
    struct onnx_value sl = *slope;
    const struct rt_shape *xs = &x->shape;
    if (c->version < 7 && sl.shape.rank == 1 && xs->rank >= 3 && sl.shape.dims[0] == xs->dims[1]) {
        for (int i = 2; i < xs->rank; i++)   /* [C] -> [C, 1, ...] */
            sl.shape.dims[sl.shape.rank++] = 1;
    }
    if (sl.shape.rank > xs->rank)
        return onnx_bad(c, "the slope has more dimensions than the input");
    for (int i = 0; i < sl.shape.rank; i++) {
        int64_t d = sl.shape.dims[i], xd = xs->dims[xs->rank - sl.shape.rank + i];
        if (d != 1 && d != xd && !(xd == ONNX_BATCH && i + xs->rank - sl.shape.rank == 0))
            return onnx_bad(c, "the slope does not broadcast to the input's shape");
    }
    return onnx_emit_binary(c, K_BIN_PRELU, x, &sl, 0, NULL);
}

/* ------------------------------------------------------------ Max, Min, Sum, Mean */

/* in[0] op in[1] op ... into output 0, left to right; numpy broadcasting
 * from opset 8, equal shapes before. Mean divides the sum by the count. */
static enum rt_status variadic(struct onnx_ctx *c, enum k_binop op, bool mean)
{
    enum rt_status s = onnx_arity(c, 1, RT_NODE_MAX_INPUTS, 1);
    if (s != RT_OK)
        return s;
    int n_in = (int)c->node->n_input;
    const struct onnx_value *in[RT_NODE_MAX_INPUTS] = {NULL};
    for (int k = 0; k < n_in; k++) {
        if (!(in[k] = onnx_input(c, k)))
            return onnx_bad(c, "input %d is missing", k);
        if (in[k]->kind == OV_REFUSED)
            return onnx_unsupported(c, "input %d is %s", k, in[k]->why);
        bool same = in[k]->shape.rank == in[0]->shape.rank &&
                    memcmp(in[k]->shape.dims, in[0]->shape.dims, sizeof(int64_t) * (size_t)in[0]->shape.rank) == 0;
        if (c->version < 8 && !same)
            return onnx_bad(c, "inputs differ in shape (broadcasting needs opset 8)");
    }
    if (!in[0])
        return onnx_bad(c, "needs an input");
    if (n_in == 1)
        return onnx_alias(c, 0, in[0]);
    struct onnx_value acc = *in[0], next;
    for (int k = 1; k < n_in; k++) {
        bool last = k == n_in - 1 && !mean;
        if ((s = onnx_emit_binary(c, op, &acc, in[k], last ? 0 : -1, &next)) != RT_OK)
            return s;
        acc = next;
    }
    if (!mean)
        return RT_OK;
    float count = (float)n_in;
    struct onnx_data kd = {.shape = {0, {0}}, .elems = 1, .type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, .f = &count};
    struct onnx_value kv = {.name = "count", .kind = OV_CONST, .data = &kd};
    return onnx_emit_binary(c, K_BIN_DIV, &acc, &kv, 0, NULL);
}

static enum rt_status max_op(struct onnx_ctx *c) { return variadic(c, K_BIN_MAX, false); }
static enum rt_status min_op(struct onnx_ctx *c) { return variadic(c, K_BIN_MIN, false); }
static enum rt_status sum_op(struct onnx_ctx *c) { return variadic(c, K_BIN_ADD, false); }
static enum rt_status mean_op(struct onnx_ctx *c) { return variadic(c, K_BIN_ADD, true); }

/* ------------------------------------------------------------ Reduce* */

/* The axes from the attribute, or (ReduceSum from opset 13) the constant
 * input 1; *n is 0 when absent. */
static enum rt_status reduce_axes(struct onnx_ctx *c, bool from_input, int64_t *axes, int *n)
{
    bool ok = from_input ? onnx_const_ints(c, 1, "axes", axes, ONNX_MAX_RANK, n)
                         : onnx_attr_ints(c, "axes", axes, ONNX_MAX_RANK, n);
    return ok ? RT_OK : c->err->status;
}

/* op over 'axes' (all when absent; ReduceSum's noop_with_empty_axes makes
 * that the identity), keepdims by default. The axes must be adjacent, and
 * in batch mode must leave the first alone. */
static enum rt_status reduce(struct onnx_ctx *c, enum k_redop op)
{
    bool from_input = op == K_RED_SUM && c->version >= 13;
    enum rt_status s = onnx_arity(c, 1, from_input ? 2 : 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int64_t keep, noop = 0, axes[ONNX_MAX_RANK];
    int n, rank = x ? x->shape.rank : 0;
    if (!x || !onnx_attr_int(c, "keepdims", 1, &keep) ||
        (from_input && !onnx_attr_int(c, "noop_with_empty_axes", 0, &noop)))
        return c->err->status;
    if ((s = reduce_axes(c, from_input, axes, &n)) != RT_OK)
        return s;
    if (n == 0 && noop)
        return onnx_alias(c, 0, x);
    bool on[ONNX_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
        int ax;
        if (!onnx_axis(c, axes[k], rank, false, &ax))
            return c->err->status;
        if (on[ax])
            return onnx_bad(c, "axis %lld is given twice", (long long)axes[k]);
        on[ax] = true;
    }
    int first = -1, count = 0;
    struct rt_shape out = {0, {0}};
    for (int i = 0; i < rank; i++) {
        if (n == 0)
            on[i] = true;
        if (on[i] && first < 0)
            first = i;
        if (on[i] && first + count != i)
            return onnx_unsupported(c, "reduces axes that are not adjacent");
        count += on[i];
        if (!on[i] || keep)
            out.dims[out.rank++] = on[i] ? 1 : x->shape.dims[i];
    }
    if (!c->whole && first == 0)
        return onnx_needs_whole(c, "reduces along the first axis");
    struct rt_node *nd = onnx_emit(c, RT_OP_REDUCE, 0, &out);
    if (!nd)
        return c->err->status;
    nd->n_inputs = 1;
    nd->inputs[0] = x->tensor;
    nd->a.reduce = (struct rt_reduce_attrs){op, c->whole ? first : first - 1, count, keep != 0};
    return RT_OK;
}

static enum rt_status reduce_sum(struct onnx_ctx *c) { return reduce(c, K_RED_SUM); }
static enum rt_status reduce_mean(struct onnx_ctx *c) { return reduce(c, K_RED_MEAN); }
static enum rt_status reduce_max(struct onnx_ctx *c) { return reduce(c, K_RED_MAX); }
static enum rt_status reduce_min(struct onnx_ctx *c) { return reduce(c, K_RED_MIN); }
static enum rt_status reduce_prod(struct onnx_ctx *c) { return reduce(c, K_RED_PROD); }
static enum rt_status reduce_l1(struct onnx_ctx *c) { return reduce(c, K_RED_L1); }
static enum rt_status reduce_l2(struct onnx_ctx *c) { return reduce(c, K_RED_L2); }
static enum rt_status reduce_sum_square(struct onnx_ctx *c) { return reduce(c, K_RED_SUM_SQUARE); }
static enum rt_status reduce_log_sum(struct onnx_ctx *c) { return reduce(c, K_RED_LOG_SUM); }
static enum rt_status reduce_log_sum_exp(struct onnx_ctx *c) { return reduce(c, K_RED_LOG_SUM_EXP); }

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_MATH[] = {
    {"Abs", {1, 6, 13}, abs_op, "consumed_inputs"},
    {"Neg", {1, 6, 13}, neg, "consumed_inputs"},
    {"Exp", {1, 6, 13}, exp_op, "consumed_inputs"},
    {"Log", {1, 6, 13}, log_op, "consumed_inputs"},
    {"Sqrt", {1, 6, 13}, sqrt_op, "consumed_inputs"},
    {"Reciprocal", {1, 6, 13}, reciprocal, "consumed_inputs"},
    {"Floor", {1, 6, 13}, floor_op, "consumed_inputs"},
    {"Ceil", {1, 6, 13}, ceil_op, "consumed_inputs"},
    {"Erf", {9, 13}, erf_op, ""},
    {"Softplus", {1}, softplus, ""},
    {"Softsign", {1}, softsign, ""},
    {"Elu", {1, 6}, elu, "alpha,consumed_inputs"},
    {"Selu", {1, 6}, selu, "alpha,gamma,consumed_inputs"},
    {"Celu", {12}, celu, "alpha"},
    {"LeakyRelu", {1, 6, 16}, leaky_relu, "alpha,consumed_inputs"},
    {"HardSigmoid", {1, 6}, hard_sigmoid, "alpha,beta,consumed_inputs"},
    {"ThresholdedRelu", {10}, thresholded_relu, "alpha"},
    {"PRelu", {1, 6, 7, 9, 16}, prelu, "consumed_inputs"},
    {"Max", {1, 6, 8, 12, 13}, max_op, "consumed_inputs"},
    {"Min", {1, 6, 8, 12, 13}, min_op, "consumed_inputs"},
    {"Sum", {1, 6, 8, 13}, sum_op, "consumed_inputs"},
    {"Mean", {1, 6, 8, 13}, mean_op, "consumed_inputs"},
    {"ReduceSum", {1, 11, 13}, reduce_sum, "axes,keepdims,noop_with_empty_axes"},
    {"ReduceMean", {1, 11, 13}, reduce_mean, "axes,keepdims"},
    {"ReduceMax", {1, 11, 12, 13}, reduce_max, "axes,keepdims"},
    {"ReduceMin", {1, 11, 12, 13}, reduce_min, "axes,keepdims"},
    {"ReduceProd", {1, 11, 13}, reduce_prod, "axes,keepdims"},
    {"ReduceL1", {1, 11, 13}, reduce_l1, "axes,keepdims"},
    {"ReduceL2", {1, 11, 13}, reduce_l2, "axes,keepdims"},
    {"ReduceSumSquare", {1, 11, 13}, reduce_sum_square, "axes,keepdims"},
    {"ReduceLogSum", {1, 11, 13}, reduce_log_sum, "axes,keepdims"},
    {"ReduceLogSumExp", {1, 11, 13}, reduce_log_sum_exp, "axes,keepdims"},
    {NULL, {0}, NULL, NULL},
};
