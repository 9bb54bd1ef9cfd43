/*
 * onnx_fold.c - shape computations evaluated at load.
 *
 * Exporters write shapes as computations: torchvision's channel shuffle
 * becomes Shape -> Gather -> Div -> Cast -> Unsqueeze -> Concat -> Reshape,
 * and x.view(x.size(0), -1) becomes Shape -> Gather -> Unsqueeze -> Concat.
 * inferd knows every shape at load, so a node whose inputs are all
 * constants is evaluated here into a new constant (onnx_fold); Shape and
 * Size read the shape of whatever they are given.
 *
 * Batch mode does not know the batch size. Shape marks that element
 * (onnx_data.batch_at); Gather, Concat, Slice, Where, Expand, Cast to an integer
 * and the reshapes carry the mark along; Reshape takes a marked first
 * element as the batch; a comparison knows the batch is at least 1; and
 * anything that would compute with it asks for whole mode, where Shape
 * gives the real first dim.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

#define FOLD_MAX_ELEMS (1 << 20)   /* the largest constant folding makes */
#define T_(name) ONNX__TENSOR_PROTO__DATA_TYPE__##name

static enum rt_status uses_batch(struct onnx_ctx *c)
{
    return onnx_needs_whole(c, "computes with the batch size");
}

/* *d becomes a zeroed constant of shape s and ONNX type `type`. */
static enum rt_status make(struct onnx_ctx *c, struct onnx_data *d, const struct rt_shape *s, int type)
{
    memset(d, 0, sizeof(*d));
    d->shape = *s;
    d->type = type;
    d->elems = 1;
    for (int k = 0; k < s->rank; k++) {
        if (s->dims[k] < 0 || __builtin_mul_overflow(d->elems, s->dims[k], &d->elems) || d->elems > FOLD_MAX_ELEMS)
            return onnx_unsupported(c, "folding would make a constant of more than %d elements", FOLD_MAX_ELEMS);
    }
    if (onnx_type_is_float(type))
        d->f = calloc((size_t)d->elems + 1, sizeof(float));
    else
        d->i = calloc((size_t)d->elems + 1, sizeof(int64_t));
    if (!d->f && !d->i)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    return RT_OK;
}

/* Output 0 becomes d (ownership passes), or d is freed on error s. */
static enum rt_status define(struct onnx_ctx *c, struct onnx_data *d, enum rt_status s)
{
    if (s != RT_OK) {
        onnx_data_free(d);
        return s;
    }
    return onnx_define_const(c, 0, d);
}

static bool marked(const struct onnx_data *d, int64_t k)
{
    return k < 64 && (d->batch_at >> k & 1);
}

/* dst[k] = src[j], the batch mark with it; false when the mark would land
 * beyond the 64 elements batch_at can hold. */
static bool move(struct onnx_data *dst, int64_t k, const struct onnx_data *src, int64_t j)
{
    if (dst->f) {
        dst->f[k] = src->f[j];   // NOLINT(clang-analyzer-core.NullDereference): callers make dst of src's type
        return true;
    }
    dst->i[k] = src->i[j];
    if (!marked(src, j))
        return true;
    if (k >= 64)
        return false;
    dst->batch_at |= 1ull << k;
    return true;
}

static enum rt_status mark_lost(struct onnx_ctx *c)
{
    return onnx_unsupported(c, "the batch size would land beyond element 64 of a folded shape");
}

/* numpy's broadcast of a and b into *out; false with err set. */
static bool broadcast(struct onnx_ctx *c, const struct rt_shape *a, const struct rt_shape *b, struct rt_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    if (r > RT_MAX_DIMS) {
        onnx_unsupported(c, "more than %d dimensions", RT_MAX_DIMS);
        return false;
    }
    out->rank = r;
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->rank), db = d - (r - b->rank);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        if (x != y && x != 1 && y != 1) {
            onnx_bad(c, "constant shapes do not broadcast (%lld against %lld on axis %d)", (long long)x,
                     (long long)y, d);
            return false;
        }
        out->dims[d] = x == 1 ? y : x;
    }
    return true;
}

