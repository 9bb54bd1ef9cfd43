/*
 * backend_cuda_exec.c - running a batch on the CUDA backend: the recorded
 * run (copy_in / run_step / copy_out only record), and sync, which hands
 * the recorded run to backend_cuda_graph.c (eager, captured or replayed;
 * eager while steps are timed), then waits for the stream and copies the
 * outputs from pinned memory to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/backend/backend_cuda_impl.h"
#include "runtime/backend/layout_nhwc.h"

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
    kcpu_copy(cs->copiers, cs->pinned + at, src, bytes);
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

enum rt_status cuda_exec_profile_mark(void *ctx, int step, bool end, struct rt_step_timing *slot,
                                      struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    RT_ASSERT(cs->prof && step >= 0 && step < cs->prof->n_steps);
    struct cuda_op *op = next_op(cs, err);
    if (!op)
        return err->status;
    *op = (struct cuda_op){.kind = CUDA_OP_MARK, .mark_step = step, .mark_end = end};
    return RT_OK;
}

/* ------------------------------------------------------------------ steps */

#define KCHECK(cs, call, err) CUDA_CHECK((cs)->cb, (call), (err))

/* ---- FP32 / FP16 kernels, one per op, enqueued on the session's stream in
 * the session's element type */

typedef cudaError_t (*f32_enqueue_fn)(const struct cuda_session *cs, const struct rt_step *s,
                                      const union rt_step_params *k, const struct rt_step_io *io);

static const struct cuda_dev_weights *weights_of(const struct cuda_session *cs, const struct rt_step *s)
{
    return &((const struct cuda_step_prep *)s->prep)->dev[cs->slot];
}

int cuda_gemm_sms(const struct cuda_backend *cb, int slot) { return cb->baseline ? 0 : cb->sms[slot]; }

bool cuda_nhwc_wanted(const struct cuda_backend *cb, const struct rt_plan *p)
{
    return !cb->baseline &&
           !(p->cfg && (p->cfg->precision == RT_PRECISION_INT8 || p->cfg->conv_engine == RT_CONV_ENGINE_CUDNN));
}

static bool conv_reads_nhwc(const struct k_conv2d *p, void *dtype)
{
    return kcuda_conv2d_nhwc_takes(p, *(const enum kcuda_dtype *)dtype);
}

/* (Each step's prepare runs the whole pass again: once per model load, a
 * few sweeps over the plan.) */
enum rt_status cuda_step_layouts(const struct cuda_backend *cb, const struct rt_plan *p, const struct rt_step *s,
                                 bool *x_nhwc, bool *y_nhwc, struct rt_error *err)
{
    *x_nhwc = *y_nhwc = false;
    if (!cuda_nhwc_wanted(cb, p))
        return RT_OK;
    bool *nhwc = malloc((size_t)p->g->n_tensors * sizeof(bool));
    if (!nhwc)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum kcuda_dtype dt = p->cfg && p->cfg->precision == RT_PRECISION_FP16 ? KCUDA_F16 : KCUDA_F32;
    rt_nhwc_plan(p, RT_NHWC_FLOAT_STEPS, conv_reads_nhwc, &dt, nhwc);
    *x_nhwc = nhwc[s->in[0]];
    *y_nhwc = nhwc[s->out];
    free(nhwc);
    return RT_OK;
}

/* The step's layouts as prepared (NCHW when it has no prep). */
static bool x_nhwc(const struct rt_step *s) { return s->prep && ((const struct cuda_step_prep *)s->prep)->x_nhwc; }
static bool y_nhwc(const struct rt_step *s) { return s->prep && ((const struct cuda_step_prep *)s->prep)->y_nhwc; }
static enum kcuda_layout layout(bool nhwc) { return nhwc ? KCUDA_NHWC : KCUDA_NCHW; }

static cudaError_t conv2d_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                              const struct rt_step_io *io)
{
    const struct cuda_dev_weights *w = weights_of(cs, s);
    return kcuda_conv2d(&k->conv, cuda_gemm_sms(cs->cb, cs->slot), cs->dt, layout(x_nhwc(s)), layout(y_nhwc(s)),
                        io->in[0], w->w, w->table, w->bias, io->residual, io->out, cs->stream);
}

