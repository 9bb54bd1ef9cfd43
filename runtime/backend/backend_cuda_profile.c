/*
 * backend_cuda_profile.c - the CUDA backend's answers to a profiler.
 *
 * Step timing: profile_set creates an event pair per plan step on the
 * session's device; the executor's marks are recorded with the run
 * (cuda_exec_profile_mark), and
 * when the run is launched (eagerly, see backend_cuda_exec.c) each becomes
 * a cudaEventRecord on the session's stream, the begin mark inside an NVTX
 * range named after the step's node. After sync, profile_read turns the
 * events into durations (cudaEventElapsedTime, about 0.5 us resolution).
 *
 * A run's device time (rt_session_time_device): four events, recorded
 * first, after the input copies, before the output copies and last in the
 * run, eager or captured into its graph, so that a replay is timed from
 * its first node to its last, and its steps alone.
 *
 * Also the kernel a step runs (describe_step) and the rates of a large GEMM
 * and a streaming kernel on the first device (measure_rates), timed with
 * CUDA events: the GEMM in the model's precision (INT8: the kernel set its
 * steps run, IMMA where the device has it), the stream in FP32 (FP16 for
 * FP16).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/backend/backend_cuda_impl.h"

static void profile_free(struct cuda_profile *pr)
{
    if (!pr)
        return;
    for (int i = 0; pr->events && i < 2 * pr->n_steps; i++) {
        if (pr->events[i])
            cudaEventDestroy(pr->events[i]);
    }
    free(pr->events);
    free(pr);
}

enum rt_status cuda_profile_set(void *ctx, int n_steps, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    profile_free(cs->prof);
    cs->prof = NULL;
    if (n_steps == 0)
        return RT_OK;
    struct cuda_profile *pr = calloc(1, sizeof(*pr));
    if (pr)
        pr->events = calloc((size_t)n_steps * 2, sizeof(cudaEvent_t));
    if (!pr || !pr->events) {
        profile_free(pr);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    pr->n_steps = n_steps;
    cudaError_t e = cudaSetDevice(cs->device);
    for (int i = 0; e == cudaSuccess && i < 2 * n_steps; i++)
        e = cudaEventCreate(&pr->events[i]);
    if (e != cudaSuccess) {
        profile_free(pr);
        return cuda_fail(cs->cb, e, "cudaEventCreate", err);
    }
    cs->prof = pr;
    return RT_OK;
}

enum rt_status cuda_profile_enqueue_mark(struct cuda_session *cs, const struct cuda_op *op, struct rt_error *err)
{
    const struct cuda_profile *pr = cs->prof;
    RT_ASSERT(pr);
    if (!op->mark_end)
        cuda_nvtx_push(cs->plan->steps[op->mark_step].node->name);
    cudaError_t e = cudaEventRecord(pr->events[2 * (size_t)op->mark_step + op->mark_end], cs->stream);
    if (op->mark_end)
        cuda_nvtx_pop();
    return e == cudaSuccess ? RT_OK : cuda_fail(cs->cb, e, "cudaEventRecord", err);
}

enum rt_status cuda_profile_read(void *ctx, struct rt_step_timing *times, int n_steps, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    const struct cuda_profile *pr = cs->prof;
    RT_ASSERT(pr && n_steps == pr->n_steps);
    for (int i = 0; i < n_steps; i++) {
        float start_ms = 0, dur_ms = 0;
        cudaEvent_t begin = pr->events[2 * (size_t)i], end = pr->events[2 * (size_t)i + 1];
        CUDA_CHECK(cs->cb, cudaEventElapsedTime(&start_ms, pr->events[0], begin), err);
        CUDA_CHECK(cs->cb, cudaEventElapsedTime(&dur_ms, begin, end), err);
        times[i].begin_ns = pr->launch_ns + (int64_t)((double)start_ms * 1e6);
        times[i].dur_ns = (int64_t)((double)dur_ms * 1e6);
    }
    return RT_OK;
}

/* ---- a run's device time: four events on the stream (cuda_span_event) */

enum rt_status cuda_span_set(void *ctx, bool on, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    struct cuda_span *sp = &cs->span;
    sp->timed = false;
    if (on && !sp->ev[0]) {
        CUDA_CHECK(cs->cb, cudaSetDevice(cs->device), err);
        for (int i = 0; i < CUDA_SPAN_EVENTS; i++) {
            cudaError_t e = cudaEventCreate(&sp->ev[i]);
            if (e != cudaSuccess) {
                cuda_span_release(cs);
                return cuda_fail(cs->cb, e, "cudaEventCreate", err);
            }
        }
    }
    sp->on = on;   /* part of the graphs' signature: a change recaptures */
    return RT_OK;
}

