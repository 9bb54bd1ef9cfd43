/*
 * onnx_ops_ew.c - ONNX element-wise ops and the identities: Relu, Sigmoid,
 * Tanh, HardSwish, Clip, Add, Sub, Mul, Div, Pow, Softmax, LogSoftmax,
 * Identity, Dropout, Constant (the shape ops are in onnx_ops_shape.c, the
 * other math in onnx_ops_math.c).
 *
 * In batch mode an op that would mix data across the first axis (softmax
 * along it, a constant with a per-sample first dim) asks for whole mode
 * instead (onnx_needs_whole).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

static enum rt_status unary(struct onnx_ctx *c, enum rt_op op)
{
    return onnx_emit_elementwise(c, op) ? RT_OK : c->err->status;
}

static enum rt_status relu(struct onnx_ctx *c) { return unary(c, RT_OP_RELU); }
static enum rt_status sigmoid(struct onnx_ctx *c) { return unary(c, RT_OP_SIGMOID); }
static enum rt_status hardswish(struct onnx_ctx *c) { return unary(c, RT_OP_HARDSWISH); }
static enum rt_status tanh_op(struct onnx_ctx *c) { return unary(c, RT_OP_TANH); }

/* ------------------------------------------------------------ binary */

enum rt_status onnx_emit_binary(struct onnx_ctx *c, enum k_binop op, const struct onnx_value *a,
                                const struct onnx_value *b, int out_k, struct onnx_value *res)
{
    if (a->kind != OV_ACT && b->kind != OV_ACT)
        return onnx_unsupported(c, "both operands are constants");
    const struct onnx_value *k = a->kind == OV_CONST ? a : b->kind == OV_CONST ? b : NULL;
    if (k && !k->data->f)
        return onnx_unsupported(c, "constant '%.64s' is %s; inferd computes in FP32", k->name,
                                onnx_type_name(k->data->type));
    const struct rt_shape *sa = &a->shape, *sb = &b->shape;
    int r = sa->rank > sb->rank ? sa->rank : sb->rank;
    if (r > ONNX_MAX_RANK)
        return onnx_unsupported(c, "operands of more than %d dimensions", ONNX_MAX_RANK);
    if (!c->whole) {
        /* the batch is dim 0 of every activation: operands must agree on it */
        if ((a->kind == OV_ACT && sb->rank > sa->rank) || (b->kind == OV_ACT && sa->rank > sb->rank))
            return onnx_needs_whole(c, "broadcasts an operand of higher rank over the batch");
        if (k && k->shape.rank == r && k->shape.dims[0] != 1)
            return onnx_needs_whole(c, "adds a constant that differs along the first axis");
    }
    struct rt_shape out = {r, {0}};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - sa->rank), ib = i - (r - sb->rank);
        int64_t da = ia >= 0 ? sa->dims[ia] : 1, db = ib >= 0 ? sb->dims[ib] : 1;
        if (!c->whole && i == 0 && (da == ONNX_BATCH || db == ONNX_BATCH)) {
            out.dims[0] = ONNX_BATCH;
            continue;
        }
        if (da != db && da != 1 && db != 1)
            return onnx_bad(c, "operand shapes do not broadcast");
        out.dims[i] = da == 1 ? db : da;
    }
    bool same = a->kind == OV_ACT && b->kind == OV_ACT && sa->rank == sb->rank &&
                memcmp(sa->dims, sb->dims, sizeof(int64_t) * (size_t)sa->rank) == 0;
    enum rt_op rop = same && op == K_BIN_ADD ? RT_OP_ADD : RT_OP_BINARY;
    struct rt_node *n;
    int t = -1;
    if (out_k >= 0)
        n = onnx_emit(c, rop, out_k, &out);
    else
        n = onnx_emit_temp(c, rop, &t);
    if (!n)
        return c->err->status;
    n->a.binary.op = op;
    if (k) {
        const struct onnx_value *x = k == a ? b : a;
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
        n->a.binary.const_left = k == a;
        /* a constant of the full rank lost its first dim to the batch */
        struct rt_shape ks = k->shape;
        if (!c->whole && ks.rank == r) {
            ks.rank--;
            memmove(ks.dims, ks.dims + 1, sizeof(int64_t) * (size_t)ks.rank);
        }
        enum rt_status s = onnx_weight(c, &n->w[RT_W_WEIGHT], k->data->f, &ks, k->name);
        if (s != RT_OK)
            return s;
    } else {
        n->n_inputs = 2;
        n->inputs[0] = a->tensor;
        n->inputs[1] = b->tensor;
    }
    if (res)
        *res = (struct onnx_value){.name = "", .kind = OV_ACT, .shape = out, .tensor = out_k >= 0 ? n->output : t};
    return RT_OK;
}

