/*
 * onnx_ops_shape.c - ONNX ops that move elements: Concat, Flatten, Reshape,
 * Squeeze, Unsqueeze (views: runtime reshapes, no copy), Transpose, Slice,
 * Split, Pad and Gather (as a slice).
 *
 * In batch mode an op that would move data across the first axis (concat
 * along it, a reshape or flatten that folds other dims into it, a
 * transpose that moves it, a slice or pad of it) asks for whole mode
 * instead (onnx_needs_whole).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/kref.h"
#include "runtime/onnx/onnx_impl.h"

#define CONCAT_MAX_INPUTS 4096   /* bounds the list concat() allocates */

/* in[0..n) joined along ONNX axis ax into output out_k, or (out_k < 0) into
 * a temporary that *res then describes. A runtime concat takes at most
 * RT_NODE_MAX_INPUTS inputs: longer lists (DenseNet's later layers) are
 * joined in groups first, which copies those elements once more. */
static enum rt_status emit_concat(struct onnx_ctx *c, const struct onnx_value *const *in, int n, int ax, int out_k,
                                  struct onnx_value *res)
{
    const struct onnx_value *part[RT_NODE_MAX_INPUTS];
    struct onnx_value group[RT_NODE_MAX_INPUTS];
    if (n > RT_NODE_MAX_INPUTS) {
        int per = (n + RT_NODE_MAX_INPUTS - 1) / RT_NODE_MAX_INPUTS, parts = 0;
        for (int i = 0; i < n; i += per, parts++) {
            int m = n - i < per ? n - i : per;
            part[parts] = in[i];
            if (m > 1) {
                enum rt_status s = emit_concat(c, in + i, m, ax, -1, &group[parts]);
                if (s != RT_OK)
                    return s;
                part[parts] = &group[parts];
            }
        }
        in = part;
        n = parts;
    }
    struct rt_shape out = in[0]->shape;
    for (int k = 1; k < n; k++)
        out.dims[ax] += in[k]->shape.dims[ax];
    int t = -1;
    struct rt_node *nd = out_k >= 0 ? onnx_emit(c, RT_OP_CONCAT, out_k, &out) : onnx_emit_temp(c, RT_OP_CONCAT, &t);
    if (!nd)
        return c->err->status;
    nd->n_inputs = n;
    for (int k = 0; k < n; k++)
        nd->inputs[k] = in[k]->tensor;
    nd->a.axis = onnx_rt_axis(c, ax);
    if (out_k < 0)
        *res = (struct onnx_value){.name = "", .kind = OV_ACT, .shape = out, .tensor = t};
    return RT_OK;
}

/* Constants before and after the computed run in[lo..hi] joined along ax
 * (a class token before its patches): the run is padded with zeros where
 * they go, then a constant holding them (zeros elsewhere) is added; x + 0
 * is x. A constant's first dim stands for the batch only where that is 1. */