static enum rt_status span_ns(struct cuda_session *cs, enum cuda_span_event a, enum cuda_span_event b, int64_t *ns,
                              struct rt_error *err)
{
    float ms = 0;
    CUDA_CHECK(cs->cb, cudaEventElapsedTime(&ms, cs->span.ev[a], cs->span.ev[b]), err);
    *ns = (int64_t)((double)ms * 1e6);
    return RT_OK;
}

enum rt_status cuda_span_read(void *ctx, struct rt_device_time *t, struct rt_error *err)
{
    struct cuda_session *cs = ctx;
    if (!cs->span.on || !cs->span.timed)
        return rt_error_set(err, RT_ERR_INVALID, "the last run was not timed on the device (timing off, or it failed)");
    enum rt_status r = span_ns(cs, CUDA_SPAN_BEGIN, CUDA_SPAN_END, &t->run_ns, err);
    return r != RT_OK ? r : span_ns(cs, CUDA_SPAN_STEPS_BEGIN, CUDA_SPAN_STEPS_END, &t->steps_ns, err);
}

enum rt_status cuda_span_enqueue(struct cuda_session *cs, enum cuda_span_event which, struct rt_error *err)
{
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cs->cb, cudaStreamIsCapturing(cs->stream, &capture), err);
    /* Inside a capture only an external record becomes an event node of the
     * graph (a plain one merely orders the graph's nodes); outside one the
     * flag is an error. */
    unsigned flags = capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
    CUDA_CHECK(cs->cb, cudaEventRecordWithFlags(cs->span.ev[which], cs->stream, flags), err);
    return RT_OK;
}

void cuda_span_release(struct cuda_session *cs)
{
    for (int i = 0; i < CUDA_SPAN_EVENTS; i++)
        if (cs->span.ev[i])
            cudaEventDestroy(cs->span.ev[i]);
    cs->span = (struct cuda_span){0};
}

/* The layout of a step's x (or y) as prepared. */
static enum kcuda_layout layout(const struct cuda_step_prep *pr, bool y)
{
    return pr && (y ? pr->y_nhwc : pr->x_nhwc) ? KCUDA_NHWC : KCUDA_NCHW;
}

void cuda_describe_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s, int batch, char *out,
                        size_t cap)
{
    const struct cuda_step_prep *pr = s->prep;
    union rt_step_params k = rt_step_params(s, batch);
    bool f16 = p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    const char *dt = f16 ? "fp16" : "fp32";
    enum kcuda_dtype dtype = f16 ? KCUDA_F16 : KCUDA_F32;
    if (s->q8)   /* (the first device's choice) */
        snprintf(out, cap, "int8%s",
                 !rt_op_has(s->op, RT_T_GEMM) ? "" : cuda_q8_mma(b->ctx, 0, s, &k) ? " imma gemm" : " dp4a gemm");
    else if (pr && pr->cudnn)
        snprintf(out, cap, "cudnn + bias_act, %s", dt);
    else if (s->op == RT_OP_CONV2D)
        snprintf(out, cap, "implicit gemm %s, %s%s%s",
                 kcuda_conv2d_plan(&k.conv, cuda_gemm_sms(b->ctx, 0), dtype, layout(pr, false), layout(pr, true)).name,
                 dt, pr && pr->x_nhwc ? ", x nhwc" : "", pr && pr->y_nhwc ? ", y nhwc" : "");
    else if (s->op == RT_OP_LINEAR)
        snprintf(out, cap, "gemm %s, %s", kcuda_linear_plan(&k.linear, cuda_gemm_sms(b->ctx, 0)).name, dt);
    else
        snprintf(out, cap, "%s%s", dt, pr && pr->x_nhwc ? ", nhwc" : "");
}

/* ---- rates: a 4096^3 GEMM (137 GFLOP) through kcuda_linear (INT8:
 * kcuda_linear_q8_mma or kcuda_linear_q8, int8 out), and relu from one
 * 256 MiB buffer (FP32) into another */

#define RATE_DIM 4096
#define RATE_STREAM_ELEMS ((int64_t)64 << 20)
#define RATE_REPEATS 5

struct rate_bufs {
    void *x, *w, *y, *a, *b;
    bool q8, mma;                 /* an INT8 GEMM; on tensor cores */
    int32_t *bias;                /* INT8: the epilogue's, on the device */
    struct k_q8_mult *mult;
    cudaStream_t st;
    cudaEvent_t start, stop;
};