/* Opset < 7: broadcast=1 aligns B with A from `axis` (default: the end);
 * trailing ones make that numpy's rule. */
static enum rt_status legacy_broadcast(struct onnx_ctx *c, const struct onnx_value *a, struct onnx_value *b)
{
    int64_t bc, axis;
    if (!onnx_attr_int(c, "broadcast", 0, &bc) || !onnx_attr_int(c, "axis", a->shape.rank - b->shape.rank, &axis))
        return c->err->status;
    if (!bc) {   /* equal shapes (the batch, unknown here, aside) */
        bool same = a->shape.rank == b->shape.rank;
        for (int i = 0; same && i < a->shape.rank; i++)
            same = a->shape.dims[i] == b->shape.dims[i] || a->shape.dims[i] == ONNX_BATCH ||
                   b->shape.dims[i] == ONNX_BATCH;
        return same ? RT_OK : onnx_bad(c, "operand shapes differ and broadcast=0");
    }
    if (axis < 0)
        axis += a->shape.rank;
    if (axis < 0 || axis + b->shape.rank > a->shape.rank)
        return onnx_bad(c, "'axis' does not fit the operands' ranks");
    int pad = a->shape.rank - (int)axis - b->shape.rank;
    if (pad == 0)
        return RT_OK;
    if (b->kind == OV_ACT)
        return onnx_unsupported(c, "legacy broadcasting of a computed operand at an inner axis");
    for (int i = 0; i < pad; i++)
        b->shape.dims[b->shape.rank++] = 1;
    return RT_OK;
}

static enum rt_status binary(struct onnx_ctx *c, enum k_binop op)
{
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    if (s != RT_OK)
        return s;
    const struct onnx_value *a = onnx_input(c, 0), *b = onnx_input(c, 1);
    if (!a || !b)
        return onnx_bad(c, "needs two inputs");
    if (a->kind == OV_REFUSED || b->kind == OV_REFUSED)
        return onnx_unsupported(c, "an input is %s", (a->kind == OV_REFUSED ? a : b)->why);
    struct onnx_value bb = *b;
    if (c->version < 7 && (s = legacy_broadcast(c, a, &bb)) != RT_OK)
        return s;
    return onnx_emit_binary(c, op, a, &bb, 0, NULL);
}

/* The runtime node that computed activation v, or NULL. */
static const struct rt_node *producer(const struct onnx_ctx *c, const struct onnx_value *v)
{
    return onnx_producer(c, v && v->kind == OV_ACT ? v->tensor : -1);
}

/* MatMul then Add of a constant row (torch's Linear on 3-D and 4-D input):
 * the row becomes the linear's bias when this Add is all that reads the
 * product p, and the Add's output is the linear's; then an activation
 * after it fuses into the linear's epilogue too. Whether p and k are such a
 * pair. */
static bool is_linear_and_row(const struct onnx_ctx *c, const struct onnx_value *p, const struct onnx_value *k)
{
    const struct rt_node *lin = producer(c, p);
    if (!lin || lin->op != RT_OP_LINEAR || lin->w[RT_W_BIAS].data || !lin->w[RT_W_WEIGHT].data || !k ||
        k->kind != OV_CONST || !k->data->f || k->shape.rank < 1 || k->shape.rank > p->shape.rank)
        return false;
    for (int d = 0; d < k->shape.rank - 1; d++)
        if (k->shape.dims[d] != 1)
            return false;
    return k->shape.dims[k->shape.rank - 1] == lin->w[RT_W_WEIGHT].shape.dims[0] && onnx_readers(c, p->name) == 1;
}