static enum rt_status concat_around(struct onnx_ctx *c, const struct onnx_value *const *in, int n_in, int lo, int hi,
                                    int ax)
{
    struct onnx_value run = *in[lo];
    enum rt_status s = hi > lo ? emit_concat(c, in + lo, hi - lo + 1, ax, -1, &run) : RT_OK;
    if (s != RT_OK)
        return s;
    struct rt_shape out = run.shape;
    int64_t before = 0, after = 0;
    for (int k = 0; k < n_in; k++) {
        if (k < lo)
            before += in[k]->shape.dims[ax];
        else if (k > hi)
            after += in[k]->shape.dims[ax];
    }
    out.dims[ax] += before + after;
    struct onnx_data sum = {.shape = out, .type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, .elems = 1};
    if (!c->whole)
        sum.shape.dims[0] = 1;   /* the same for every sample */
    sum.elems = onnx_prod(&sum.shape, 0, sum.shape.rank);
    if (!(sum.f = calloc((size_t)sum.elems, sizeof(float))))
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    int64_t inner = onnx_prod(&sum.shape, ax + 1, sum.shape.rank), outer = onnx_prod(&sum.shape, 0, ax),
            row = out.dims[ax] * inner, at = 0;
    for (int k = 0; k < n_in; k++) {   /* at: where input k starts in a row */
        if (k >= lo && k <= hi) {          /* the computed run: zeros here */
            at += k == lo ? run.shape.dims[ax] * inner : 0;
            continue;
        }
        int64_t len = in[k]->shape.dims[ax] * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy(sum.f + o * row + at, in[k]->data->f + o * len, sizeof(float) * (size_t)len);
        at += len;
    }
    int t;
    struct rt_node *nd = onnx_emit_temp(c, RT_OP_PAD, &t);
    if (nd) {
        nd->n_inputs = 1;
        nd->inputs[0] = run.tensor;
        nd->a.pad = (struct rt_pad_attrs){.mode = K_PAD_CONSTANT, .value = 0};
        nd->a.pad.begin[onnx_rt_axis(c, ax) - 1] = before;
        nd->a.pad.end[onnx_rt_axis(c, ax) - 1] = after;
        struct onnx_value padded = {.name = "", .kind = OV_ACT, .shape = out, .tensor = t};
        struct onnx_value k = {.name = "concat constants", .kind = OV_CONST, .shape = sum.shape, .data = &sum};
        s = onnx_emit_binary(c, K_BIN_ADD, &padded, &k, 0, NULL);
    }
    free(sum.f);
    return nd ? s : c->err->status;
}

static enum rt_status concat(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, CONCAT_MAX_INPUTS, 1);
    if (s != RT_OK)
        return s;
    /* the computed inputs must be one run; constants may stand before and after it */
    int n_in = (int)c->node->n_input, lo = -1, hi = 0;
    for (int k = 0; k < n_in; k++) {
        const struct onnx_value *v = onnx_input(c, k);
        if (v && v->kind == OV_ACT) {
            if (lo < 0)
                lo = k;
            hi = k;
        }
    }
    if (lo < 0)   /* (all constants fold before this) */
        return onnx_act_in(c, 0) ? onnx_unsupported(c, "has no computed input") : c->err->status;
    const struct onnx_value *first = onnx_act_in(c, lo);
    int64_t axis;
    if (!first)
        return c->err->status;
    if (c->version >= 4 && !onnx_attr(c, "axis"))
        return onnx_bad(c, "attribute 'axis' is required");
    if (!onnx_attr_int(c, "axis", 1, &axis))
        return c->err->status;
    int rank = first->shape.rank, ax;
    if (c->version < 11 && axis < 0)
        return onnx_bad(c, "negative axis before opset 11");
    if (!onnx_axis(c, axis, rank, false, &ax))
        return c->err->status;
    if (!c->whole && ax == 0)
        return onnx_needs_whole(c, "concatenates along the first axis");
    if (n_in == 1)
        return onnx_alias(c, 0, first);
    const struct onnx_value **in = calloc((size_t)n_in, sizeof(const struct onnx_value *));
    if (!in)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    int k = 0;
    for (; k < n_in; k++) {
        bool computed = k >= lo && k <= hi;
        const struct onnx_value *y = in[k] = computed ? onnx_act_in(c, k) : onnx_const_in(c, k);
        bool same = y && y->shape.rank == rank && (computed || y->data->f);
        for (int d = 0; same && d < rank; d++) {
            int64_t want = first->shape.dims[d];
            if (!computed && d == 0 && !c->whole)   /* a constant row for every sample of a batch of 1 */
                want = c->batch_fixed == 1 ? 1 : -2;
            same = d == ax || y->shape.dims[d] == want;
        }
        if (!same) {
            if (y && !computed && !c->whole)   /* whole mode compares the real first dims */
                onnx_needs_whole(c, "concatenates a constant with a batch");
            else if (y)
                onnx_bad(c, "inputs differ in rank or type, or outside the concat axis");
            break;
        }
    }
    if (k < n_in)
        s = c->err->status;
    else if (lo > 0 || hi < n_in - 1)
        s = concat_around(c, in, n_in, lo, hi, ax);
    else
        s = emit_concat(c, in, n_in, ax, 0, NULL);
    free(in);
    return s;
}

