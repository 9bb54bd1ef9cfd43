/*
 * backend_cpu_q8.c - INT8 steps on the CPU backend: the load-time numbers
 * of rt_q8_step_prepare plus packed weights, and the dispatch from a plan
 * step to kernels/cpu/kcpu_q8.h.
 */
#include <stdlib.h>

#include "../kernels/cpu/kcpu_q8.h"
#include "backend_cpu_impl.h"
#include "rt_quant.h"

struct q8_prep {
    struct rt_q8_step q;
    void *packed;              /* conv2d, linear */
};

enum rt_status rt_cpu_q8_prepare(const struct rt_plan *p, struct rt_step *s, int max_batch,
                                 struct rt_error *err)
{
    struct q8_prep *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum rt_status st = rt_q8_step_prepare(p, s, &pr->q, err);
    if (st != RT_OK) {
        free(pr);
        return st;
    }
    size_t bytes = 0;
    if (s->op == RT_OP_CONV2D) {
        struct k_conv2d k = rt_step_conv2d(p, s, max_batch);
        bytes = kcpu_conv2d_q8_packed_bytes(&k);
        if ((pr->packed = aligned_alloc(64, (bytes + 63) / 64 * 64)))
            kcpu_conv2d_q8_pack(&k, s->node->w[RT_W_WEIGHT].q, pr->packed);
    } else if (s->op == RT_OP_LINEAR) {
        struct k_linear k = rt_step_linear(p, s, max_batch);
        bytes = kcpu_linear_q8_packed_bytes(&k);
        if ((pr->packed = aligned_alloc(64, (bytes + 63) / 64 * 64)))
            kcpu_linear_q8_pack(&k, s->node->w[RT_W_WEIGHT].q, pr->packed);
    }
    s->prep = pr;
    if (bytes && !pr->packed)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
    return RT_OK;
}

void rt_cpu_q8_release(struct rt_step *s)
{
    struct q8_prep *pr = s->prep;
    if (!pr)
        return;
    rt_q8_step_free(&pr->q);
    free(pr->packed);
    free(pr);
    s->prep = NULL;
}

size_t rt_cpu_q8_scratch_bytes(const struct rt_plan *p, const struct rt_step *s, int max_batch, int threads)
{
    if (s->op == RT_OP_CONV2D) {
        struct k_conv2d k = rt_step_conv2d(p, s, max_batch);
        return kcpu_conv2d_q8_scratch_bytes(&k, threads);
    }
    if (s->op == RT_OP_LINEAR) {
        struct k_linear k = rt_step_linear(p, s, max_batch);
        return kcpu_linear_q8_scratch_bytes(&k, threads);
    }
    return 0;
}

/* [outer, axis, inner] view of the output around the op's axis. */
static void axis_split(const struct rt_plan *p, const struct rt_step *s, int batch, int64_t *outer,
                       int64_t *inner, int *axis)
{
    const struct rt_shape *sh = &p->g->tensors[s->out].shape;
    *axis = s->node->a.axis < 0 ? s->node->a.axis + sh->rank : s->node->a.axis;
    *outer = batch;
    *inner = 1;
    for (int d = 1; d < *axis; d++)
        *outer *= sh->dims[d];
    for (int d = *axis + 1; d < sh->rank; d++)
        *inner *= sh->dims[d];
}

enum rt_status rt_cpu_q8_run(struct kcpu_pool *pool, void *scratch, const struct rt_plan *p,
                             const struct rt_step *s, int batch, const struct rt_step_io *io,
                             struct rt_error *err)
{
    const struct rt_graph *g = p->g;
    const struct q8_prep *pr = s->prep;
    const struct rt_q8_step *q = &pr->q;
    const int8_t *x = io->in[0];
    int8_t *y = io->out;
    int64_t count = g->tensors[s->out].sample_elems * batch;
    switch (s->op) {
    case RT_OP_CONV2D: {
        struct k_conv2d k = rt_step_conv2d(p, s, batch);
        kcpu_conv2d_q8(pool, &k, x, pr->packed, &q->epi, io->residual, io->out, scratch);
        return RT_OK;
    }
    case RT_OP_LINEAR: {
        struct k_linear k = rt_step_linear(p, s, batch);
        kcpu_linear_q8(pool, &k, x, pr->packed, &q->epi, io->residual, io->out, scratch);
        return RT_OK;
    }
    case RT_OP_QUANTIZE:
        kcpu_quantize_q8(pool, count, io->in[0], q->scale, y);
        return RT_OK;
    case RT_OP_DEQUANTIZE: {
        const struct rt_tensor *in = &g->tensors[s->in[0]];
        if (in->dtype == RT_DTYPE_I8) {
            kcpu_dequantize_q8(pool, count, x, q->scale, io->out);
            return RT_OK;
        }
        /* I32 accumulators: a conv's channels are dim 1 of NCHW, a linear
         * layer's the last dim of [N, ..., M] */
        int64_t c = in->shape.dims[1], inner = in->sample_elems / c, rows = batch;
        if (g->nodes[in->producer].op == RT_OP_LINEAR) {
            c = in->shape.dims[in->shape.rank - 1];
            inner = 1;
            rows = batch * (in->sample_elems / c);
        }
        kcpu_dequantize_i32(pool, (int)rows, (int)c, inner, io->in[0], q->chan_scale, io->out);
        return RT_OK;
    }
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
        kcpu_lut_q8(pool, count, q->lut, x, y);
        return RT_OK;
    case RT_OP_MAX_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        kcpu_max_pool2d_q8(pool, &k, x, y);
        return RT_OK;
    }
    case RT_OP_AVG_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        kcpu_avg_pool2d_q8(pool, &k, q->mult, x, y);
        return RT_OK;
    }
    case RT_OP_GLOBAL_AVG_POOL: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        kcpu_global_avg_pool_q8(pool, batch, (int)sh->dims[1], sh->dims[2] * sh->dims[3], q->mult[0], x, y);
        return RT_OK;
    }
    case RT_OP_ADD:
        kcpu_add_q8(pool, count, x, q->mult[0], io->in[1], q->mult[1], y);
        return RT_OK;
    case RT_OP_CONCAT: {
        int64_t outer, inner, lens[RT_NODE_MAX_INPUTS];
        int axis;
        axis_split(p, s, batch, &outer, &inner, &axis);
        for (int i = 0; i < s->n_in; i++)
            lens[i] = g->tensors[s->in[i]].shape.dims[axis];
        struct k_concat k = {outer, inner, s->n_in};
        kcpu_concat_q8(pool, &k, (const int8_t *const *)io->in, lens, q->mult, y);
        return RT_OK;
    }
    default:
        return rt_error_set(err, RT_ERR_INTERNAL, "CPU backend: op %s has no INT8 kernel", rt_op_name(s->op));
    }
}
