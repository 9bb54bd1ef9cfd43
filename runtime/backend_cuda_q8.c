/*
 * backend_cuda_q8.c - INT8 steps on the CUDA backend. prepare takes the
 * numbers of rt_q8_step_prepare (the same call, hence the same integers, as
 * the CPU backend), packs conv2d / linear weights with kcuda_q8_pack and
 * uploads weights, biases, multipliers and per-channel scales as one buffer
 * per device; enqueue dispatches a step to kernels/cuda/q8.cu, mirroring
 * rt_cpu_q8_run op for op, so outputs are bit-identical to the CPU's.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_impl.h"

bool cuda_q8_supports(const struct rt_plan *p, const struct rt_step *s, char *why, size_t why_len)
{
    switch (s->op) {
    case RT_OP_LINEAR: {
        struct k_linear k = rt_step_linear(p, s, 1);
        if ((size_t)k.k * (size_t)k.m > INT32_MAX) {
            snprintf(why, why_len, "weight matrix larger than 2^31 elements");
            return false;
        }
        return true;
    }
    case RT_OP_CONCAT:
        if (s->n_in > KCUDA_CONCAT_MAX) {
            snprintf(why, why_len, "INT8 concat of more than %d inputs", KCUDA_CONCAT_MAX);
            return false;
        }
        return true;
    case RT_OP_CONV2D:
    case RT_OP_QUANTIZE:
    case RT_OP_DEQUANTIZE:
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
    case RT_OP_MAX_POOL2D:
    case RT_OP_AVG_POOL2D:
    case RT_OP_GLOBAL_AVG_POOL:
    case RT_OP_ADD:
        return true;
    default:
        snprintf(why, why_len, "no INT8 CUDA kernel for %s", rt_op_name(s->op));
        return false;
    }
}

void cuda_q8_release_host(struct cuda_step_prep *pr)
{
    if (!pr->q8)
        return;
    rt_q8_step_free(&pr->q8->q);
    free(pr->q8);
    pr->q8 = NULL;
}

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }

enum rt_status cuda_q8_prepare(struct cuda_backend *cb, const struct rt_plan *p, const struct rt_step *s,
                               struct cuda_step_prep *pr, struct rt_error *err)
{
    const struct rt_graph *g = p->g;
    if (!(pr->q8 = calloc(1, sizeof(*pr->q8))))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    struct cuda_q8_prep *q8 = pr->q8;
    enum rt_status r = rt_q8_step_prepare(p, s, &q8->q, err);
    if (r != RT_OK) {
        free(pr->q8);
        pr->q8 = NULL;
        return r;
    }
    const struct rt_q8_step *q = &q8->q;
    /* what the kernels read on the device: [packed weights][bias][mult][chan_scale] */
    int64_t rows = 0, k = 0, n_bias = 0, n_mult = 0, n_scale = 0;
    if (s->op == RT_OP_CONV2D || s->op == RT_OP_LINEAR) {
        const struct rt_shape *ws = &s->node->w[RT_W_WEIGHT].shape;
        rows = ws->dims[0];
        k = 1;
        for (int d = 1; d < ws->rank; d++)
            k *= ws->dims[d];
        n_bias = n_mult = rows;
    } else if (s->op == RT_OP_AVG_POOL2D) {
        n_mult = (int64_t)s->node->a.pool.kernel[0] * s->node->a.pool.kernel[1] + 1;
    } else if (s->op == RT_OP_DEQUANTIZE && g->tensors[s->in[0]].dtype != RT_DTYPE_I8) {
        const struct rt_node *mm = &g->nodes[g->tensors[s->in[0]].producer];
        n_scale = mm->w[RT_W_WEIGHT].shape.dims[0];
    }
    size_t wbytes = rows ? kcuda_q8_packed_bytes(rows, k) : 0;
    q8->off_bias = round16(wbytes);
    q8->off_mult = q8->off_bias + round16((size_t)n_bias * sizeof(int32_t));
    q8->off_scale = q8->off_mult + round16((size_t)n_mult * sizeof(struct k_q8_mult));
    size_t total = q8->off_scale + round16((size_t)n_scale * sizeof(float));
    if (total == 0)
        return RT_OK;   /* everything goes by value */
    char *host = calloc(1, total);
    if (!host)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
    if (rows)
        kcuda_q8_pack(rows, k, s->node->w[RT_W_WEIGHT].q, (int8_t *)host);
    if (n_bias)
        memcpy(host + q8->off_bias, q->bias, (size_t)n_bias * sizeof(int32_t));
    if (n_mult)
        memcpy(host + q8->off_mult, q->mult, (size_t)n_mult * sizeof(struct k_q8_mult));
    if (n_scale)
        memcpy(host + q8->off_scale, q->chan_scale, (size_t)n_scale * sizeof(float));
    /* on a non-blocking stream, as prepare_on: no implicit synchronisation
     * with the legacy stream during another session's graph capture */
    for (int i = 0; i < cb->n_dev && r == RT_OK; i++) {
        cudaStream_t st = NULL;
        cudaError_t e = cudaSetDevice(cb->dev[i]);
        if (e == cudaSuccess)
            e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
        if (e == cudaSuccess)
            e = cudaMalloc(&pr->dev[i].w, total);
        if (e != cudaSuccess)
            pr->dev[i].w = NULL;
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(pr->dev[i].w, host, total, cudaMemcpyHostToDevice, st);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st);   /* before host goes */
        if (st)
            cudaStreamDestroy(st);
        if (e != cudaSuccess)
            r = cuda_fail(cb, e, "INT8 upload", err);
    }
    free(host);
    return r;
}