/* Output 0 as a view of x with ONNX shape out. */
static enum rt_status view_out(struct onnx_ctx *c, const struct onnx_value *x, const struct rt_shape *out)
{
    struct rt_shape rs = onnx_rt_shape(c, out);
    return onnx_view(c, x->tensor, rs.dims + 1, rs.rank - 1, 0, out, NULL);
}

static enum rt_status flatten(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int64_t axis;
    if (!x || !onnx_attr_int(c, "axis", 1, &axis))
        return c->err->status;
    int rank = x->shape.rank, ax;
    if (c->version < 11 && axis < 0)
        return onnx_bad(c, "negative axis before opset 11");
    if (!onnx_axis(c, axis, rank, true, &ax))
        return c->err->status;
    struct rt_shape out = {2, {onnx_prod(&x->shape, 0, ax), onnx_prod(&x->shape, ax, rank)}};
    if (!c->whole) {
        if (ax == 0 || onnx_prod(&x->shape, 1, ax) != 1)
            return onnx_needs_whole(c, "folds other dims into the first axis");
        out.dims[0] = ONNX_BATCH;
    }
    return view_out(c, x, &out);
}

enum rt_status onnx_squeeze_axes(struct onnx_ctx *c, int rank, bool added, int *axes, int *n)
{
    int64_t raw[ONNX_MAX_RANK];
    *n = 0;
    if (c->version < 13) {
        if (!onnx_attr_ints(c, "axes", raw, ONNX_MAX_RANK, n))
            return c->err->status;
    } else if (!onnx_const_ints(c, 1, "axes", raw, ONNX_MAX_RANK, n)) {
        return c->err->status;
    }
    int of = rank + (added ? *n : 0);
    if (of > ONNX_MAX_RANK)
        return onnx_unsupported(c, "more than %d dimensions", ONNX_MAX_RANK);
    bool seen[ONNX_MAX_RANK] = {false};
    for (int k = 0; k < *n; k++) {
        if (c->version < 11 && raw[k] < 0)
            return onnx_bad(c, "negative axis before opset 11");
        if (!onnx_axis(c, raw[k], of, false, &axes[k]))
            return c->err->status;
        if (seen[axes[k]])
            return onnx_bad(c, "axis %lld is given twice", (long long)raw[k]);
        seen[axes[k]] = true;
    }
    return RT_OK;
}

/* Drops the given axes of size 1, or every axis of size 1. */
static enum rt_status squeeze(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version < 13 ? 1 : 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    int rank = x->shape.rank, axes[ONNX_MAX_RANK] = {0}, n;
    if ((s = onnx_squeeze_axes(c, rank, false, axes, &n)) != RT_OK)
        return s;
    bool drop[ONNX_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
        if (!c->whole && axes[k] == 0)
            return onnx_needs_whole(c, "squeezes the first axis");
        if (x->shape.dims[axes[k]] != 1)
            return onnx_bad(c, "axis %d has size %lld, not 1", axes[k], (long long)x->shape.dims[axes[k]]);
        drop[axes[k]] = true;
    }
    if (n == 0) {
        /* the batch of batch mode is no 1 here, unless the graph fixed it so */
        if (!c->whole && c->batch_fixed == 1)
            return onnx_needs_whole(c, "squeezes the first axis (a fixed batch of 1)");
        for (int i = 0; i < rank; i++)
            drop[i] = x->shape.dims[i] == 1;
    }
    struct rt_shape out = {0, {0}};
    for (int i = 0; i < rank; i++) {
        if (!drop[i])
            out.dims[out.rank++] = x->shape.dims[i];
    }
    return view_out(c, x, &out);
}

/* Inserts axes of size 1 at the given output positions. */
static enum rt_status unsqueeze(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version < 13 ? 1 : 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    int axes[ONNX_MAX_RANK] = {0}, n;
    if ((s = onnx_squeeze_axes(c, x->shape.rank, true, axes, &n)) != RT_OK)
        return s;
    if (n == 0)
        return onnx_bad(c, "'axes' is required");
    bool add[ONNX_MAX_RANK] = {false};
    for (int k = 0; k < n; k++)
        add[axes[k]] = true;
    if (!c->whole && add[0])
        return onnx_needs_whole(c, "inserts an axis before the first");
    struct rt_shape out = {x->shape.rank + n, {0}};
    for (int i = 0, j = 0; i < out.rank; i++)
        out.dims[i] = add[i] ? 1 : x->shape.dims[j++];
    return view_out(c, x, &out);
}

