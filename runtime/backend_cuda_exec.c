/*
 * backend_cuda_exec.c - running a batch on the CUDA backend: the recorded
 * run (copy_in / run_step / copy_out only record), and sync, which hands
 * the recorded run to backend_cuda_graph.c (eager, captured or replayed),
 * then waits for the stream and copies the outputs from pinned memory to
 * the caller.
 */
#include <string.h>

#include "backend_cuda_impl.h"

static size_t stage_round(size_t bytes) { return (bytes + CUDA_STAGE_ALIGN - 1) / CUDA_STAGE_ALIGN * CUDA_STAGE_ALIGN; }

static void reset_run(struct cuda_session *cs)
{
    cs->n_ops = 0;
    cs->stage_used = 0;
    cs->batch = 0;
}

static enum rt_status alive(struct cuda_session *cs, struct rt_error *err)
{
    if (!__atomic_load_n(&cs->cb->poisoned, __ATOMIC_ACQUIRE))
        return RT_OK;
    reset_run(cs);
    return rt_error_set(err, RT_ERR_DEVICE, "an earlier CUDA error left the GPU context unusable");
}

/* The next op slot; a full table is a broken executor contract. */
static struct cuda_op *next_op(struct cuda_session *cs, struct rt_error *err)
{
    if (cs->n_ops < cs->cap_ops)
        return &cs->ops[cs->n_ops++];
    reset_run(cs);
    rt_error_set(err, RT_ERR_INTERNAL, "CUDA backend: more calls in one run than the plan has steps and edges");
    return NULL;
}

static enum rt_status stage_take(struct cuda_session *cs, size_t bytes, size_t *at, struct rt_error *err)
{
    if (cs->stage_used + stage_round(bytes) > cs->stage_bytes) {
        reset_run(cs);
        return rt_error_set(err, RT_ERR_INTERNAL, "CUDA backend: staging buffer overrun (%zu bytes)", bytes);
    }
    *at = cs->stage_used;
    cs->stage_used += stage_round(bytes);
    return RT_OK;
}

enum rt_status cuda_exec_copy_in(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    if (cs->n_ops > 0 && cs->ops[cs->n_ops - 1].kind != CUDA_OP_IN)
        reset_run(cs);   /* the caller gave up on the previous run */
    enum rt_status s = alive(cs, err);
    size_t at = 0;
    if (s != RT_OK || (s = stage_take(cs, bytes, &at, err)) != RT_OK)
        return s;
    struct cuda_op *op = next_op(cs, err);
    if (!op)
        return err->status;
    memcpy(cs->pinned + at, src, bytes);
    *op = (struct cuda_op){.kind = CUDA_OP_IN, .dev = dst, .stage = at, .bytes = bytes};
    return RT_OK;
}

enum rt_status cuda_exec_copy_out(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    size_t at = 0;
    enum rt_status s = stage_take(cs, bytes, &at, err);
    if (s != RT_OK)
        return s;
    struct cuda_op *op = next_op(cs, err);
    if (!op)
        return err->status;
    *op = (struct cuda_op){.kind = CUDA_OP_OUT, .dev = (void *)src, .host = dst, .stage = at, .bytes = bytes};
    return RT_OK;
}

enum rt_status cuda_exec_run_step(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                                  const struct rt_step_io *io, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    RT_ASSERT(p == cs->plan && batch >= 1 && (cs->batch == 0 || cs->batch == batch));
    cs->batch = batch;
    struct cuda_op *op = next_op(cs, err);
    if (!op)
        return err->status;
    *op = (struct cuda_op){.kind = CUDA_OP_STEP, .step = s, .io = *io};
    return RT_OK;
}

/* ------------------------------------------------------------------ steps */

#define KCHECK(cs, call, err) CUDA_CHECK((cs)->cb, (call), (err))