static cudaError_t linear_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                              const struct rt_step_io *io)
{
    const struct cuda_dev_weights *w = weights_of(cs, s);
    return kcuda_linear(&k->linear, cuda_gemm_sms(cs->cb, cs->slot), cs->dt, io->in[0], w->w, w->bias,
                        io->residual, io->out, cs->stream);
}

static cudaError_t batch_norm_run(const struct cuda_session *cs, const struct rt_step *s,
                                  const union rt_step_params *k, const struct rt_step_io *io)
{
    const struct cuda_dev_weights *w = weights_of(cs, s);
    if (x_nhwc(s))
        return kcuda_channel_affine_nhwc(&k->affine, cs->dt, io->in[0], w->w, w->bias, io->out, cs->stream);
    return kcuda_channel_affine(&k->affine, cs->dt, io->in[0], w->w, w->bias, io->out, cs->stream);
}

static cudaError_t act_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           const struct rt_step_io *io)
{
    return kcuda_act(s->act, k->count, cs->dt, io->in[0], io->out, cs->stream);
}

static cudaError_t max_pool2d_run(const struct cuda_session *cs, const struct rt_step *s,
                                  const union rt_step_params *k, const struct rt_step_io *io)
{
    if (x_nhwc(s))
        return kcuda_max_pool2d_nhwc(&k->pool, cs->dt, io->in[0], io->out, cs->stream);
    return kcuda_max_pool2d(&k->pool, cs->dt, io->in[0], io->out, cs->stream);
}

static cudaError_t avg_pool2d_run(const struct cuda_session *cs, const struct rt_step *s,
                                  const union rt_step_params *k, const struct rt_step_io *io)
{
    if (x_nhwc(s))
        return kcuda_avg_pool2d_nhwc(&k->pool, cs->dt, io->in[0], io->out, cs->stream);
    return kcuda_avg_pool2d(&k->pool, cs->dt, io->in[0], io->out, cs->stream);
}

static cudaError_t global_avg_pool_run(const struct cuda_session *cs, const struct rt_step *s,
                                       const union rt_step_params *k, const struct rt_step_io *io)
{
    if (x_nhwc(s))
        return kcuda_global_avg_pool_nhwc((int)k->channels.n, (int)k->channels.c, k->channels.inner, cs->dt,
                                          io->in[0], io->out, cs->stream);
    return kcuda_global_avg_pool((int)k->channels.n, (int)k->channels.c, k->channels.inner, cs->dt, io->in[0],
                                 io->out, cs->stream);
}

static cudaError_t add_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           const struct rt_step_io *io)
{
    return kcuda_add(k->count, cs->dt, io->in[0], io->in[1], io->out, cs->stream);
}

static cudaError_t softmax_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                               const struct rt_step_io *io)
{
    return kcuda_softmax(&k->softmax, cs->dt, io->in[0], io->out, cs->stream);
}

static cudaError_t concat_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                              const struct rt_step_io *io)
{
    struct k_concat c = k->concat.k;
    if (x_nhwc(s)) {   /* along NHWC channels: rows are pixels */
        c.outer *= c.inner;
        c.inner = 1;
    }
    return kcuda_concat(&c, cs->dt, io->in, k->concat.lens, io->out, cs->stream);
}

/* A binary step's operands: its inputs, or its input and the constant
 * (uploaded as the step's weights), left or right as the node says. */
static cudaError_t binary_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                              const struct rt_step_io *io)
{
    const void *a = io->in[0], *b = s->n_in > 1 ? io->in[1] : weights_of(cs, s)->w;
    if (s->n_in == 1 && s->node->a.binary.const_left) {
        b = a;
        a = weights_of(cs, s)->w;
    }
    return kcuda_binary(&k->binary, cs->dt, a, b, io->out, cs->stream);
}

static cudaError_t unary_run(const struct cuda_session *cs, const struct rt_step *s, const union rt_step_params *k,
                             const struct rt_step_io *io)
{
    return kcuda_unary(&k->unary, cs->dt, io->in[0], io->out, cs->stream);
}