/* len elements every step-th from start along ONNX axis ax of activation
 * *v, into output out_k, or (out_k < 0) into a temporary that *v becomes. */
static enum rt_status emit_slice(struct onnx_ctx *c, struct onnx_value *v, int ax, int64_t start, int64_t step,
                                 int64_t len, int out_k)
{
    struct rt_shape out = v->shape;
    out.dims[ax] = len;
    int t = -1;
    struct rt_node *n = out_k >= 0 ? onnx_emit(c, RT_OP_SLICE, out_k, &out) : onnx_emit_temp(c, RT_OP_SLICE, &t);
    if (!n)
        return c->err->status;
    n->n_inputs = 1;
    n->inputs[0] = v->tensor;
    n->a.slice = (struct rt_slice_attrs){onnx_rt_axis(c, ax) - 1, start, step, len};
    if (out_k < 0)
        *v = (struct onnx_value){.name = "", .kind = OV_ACT, .shape = out, .tensor = t};
    return RT_OK;
}

enum rt_status onnx_slice_args(struct onnx_ctx *c, int rank, struct onnx_slice_args *a)
{
    int64_t axes[RT_MAX_DIMS];
    int ne = 0, na = 0, ns = 0;
    bool ok = c->version < 10 ? onnx_attr_ints(c, "starts", a->start, RT_MAX_DIMS, &a->n) &&
                                    onnx_attr_ints(c, "ends", a->end, RT_MAX_DIMS, &ne) &&
                                    onnx_attr_ints(c, "axes", axes, RT_MAX_DIMS, &na)
                              : onnx_const_ints(c, 1, "starts", a->start, RT_MAX_DIMS, &a->n) &&
                                    onnx_const_ints(c, 2, "ends", a->end, RT_MAX_DIMS, &ne) &&
                                    onnx_const_ints(c, 3, "axes", axes, RT_MAX_DIMS, &na) &&
                                    onnx_const_ints(c, 4, "steps", a->step, RT_MAX_DIMS, &ns);
    if (!ok)
        return c->err->status;
    if (a->n == 0 || ne != a->n || (na && na != a->n) || (ns && ns != a->n))
        return onnx_bad(c, "'starts', 'ends', 'axes' and 'steps' must have the same (non-zero) length");
    bool seen[RT_MAX_DIMS] = {false};
    for (int k = 0; k < a->n; k++) {
        if (!onnx_axis(c, na ? axes[k] : k, rank, false, &a->axis[k]))
            return c->err->status;
        if (seen[a->axis[k]])
            return onnx_bad(c, "axis %d is sliced twice", a->axis[k]);
        seen[a->axis[k]] = true;
        if (!ns)
            a->step[k] = 1;
        if (a->step[k] == 0)
            return onnx_bad(c, "a step of 0");
    }
    return RT_OK;
}

/* Starts, ends, axes and steps from attributes (< 10) or constant inputs;
 * one runtime slice per axis that changes, the last into the output. */
