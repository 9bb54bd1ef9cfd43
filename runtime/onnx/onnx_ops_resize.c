/*
 * onnx_ops_resize.c - ONNX Resize and Upsample as the runtime's resize op:
 * nearest, linear and cubic resampling of the last two axes, the scales or
 * the output sizes constant (a size taken from Shape of the batch may stand
 * for the batch itself).
 *
 * Upsample and Resize-10 have no coordinate_transformation_mode; they map
 * output position o to o / scale (asymmetric) and round down when
 * enlarging, up when shrinking, as onnxruntime does (the ONNX reference
 * uses half_pixel for Upsample; both give the same output for whole-number
 * scales of nearest, its common use).
 */
#include <math.h>

#include "runtime/onnx/onnx_impl.h"

/* Orders of the enums in kernel_types.h; tf_crop_and_resize is refused. */
static const char *const MODES[] = {"nearest", "linear", "cubic"};
static const char *const COORDS[] = {"half_pixel",           "pytorch_half_pixel", "align_corners", "asymmetric",
                                     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
static const char *const ROUNDS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
#define COORD_TF_CROP_AND_RESIZE 5

/* How each axis is resampled: its output length, its scale and its
 * length before rounding down (k_resize's resized). */
struct resize_axes {
    int64_t out[ONNX_MAX_RANK];
    double scale[ONNX_MAX_RANK], resized[ONNX_MAX_RANK];
};

/* The axes from constant scales (count rank, each positive): the output
 * length floor(in * scale); the batch axis keeps its length and needs 1. */
static enum rt_status axes_from_scales(struct onnx_ctx *c, const struct onnx_value *x, const float *scales, int n,
                                       struct resize_axes *ax)
{
    if (n != x->shape.rank)
        return onnx_bad(c, "'scales' has %d values for %d dimensions", n, x->shape.rank);
    for (int d = 0; d < n; d++) {
        int64_t in = x->shape.dims[d];
        double s = scales[d], len = floor((double)in * s);
        if (!(s > 0) || !isfinite(s))
            return onnx_bad(c, "scales must be positive");
        if (in == ONNX_BATCH && s != 1)
            return onnx_unsupported(c, "resizing the batch axis is not supported");
        if (in != ONNX_BATCH && (len < 1 || len > (double)ONNX_MAX_DIM))
            return onnx_bad(c, "scale %g gives axis %d a length of %.0f", s, d, len);
        ax->out[d] = in == ONNX_BATCH ? in : (int64_t)len;
        ax->scale[d] = s;
        ax->resized[d] = (double)in * s;
    }
    return RT_OK;
}

/* The axes from constant sizes: the scale is out / in; a size of the
 * batch size (from Shape), or of the inputs' fixed first dim, keeps the
 * batch axis. */
static enum rt_status axes_from_sizes(struct onnx_ctx *c, const struct onnx_value *x, const struct onnx_data *sz,
                                      struct resize_axes *ax)
{
    int rank = x->shape.rank;
    if (!sz->i || sz->shape.rank != 1)
        return onnx_bad(c, "'sizes' must be a 1-D integer tensor");
    if (sz->elems != rank)
        return onnx_bad(c, "'sizes' has %lld values for %d dimensions", (long long)sz->elems, rank);
    for (int d = 0; d < rank; d++) {
        int64_t in = x->shape.dims[d], out = sz->i[d];
        bool batch = ((sz->batch_at >> d) & 1) || (in == ONNX_BATCH && out == c->batch_fixed);
        if (batch && in != ONNX_BATCH)
            return onnx_needs_whole(c, "takes a size from the batch size");
        if (in == ONNX_BATCH && !batch)
            return onnx_unsupported(c, "resizing the batch axis is not supported");
        if (!batch && (out < 1 || out > ONNX_MAX_DIM))
            return onnx_bad(c, "invalid size %lld", (long long)out);
        ax->out[d] = batch ? in : out;
        ax->scale[d] = batch ? 1 : (double)out / (double)in;
        ax->resized[d] = (double)out;
    }
    return RT_OK;
}

/* Output 0: activation x resampled per ax (an axis with its length and a
 * scale of 1 is unchanged) with the rest of the attributes in a. Only the
 * last two axes may change, and never the batch. */
static enum rt_status emit_resize(struct onnx_ctx *c, const struct onnx_value *x, const struct resize_axes *ax,
                                  struct rt_resize_attrs a)
{
    const int rank = x->shape.rank, first = c->whole ? 0 : 1;   /* ONNX axis of the first runtime dim after the batch */
    struct rt_shape out = x->shape;
    bool any = false;
    for (int d = 0; d < rank; d++) {
        /* at scale 1 only tf_half_pixel_for_nn moves the coordinates, by a
         * half, which nearest rounding down takes back */
        bool shifts = a.coord == K_COORD_TF_HALF_PIXEL_FOR_NN &&
                      !(a.mode == K_RESIZE_NEAREST && (a.round[1] == K_ROUND_PREFER_FLOOR || a.round[1] == K_ROUND_FLOOR));
        bool changes = ax->out[d] != x->shape.dims[d] || ax->scale[d] != 1 || shifts;
        if (x->shape.dims[d] == ONNX_BATCH || !changes)
            continue;
        if (d < rank - 2 || d < first)
            return onnx_unsupported(c, "resizes axis %d: only the last two axes of a sample may be resized", d);
        any = true;
        out.dims[d] = ax->out[d];
    }
    if (!any)
        return onnx_alias(c, 0, x);
    /* the runtime op's rows are ONNX axis rank - 2 when it lies in the
     * sample, its columns axis rank - 1 */
    for (int k = 0; k < 2; k++) {
        int d = rank - 2 + k;
        bool in_sample = d >= first;
        a.out[k] = in_sample ? ax->out[d] : 1;
        a.scale[k] = in_sample ? ax->scale[d] : 1;
        a.resized[k] = in_sample ? ax->resized[d] : 1;
    }
    struct rt_node *nd = onnx_emit(c, RT_OP_RESIZE, 0, &out);
    if (!nd)
        return c->err->status;
    nd->n_inputs = 1;
    nd->inputs[0] = x->tensor;
    nd->a.resize = a;
    return RT_OK;
}

/* Upsample and Resize-10: asymmetric coordinates; nearest rounds down on
 * an axis that grows, up on one that shrinks. */
static enum rt_status resize_legacy(struct onnx_ctx *c, const struct onnx_value *x, const float *scales, int n)
{
    struct resize_axes ax = {.out = {0}};
    int mode;
    if (!onnx_attr_choice(c, "mode", MODES, 2, K_RESIZE_NEAREST, &mode) ||
        axes_from_scales(c, x, scales, n, &ax) != RT_OK)
        return c->err->status;
    struct rt_resize_attrs a = {.mode = (enum k_resize_mode)mode, .coord = K_COORD_ASYMMETRIC};
    for (int k = 0; k < 2; k++) {
        int d = x->shape.rank - 2 + k;
        a.round[k] = d >= 0 && ax.scale[d] < 1 ? K_ROUND_CEIL : K_ROUND_FLOOR;
    }
    return emit_resize(c, x, &ax, a);
}

/* The constant float input k (scales) into out; *n its count. */
static bool const_floats(struct onnx_ctx *c, int k, float *out, int cap, int *n)
{
    const struct onnx_value *v = onnx_const_in(c, k);
    if (!v)
        return false;
    if (!v->data->f || v->data->shape.rank != 1) {
        onnx_bad(c, "'scales' must be a 1-D float tensor");
        return false;
    }
    if (v->data->elems > cap) {
        onnx_unsupported(c, "more than %d dimensions", cap);
        return false;
    }
    *n = (int)v->data->elems;
    for (int i = 0; i < *n; i++)
        out[i] = v->data->f[i];
    return true;
}

/* Upsample-7 takes its scales as an attribute, 9 and 10 as input 1. */
static enum rt_status upsample(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, 1, c->version < 9 ? 1 : 2, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    float scales[ONNX_MAX_RANK];
    int n = 0;
    if (!x)
        return c->err->status;
    if (c->version >= 9) {
        if (!const_floats(c, 1, scales, ONNX_MAX_RANK, &n))
            return c->err->status;
    } else {
        const Onnx__AttributeProto *at = onnx_attr(c, "scales");
        if (!at || at->n_floats == 0)
            return onnx_bad(c, "attribute 'scales' must be a list of floats");
        if (at->n_floats > ONNX_MAX_RANK)
            return onnx_unsupported(c, "more than %d dimensions", ONNX_MAX_RANK);
        n = (int)at->n_floats;
        for (int i = 0; i < n; i++)
            scales[i] = at->floats[i];
    }
    return resize_legacy(c, x, scales, n);
}

/* Resize-10 takes (X, scales); 11 and 13 (X, roi, scales, sizes), exactly
 * one of scales and sizes (an empty scales counts as absent). */
static enum rt_status resize(struct onnx_ctx *c)
{
    enum rt_status s = onnx_arity(c, c->version < 11 ? 2 : 1, c->version < 11 ? 2 : 4, 1);
    const struct onnx_value *x = s == RT_OK ? onnx_act_in(c, 0) : NULL;
    float scales[ONNX_MAX_RANK];
    int n = 0;
    if (!x)
        return c->err->status;
    if (c->version < 11)
        return const_floats(c, 1, scales, ONNX_MAX_RANK, &n) ? resize_legacy(c, x, scales, n) : c->err->status;

    int mode, coord, round, exclude;
    int64_t exclude_outside;
    float cubic_a;
    if (!onnx_attr_choice(c, "mode", MODES, 3, K_RESIZE_NEAREST, &mode) ||
        !onnx_attr_choice(c, "coordinate_transformation_mode", COORDS, 6, K_COORD_HALF_PIXEL, &coord) ||
        !onnx_attr_choice(c, "nearest_mode", ROUNDS, 4, K_ROUND_PREFER_FLOOR, &round) ||
        !onnx_attr_float(c, "cubic_coeff_a", -0.75f, &cubic_a) ||
        !onnx_attr_int(c, "exclude_outside", 0, &exclude_outside))
        return c->err->status;
    if (coord == COORD_TF_CROP_AND_RESIZE)
        return onnx_unsupported(c, "coordinate_transformation_mode 'tf_crop_and_resize' is not supported");
    if (exclude_outside != 0 && exclude_outside != 1)
        return onnx_bad(c, "exclude_outside must be 0 or 1");
    if (!isfinite(cubic_a))
        return onnx_bad(c, "cubic_coeff_a must be finite");
    exclude = (int)exclude_outside;

    const struct onnx_value *sc = onnx_input(c, 2), *sz = onnx_input(c, 3);
    if (sc && !(sc = onnx_const_in(c, 2)))
        return c->err->status;
    if (sc && sc->data->elems == 0)
        sc = NULL;
    if (sz && !(sz = onnx_const_in(c, 3)))
        return c->err->status;
    if (!sc == !sz)
        return onnx_bad(c, "exactly one of 'scales' and 'sizes' must be given");
    struct resize_axes ax = {.out = {0}};
    if (sc ? !const_floats(c, 2, scales, ONNX_MAX_RANK, &n) || axes_from_scales(c, x, scales, n, &ax) != RT_OK
           : axes_from_sizes(c, x, sz->data, &ax) != RT_OK)
        return c->err->status;
    struct rt_resize_attrs a = {.round = {(enum k_resize_round)round, (enum k_resize_round)round},
                                .mode = (enum k_resize_mode)mode,
                                .coord = (enum k_resize_coord)coord,
                                .cubic_a = cubic_a,
                                .exclude_outside = exclude};
    return emit_resize(c, x, &ax, a);
}

const struct onnx_op ONNX_OPS_RESIZE[] = {
    {"Resize", {10, 11, 13}, resize,
     "mode,coordinate_transformation_mode,nearest_mode,cubic_coeff_a,exclude_outside,extrapolation_value"},
    {"Upsample", {7, 9, 10}, upsample, "mode,scales"},
    {NULL, {0}, NULL, NULL},
};
