/*
 * backend_cuda_q8.c - INT8 steps on the CUDA backend. prepare takes the
 * numbers of rt_q8_step_prepare (the same call, hence the same integers, as
 * the CPU backend), packs conv2d / linear weights with kcuda_q8_pack and
 * uploads weights, biases, multipliers and per-channel scales as one buffer
 * per device; enqueue dispatches a step to kernels/cuda/q8.cu (or, for
 * conv2d and linear, q8_mma.cu: see cuda_q8_mma), mirroring rt_cpu_q8_run
 * op for op, so outputs are bit-identical to the CPU's. Both conv / linear
 * kernel sets read the one packed weight layout of kcuda_q8_pack, so the
 * choice is made per launch and needs nothing at prepare.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/backend/backend_cuda_impl.h"

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
    if (rt_op_has(s->op, RT_T_GEMM)) {
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

/* ---- one kernel per op, enqueued on the session's stream */

typedef cudaError_t (*q8_enqueue_fn)(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                     const struct rt_step_io *io);

static const struct cuda_q8_prep *q8_of(const struct rt_step *s)
{
    return ((const struct cuda_step_prep *)s->prep)->q8;
}

/* The step's device buffer on the session's GPU (NULL when it has none). */
static const char *dev_of(const struct cuda_session *cs, const struct rt_step *s)
{
    return ((const struct cuda_step_prep *)s->prep)->dev[cs->slot].w;
}

/* The epilogue with its bias and multipliers on the device. */
static struct k_q8_epilogue epi_of(const struct cuda_session *cs, const struct rt_step *s)
{
    const struct cuda_q8_prep *q8 = q8_of(s);
    struct k_q8_epilogue epi = q8->q.epi;
    epi.bias = (const int32_t *)(dev_of(cs, s) + q8->off_bias);
    epi.mult = (const struct k_q8_mult *)(dev_of(cs, s) + q8->off_mult);
    return epi;
}

/* IMMA (mma.sync m16n8k32, sm_80 and later) unless the backend was made
 * with the baseline kernel set; grouped and depthwise convolutions always
 * run dp4a (kcuda_q8_mma_takes). */
bool cuda_q8_mma(const struct cuda_backend *cb, int slot, const struct rt_step *s, const union rt_step_params *k)
{
    if (cb->baseline || (s->op != RT_OP_CONV2D && s->op != RT_OP_LINEAR))
        return false;
    return kcuda_q8_mma_takes(cb->sm[slot], s->op == RT_OP_CONV2D ? &k->conv : NULL);
}

static cudaError_t conv2d_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                             const struct rt_step_io *io)
{
    struct k_q8_epilogue epi = epi_of(cs, s);
    const int8_t *w = (const int8_t *)dev_of(cs, s);
    if (cuda_q8_mma(cs->cb, cs->slot, s, k))
        return kcuda_conv2d_q8_mma(&k->conv, io->in[0], w, &epi, io->residual, io->out, cs->stream);
    return kcuda_conv2d_q8(&k->conv, io->in[0], w, &epi, io->residual, io->out, cs->stream);
}

static cudaError_t linear_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                             const struct rt_step_io *io)
{
    struct k_q8_epilogue epi = epi_of(cs, s);
    const int8_t *w = (const int8_t *)dev_of(cs, s);
    if (cuda_q8_mma(cs->cb, cs->slot, s, k))
        return kcuda_linear_q8_mma(&k->linear, io->in[0], w, &epi, io->residual, io->out, cs->stream);
    return kcuda_linear_q8(&k->linear, io->in[0], w, &epi, io->residual, io->out, cs->stream);
}

static cudaError_t quantize_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                               const struct rt_step_io *io)
{
    return kcuda_quantize_q8(k->count, io->in[0], q8_of(s)->q.scale, io->out, cs->stream);
}