/* Enqueues one plan step on the session's stream. */
static enum rt_status enqueue_step(struct cuda_session *cs, const struct rt_step *s, const struct rt_step_io *io,
                                   struct rt_error *err)
{
    const struct rt_plan *p = cs->plan;
    const struct rt_graph *g = p->g;
    const struct cuda_step_prep *pr = s->prep;
    const int batch = cs->batch, slot = cs->slot;
    const enum kcuda_dtype dt = cs->dt;
    cudaStream_t st = cs->stream;
    const void *x = io->in[0];
    void *y = io->out;
    int64_t count = g->tensors[s->out].sample_elems * batch;
    if (s->q8)
        return cuda_q8_enqueue(cs, s, io, err);
    switch (s->op) {
    case RT_OP_CONV2D: {
        struct k_conv2d k = rt_step_conv2d(p, s, batch);
        if (!pr->cudnn) {
            KCHECK(cs, kcuda_conv2d(&k, dt, x, pr->dev[slot].w, pr->dev[slot].table, pr->dev[slot].bias,
                                    io->residual, y, st), err);
            return RT_OK;
        }
        enum rt_status r = cuda_dnn_conv(cs, s, &k, x, pr->dev[slot].w, y, err);
        if (r == RT_OK)
            KCHECK(cs, kcuda_bias_act(k.n, k.oc, (int64_t)k.oh * k.ow, dt, pr->dev[slot].bias, io->residual, k.act,
                                      y, st), err);
        return r;
    }
    case RT_OP_LINEAR: {
        struct k_linear k = rt_step_linear(p, s, batch);
        KCHECK(cs, kcuda_linear(&k, dt, x, pr->dev[slot].w, pr->dev[slot].bias, io->residual, y, st), err);
        return RT_OK;
    }
    case RT_OP_BATCH_NORM: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        struct k_channel_affine k = {.n = batch, .c = (int)sh->dims[1],
                                     .inner = g->tensors[s->in[0]].sample_elems / sh->dims[1]};
        KCHECK(cs, kcuda_channel_affine(&k, dt, x, pr->dev[slot].w, pr->dev[slot].bias, y, st), err);
        return RT_OK;
    }
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
        KCHECK(cs, kcuda_act(s->act, count, dt, x, y, st), err);
        return RT_OK;
    case RT_OP_MAX_POOL2D:
    case RT_OP_AVG_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        if (s->op == RT_OP_MAX_POOL2D)
            KCHECK(cs, kcuda_max_pool2d(&k, dt, x, y, st), err);
        else
            KCHECK(cs, kcuda_avg_pool2d(&k, dt, x, y, st), err);
        return RT_OK;
    }
    case RT_OP_GLOBAL_AVG_POOL: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        KCHECK(cs, kcuda_global_avg_pool(batch, (int)sh->dims[1], sh->dims[2] * sh->dims[3], dt, x, y, st), err);
        return RT_OK;
    }
    case RT_OP_ADD:
        KCHECK(cs, kcuda_add(count, dt, x, io->in[1], y, st), err);
        return RT_OK;
    case RT_OP_SOFTMAX:
    case RT_OP_CONCAT: {
        const struct rt_shape *sh = &g->tensors[s->out].shape;
        int axis = s->node->a.axis < 0 ? s->node->a.axis + sh->rank : s->node->a.axis;
        int64_t outer = batch, inner = 1;
        for (int d = 1; d < axis; d++)
            outer *= sh->dims[d];
        for (int d = axis + 1; d < sh->rank; d++)
            inner *= sh->dims[d];
        if (s->op == RT_OP_SOFTMAX) {
            struct k_softmax k = {outer, sh->dims[axis], inner};
            KCHECK(cs, kcuda_softmax(&k, dt, x, y, st), err);
        } else {
            int64_t lens[RT_NODE_MAX_INPUTS];
            for (int i = 0; i < s->n_in; i++)
                lens[i] = g->tensors[s->in[i]].shape.dims[axis];
            struct k_concat k = {outer, inner, s->n_in};
            KCHECK(cs, kcuda_concat(&k, dt, io->in, lens, y, st), err);
        }
        return RT_OK;
    }
    default:
        return rt_error_set(err, RT_ERR_INTERNAL, "CUDA backend: op %s has no kernel", rt_op_name(s->op));
    }
}

/* Enqueues the recorded run: uploads (+ conversion to FP16), steps,
 * (conversion to FP32 +) downloads into pinned memory. */