/* The flat index into `in` (broadcast against out) of out's element `flat`. */
static int64_t source_of(const struct rt_shape *out, int64_t flat, const struct rt_shape *in)
{
    int64_t at = 0, stride = 1;
    for (int d = out->rank - 1, e = in->rank - 1; d >= 0; d--, e--) {
        // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): ranks are at most RT_MAX_DIMS
        int64_t i = flat % out->dims[d];
        flat /= out->dims[d];
        if (e >= 0) {
            if (in->dims[e] != 1)
                at += i * stride;
            stride *= in->dims[e];
        }
    }
    return at;
}

/* Every input of the current node (those present) as constants into in[]. */
static bool const_inputs(struct onnx_ctx *c, const struct onnx_data **in, int n)
{
    for (int k = 0; k < n; k++) {
        const struct onnx_value *v = onnx_input(c, k);
        in[k] = NULL;
        if (v && !(v = onnx_const_in(c, k)))
            return false;
        in[k] = v ? v->data : NULL;
        if (v && v->data->shape.rank > RT_MAX_DIMS) {   /* decoding allows no more; kept for the index math */
            onnx_bad(c, "a constant of more than %d dimensions", RT_MAX_DIMS);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------ element-wise */

/* a op b for op A(dd), S(ub), M(ul), D(iv); false with err set. */
static bool int_arith(struct onnx_ctx *c, char op, int64_t a, int64_t b, int64_t *r)
{
    bool overflow;
    if (op == 'A') {
        overflow = __builtin_add_overflow(a, b, r);
    } else if (op == 'S') {
        overflow = __builtin_sub_overflow(a, b, r);
    } else if (op == 'M') {
        overflow = __builtin_mul_overflow(a, b, r);
    } else if (b == 0) {
        onnx_bad(c, "integer division by zero");
        return false;
    } else {
        overflow = a == INT64_MIN && b == -1;
        *r = overflow ? 0 : a / b;
    }
    if (overflow)
        onnx_unsupported(c, "integer arithmetic on constants overflows");
    return !overflow;
}

/* The node's two inputs as constants of one type family; false with err set. */
static bool two_constants(struct onnx_ctx *c, const struct onnx_data **in)
{
    if (onnx_arity(c, 2, 2, 1) != RT_OK || !const_inputs(c, in, 2))
        return false;
    if (!in[0] || !in[1] || !in[0]->f != !in[1]->f) {
        onnx_bad(c, "needs two inputs of one type");
        return false;
    }
    return true;
}

/* Add, Sub, Mul, Div of two constants of one type (numpy broadcasting;
 * integer division truncates, as onnxruntime's). */
static enum rt_status arith(struct onnx_ctx *c)
{
    const struct onnx_data *in[2] = {NULL};
    enum rt_status s = RT_OK;
    if (!two_constants(c, in))
        return c->err->status;
    if (in[0]->batch_at || in[1]->batch_at)
        return uses_batch(c);
    char op = c->node->op_type[0];   /* A, S, M, D */
    struct rt_shape out;
    struct onnx_data d;
    if (!broadcast(c, &in[0]->shape, &in[1]->shape, &out))
        return c->err->status;
    if (c->version < 7 && (in[0]->shape.rank != in[1]->shape.rank ||
                           memcmp(in[0]->shape.dims, in[1]->shape.dims, sizeof(int64_t) * (size_t)out.rank) != 0))
        return onnx_unsupported(c, "legacy broadcasting (before opset 7) of constants");
    if ((s = make(c, &d, &out, in[0]->type)) != RT_OK)
        return s;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        int64_t ja = source_of(&out, k, &in[0]->shape), jb = source_of(&out, k, &in[1]->shape);
        if (in[0]->f) {
            float a = in[0]->f[ja], b = in[1]->f[jb];
            d.f[k] = op == 'A' ? a + b : op == 'S' ? a - b : op == 'M' ? a * b : a / b;
            continue;
        }
        int64_t r;
        if (!int_arith(c, op, in[0]->i[ja], in[1]->i[jb], &r))
            s = c->err->status;
        else
            d.i[k] = onnx_int_wrap(d.type, (uint64_t)r);   /* INT32 wraps as INT32 */
    }
    return define(c, &d, s);
}

/* Neg of a constant (an integer wraps as its type: the most negative stays). */
static enum rt_status neg(struct onnx_ctx *c)
{
    const struct onnx_data *in[1] = {NULL};
    struct onnx_data d;
    enum rt_status s;
    if (onnx_arity(c, 1, 1, 1) != RT_OK || !const_inputs(c, in, 1))
        return c->err->status;
    if (!in[0])
        return onnx_bad(c, "input 0 is missing");
    if (in[0]->batch_at)
        return uses_batch(c);
    if ((s = make(c, &d, &in[0]->shape, in[0]->type)) != RT_OK)
        return s;
    for (int64_t k = 0; k < d.elems; k++) {
        if (d.f)
            d.f[k] = -in[0]->f[k];
        else
            d.i[k] = onnx_int_wrap(d.type, 0 - (uint64_t)in[0]->i[k]);
    }
    return define(c, &d, RT_OK);
}

/* Equal, Less, Greater into a BOOL constant. A marked batch size is known
 * to be at least 1, so it compares against values below 1 as a huge one. */
static enum rt_status compare(struct onnx_ctx *c)
{
    const struct onnx_data *in[2] = {NULL};
    enum rt_status s = RT_OK;
    if (!two_constants(c, in))
        return c->err->status;
    char op = c->node->op_type[0];   /* E, L, G */
    struct rt_shape out;
    struct onnx_data d;
    if (!broadcast(c, &in[0]->shape, &in[1]->shape, &out) || (s = make(c, &d, &out, T_(BOOL))) != RT_OK)
        return c->err->status;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        int64_t ja = source_of(&out, k, &in[0]->shape), jb = source_of(&out, k, &in[1]->shape);
        double a, b;
        if (in[0]->f) {
            a = in[0]->f[ja], b = in[1]->f[jb];
        } else {
            bool ma = marked(in[0], ja), mb = marked(in[1], jb);
            a = (double)in[0]->i[ja], b = (double)in[1]->i[jb];
            if ((ma && (mb || b >= 1)) || (mb && a >= 1)) {
                s = uses_batch(c);
                break;
            }
            a = ma ? INFINITY : a, b = mb ? INFINITY : b;
        }
        d.i[k] = op == 'E' ? a == b : op == 'L' ? a < b : a > b;
    }
    return define(c, &d, s);
}

/* Where(condition, x, y) with numpy broadcasting over the three. */
static enum rt_status where(struct onnx_ctx *c)
{
    const struct onnx_data *in[3] = {NULL};
    enum rt_status s = onnx_arity(c, 3, 3, 1);
    if (s != RT_OK || !const_inputs(c, in, 3))
        return c->err->status;
    if (!in[0] || !in[1] || !in[2])
        return onnx_bad(c, "needs three inputs");
    if (in[0]->type != T_(BOOL) || !in[1]->f != !in[2]->f)
        return onnx_bad(c, "needs a BOOL condition and two values of one type");
    struct rt_shape xy, out;
    struct onnx_data d;
    if (!broadcast(c, &in[1]->shape, &in[2]->shape, &xy) || !broadcast(c, &in[0]->shape, &xy, &out) ||
        (s = make(c, &d, &out, in[1]->type)) != RT_OK)
        return c->err->status;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        const struct onnx_data *from = in[0]->i[source_of(&out, k, &in[0]->shape)] ? in[1] : in[2];
        if (!move(&d, k, from, source_of(&out, k, &from->shape)))
            s = mark_lost(c);
    }
    return define(c, &d, s);
}