static cudaError_t rate_gemm(struct cuda_backend *cb, const struct rate_bufs *r, enum kcuda_dtype dt)
{
    const struct k_linear lin = {.n = RATE_DIM, .k = RATE_DIM, .m = RATE_DIM, .act = K_ACT_NONE};
    if (!r->q8)
        return kcuda_linear(&lin, cuda_gemm_sms(cb, 0), dt, r->x, r->w, NULL, NULL, r->y, r->st);
    const struct k_q8_epilogue e = {.bias = r->bias, .mult = r->mult, .lo = -127, .hi = 127};
    return r->mma ? kcuda_linear_q8_mma(&lin, r->x, r->w, &e, NULL, r->y, r->st)
                  : kcuda_linear_q8(&lin, r->x, r->w, &e, NULL, r->y, r->st);
}

/* Best milliseconds of RATE_REPEATS launches after one untimed one. */
static enum rt_status best_ms(struct cuda_backend *cb, const struct rate_bufs *r, enum kcuda_dtype dt, bool gemm,
                              float *best, struct rt_error *err)
{
    *best = 1e30f;
    for (int i = 0; i <= RATE_REPEATS; i++) {
        CUDA_CHECK(cb, cudaEventRecord(r->start, r->st), err);
        if (gemm)
            CUDA_CHECK(cb, rate_gemm(cb, r, dt), err);
        else
            CUDA_CHECK(cb, kcuda_act(K_ACT_RELU, RATE_STREAM_ELEMS, dt, r->a, r->b, r->st), err);
        CUDA_CHECK(cb, cudaEventRecord(r->stop, r->st), err);
        CUDA_CHECK(cb, cudaEventSynchronize(r->stop), err);
        float ms = 0;
        CUDA_CHECK(cb, cudaEventElapsedTime(&ms, r->start, r->stop), err);
        if (i > 0 && ms < *best)
            *best = ms;
    }
    return RT_OK;
}

/* Packs the GEMM's weights on the host and uploads them in type dt. */
static enum rt_status upload_weights(struct cuda_backend *cb, struct rate_bufs *r, enum kcuda_dtype dt,
                                     struct rt_error *err)
{
    const struct k_linear lin = {.n = RATE_DIM, .k = RATE_DIM, .m = RATE_DIM, .act = K_ACT_NONE};
    size_t elems = kcuda_linear_packed_elems(&lin);
    float *w = malloc((size_t)RATE_DIM * RATE_DIM * sizeof(float)), *packed = malloc(elems * sizeof(float));
    void *tmp = NULL;
    if (!w || !packed) {
        free(w);
        free(packed);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < (int64_t)RATE_DIM * RATE_DIM; i++)
        w[i] = (float)(i % 13 - 6) * 0.01f;
    kcuda_linear_pack(&lin, w, packed);
    cudaError_t e;
    if ((e = cudaMalloc(&r->w, elems * kcuda_dtype_size(dt))) == cudaSuccess &&
        (e = cudaMalloc(&tmp, elems * sizeof(float))) == cudaSuccess &&
        (e = cudaMemcpy(tmp, packed, elems * sizeof(float), cudaMemcpyHostToDevice)) == cudaSuccess &&
        (e = kcuda_convert((int64_t)elems, KCUDA_F32, tmp, dt, r->w, r->st)) == cudaSuccess)
        e = cudaStreamSynchronize(r->st);
    enum rt_status s = e == cudaSuccess ? RT_OK : cuda_fail(cb, e, "uploading the GEMM's weights", err);
    cudaFree(tmp);
    free(w);
    free(packed);
    return s;
}

/* INT8: the packed weights, a zero bias and a multiplier of 1/2 on the
 * device (the data never changes the time an integer GEMM takes). */
static enum rt_status upload_q8_weights(struct cuda_backend *cb, struct rate_bufs *r, struct rt_error *err)
{
    size_t packed_bytes = kcuda_q8_packed_bytes(RATE_DIM, RATE_DIM);
    int8_t *w = malloc((size_t)RATE_DIM * RATE_DIM), *packed = malloc(packed_bytes);
    struct k_q8_mult *mult = malloc(sizeof(*mult) * RATE_DIM);
    if (!w || !packed || !mult) {
        free(w);
        free(packed);
        free(mult);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < (int64_t)RATE_DIM * RATE_DIM; i++)
        w[i] = (int8_t)(i % 13 - 6);
    kcuda_q8_pack(RATE_DIM, RATE_DIM, w, packed);
    for (int i = 0; i < RATE_DIM; i++)
        mult[i] = (struct k_q8_mult){.m = 1 << 30, .shift = 31};
    cudaError_t e;
    if ((e = cudaMalloc(&r->w, packed_bytes)) == cudaSuccess &&
        (e = cudaMalloc((void **)&r->bias, sizeof(int32_t) * RATE_DIM)) == cudaSuccess &&
        (e = cudaMalloc((void **)&r->mult, sizeof(*mult) * RATE_DIM)) == cudaSuccess &&
        (e = cudaMemcpy(r->w, packed, packed_bytes, cudaMemcpyHostToDevice)) == cudaSuccess &&
        (e = cudaMemset(r->bias, 0, sizeof(int32_t) * RATE_DIM)) == cudaSuccess)
        e = cudaMemcpy(r->mult, mult, sizeof(*mult) * RATE_DIM, cudaMemcpyHostToDevice);
    free(w);
    free(packed);
    free(mult);
    return e == cudaSuccess ? RT_OK : cuda_fail(cb, e, "uploading the INT8 GEMM's weights", err);
}