static enum rt_status enqueue_all(struct cuda_session *cs, struct rt_error *err)
{
    cudaStream_t st = cs->stream;
    bool f16 = cs->dt == KCUDA_F16;
    for (int i = 0; i < cs->n_ops; i++) {
        const struct cuda_op *op = &cs->ops[i];
        char *pinned = cs->pinned + op->stage, *dstage = f16 ? cs->dstage + op->stage : NULL;
        int64_t elems = (int64_t)(op->bytes / sizeof(float));
        switch (op->kind) {
        case CUDA_OP_IN:
            KCHECK(cs, cudaMemcpyAsync(f16 ? dstage : op->dev, pinned, op->bytes, cudaMemcpyHostToDevice, st), err);
            if (f16)
                KCHECK(cs, kcuda_convert(elems, KCUDA_F32, dstage, KCUDA_F16, op->dev, st), err);
            break;
        case CUDA_OP_STEP: {
            enum rt_status r = enqueue_step(cs, op->step, &op->io, err);
            if (r != RT_OK)
                return r;
            break;
        }
        case CUDA_OP_OUT:
            if (f16)
                KCHECK(cs, kcuda_convert(elems, KCUDA_F16, op->dev, KCUDA_F32, dstage, st), err);
            KCHECK(cs, cudaMemcpyAsync(pinned, f16 ? dstage : op->dev, op->bytes, cudaMemcpyDeviceToHost, st), err);
            break;
        }
    }
    return RT_OK;
}

/* ------------------------------------------------------------------ graphs */

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Everything a graph bakes in: op kinds, steps, device pointers, staging. */
static uint64_t signature(const struct cuda_session *cs)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, &cs->batch, sizeof(cs->batch));
    for (int i = 0; i < cs->n_ops; i++) {
        const struct cuda_op *op = &cs->ops[i];
        h = fnv(h, &op->kind, sizeof(op->kind));
        h = fnv(h, &op->step, sizeof(op->step)); // NOLINT(bugprone-sizeof-expression): hashes which step (the pointer), not its contents
        h = fnv(h, &op->io, sizeof(op->io));
        h = fnv(h, &op->dev, sizeof(op->dev));
        h = fnv(h, &op->stage, sizeof(op->stage));
        h = fnv(h, &op->bytes, sizeof(op->bytes));
    }
    return h;
}

static enum rt_status enqueue_recorded(void *ctx, struct rt_error *err) { return enqueue_all(ctx, err); }

/* Runs the recorded run eagerly, captured or replayed. Unless it replays,
 * cuDNN's algorithms for this batch are chosen on the host first, so a
 * capture that follows makes no heuristics calls. */
static enum rt_status launch(struct cuda_session *cs, struct rt_error *err)
{
    cudaError_t e = cudaSetDevice(cs->device);
    if (e != cudaSuccess)
        return cuda_fail(cs->cb, e, "cudaSetDevice", err);
    uint64_t sig = signature(cs);
    if (cs->dnn && !cuda_graph_will_replay(&cs->graphs, cs->batch, sig)) {
        enum rt_status r = cuda_dnn_choose(cs, cs->batch, err);
        if (r != RT_OK)
            return r;
    }
    return cuda_graph_run(&cs->graphs, cs->cb, cs->stream, cs->batch, sig, enqueue_recorded, cs, NULL, err);
}

enum rt_status cuda_exec_sync(void *ctx, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    enum rt_status r = alive(cs, err);
    if (r == RT_OK)
        r = launch(cs, err);
    /* Wait for the stream on failure too: copies enqueued before the failing
     * call may still read the pinned staging that the next run refills. */
    cudaError_t e = cudaStreamSynchronize(cs->stream);
    if (r == RT_OK && e != cudaSuccess)
        r = cuda_fail(cs->cb, e, "cudaStreamSynchronize", err);
    for (int i = 0; i < cs->n_ops && r == RT_OK; i++) {
        const struct cuda_op *op = &cs->ops[i];
        if (op->kind == CUDA_OP_OUT)
            memcpy(op->host, cs->pinned + op->stage, op->bytes);
    }
    reset_run(cs);
    return r;
}