static enum rt_status slice(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, c->version < 10 ? 1 : 3, c->version < 10 ? 1 : 5, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    struct onnx_slice_args a;
    if ((s = onnx_slice_args(c, x->shape.rank, &a)) != RT_OK)
        return s;
    int plan_ax[ONNX_MAX_RANK] = {0}, todo = 0;
    int64_t plan_start[ONNX_MAX_RANK], plan_step[ONNX_MAX_RANK], plan_len[ONNX_MAX_RANK];
    for (int k = 0; k < a.n; k++) {
        int ax = a.axis[k];
        int64_t step = a.step[k], first, len, d = x->shape.dims[ax];
        if (d == ONNX_BATCH) {   /* batch mode's first axis: only the whole of it */
            if (step == 1 && (a.start[k] == 0 || a.start[k] <= -ONNX_MAX_DIM) && a.end[k] >= ONNX_MAX_DIM)
                continue;
            return onnx_needs_whole(c, "slices the first axis");
        }
        onnx_slice_range(d, a.start[k], a.end[k], step, &first, &len);
        if (len == 0)
            return onnx_unsupported(c, "the slice of axis %d is empty (empty tensors are not supported)", ax);
        if (first == 0 && step == 1 && len == d)
            continue;
        plan_ax[todo] = ax, plan_start[todo] = first, plan_step[todo] = step, plan_len[todo] = len;
        todo++;
    }
    if (todo == 0)
        return onnx_alias(c, 0, x);
    struct onnx_value cur = *x;
    for (int k = 0; k < todo; k++) {
        int out_k = k == todo - 1 ? 0 : -1;
        if ((s = emit_slice(c, &cur, plan_ax[k], plan_start[k], plan_step[k], plan_len[k], out_k)) != RT_OK)
            return s;
    }
    return RT_OK;
}

/* Gather of a computed tensor at constant indices that step evenly (a
 * scalar, or a list such as 0, 2, 4 or 3, 2, 1): one slice, and a scalar
 * index drops the axis. Other index lists are not supported. */
static enum rt_status gather(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 2, 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    const struct onnx_value *ix = x ? onnx_const_in(c, 1) : NULL;
    int64_t axis;
    int ax;
    if (!ix || !onnx_attr_int(c, "axis", 0, &axis) || !onnx_axis(c, axis, x->shape.rank, false, &ax))
        return c->err->status;
    const struct onnx_data *id = ix->data;
    if (!id->i || id->shape.rank > 1 || id->elems < 1)
        return onnx_unsupported(c, "the indices must be an integer scalar or a non-empty 1-D list");
    if (!c->whole && ax == 0)
        return onnx_needs_whole(c, "gathers along the first axis");
    if (id->batch_at)
        return onnx_needs_whole(c, "gathers at the batch size");
    int64_t d = x->shape.dims[ax], n = id->elems, first = 0, step = 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t at = id->i[k];
        if (at < -d || at >= d)
            return onnx_bad(c, "index %lld is out of range for a dim of %lld", (long long)at, (long long)d);
        at = at < 0 ? at + d : at;
        if (k == 0)
            first = at;
        else if (k == 1)
            step = at - first;
        if (step == 0 || at != first + k * step)
            return onnx_unsupported(c, "gathers at indices that do not step evenly (only slices are supported)");
    }
    if (id->shape.rank == 1 && first == 0 && step == 1 && n == d)
        return onnx_alias(c, 0, x);
    struct onnx_value one = *x;
    if (id->shape.rank == 1)
        return emit_slice(c, &one, ax, first, step, n, 0);
    if ((s = emit_slice(c, &one, ax, first, 1, 1, -1)) != RT_OK)
        return s;
    struct rt_shape out = {0, {0}};
    for (int i = 0; i < x->shape.rank; i++) {
        if (i != ax)
            out.dims[out.rank++] = x->shape.dims[i];
    }
    return view_out(c, &one, &out);
}

/* Output k is the k-th run of 'split' (from the attribute, or input 1 from
 * opset 13; equal parts when absent) along 'axis'. */