static enum rt_status measure(struct cuda_backend *cb, struct rate_bufs *r, enum kcuda_dtype dt, float *gemm_ms,
                              float *stream_ms, struct rt_error *err)
{
    size_t es = kcuda_dtype_size(dt), square = (size_t)RATE_DIM * RATE_DIM * es;
    CUDA_CHECK(cb, cudaSetDevice(cb->dev[0]), err);
    CUDA_CHECK(cb, cudaStreamCreateWithFlags(&r->st, cudaStreamNonBlocking), err);
    CUDA_CHECK(cb, cudaEventCreate(&r->start), err);
    CUDA_CHECK(cb, cudaEventCreate(&r->stop), err);
    CUDA_CHECK(cb, cudaMalloc(&r->x, square), err);
    CUDA_CHECK(cb, cudaMalloc(&r->y, square), err);
    CUDA_CHECK(cb, cudaMalloc(&r->a, (size_t)RATE_STREAM_ELEMS * es), err);
    CUDA_CHECK(cb, cudaMalloc(&r->b, (size_t)RATE_STREAM_ELEMS * es), err);
    CUDA_CHECK(cb, cudaMemset(r->x, 0, square), err);
    CUDA_CHECK(cb, cudaMemset(r->a, 0, (size_t)RATE_STREAM_ELEMS * es), err);
    enum rt_status s = r->q8 ? upload_q8_weights(cb, r, err) : upload_weights(cb, r, dt, err);
    if (s == RT_OK)
        s = best_ms(cb, r, dt, true, gemm_ms, err);
    if (s == RT_OK)
        s = best_ms(cb, r, dt, false, stream_ms, err);
    return s;
}

enum rt_status cuda_measure_rates(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                  struct rt_error *err)
{
    struct cuda_backend *cb = b->ctx;
    enum kcuda_dtype dt = prec == RT_PRECISION_FP16 ? KCUDA_F16 : KCUDA_F32;
    struct rate_bufs r;
    memset(&r, 0, sizeof(r));
    r.q8 = prec == RT_PRECISION_INT8;
    r.mma = r.q8 && kcuda_q8_mma_takes(cb->sm[0], NULL);   /* as backend_cuda_q8.c picks */
    float gemm_ms = 0, stream_ms = 0;
    enum rt_status s = measure(cb, &r, dt, &gemm_ms, &stream_ms, err);
    if (r.st)
        cudaStreamSynchronize(r.st);
    cudaFree(r.x);
    cudaFree(r.w);
    cudaFree(r.y);
    cudaFree(r.a);
    cudaFree(r.b);
    cudaFree(r.bias);
    cudaFree(r.mult);
    if (r.start)
        cudaEventDestroy(r.start);
    if (r.stop)
        cudaEventDestroy(r.stop);
    if (r.st)
        cudaStreamDestroy(r.st);
    if (s != RT_OK)
        return s;
    size_t es = kcuda_dtype_size(dt);
    out->gemm_gflops = 2.0 * RATE_DIM * RATE_DIM * (double)RATE_DIM / ((double)gemm_ms * 1e-3) * 1e-9;
    out->stream_gbs = 2.0 * (double)RATE_STREAM_ELEMS * (double)es / ((double)stream_ms * 1e-3) * 1e-9;
    snprintf(out->what, sizeof(out->what), "%s GEMM %dx%dx%d and %s relu over %lld MiB, CUDA device %d",
             r.q8 ? (r.mma ? "INT8 (IMMA)" : "INT8 (dp4a)") : dt == KCUDA_F16 ? "FP16" : "FP32", RATE_DIM, RATE_DIM,
             RATE_DIM, dt == KCUDA_F16 ? "FP16" : "FP32", (long long)(RATE_STREAM_ELEMS * (int64_t)es >> 20),
             cb->dev[0]);
    return RT_OK;
}