static enum rt_status add(struct onnx_ctx *c)
{
    const struct onnx_value *a = onnx_input(c, 0), *b = onnx_input(c, 1);
    enum rt_status s;
    if (c->version >= 7 && onnx_layer_norm_affine(c, K_BIN_ADD, &s))
        return s;
    const struct onnx_value *p = NULL;
    if (c->version >= 7 && c->node->n_input == 2 && a && b)
        p = is_linear_and_row(c, a, b) ? a : is_linear_and_row(c, b, a) ? b : NULL;
    if (p) {
        const struct onnx_value *k = p == a ? b : a;
        struct rt_node *lin = &c->g->nodes[c->g->tensors[p->tensor].producer];
        struct rt_shape bs = {1, {k->shape.dims[k->shape.rank - 1]}};
        s = onnx_weight(c, &lin->w[RT_W_BIAS], k->data->f, &bs, k->name);
        return s == RT_OK ? onnx_alias(c, 0, p) : s;
    }
    return binary(c, K_BIN_ADD);
}
static enum rt_status sub(struct onnx_ctx *c) { return binary(c, K_BIN_SUB); }
/* Whether n computes t op k (k a one-element constant within 1e-6 of want,
 * on the right); *t receives the computed operand's tensor. */
static bool op_by_scalar(const struct rt_node *n, enum k_binop op, double want, int *t)
{
    const float *v = onnx_binary_scalar(n, op);
    if (!v || n->a.binary.const_left || !(fabs(*v - want) <= 1e-6 * fabs(want)))
        return false;
    *t = n->inputs[0];
    return true;
}

/* The exact GELU as torch exports it before opset 20: (x * (erf(x / sqrt 2)
 * + 1)) * 0.5, out of x * 0.5 already matched (*x: x's tensor). */
static bool is_exported_gelu(const struct onnx_ctx *c, const struct onnx_value *half_of, int *x)
{
    const struct rt_node *m = producer(c, half_of);
    int t_erf, t_div;
    if (!m || m->op != RT_OP_BINARY || m->a.binary.op != K_BIN_MUL || m->n_inputs != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        int xt = m->inputs[k];
        const struct rt_node *add = onnx_producer(c, m->inputs[1 - k]), *erf, *div;
        if (!op_by_scalar(add, K_BIN_ADD, 1.0, &t_erf) || !(erf = onnx_producer(c, t_erf)) ||
            erf->op != RT_OP_UNARY || erf->a.unary.op != K_UN_ERF || !(div = onnx_producer(c, erf->inputs[0])))
            continue;
        /* erf's argument is x scaled, so the product has x's shape */
        if ((op_by_scalar(div, K_BIN_DIV, M_SQRT2, &t_div) || op_by_scalar(div, K_BIN_MUL, M_SQRT1_2, &t_div)) &&
            t_div == xt) {
            *x = xt;
            return true;
        }
    }
    return false;
}

/* Whether activation h is HardSigmoid(x) with alpha 1/6 and beta 0.5, as
 * the unary node emitted for it (onnx_ops_math.c) says. */
static bool is_hard_sigmoid_of(const struct onnx_ctx *c, const struct onnx_value *h, const struct onnx_value *x)
{
    if (h->kind != OV_ACT || x->kind != OV_ACT || h->shape.rank != x->shape.rank ||
        memcmp(h->shape.dims, x->shape.dims, sizeof(int64_t) * (size_t)x->shape.rank) != 0)
        return false;
    const struct rt_node *n = producer(c, h);
    return n && n->op == RT_OP_UNARY && n->a.unary.op == K_UN_HARD_SIGMOID && n->inputs[0] == x->tensor &&
           n->a.unary.alpha == 1.0f / 6 && n->a.unary.beta == 0.5f;
}

/* Whether activation s is Sigmoid(x). */
static bool is_sigmoid_of(const struct onnx_ctx *c, const struct onnx_value *s, const struct onnx_value *x)
{
    const struct rt_node *n = producer(c, s);
    return n && x->kind == OV_ACT && n->op == RT_OP_SIGMOID && n->inputs[0] == x->tensor;
}