#define KCHECK(cs, call, err) CUDA_CHECK((cs)->cb, (call), (err))

enum rt_status cuda_q8_enqueue(struct cuda_session *cs, const struct rt_step *s, const struct rt_step_io *io,
                               struct rt_error *err)
{
    const struct rt_plan *p = cs->plan;
    const struct rt_graph *g = p->g;
    const struct cuda_step_prep *pr = s->prep;
    const struct cuda_q8_prep *q8 = pr->q8;
    const struct rt_q8_step *q = &q8->q;
    const int batch = cs->batch;
    char *dev = pr->dev[cs->slot].w;
    cudaStream_t st = cs->stream;
    const int8_t *x = io->in[0];
    int8_t *y = io->out;
    int64_t count = g->tensors[s->out].sample_elems * batch;
    struct k_q8_epilogue epi = q->epi;
    if (dev) {
        epi.bias = (const int32_t *)(dev + q8->off_bias);
        epi.mult = (const struct k_q8_mult *)(dev + q8->off_mult);
    }
    switch (s->op) {
    case RT_OP_CONV2D: {
        struct k_conv2d k = rt_step_conv2d(p, s, batch);
        KCHECK(cs, kcuda_conv2d_q8(&k, x, (const int8_t *)dev, &epi, io->residual, io->out, st), err);
        return RT_OK;
    }
    case RT_OP_LINEAR: {
        struct k_linear k = rt_step_linear(p, s, batch);
        KCHECK(cs, kcuda_linear_q8(&k, x, (const int8_t *)dev, &epi, io->residual, io->out, st), err);
        return RT_OK;
    }
    case RT_OP_QUANTIZE:
        KCHECK(cs, kcuda_quantize_q8(count, io->in[0], q->scale, y, st), err);
        return RT_OK;
    case RT_OP_DEQUANTIZE: {
        const struct rt_tensor *in = &g->tensors[s->in[0]];
        if (in->dtype == RT_DTYPE_I8) {
            KCHECK(cs, kcuda_dequantize_q8(count, x, q->scale, io->out, st), err);
            return RT_OK;
        }
        /* I32 accumulators, as rt_cpu_q8_run: a conv's channels are dim 1,
         * a linear layer's the last dim */
        int64_t c = in->shape.dims[1], inner = in->sample_elems / c, rows = batch;
        if (g->nodes[in->producer].op == RT_OP_LINEAR) {
            c = in->shape.dims[in->shape.rank - 1];
            inner = 1;
            rows = batch * (in->sample_elems / c);
        }
        // cppcheck-suppress invalidPointerCast ; dev is device bytes holding the float scales at off_scale
        KCHECK(cs, kcuda_dequantize_i32((int)rows, (int)c, inner, io->in[0], (const float *)(dev + q8->off_scale),
                                        io->out, st), err);
        return RT_OK;
    }
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
        KCHECK(cs, kcuda_lut_q8(count, q->lut, x, y, st), err);
        return RT_OK;
    case RT_OP_MAX_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        KCHECK(cs, kcuda_max_pool2d_q8(&k, x, y, st), err);
        return RT_OK;
    }
    case RT_OP_AVG_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        KCHECK(cs, kcuda_avg_pool2d_q8(&k, (const struct k_q8_mult *)(dev + q8->off_mult), x, y, st), err);
        return RT_OK;
    }
    case RT_OP_GLOBAL_AVG_POOL: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        KCHECK(cs, kcuda_global_avg_pool_q8(batch, (int)sh->dims[1], sh->dims[2] * sh->dims[3], q->mult[0], x, y, st),
               err);
        return RT_OK;
    }
    case RT_OP_ADD:
        KCHECK(cs, kcuda_add_q8(count, x, q->mult[0], io->in[1], q->mult[1], y, st), err);
        return RT_OK;
    case RT_OP_CONCAT: {
        const struct rt_shape *sh = &g->tensors[s->out].shape;
        int axis = s->node->a.axis < 0 ? s->node->a.axis + sh->rank : s->node->a.axis;
        int64_t outer = batch, inner = 1, lens[RT_NODE_MAX_INPUTS];
        for (int d = 1; d < axis; d++)
            outer *= sh->dims[d];
        for (int d = axis + 1; d < sh->rank; d++)
            inner *= sh->dims[d];
        for (int i = 0; i < s->n_in; i++)
            lens[i] = g->tensors[s->in[i]].shape.dims[axis];
        struct k_concat k = {outer, inner, s->n_in};
        KCHECK(cs, kcuda_concat_q8(&k, (const int8_t *const *)io->in, lens, q->mult, y, st), err);
        return RT_OK;
    }
    default:
        return rt_error_set(err, RT_ERR_INTERNAL, "CUDA backend: op %s has no INT8 kernel", rt_op_name(s->op));
    }
}