/* Cast of a constant. Floats to integers truncate toward zero; integers
 * wrap to the target's width. */
static enum rt_status cast_const(struct onnx_ctx *c, const struct onnx_data *x, int64_t to)
{
    struct onnx_data d;
    enum rt_status s = make(c, &d, &x->shape, (int)to);
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        if (x->f && d.f) {
            d.f[k] = x->f[k];
        } else if (x->f) {
            float v = x->f[k];
            if (!(v > -9.2e18f && v < 9.2e18f))
                s = onnx_unsupported(c, "casts %g to an integer", (double)v);
            else
                d.i[k] = to == T_(BOOL) ? v != 0 : onnx_int_wrap((int)to, (uint64_t)(int64_t)v);
        } else if (marked(x, k)) {
            if (d.f || to == T_(BOOL))
                s = uses_batch(c);
            else
                move(&d, k, x, k);
        } else if (d.f) {
            d.f[k] = (float)x->i[k];
        } else {
            d.i[k] = onnx_int_wrap((int)to, (uint64_t)x->i[k]);
        }
    }
    return define(c, &d, s);
}

/* Cast: constants fold; a computed tensor (FP32) may only stay a float. */
static enum rt_status cast(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_input(c, 0) : NULL;
    int64_t to;
    if (s != RT_OK || !onnx_attr_int(c, "to", 0, &to))
        return c->err->status;
    if (!x)
        return onnx_bad(c, "input 0 is missing");
    if (to < 1 || to > T_(BFLOAT16) || to == T_(STRING) || to == T_(COMPLEX64) || to == T_(COMPLEX128) ||
        (c->version < 13 && to == T_(BFLOAT16)))
        return onnx_unsupported(c, "casts to %s", onnx_type_name((int)to));
    if (x->kind == OV_CONST)
        return cast_const(c, x->data, to);
    if (!(x = onnx_act_in(c, 0)))
        return c->err->status;
    if (to != T_(FLOAT) && to != T_(DOUBLE))
        return onnx_unsupported(c, "casts a computed tensor to %s (inferd computes in FP32)", onnx_type_name((int)to));
    return onnx_alias(c, 0, x);
}