static enum rt_status split(struct onnx_ctx *c)
{
    int outs = (int)c->node->n_output;
    enum rt_status s = onnx_arity(c, 1, c->version >= 13 || c->version == 1 ? 2 : 1, RT_NODE_MAX_INPUTS);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int64_t axis, parts[RT_NODE_MAX_INPUTS];
    int n = 0, ax;
    if (!x || !onnx_attr_int(c, "axis", 0, &axis) || !onnx_axis(c, axis, x->shape.rank, false, &ax))
        return c->err->status;
    bool ok = c->version >= 13 || (c->version == 1 && onnx_input(c, 1))
                  ? onnx_const_ints(c, 1, "split", parts, RT_NODE_MAX_INPUTS, &n)
                  : onnx_attr_ints(c, "split", parts, RT_NODE_MAX_INPUTS, &n);
    if (!ok)
        return c->err->status;
    int64_t d = x->shape.dims[ax];
    if (d == ONNX_BATCH)
        return onnx_needs_whole(c, "splits the first axis");
    if (outs < 1 || (n && n != outs))
        return onnx_bad(c, "'split' has %d parts for %d outputs", n, outs);
    if (n == 0) {
        if (d % outs != 0)
            return onnx_bad(c, "%lld does not split into %d equal parts", (long long)d, outs);
        for (int k = 0; k < outs; k++)
            parts[k] = d / outs;
    }
    int64_t at = 0;
    for (int k = 0; k < outs; k++) {
        if (parts[k] < 1 || parts[k] > d - at)
            return parts[k] == 0 ? onnx_unsupported(c, "part %d is empty (empty tensors are not supported)", k)
                                 : onnx_bad(c, "the parts of 'split' do not add up to %lld", (long long)d);
        at += parts[k];
    }
    if (at != d)
        return onnx_bad(c, "the parts of 'split' do not add up to %lld", (long long)d);
    at = 0;
    for (int k = 0; k < outs; at += parts[k++]) {
        if (!onnx_output_name(c, k)[0])
            continue;
        struct onnx_value cur = *x;
        if (parts[k] == d)
            s = onnx_alias(c, k, x);
        else
            s = emit_slice(c, &cur, ax, at, 1, parts[k], k);
        if (s != RT_OK)
            return s;
    }
    return RT_OK;
}

/* Pads from the attribute ('paddings' in opset 1, 'pads' to 10) or, from
 * 11, the constant input 1, with the constant from the 'value' attribute
 * or the optional constant input 2; modes constant, edge and reflect. */