/* x * HardSigmoid(x) with alpha 1/6 and beta 0.5 is HardSwish, which
 * PyTorch exports so before opset 14, and x * Sigmoid(x) is SiLU: one
 * activation (fused into the convolution before it) instead of two passes
 * over the tensor; the HardSigmoid or Sigmoid, left unused, is dropped with
 * the graph's dead nodes (so are the GELU's parts below). */
static enum rt_status mul(struct onnx_ctx *c)
{
    const struct onnx_value *a = onnx_input(c, 0), *b = onnx_input(c, 1);
    int gx;
    /* the exported GELU's last step: one gelu activation (fused into the
     * linear or convolution before it) instead of five element-wise passes */
    if (c->version >= 7 && c->node->n_input == 2 && a && b && b->kind == OV_CONST && b->data->f &&
        b->data->elems == 1 && b->data->f[0] == 0.5f && is_exported_gelu(c, a, &gx)) {
        struct rt_node *n = onnx_emit(c, RT_OP_GELU, 0, &a->shape);
        if (!n)
            return c->err->status;
        n->n_inputs = 1;
        n->inputs[0] = gx;
        n->a.gelu_tanh = false;
        return RT_OK;
    }
    const struct onnx_value *x = NULL;   /* x of x * Sigmoid(x) or x * HardSigmoid(x) */
    bool swish = false;
    if (c->version >= 7 && c->node->n_input == 2 && a && b) {   /* each matcher once per side */
        bool sig_b = is_sigmoid_of(c, b, a), sig_a = !sig_b && is_sigmoid_of(c, a, b);
        swish = sig_b || sig_a;
        x = sig_b || is_hard_sigmoid_of(c, b, a) ? a : sig_a || is_hard_sigmoid_of(c, a, b) ? b : NULL;
    }
    if (x) {
        struct rt_node *n = onnx_emit(c, swish ? RT_OP_SILU : RT_OP_HARDSWISH, 0, &x->shape);
        if (!n)
            return c->err->status;
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
        return RT_OK;
    }
    enum rt_status s;
    if (c->version >= 7 && onnx_layer_norm_affine(c, K_BIN_MUL, &s))
        return s;
    return binary(c, K_BIN_MUL);
}

static enum rt_status div_op(struct onnx_ctx *c)
{
    enum rt_status s;
    if (c->version >= 7 && onnx_layer_norm_div(c, &s))
        return s;
    return binary(c, K_BIN_DIV);
}

/* x ^ a constant 2 (the variance of exported LayerNorms) runs as x * x: the
 * same float as pow in double rounded once (the exact square, rounded), at
 * a multiply's cost instead of pow's (2.7 ms of ViT-B/16's 1.1 s a layer
 * norm's square took). */
static enum rt_status pow_op(struct onnx_ctx *c)
{
    const struct onnx_value *x = onnx_input(c, 0), *e = onnx_input(c, 1);
    bool square = c->version >= 7 && c->node->n_input == 2 && x && x->kind == OV_ACT && e && e->kind == OV_CONST &&
                  e->data->f && e->data->elems == 1 && e->data->f[0] == 2.0f && e->shape.rank <= x->shape.rank;
    return square ? onnx_emit_binary(c, K_BIN_MUL, x, x, 0, NULL) : binary(c, K_BIN_POW);
}

/* ------------------------------------------------------------ Clip */

/* A bound from an attribute (opset < 11) or an optional input: a constant
 * scalar into *v / *kv, or an activation (*dyn). */
static enum rt_status clip_bound(struct onnx_ctx *c, const char *attr, int k, float def, float *v,
                                 const struct onnx_value **dyn)
{
    *v = def;
    *dyn = NULL;
    if (c->version < 11)
        return onnx_attr_float(c, attr, def, v) ? RT_OK : c->err->status;
    const struct onnx_value *b = onnx_input(c, k);
    if (!b)
        return RT_OK;
    if (b->kind == OV_REFUSED)
        return onnx_unsupported(c, "'%s' is %s", attr, b->why);
    if (b->kind == OV_ACT) {
        *dyn = b;
        return RT_OK;
    }
    if (b->data->elems != 1 || !b->data->f)
        return onnx_unsupported(c, "'%s' must be a float scalar", attr);
    *v = b->data->f[0];
    return RT_OK;
}