/* ------------------------------------------------------------ shapes */

/* Shape (start and end from opset 15) of an activation or a constant. */
static enum rt_status shape(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_input(c, 0) : NULL;
    int64_t start, end;
    if (s != RT_OK || !onnx_attr_int(c, "start", 0, &start) || !onnx_attr_int(c, "end", INT64_MAX, &end))
        return c->err->status;
    if (!x || x->kind == OV_REFUSED)
        return x ? onnx_unsupported(c, "input 0 is %s", x->why) : onnx_bad(c, "input 0 is missing");
    int64_t first, len;
    onnx_slice_range(x->shape.rank, start, end, 1, &first, &len);
    struct onnx_data d;
    if ((s = make(c, &d, &(struct rt_shape){1, {len}}, T_(INT64))) != RT_OK)
        return s;
    for (int64_t k = 0; k < len; k++) {
        d.i[k] = x->shape.dims[first + k];
        if (x->kind == OV_ACT && !c->whole && first + k == 0)
            d.batch_at = 1;   /* d.i[0] is ONNX_BATCH */
    }
    return define(c, &d, RT_OK);
}

static enum rt_status size(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_input(c, 0) : NULL;
    if (s != RT_OK)
        return s;
    if (!x || x->kind == OV_REFUSED)
        return x ? onnx_unsupported(c, "input 0 is %s", x->why) : onnx_bad(c, "input 0 is missing");
    if (x->kind == OV_ACT && !c->whole)
        return uses_batch(c);
    struct onnx_data d;
    if ((s = make(c, &d, &(struct rt_shape){0, {0}}, T_(INT64))) != RT_OK)
        return s;
    d.i[0] = onnx_prod(&x->shape, 0, x->shape.rank);
    return define(c, &d, RT_OK);
}

/* A constant shape input (1-D integers, no batch mark) into dims. */
static bool shape_input(struct onnx_ctx *c, const struct onnx_data *sh, struct rt_shape *out)
{
    if (!sh->i || sh->shape.rank != 1) {
        onnx_bad(c, "the shape must be a 1-D integer tensor");
        return false;
    }
    if (sh->batch_at) {
        uses_batch(c);
        return false;
    }
    if (sh->elems > RT_MAX_DIMS) {
        onnx_unsupported(c, "a shape of more than %d dimensions", RT_MAX_DIMS);
        return false;
    }
    out->rank = (int)sh->elems;
    for (int k = 0; k < out->rank; k++) {
        if ((out->dims[k] = sh->i[k]) < 0) {
            onnx_bad(c, "negative dimension %lld", (long long)sh->i[k]);
            return false;
        }
    }
    return true;
}