static enum rt_status pad(struct onnx_ctx *c)
{
    static const char *const MODES[] = {"constant", "edge", "reflect"};   /* enum k_pad_mode's order */
    bool from_inputs = c->version >= 11;
    enum rt_status s = onnx_arity(c, 1, from_inputs ? 3 : 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    int mode, n, rank = x ? x->shape.rank : 0;
    int64_t pads[2 * ONNX_MAX_RANK];
    float value = 0;
    if (!x || !onnx_attr_choice(c, "mode", MODES, 3, K_PAD_CONSTANT, &mode))
        return c->err->status;
    bool ok = from_inputs ? onnx_const_ints(c, 1, "pads", pads, 2 * ONNX_MAX_RANK, &n)
                          : onnx_attr_ints(c, c->version < 2 ? "paddings" : "pads", pads, 2 * ONNX_MAX_RANK, &n) &&
                                onnx_attr_float(c, "value", 0, &value);
    if (!ok)
        return c->err->status;
    const struct onnx_value *cv = from_inputs ? onnx_input(c, 2) : NULL;
    if (cv && !(cv = onnx_const_in(c, 2)))
        return c->err->status;
    if (cv && (!cv->data->f || cv->data->elems != 1))
        return onnx_unsupported(c, "'constant_value' must be a float scalar");
    value = cv ? cv->data->f[0] : value;
    if (n != 2 * rank)
        return onnx_bad(c, "'pads' has %d values for %d dimensions", n, rank);
    struct rt_shape out = x->shape;
    bool any = false;
    for (int d = 0; d < rank; d++) {
        int64_t b = pads[d], e = pads[rank + d], len = x->shape.dims[d];
        if (b < 0 || e < 0)
            return onnx_unsupported(c, "negative pads (cropping) are not supported");
        if (b > ONNX_MAX_DIM || e > ONNX_MAX_DIM)
            return onnx_bad(c, "pads past %lld", (long long)ONNX_MAX_DIM);
        if (len == ONNX_BATCH && (b || e))
            return onnx_needs_whole(c, "pads the first axis");
        if (mode == K_PAD_REFLECT && len > 1 && (b >= len || e >= len))
            return onnx_unsupported(c, "reflect pads as wide as the dim (%lld) are not supported", (long long)len);
        any = any || b || e;
        out.dims[d] = len == ONNX_BATCH ? len : b + len + e;
    }
    if (!any)
        return onnx_alias(c, 0, x);
    struct rt_node *nd = onnx_emit(c, RT_OP_PAD, 0, &out);
    if (!nd)
        return c->err->status;
    nd->n_inputs = 1;
    nd->inputs[0] = x->tensor;
    nd->a.pad.mode = (enum k_pad_mode)mode;
    nd->a.pad.value = value;
    int first = c->whole ? 0 : 1;   /* runtime dims after the batch */
    for (int d = first; d < rank; d++) {
        nd->a.pad.begin[d - first] = pads[d];
        nd->a.pad.end[d - first] = pads[rank + d];
    }
    return RT_OK;
}

/* Opset >= 5 takes the target shape as a constant input, opset < 5 as an
 * attribute. 0 copies the input dim (unless allowzero), -1 is inferred. */
static enum rt_status reshape(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version < 5 ? 1 : 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    if (!x)
        return c->err->status;
    int64_t want[RT_MAX_DIMS], allowzero;
    int r;
    bool batch_first = false;   /* want[0] is the batch size (from Shape) */
    if (!onnx_attr_int(c, "allowzero", 0, &allowzero))
        return c->err->status;
    if (c->version < 5) {
        if (!onnx_attr_ints(c, "shape", want, ONNX_MAX_RANK, &r))
            return c->err->status;
    } else {
        const struct onnx_value *sh = onnx_const_in(c, 1);
        if (!sh)
            return c->err->status;
        if (!sh->data->i || sh->data->shape.rank != 1)
            return onnx_bad(c, "'shape' must be a 1-D INT64 tensor");
        if (sh->data->elems > ONNX_MAX_RANK)
            return onnx_unsupported(c, "more than %d dimensions", ONNX_MAX_RANK);
        if (sh->data->batch_at & ~1ull)
            return onnx_needs_whole(c, "reshapes with the batch size after the first axis");
        batch_first = sh->data->batch_at & 1;
        r = (int)sh->data->elems;
        memcpy(want, sh->data->i, sizeof(int64_t) * (size_t)r);
    }
    /* batch mode: the first target dim must be the batch (copied, the
     * batch size from Shape, -1 over exactly one sample, or the inputs'
     * fixed first dim); the rest then reshapes one sample */
    struct rt_shape out = {r, {0}};
    int first = 0, unknown = -1;
    int64_t known = 1, total = onnx_prod(&x->shape, c->whole ? 0 : 1, x->shape.rank);
    bool whole_sample = false;
    if (!c->whole) {
        if (r == 0 || !(batch_first || want[0] == 0 || want[0] == -1 ||
                        (c->batch_fixed > 0 && want[0] == c->batch_fixed)))
            return onnx_needs_whole(c, "reshapes across the first axis");
        whole_sample = !batch_first && want[0] == -1;
        out.dims[0] = ONNX_BATCH;
        first = 1;
    }
    for (int i = first; i < r; i++) {
        int64_t v = want[i];
        if (v == 0 && allowzero)
            return onnx_unsupported(c, "allowzero makes an empty tensor");
        if (v == 0 && i >= x->shape.rank)
            return onnx_bad(c, "'shape' copies dim %d the input lacks", i);
        if (v == 0)
            v = x->shape.dims[i];
        if (v == -1 && (unknown >= 0 || whole_sample))
            return onnx_bad(c, "more than one -1 in 'shape'");
        if (v < -1 || v > ONNX_MAX_DIM)
            return onnx_bad(c, "invalid dimension %lld in 'shape'", (long long)want[i]);
        out.dims[i] = v;
        if (v == -1)
            unknown = i;
        else if (__builtin_mul_overflow(known, v, &known))
            return onnx_bad(c, "'shape' overflows");
    }
    if (unknown >= 0) {
        if (known == 0 || total % known != 0)
            return onnx_bad(c, "'shape' does not match the input's element count");
        out.dims[unknown] = total / known;
    } else if (known != total) {
        if (whole_sample)
            return onnx_needs_whole(c, "reshapes across the first axis");
        return onnx_bad(c, "'shape' does not match the input's element count");
    }
    return view_out(c, x, &out);
}

/* Output 0: float constant x with its axes permuted (out is its shape),
 * computed at load. */
static enum rt_status transpose_const(struct onnx_ctx *c, const struct onnx_value *x, const int64_t *perm,
                                      const struct rt_shape *out)
{
    if (!x->data->f)
        return onnx_unsupported(c, "transposes a constant of type %s", onnx_type_name(x->data->type));
    struct onnx_data d = {.shape = *out, .elems = x->data->elems, .type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT};
    if (!(d.f = malloc(sizeof(float) * (size_t)(d.elems + 1))))
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    struct k_transpose t = {.n = 1, .rank = x->shape.rank};
    for (int i = 0; i < t.rank; i++) {
        t.dims[i] = x->shape.dims[i];
        t.perm[i] = (int)perm[i];
    }
    kref_transpose_f32(&t, x->data->f, d.f);
    return onnx_define_const(c, 0, &d);
}

/* Permutes the axes by 'perm' (default: reversed). In batch mode the batch
 * must stay first; the runtime permutes the dims after it. A constant is
 * permuted at load (older exports of a Linear without bias transpose its
 * weight before the MatMul). */
static enum rt_status transpose(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, 1, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_input(c, 0) : NULL;
    if (s != RT_OK)
        return s;
    if (!x)
        return onnx_bad(c, "input 0 is missing");
    if (x->kind == OV_REFUSED)
        return onnx_unsupported(c, "its input is %s", x->why);
    int rank = x->shape.rank, n;
    int64_t perm[ONNX_MAX_RANK];
    if (!onnx_attr_ints(c, "perm", perm, ONNX_MAX_RANK, &n))
        return c->err->status;
    if (n == 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
    } else if (n != rank) {
        return onnx_bad(c, "'perm' has %d entries for %d dimensions", n, rank);
    }
    bool seen[ONNX_MAX_RANK] = {false};
    struct rt_shape out = {rank, {0}};
    for (int i = 0; i < rank; i++) {
        if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
            return onnx_bad(c, "'perm' is not a permutation of the %d dimensions", rank);
        seen[perm[i]] = true;
        out.dims[i] = x->shape.dims[perm[i]];
    }
    if (x->kind == OV_CONST)
        return transpose_const(c, x, perm, &out);
    if (!c->whole && perm[0] != 0)
        return onnx_needs_whole(c, "moves the first axis");
    bool same = true;
    for (int i = 0; i < rank; i++)
        same = same && perm[i] == i;
    if (same)
        return onnx_alias(c, 0, x);
    struct rt_node *nd = onnx_emit(c, RT_OP_TRANSPOSE, 0, &out);
    if (!nd)
        return c->err->status;
    nd->n_inputs = 1;
    nd->inputs[0] = x->tensor;
    /* runtime dims after the batch: batch mode drops ONNX axis 0, whole mode keeps every axis */
    int first = c->whole ? 0 : 1;
    for (int i = first; i < rank; i++)
        nd->a.perm[i - first] = (int)perm[i] - first;
    return RT_OK;
}

/* Since-versions from the ONNX operator changelog, up to opset 17. */
const struct onnx_op ONNX_OPS_SHAPE[] = {
    {"Concat", {1, 4, 11, 13}, concat, "axis"},
    {"Gather", {1, 11, 13}, gather, "axis"},
    {"Flatten", {1, 9, 11, 13}, flatten, "axis"},
    {"Reshape", {1, 5, 13, 14}, reshape, "shape,allowzero,consumed_inputs"},
    {"Squeeze", {1, 11, 13}, squeeze, "axes"},
    {"Unsqueeze", {1, 11, 13}, unsqueeze, "axes"},
    {"Transpose", {1, 13}, transpose, "perm"},
    {"Slice", {1, 10, 11, 13}, slice, "starts,ends,axes"},
    {"Split", {1, 2, 11, 13}, split, "axis,split"},
    {"Pad", {1, 2, 11, 13}, pad, "mode,pads,paddings,value"},
    {NULL, {0}, NULL, NULL},
};
