/* op_resize.c - resize: the last two dims of each sample resampled (ONNX
 * Resize and Upsample; ONNX only). */
#include <math.h>

#include "runtime/ops/ops_impl.h"

/* Largest output dim: the graph's element check follows the shape. */
#define RESIZE_MAX_DIM (1 << 28)

static enum rt_status resize_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_resize_attrs *a = &n->a.resize;
    if (x->rank < 2)
        return rt_op_node_error(err, n, "input needs a dim after the batch");
    if ((unsigned)a->mode > K_RESIZE_CUBIC || (unsigned)a->coord > K_COORD_TF_HALF_PIXEL_FOR_NN)
        return rt_op_node_error(err, n, "unknown resize mode");
    for (int k = 0; k < 2; k++) {
        if (a->out[k] < 1 || a->out[k] > RESIZE_MAX_DIM || !(a->scale[k] > 0) || !isfinite(a->scale[k]) ||
            !(a->resized[k] >= (double)a->out[k] && a->resized[k] < (double)a->out[k] + 1) || (unsigned)a->round[k] > K_ROUND_CEIL)
            return rt_op_node_error(err, n, "output sizes and scales must be positive");
    }
    if (x->rank == 2 && a->out[0] != 1)
        return rt_op_node_error(err, n, "a sample of one dim has one row");
    *out = *x;
    out->dims[x->rank - 1] = a->out[1];
    if (x->rank > 2)
        out->dims[x->rank - 2] = a->out[0];
    return RT_OK;
}

static void resize_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *x = &g->tensors[s->in[0]];
    const struct rt_resize_attrs *a = &s->node->a.resize;
    int r = x->shape.rank;
    int64_t in[2] = {r > 2 ? x->shape.dims[r - 2] : 1, x->shape.dims[r - 1]};
    struct k_resize p = {.n = x->sample_elems / (in[0] * in[1]), .mode = a->mode, .coord = a->coord,
                         .cubic_a = a->cubic_a, .exclude_outside = a->exclude_outside};
    for (int d = 0; d < 2; d++)
        p.axis[d] = (struct k_resize_axis){in[d], a->out[d], a->scale[d], a->resized[d], a->round[d]};
    k->resize = p;
}

static void resize_at_batch(union rt_step_params *k, int batch) { k->resize.n *= batch; }

const struct rt_op_family rt_family_resize = {
    .infer = resize_infer,
    .params = resize_params,
    .at_batch = resize_at_batch,
};