static enum rt_status constant_of_shape(struct onnx_ctx *c)
{
    const struct onnx_data *in[1] = {NULL};
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    struct rt_shape out;
    if (s != RT_OK || !const_inputs(c, in, 1))
        return c->err->status;
    if (!in[0])
        return onnx_bad(c, "input 0 is missing");
    if (!shape_input(c, in[0], &out))
        return c->err->status;
    const Onnx__AttributeProto *a = onnx_attr(c, "value");
    struct onnx_data v = {0}, d;
    if (a && !a->t)
        return onnx_bad(c, "'value' must be a tensor");
    if (a && (s = onnx_data_decode(a->t, c->label, "value", &v, c->err)) != RT_OK)
        return s;
    if (a && v.elems != 1) {
        onnx_data_free(&v);
        return onnx_bad(c, "'value' must hold one element");
    }
    s = make(c, &d, &out, a ? v.type : T_(FLOAT));
    for (int64_t k = 0; k < d.elems && s == RT_OK && a; k++)
        move(&d, k, &v, 0);
    onnx_data_free(&v);
    return define(c, &d, s);
}

/* Expand: numpy broadcasting of the constant against the given shape. */
static enum rt_status expand(struct onnx_ctx *c)
{
    const struct onnx_data *in[2] = {NULL};
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    struct rt_shape want, out;
    struct onnx_data d;
    if (s != RT_OK || !const_inputs(c, in, 2))
        return c->err->status;
    if (!in[0] || !in[1])
        return onnx_bad(c, "needs two inputs");
    if (!shape_input(c, in[1], &want) || !broadcast(c, &in[0]->shape, &want, &out) ||
        (s = make(c, &d, &out, in[0]->type)) != RT_OK)
        return c->err->status;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        if (!move(&d, k, in[0], source_of(&out, k, &in[0]->shape)))
            s = mark_lost(c);
    }
    return define(c, &d, s);
}

/* Range(start, limit, delta) of scalars. */
static enum rt_status range(struct onnx_ctx *c)
{
    const struct onnx_data *in[3] = {NULL};
    enum rt_status s = onnx_arity(c, 3, 3, 1);
    if (s != RT_OK || !const_inputs(c, in, 3))
        return c->err->status;
    for (int k = 0; k < 3; k++) {
        if (!in[k] || in[k]->elems != 1 || !in[k]->f != !in[0]->f)
            return onnx_bad(c, "needs three scalars of one type");
        if (in[k]->batch_at)
            return uses_batch(c);
    }
    double start = in[0]->f ? in[0]->f[0] : (double)in[0]->i[0], limit = in[1]->f ? in[1]->f[0] : (double)in[1]->i[0],
           delta = in[2]->f ? in[2]->f[0] : (double)in[2]->i[0];
    double n = ceil((limit - start) / delta);
    if (delta == 0 || !(n < FOLD_MAX_ELEMS))
        return onnx_unsupported(c, "a range of more than %d elements (or a delta of 0)", FOLD_MAX_ELEMS);
    struct onnx_data d;
    if ((s = make(c, &d, &(struct rt_shape){1, {n > 0 ? (int64_t)n : 0}}, in[0]->type)) != RT_OK)
        return s;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        int64_t step;
        if (d.f)
            d.f[k] = (float)(start + (double)k * delta);
        else if (__builtin_mul_overflow(k, in[2]->i[0], &step) || __builtin_add_overflow(in[0]->i[0], step, &d.i[k]))
            s = onnx_unsupported(c, "the range overflows");
    }
    return define(c, &d, s);
}

/* ------------------------------------------------------------ moves */