/* min(max(x, lo), hi), as numpy.clip (the ONNX reference); an absent bound
 * clips nothing. relu and relu6 where the bounds say so. */
static enum rt_status clip(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 3, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    float lo = -INFINITY, hi = INFINITY;
    const struct onnx_value *dlo = NULL, *dhi = NULL;
    if ((s = clip_bound(c, "min", 1, -INFINITY, &lo, &dlo)) != RT_OK ||
        (s = clip_bound(c, "max", 2, INFINITY, &hi, &dhi)) != RT_OK)
        return s;
    if (!dlo && !dhi && lo == 0 && (hi == 6 || hi == INFINITY)) {
        struct rt_node *n = onnx_emit(c, hi == 6 ? RT_OP_RELU6 : RT_OP_RELU, 0, &x->shape);
        if (!n)
            return c->err->status;
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
        return RT_OK;
    }
    struct onnx_data klo = {.shape = {0, {0}}, .elems = 1, .type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, .f = &lo};
    struct onnx_data khi = klo;
    khi.f = &hi;
    struct onnx_value clo = {.name = "min", .kind = OV_CONST, .data = &klo};
    struct onnx_value chi = {.name = "max", .kind = OV_CONST, .data = &khi};
    const struct onnx_value *blo = dlo ? dlo : lo != -INFINITY ? &clo : NULL;
    const struct onnx_value *bhi = dhi ? dhi : hi != INFINITY ? &chi : NULL;
    if (!blo && !bhi)
        return onnx_alias(c, 0, x);
    struct onnx_value mid = *x;
    if (blo && (s = onnx_emit_binary(c, K_BIN_MAX, x, blo, bhi ? -1 : 0, &mid)) != RT_OK)
        return s;
    return bhi ? onnx_emit_binary(c, K_BIN_MIN, &mid, bhi, 0, NULL) : RT_OK;
}

/* Softmax and LogSoftmax (op): the same axis rules. */
static enum rt_status softmax_op(struct onnx_ctx *c, enum rt_op op)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int64_t axis;
    if (!x || !onnx_attr_int(c, "axis", c->version < 13 ? 1 : -1, &axis))
        return c->err->status;
    int rank = x->shape.rank, ax;
    if (!onnx_axis(c, axis, rank, false, &ax))
        return c->err->status;
    if (!c->whole && ax == 0)
        return onnx_needs_whole(c, "normalises along the first axis");
    if (c->version >= 13) {   /* one axis */
        struct rt_node *n = onnx_emit(c, op, 0, &x->shape);
        if (!n)
            return c->err->status;
        n->n_inputs = 1;
        n->inputs[0] = x->tensor;
        n->a.axis = onnx_rt_axis(c, ax);
        return RT_OK;
    }
    /* before 13: over all of dims[axis:] at once, seen as 2-D */
    int64_t dims[2] = {onnx_prod(&x->shape, c->whole ? 0 : 1, ax), onnx_prod(&x->shape, ax, rank)};
    int vr = !c->whole && ax == 1 ? 1 : 2;
    const int64_t *vd = vr == 1 ? dims + 1 : dims;
    int t;
    if ((s = onnx_reshape_in(c, x, vd, vr, &t)) != RT_OK)
        return s;
    struct rt_node *n = onnx_emit_samples(c, op, 0, &x->shape, vd, vr);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = t;
    n->a.axis = vr;
    return RT_OK;
}

static enum rt_status softmax(struct onnx_ctx *c) { return softmax_op(c, RT_OP_SOFTMAX); }
static enum rt_status log_softmax(struct onnx_ctx *c) { return softmax_op(c, RT_OP_LOG_SOFTMAX); }