/* I8 input: one scale; I32 accumulators: one scale per channel (on the device). */
static cudaError_t dequantize_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                 const struct rt_step_io *io)
{
    const struct rt_channels *ch = &k->channels;
    const struct cuda_q8_prep *q8 = q8_of(s);
    if (!q8->q.chan_scale)
        return kcuda_dequantize_q8(ch->n * ch->c * ch->inner, io->in[0], q8->q.scale, io->out, cs->stream);
    // cppcheck-suppress invalidPointerCast ; device bytes holding the float scales at off_scale
    const float *scale = (const float *)(dev_of(cs, s) + q8->off_scale);
    return kcuda_dequantize_i32((int)ch->n, (int)ch->c, ch->inner, io->in[0], scale, io->out, cs->stream);
}

static cudaError_t act_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                          const struct rt_step_io *io)
{
    return kcuda_lut_q8(k->count, q8_of(s)->q.lut, io->in[0], io->out, cs->stream);
}

static cudaError_t max_pool2d_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                 const struct rt_step_io *io)
{
    return kcuda_max_pool2d_q8(&k->pool, io->in[0], io->out, cs->stream);
}

static cudaError_t avg_pool2d_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                 const struct rt_step_io *io)
{
    const struct k_q8_mult *mult = (const struct k_q8_mult *)(dev_of(cs, s) + q8_of(s)->off_mult);
    return kcuda_avg_pool2d_q8(&k->pool, mult, io->in[0], io->out, cs->stream);
}

static cudaError_t global_avg_pool_q8(struct cuda_session *cs, const struct rt_step *s,
                                      const union rt_step_params *k, const struct rt_step_io *io)
{
    return kcuda_global_avg_pool_q8((int)k->channels.n, (int)k->channels.c, k->channels.inner, q8_of(s)->q.mult[0],
                                    io->in[0], io->out, cs->stream);
}

static cudaError_t add_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                          const struct rt_step_io *io)
{
    const struct k_q8_mult *m = q8_of(s)->q.mult;
    return kcuda_add_q8(k->count, io->in[0], m[0], io->in[1], m[1], io->out, cs->stream);
}

static cudaError_t concat_q8(struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                             const struct rt_step_io *io)
{
    return kcuda_concat_q8(&k->concat.k, (const int8_t *const *)io->in, k->concat.lens, q8_of(s)->q.mult, io->out,
                           cs->stream);
}

/* Activations all run act_q8 (a table per step). */
static const q8_enqueue_fn Q8[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = conv2d_q8,
    [RT_OP_LINEAR] = linear_q8,
    [RT_OP_QUANTIZE] = quantize_q8,
    [RT_OP_DEQUANTIZE] = dequantize_q8,
    [RT_OP_MAX_POOL2D] = max_pool2d_q8,
    [RT_OP_AVG_POOL2D] = avg_pool2d_q8,
    [RT_OP_GLOBAL_AVG_POOL] = global_avg_pool_q8,
    [RT_OP_ADD] = add_q8,
    [RT_OP_CONCAT] = concat_q8,
};

static q8_enqueue_fn q8_kernel(enum rt_op op) { return rt_op_has(op, RT_T_ACT) ? act_q8 : Q8[op]; }

bool cuda_q8_supports(const struct rt_step *s, char *why, size_t why_len)
{
    if (!q8_kernel(s->op)) {
        snprintf(why, why_len, "no INT8 CUDA kernel for %s", rt_op_name(s->op));
        return false;
    }
    return cuda_step_fits(s, why, why_len);
}

enum rt_status cuda_q8_enqueue(struct cuda_session *cs, const struct rt_step *s, const struct rt_step_io *io,
                               struct rt_error *err)
{
    union rt_step_params k = rt_step_params(s, cs->batch);
    cudaError_t e = q8_kernel(s->op)(cs, s, &k, io);
    return e == cudaSuccess ? RT_OK : cuda_fail(cs->cb, e, rt_op_name(s->op), err);
}