/* Gather of a constant along 'axis' at constant indices. */
static enum rt_status gather(struct onnx_ctx *c)
{
    const struct onnx_data *in[2] = {NULL};
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    int64_t axis;
    int ax;
    if (s != RT_OK || !const_inputs(c, in, 2) || !onnx_attr_int(c, "axis", 0, &axis))
        return c->err->status;
    if (!in[0] || !in[1] || !in[1]->i)
        return onnx_bad(c, "needs data and integer indices");
    const struct rt_shape *x = &in[0]->shape, *ix = &in[1]->shape;
    if (!onnx_axis(c, axis, x->rank, false, &ax))
        return c->err->status;
    if (x->rank - 1 + ix->rank > RT_MAX_DIMS)
        return onnx_unsupported(c, "more than %d dimensions", RT_MAX_DIMS);
    struct rt_shape out = {0, {0}};
    for (int d = 0; d < ax; d++)
        out.dims[out.rank++] = x->dims[d];
    for (int d = 0; d < ix->rank; d++)
        out.dims[out.rank++] = ix->dims[d];
    for (int d = ax + 1; d < x->rank; d++)
        out.dims[out.rank++] = x->dims[d];
    int64_t n = x->dims[ax], inner = onnx_prod(x, ax + 1, x->rank), count = in[1]->elems;
    struct onnx_data d;
    if ((s = make(c, &d, &out, in[0]->type)) != RT_OK)
        return s;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        int64_t o = k / (count * inner), at = in[1]->i[k / inner % count], r = k % inner;
        if (marked(in[1], k / inner % count))
            s = uses_batch(c);
        else if (at < -n || at >= n)
            s = onnx_bad(c, "index %lld is out of range for a dim of %lld", (long long)at, (long long)n);
        else if (!move(&d, k, in[0], (o * n + (at < 0 ? at + n : at)) * inner + r))
            s = mark_lost(c);
    }
    return define(c, &d, s);
}

static enum rt_status concat(struct onnx_ctx *c)
{
    int n_in = (int)c->node->n_input;
    enum rt_status s = onnx_arity(c, 1, RT_NODE_MAX_INPUTS, 1);
    const struct onnx_data *in[RT_NODE_MAX_INPUTS] = {NULL};
    int64_t axis;
    int ax;
    if (s != RT_OK || !const_inputs(c, in, n_in))
        return c->err->status;
    if (c->version >= 4 && !onnx_attr(c, "axis"))
        return onnx_bad(c, "attribute 'axis' is required");
    if (!onnx_attr_int(c, "axis", 1, &axis))   /* 1 before opset 4 */
        return c->err->status;
    if (!in[0] || !onnx_axis(c, axis, in[0]->shape.rank, false, &ax))
        return in[0] ? c->err->status : onnx_bad(c, "input 0 is missing");
    struct rt_shape out = in[0]->shape;
    for (int k = 1; k < n_in; k++) {
        if (!in[k] || in[k]->shape.rank != out.rank || !in[k]->f != !in[0]->f)
            return onnx_bad(c, "inputs differ in rank or type");
        for (int d = 0; d < out.rank; d++) {
            if (d != ax && in[k]->shape.dims[d] != out.dims[d])
                return onnx_bad(c, "inputs differ outside the concat axis");
        }
        out.dims[ax] += in[k]->shape.dims[ax];
    }
    struct onnx_data d;
    if ((s = make(c, &d, &out, in[0]->type)) != RT_OK)
        return s;
    int64_t inner = onnx_prod(&out, ax + 1, out.rank), row = out.dims[ax] * inner, at = 0;
    for (int k = 0; k < n_in && s == RT_OK; k++) {
        int64_t run = in[k]->shape.dims[ax] * inner;
        for (int64_t j = 0; j < in[k]->elems && s == RT_OK; j++) {
            if (!move(&d, j / run * row + at + j % run, in[k], j))
                s = mark_lost(c);
        }
        at += run;
    }
    return define(c, &d, s);
}

/* Slice of a constant: starts, ends, axes, steps from attributes (< 10)
 * or constant inputs. */