/* Activations all run act_run (the step's act says which); they and add
 * run the same on NCHW and NHWC tensors. No kernel yet: transpose, reduce,
 * slice, pad, resize, layer_norm, log_softmax, matmul, conv_transpose2d,
 * conv2d_dyn, batch_norm_dyn (ONNX models using them stay on the CPU
 * backend); views are no steps; quantize and dequantize are INT8 steps
 * (backend_cuda_q8.c). */
static const f32_enqueue_fn F32[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = conv2d_run,
    [RT_OP_LINEAR] = linear_run,
    [RT_OP_BATCH_NORM] = batch_norm_run,
    [RT_OP_MAX_POOL2D] = max_pool2d_run,
    [RT_OP_AVG_POOL2D] = avg_pool2d_run,
    [RT_OP_GLOBAL_AVG_POOL] = global_avg_pool_run,
    [RT_OP_ADD] = add_run,
    [RT_OP_SOFTMAX] = softmax_run,
    [RT_OP_CONCAT] = concat_run,
    [RT_OP_BINARY] = binary_run,
    [RT_OP_UNARY] = unary_run,
};

static f32_enqueue_fn f32_kernel(enum rt_op op) { return rt_op_has(op, RT_T_ACT) ? act_run : F32[op]; }

bool cuda_step_fits(const struct rt_step *s, char *why, size_t why_len)
{
    if (s->op == RT_OP_LINEAR && (size_t)s->k.linear.k * (size_t)s->k.linear.m > INT32_MAX) {
        snprintf(why, why_len, "weight matrix larger than 2^31 elements");
        return false;
    }
    if (s->op == RT_OP_CONCAT && s->n_in > KCUDA_CONCAT_MAX) {
        snprintf(why, why_len, "concat of more than %d inputs", KCUDA_CONCAT_MAX);
        return false;
    }
    return true;
}

bool cuda_f32_supports(const struct rt_step *s, char *why, size_t why_len)
{
    if (!f32_kernel(s->op)) {
        snprintf(why, why_len, "no CUDA kernel for %s", rt_op_name(s->op));
        return false;
    }
    return cuda_step_fits(s, why, why_len);
}

#define KCHECK(cs, call, err) CUDA_CHECK((cs)->cb, (call), (err))

/* cuDNN's convolution, then bias, residual and activation in one kernel. */
static enum rt_status enqueue_cudnn_conv(struct cuda_session *cs, const struct rt_step *s,
                                         const union rt_step_params *k, const struct rt_step_io *io,
                                         struct rt_error *err)
{
    const struct cuda_dev_weights *w = weights_of(cs, s);
    const struct k_conv2d *c = &k->conv;
    enum rt_status r = cuda_dnn_conv(cs, s, c, io->in[0], w->w, io->out, err);
    if (r == RT_OK)
        KCHECK(cs, kcuda_bias_act(c->n, c->oc, (int64_t)c->oh * c->ow, cs->dt, w->bias, io->residual, c->act,
                                  io->out, cs->stream), err);
    return r;
}

/* Enqueues one plan step on the session's stream. */
static enum rt_status enqueue_step(struct cuda_session *cs, const struct rt_step *s, const struct rt_step_io *io,
                                   struct rt_error *err)
{
    if (s->q8)
        return cuda_q8_enqueue(cs, s, io, err);
    union rt_step_params k = rt_step_params(s, cs->batch);
    const struct cuda_step_prep *pr = s->prep;
    if (pr && pr->cudnn)
        return enqueue_cudnn_conv(cs, s, &k, io, err);
    cudaError_t e = f32_kernel(s->op)(cs, s, &k, io);
    return e == cudaSuccess ? RT_OK : cuda_fail(cs->cb, e, rt_op_name(s->op), err);
}

/* While the run's device time is taken, records the span's events that
 * are due before an op of kind `kind` (-1: the run's end), from *next on:
 * the first event before anything, the steps' first before the first op
 * that is not an input copy, the steps' last before the first output copy,
 * the last at the end. */