static enum rt_status identity(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = onnx_input(c, 0);
    if (s != RT_OK)
        return s;
    if (!x)
        return onnx_bad(c, "input 0 is missing");
    return onnx_alias(c, 0, x);
}

/* Inference: the identity. Training mode, if given, must be a constant false. */
static enum rt_status dropout(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version >= 12 ? 3 : 1, 2);
    const struct onnx_value *x = onnx_input(c, 0), *tm = onnx_input(c, 2);
    if (s != RT_OK)
        return s;
    if (!x)
        return onnx_bad(c, "input 0 is missing");
    if (tm && (tm->kind != OV_CONST || tm->data->elems != 1 ||
               (tm->data->i ? tm->data->i[0] != 0 : tm->data->f[0] != 0)))
        return onnx_unsupported(c, "training_mode must be absent or a constant false");
    if ((s = onnx_refuse_outputs(c, 1, "a dropout mask, which inference does not compute")) != RT_OK)
        return s;
    return onnx_alias(c, 0, x);
}

static enum rt_status constant(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 0, 0, 1);
    if (s != RT_OK)
        return s;
    if (c->node->n_attribute != 1)
        return onnx_bad(c, "needs exactly one value attribute");
    const Onnx__AttributeProto *a = c->node->attribute[0];
    struct onnx_data d = {0};
    if (strcmp(a->name, "value") == 0) {
        if (!a->t)
            return onnx_bad(c, "'value' must be a tensor");
        if ((s = onnx_data_decode(a->t, c->label, onnx_output_name(c, 0), &d, c->err)) != RT_OK)
            return s;
        return onnx_define_const(c, 0, &d);
    }
    bool fl = strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_floats") == 0;
    bool list = strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0;
    if (!fl && strcmp(a->name, "value_int") != 0 && !list)
        return onnx_unsupported(c, "attribute '%.32s' is not supported", a->name);
    d.elems = list ? (int64_t)(fl ? a->n_floats : a->n_ints) : 1;
    d.shape = (struct rt_shape){list ? 1 : 0, {d.elems}};
    d.type = fl ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    if (fl)
        d.f = malloc(sizeof(float) * (size_t)(d.elems + 1));
    else
        d.i = malloc(sizeof(int64_t) * (size_t)(d.elems + 1));
    if (!d.f && !d.i)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    for (int64_t k = 0; k < d.elems; k++) {
        if (fl)
            d.f[k] = list ? a->floats[k] : a->f;
        else
            d.i[k] = list ? a->ints[k] : a->i;
    }
    return onnx_define_const(c, 0, &d);
}

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_EW[] = {
    {"Relu", {1, 6, 13, 14}, relu, "consumed_inputs"},
    {"Sigmoid", {1, 6, 13}, sigmoid, "consumed_inputs"},
    {"HardSwish", {14}, hardswish, ""},
    {"Tanh", {1, 6, 13}, tanh_op, "consumed_inputs"},
    {"Clip", {1, 6, 11, 12, 13}, clip, "min,max,consumed_inputs"},
    {"Add", {1, 6, 7, 13, 14}, add, "broadcast,axis,consumed_inputs"},
    {"Sub", {1, 6, 7, 13, 14}, sub, "broadcast,axis,consumed_inputs"},
    {"Mul", {1, 6, 7, 13, 14}, mul, "broadcast,axis,consumed_inputs"},
    {"Div", {1, 6, 7, 13, 14}, div_op, "broadcast,axis,consumed_inputs"},
    {"Pow", {1, 7, 12, 13, 15}, pow_op, "broadcast,axis"},
    {"Softmax", {1, 11, 13}, softmax, "axis"},
    {"LogSoftmax", {1, 11, 13}, log_softmax, "axis"},
    {"Identity", {1, 13, 14, 16}, identity, ""},
    {"Dropout", {1, 6, 7, 10, 12, 13}, dropout, "ratio,is_test,seed,consumed_inputs"},
    {"Constant", {1, 9, 11, 12, 13}, constant,
     "value,value_float,value_floats,value_int,value_ints,value_string,value_strings,sparse_value"},
    {NULL, {0}, NULL, NULL},
};