static enum rt_status slice(struct onnx_ctx *c)
{
    const struct onnx_data *in[5] = {NULL};
    enum rt_status s = onnx_arity(c, c->version < 10 ? 1 : 3, c->version < 10 ? 1 : 5, 1);
    if (s != RT_OK || !const_inputs(c, in, (int)c->node->n_input))
        return c->err->status;
    if (!in[0])
        return onnx_bad(c, "input 0 is missing");
    const struct rt_shape *x = &in[0]->shape;
    struct onnx_slice_args a;
    if ((s = onnx_slice_args(c, x->rank, &a)) != RT_OK)
        return s;
    struct rt_shape out = *x;
    int64_t first[RT_MAX_DIMS] = {0}, step[RT_MAX_DIMS];
    for (int d = 0; d < x->rank; d++)
        step[d] = 1;
    for (int k = 0; k < a.n; k++) {
        step[a.axis[k]] = a.step[k];
        onnx_slice_range(x->dims[a.axis[k]], a.start[k], a.end[k], a.step[k], &first[a.axis[k]], &out.dims[a.axis[k]]);
    }
    struct onnx_data d;
    if ((s = make(c, &d, &out, in[0]->type)) != RT_OK)
        return s;
    for (int64_t k = 0; k < d.elems && s == RT_OK; k++) {
        int64_t rest = k, at = 0, stride = 1;
        for (int dd = out.rank - 1; dd >= 0; dd--) {
            // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): rank at most RT_MAX_DIMS (const_inputs)
            at += (first[dd] + rest % out.dims[dd] * step[dd]) * stride;
            rest /= out.dims[dd];
            stride *= x->dims[dd];
        }
        if (!move(&d, k, in[0], at))
            s = mark_lost(c);
    }
    return define(c, &d, s);
}

/* Output 0: constant x's elements in order under shape out. */
static enum rt_status reshaped(struct onnx_ctx *c, const struct onnx_data *x, const struct rt_shape *out)
{
    struct onnx_data d;
    enum rt_status s = make(c, &d, out, x->type);
    if (s == RT_OK && d.elems != x->elems)
        s = onnx_bad(c, "the new shape holds %lld elements, the input %lld", (long long)d.elems, (long long)x->elems);
    if (s == RT_OK) {
        if (x->f)
            memcpy(d.f, x->f, sizeof(float) * (size_t)d.elems);
        else
            memcpy(d.i, x->i, sizeof(int64_t) * (size_t)d.elems);
        d.batch_at = x->batch_at;
    }
    return define(c, &d, s);
}

static enum rt_status unsqueeze_or_squeeze(struct onnx_ctx *c)
{
    bool add = c->node->op_type[0] == 'U';
    enum rt_status s = onnx_arity(c, 1, c->version < 13 ? 1 : 2, 1);
    const struct onnx_value *v = s == RT_OK ? onnx_const_in(c, 0) : NULL;
    int axes[RT_MAX_DIMS] = {0}, n;
    if (!v || onnx_squeeze_axes(c, v->shape.rank, add, axes, &n) != RT_OK)
        return c->err->status;
    if (add && n == 0)
        return onnx_bad(c, "'axes' is required");
    const struct rt_shape *x = &v->shape;
    bool at[RT_MAX_DIMS + 1] = {false};
    for (int k = 0; k < n; k++) {
        if (!add && x->dims[axes[k]] != 1)
            return onnx_bad(c, "axis %d has size %lld, not 1", axes[k], (long long)x->dims[axes[k]]);
        at[axes[k]] = true;
    }
    struct rt_shape out = {0, {0}};
    for (int i = 0, j = 0; add ? i < x->rank + n : i < x->rank; i++) {
        if (add)
            out.dims[out.rank++] = at[i] ? 1 : x->dims[j++];
        else if (!(n ? at[i] : x->dims[i] == 1))
            out.dims[out.rank++] = x->dims[i];
    }
    return reshaped(c, v->data, &out);
}