static enum rt_status span_due(struct cuda_session *cs, int kind, int *next, struct rt_error *err)
{
    enum rt_status r = RT_OK;
    while (r == RT_OK && cs->span.on && *next < CUDA_SPAN_EVENTS) {
        bool due = *next == CUDA_SPAN_BEGIN || kind < 0 ||
                   (*next == CUDA_SPAN_STEPS_BEGIN && kind != CUDA_OP_IN) ||
                   (*next == CUDA_SPAN_STEPS_END && kind == CUDA_OP_OUT);
        if (!due)
            break;
        r = cuda_span_enqueue(cs, (enum cuda_span_event)(*next)++, err);
    }
    return r;
}

/* Enqueues the recorded run: uploads (+ conversion to FP16), steps,
 * (conversion to FP32 +) downloads into pinned memory, and the span's
 * events between them while the run's device time is taken. */
static enum rt_status enqueue_all(struct cuda_session *cs, struct rt_error *err)
{
    cudaStream_t st = cs->stream;
    bool f16 = cs->dt == KCUDA_F16;
    int next = 0;
    enum rt_status r = RT_OK;
    for (int i = 0; i < cs->n_ops && r == RT_OK; i++) {
        const struct cuda_op *op = &cs->ops[i];
        if ((r = span_due(cs, (int)op->kind, &next, err)) != RT_OK)
            break;
        char *pinned = cs->pinned + op->stage, *dstage = f16 ? cs->dstage + op->stage : NULL;
        int64_t elems = (int64_t)(op->bytes / sizeof(float));
        switch (op->kind) {
        case CUDA_OP_IN:
            KCHECK(cs, cudaMemcpyAsync(f16 ? dstage : op->dev, pinned, op->bytes, cudaMemcpyHostToDevice, st), err);
            if (f16)
                KCHECK(cs, kcuda_convert(elems, KCUDA_F32, dstage, KCUDA_F16, op->dev, st), err);
            break;
        case CUDA_OP_STEP:
            r = enqueue_step(cs, op->step, &op->io, err);
            break;
        case CUDA_OP_OUT:
            if (f16)
                KCHECK(cs, kcuda_convert(elems, KCUDA_F16, op->dev, KCUDA_F32, dstage, st), err);
            KCHECK(cs, cudaMemcpyAsync(pinned, f16 ? dstage : op->dev, op->bytes, cudaMemcpyDeviceToHost, st), err);
            break;
        case CUDA_OP_MARK:
            r = cuda_profile_enqueue_mark(cs, op, err);
            break;
        }
    }
    return r == RT_OK ? span_due(cs, -1, &next, err) : r;
}

/* ------------------------------------------------------------------ graphs */

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* Everything a graph bakes in: op kinds, steps, device pointers, staging,
 * whether the run's device time is recorded. */
static uint64_t signature(const struct cuda_session *cs)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, &cs->batch, sizeof(cs->batch));
    h = fnv(h, &cs->span.on, sizeof(cs->span.on));
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

/* Runs the recorded run eagerly, captured or replayed; eagerly while steps
 * are timed (a graph would hide the host-side NVTX ranges and time its
 * launch, not the steps'). Unless it replays, cuDNN's algorithms for this
 * batch are chosen on the host first, so a capture that follows makes no
 * heuristics calls. */
static enum rt_status launch(struct cuda_session *cs, struct rt_error *err)
{
    cudaError_t e = cudaSetDevice(cs->device);
    if (e != cudaSuccess)
        return cuda_fail(cs->cb, e, "cudaSetDevice", err);
    uint64_t sig = signature(cs);
    if (cs->dnn && (cs->prof || !cuda_graph_will_replay(&cs->graphs, cs->batch, sig))) {
        enum rt_status r = cuda_dnn_choose(cs, cs->batch, err);
        if (r != RT_OK)
            return r;
    }
    if (cs->prof) {
        cs->prof->launch_ns = rt_clock_ns();
        return enqueue_all(cs, err);
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
            kcpu_copy(cs->copiers, op->host, cs->pinned + op->stage, op->bytes);
    }
    cs->span.timed = cs->span.on && r == RT_OK;
    reset_run(cs);
    return r;
}