static enum rt_status reshape(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version < 5 ? 1 : 2, 1);
    const struct onnx_value *v = s == RT_OK ? onnx_const_in(c, 0) : NULL;
    int64_t want[RT_MAX_DIMS], allowzero;
    int r;
    if (!v || !onnx_attr_int(c, "allowzero", 0, &allowzero))
        return c->err->status;
    if (!(c->version < 5 ? onnx_attr_ints(c, "shape", want, RT_MAX_DIMS, &r)
                         : onnx_const_ints(c, 1, "shape", want, RT_MAX_DIMS, &r)))
        return c->err->status;
    struct rt_shape out = {r, {0}};
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < r; i++) {
        int64_t d = want[i] == 0 && !allowzero ? (i < v->shape.rank ? v->shape.dims[i] : -2) : want[i];
        if (d < -1 || (d == -1 && unknown >= 0) || d > ONNX_MAX_DIM)
            return onnx_bad(c, "invalid 'shape' (dim %d is %lld)", i, (long long)want[i]);
        if (d == -1)
            unknown = i;
        else
            known *= d;   /* below 2^20 before, at most 2^31 here: no overflow */
        if (known > FOLD_MAX_ELEMS)
            return onnx_bad(c, "'shape' does not match the input's element count");
        out.dims[i] = d;
    }
    if (unknown >= 0 && (known == 0 || v->data->elems % known != 0))
        return onnx_bad(c, "'shape' does not match the input's element count");
    if (unknown >= 0)
        out.dims[unknown] = v->data->elems / known;
    return reshaped(c, v->data, &out);
}

static enum rt_status flatten(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *v = s == RT_OK ? onnx_const_in(c, 0) : NULL;
    int64_t axis;
    int ax;
    if (!v || !onnx_attr_int(c, "axis", 1, &axis) || !onnx_axis(c, axis, v->shape.rank, true, &ax))
        return c->err->status;
    struct rt_shape out = {2, {onnx_prod(&v->shape, 0, ax), onnx_prod(&v->shape, ax, v->shape.rank)}};
    return reshaped(c, v->data, &out);
}

/* ------------------------------------------------------------ dispatch */

static const struct {
    const char *type;
    onnx_convert_fn fn;
} FOLDERS[] = {
    {"Add", arith}, {"Sub", arith}, {"Mul", arith}, {"Div", arith}, {"Neg", neg},
    {"Equal", compare}, {"Less", compare}, {"Greater", compare},
    {"Where", where}, {"Cast", cast}, {"Shape", shape}, {"Size", size},
    {"ConstantOfShape", constant_of_shape}, {"Expand", expand}, {"Range", range},
    {"Gather", gather}, {"Concat", concat}, {"Slice", slice},
    {"Unsqueeze", unsqueeze_or_squeeze}, {"Squeeze", unsqueeze_or_squeeze},
    {"Reshape", reshape}, {"Flatten", flatten},
};

onnx_convert_fn onnx_folder(const struct onnx_ctx *c)
{
    const Onnx__NodeProto *nd = c->node;
    if (nd->n_input == 0)
        return NULL;
    for (size_t k = 0; k < nd->n_input; k++) {
        const struct onnx_value *v = nd->input[k][0] ? onnx_value_find(c, nd->input[k]) : NULL;
        if (nd->input[k][0] && (!v || v->kind != OV_CONST))
            return NULL;
    }
    for (size_t k = 0; k < sizeof(FOLDERS) / sizeof(FOLDERS[0]); k++) {
        if (strcmp(FOLDERS[k].type, nd->op_type) == 0)
            return FOLDERS[k].fn;
    }
    return NULL;
}

/* Converters for computed tensors of the ops that exist for shapes. */
static enum rt_status constants_only(struct onnx_ctx *c)
{
    return onnx_unsupported(c, "runs on constants only (inferd folds it at load), and an input is computed");
}

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_FOLD[] = {
    {"Shape", {1, 13, 15}, shape, "start,end"},
    {"Size", {1, 13}, size, ""},
    {"Cast", {1, 6, 9, 13}, cast, "to"},
    {"ConstantOfShape", {9}, constants_only, "value"},
    {"Equal", {1, 7, 11, 13}, constants_only, ""},
    {"Less", {1, 7, 9, 13}, constants_only, ""},
    {"Greater", {1, 7, 9, 13}, constants_only, ""},
    {"Where", {9, 16}, constants_only, ""},
    {"Expand", {8, 13}, constants_only, ""},
    {"Range", {11}, constants_only, ""},
    {NULL, {0}, NULL, NULL},
};
