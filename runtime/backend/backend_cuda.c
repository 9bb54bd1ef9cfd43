/*
 * backend_cuda.c - the CUDA backend: device discovery, per-model weights on
 * every device the backend uses (packed for kernels/cuda, or plain for
 * cuDNN, in the model's precision), sessions (stream, arena, staging) and
 * the interface table. Running a batch is in backend_cuda_exec.c; see
 * backend_cuda_impl.h for the picture.
 *
 * rt_backend_options.device picks one GPU; -1 uses every GPU this build
 * has code for (compute capability INFERD_CUDA_MIN_SM, the oldest target of
 * CUDA_ARCHS in mk/build.mk, or newer), placing sessions round-robin so a
 * model's instances spread over them.
 *
 * Every CUDA call is checked through CUDA_CHECK or cuda_fail, except the
 * frees and destroys of teardown paths, whose status nobody could act on.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/backend/backend_cuda_impl.h"
#include "runtime/backend/backend_cuda_info.h"

static bool is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
        return true;
    default:
        return false;
    }
}

enum rt_status cuda_fail(struct cuda_backend *cb, cudaError_t e, const char *what, struct rt_error *err)
{
    bool sticky = is_sticky(e);
    if (sticky && cb)
        __atomic_store_n(&cb->poisoned, 1, __ATOMIC_RELEASE);
    else
        (void)cudaGetLastError();   /* a non-sticky error must not leak into the next check */
    int name_len = (int)strcspn(what, "(");
    return rt_error_set(err, e == cudaErrorMemoryAllocation ? RT_ERR_NO_MEMORY : RT_ERR_DEVICE,
                        "CUDA error in %.*s: %s (%s)%s", name_len, what, cudaGetErrorName(e), cudaGetErrorString(e),
                        sticky ? "; the GPU context is lost until the process restarts" : "");
}

/* ------------------------------------------------------------------ backend */

/* Activations and weights are FP16 for fp16 models, else FP32 (a plan built
 * outside rt_model_load has no config: FP32). */
static enum kcuda_dtype plan_dtype(const struct rt_plan *p)
{
    return p->cfg && p->cfg->precision == RT_PRECISION_FP16 ? KCUDA_F16 : KCUDA_F32;
}

static void cuda_free_backend(struct rt_backend *b)
{
    struct cuda_backend *cb = b->ctx;
    cuda_dnn_unload(cb->dnn);
    pthread_mutex_destroy(&cb->dnn_lock);
    free(cb);
    free(b);
}

static bool cuda_supports_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s,
                               enum rt_precision prec, char *why, size_t why_len)
{
    /* INT8 models: steps on I8 data (s->q8) run kernels/cuda/q8.cu, the FP32 ones the rest */
    const struct rt_tensor *in = &p->g->tensors[s->in[0]], *out = &p->g->tensors[s->out];
    /* kernels index within one sample with 32-bit ints */
    if (in->sample_elems > INT32_MAX || out->sample_elems > INT32_MAX) {
        snprintf(why, why_len, "a sample of this tensor has more than 2^31 elements");
        return false;
    }
    return s->q8 ? cuda_q8_supports(s, why, why_len) : cuda_f32_supports(s, why, why_len);
}

/* cuDNN, loaded and probed when the first model asks for it (most never
 * do); NULL, logged once, when it cannot be had. */
static const struct cuda_dnn *backend_dnn(struct cuda_backend *cb)
{
    pthread_mutex_lock(&cb->dnn_lock);
    if (!cb->dnn && !cb->dnn_tried) {
        cb->dnn_tried = true;
        if (cudaSetDevice(cb->dev[0]) == cudaSuccess)   /* the probe runs on the first device */
            cb->dnn = cuda_dnn_load(cb->dnn_why, sizeof(cb->dnn_why));
        else
            snprintf(cb->dnn_why, sizeof(cb->dnn_why), "cudaSetDevice failed");
        (void)cudaGetLastError();
        char what[64] = "";
        if (cb->dnn)
            cuda_dnn_describe(cb->dnn, what, sizeof(what));
        if (cb->dnn)
            fprintf(stderr, "inferd: %s loaded for conv_engine \"cudnn\"\n", what);
        else
            fprintf(stderr, "inferd: conv_engine \"cudnn\" asked for, but %s; using inferd's kernels\n",
                    cb->dnn_why);
    }
    const struct cuda_dnn *d = cb->dnn;
    pthread_mutex_unlock(&cb->dnn_lock);
    return d;
}

/* Copies FP32 host data to a new device buffer of element type dt
 * (FP16: converted on the device through a temporary FP32 buffer). */
static enum rt_status upload(struct cuda_backend *cb, cudaStream_t st, const void *host, size_t elems,
                             enum kcuda_dtype dt, void **out, struct rt_error *err)
{
    size_t bytes = elems * sizeof(float);
    void *tmp = NULL;
    cudaError_t e = cudaMalloc(out, elems * kcuda_dtype_size(dt) + 16);
    if (e != cudaSuccess)
        *out = NULL;
    if (e == cudaSuccess && dt != KCUDA_F32)
        e = cudaMalloc(&tmp, bytes + 16);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(dt == KCUDA_F32 ? *out : tmp, host, bytes, cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess && tmp)
        e = kcuda_convert((int64_t)elems, KCUDA_F32, tmp, dt, *out, st);
    if (e == cudaSuccess && tmp)
        e = cudaStreamSynchronize(st);   /* before tmp goes */
    cudaFree(tmp);
    return e == cudaSuccess ? RT_OK : cuda_fail(cb, e, "upload", err);
}

static void cuda_release_step(struct rt_backend *b, struct rt_step *s)
{
    struct cuda_backend *cb = b->ctx;
    struct cuda_step_prep *pr = s->prep;
    if (!pr)
        return;
    for (int i = 0; i < cb->n_dev; i++) {
        if (cudaSetDevice(cb->dev[i]) != cudaSuccess)
            continue;
        cudaFree(pr->dev[i].w);
        cudaFree(pr->dev[i].table);
        cudaFree(pr->dev[i].bias);
    }
    cuda_q8_release_host(pr);
    free(pr);
    s->prep = NULL;
}

/* Uploads one step's host data to device slot i. */
static enum rt_status prepare_on(struct cuda_backend *cb, int i, const struct rt_step *s, enum kcuda_dtype dt,
                                 const float *w, size_t w_elems, const void *table, size_t table_bytes,
                                 struct cuda_step_prep *pr, struct rt_error *err)
{
    const struct rt_weight *bias = &s->node->w[RT_W_BIAS];
    CUDA_CHECK(cb, cudaSetDevice(cb->dev[i]), err);
    cudaStream_t st;
    CUDA_CHECK(cb, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), err);
    /* batch-norm scale and shift stay FP32, like every bias */
    enum kcuda_dtype wdt = s->op == RT_OP_BATCH_NORM ? KCUDA_F32 : dt;
    enum rt_status r = upload(cb, st, w, w_elems, wdt, &pr->dev[i].w, err);
    if (r == RT_OK && table)
        r = upload(cb, st, table, table_bytes / sizeof(float), KCUDA_F32, &pr->dev[i].table, err);   /* raw bytes */
    if (r == RT_OK && bias->data)
        r = upload(cb, st, bias->data, (size_t)bias->shape.dims[0], KCUDA_F32, (void **)&pr->dev[i].bias, err);
    cudaError_t e = cudaStreamSynchronize(st);
    if (r == RT_OK && e != cudaSuccess)
        r = cuda_fail(cb, e, "cudaStreamSynchronize", err);
    cudaStreamDestroy(st);
    return r;
}

static enum rt_status cuda_prepare_step(struct rt_backend *b, const struct rt_plan *p, struct rt_step *s,
                                        int max_batch, struct rt_error *err)
{
    struct cuda_backend *cb = b->ctx;
    if (s->q8) {
        struct cuda_step_prep *pr = calloc(1, sizeof(*pr));
        if (!pr)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        s->prep = pr;
        enum rt_status r = cuda_q8_prepare(cb, p, s, pr, err);
        if (r != RT_OK) {
            cuda_release_step(b, s);
            rt_error_prefix(err, "node '%s'", s->node->name);
        }
        return r;
    }
    bool x_nhwc, y_nhwc;
    enum rt_status r = cuda_step_layouts(cb, p, s, &x_nhwc, &y_nhwc, err);
    if (r != RT_OK)
        return r;
    /* a binary step's constant operand travels like weights (in the model's type) */
    bool weights = s->op == RT_OP_CONV2D || s->op == RT_OP_LINEAR || s->op == RT_OP_BATCH_NORM ||
                   (s->op == RT_OP_BINARY && s->node->w[RT_W_WEIGHT].data);
    if (!weights && !x_nhwc && !y_nhwc)
        return RT_OK;
    struct cuda_step_prep *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    pr->x_nhwc = x_nhwc;
    pr->y_nhwc = y_nhwc;
    s->prep = pr;
    if (!weights)
        return RT_OK;
    enum kcuda_dtype dt = plan_dtype(p);
    const struct rt_weight *wt = &s->node->w[RT_W_WEIGHT];
    const float *host = wt->data;
    size_t elems = 1, table_bytes = 0;
    for (int d = 0; d < wt->shape.rank; d++)
        elems *= (size_t)wt->shape.dims[d];
    float *packed = NULL;
    void *table = NULL;
    if (s->op == RT_OP_CONV2D) {
        const struct k_conv2d *k = &s->k.conv;
        bool want_dnn = p->cfg && p->cfg->conv_engine == RT_CONV_ENGINE_CUDNN;
        pr->cudnn = want_dnn && backend_dnn(cb) && cuda_dnn_conv_ok(s);
        if (!pr->cudnn) {
            elems = kcuda_conv2d_packed_elems(k);
            table_bytes = kcuda_conv2d_table_bytes(k);
            packed = malloc(elems * sizeof(float));
            table = malloc(table_bytes);
            if (packed && table)
                kcuda_conv2d_pack(k, x_nhwc ? KCUDA_NHWC : KCUDA_NCHW, host, packed, table);
            host = packed;
        }
    } else if (s->op == RT_OP_LINEAR) {
        elems = kcuda_linear_packed_elems(&s->k.linear);
        packed = malloc(elems * sizeof(float));
        if (packed)
            kcuda_linear_pack(&s->k.linear, host, packed);
        host = packed;
    }
    if (!host || (table_bytes && !table))
        r = rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
    for (int i = 0; i < cb->n_dev && r == RT_OK; i++)
        r = prepare_on(cb, i, s, dt, host, elems, table, table_bytes, pr, err);
    free(packed);
    free(table);
    if (r != RT_OK) {
        cuda_release_step(b, s);
        rt_error_prefix(err, "node '%s'", s->node->name);
    }
    return r;
}

/* ------------------------------------------------------------------ sessions */

static void cuda_session_free(void *ctx)
{
    struct cuda_session *cs = ctx;
    if (!cs)
        return;
    if (cudaSetDevice(cs->device) == cudaSuccess) {
        if (cs->stream)
            cudaStreamSynchronize(cs->stream);
        cuda_graph_cache_release(&cs->graphs);   /* before the span's events, which they record */
        cuda_span_release(cs);
        cuda_dnn_session_free(cs);
        cuda_profile_set(cs, 0, NULL);
        cudaFree(cs->arena);
        cudaFree(cs->dstage);
        cudaFreeHost(cs->pinned);
        if (cs->stream)
            cudaStreamDestroy(cs->stream);
    }
    kcpu_threads_free(cs->copiers);
    free(cs->ops);
    free(cs);
}

/* Staging bytes for all model inputs and outputs at max_batch. */
static size_t stage_bytes(const struct rt_plan *p, int max_batch, int *edges)
{
    size_t total = 0;
    *edges = 0;
    for (int t = 0; t < p->g->n_tensors; t++) {
        const struct rt_tensor *x = &p->g->tensors[t];
        int uses = (x->input_index >= 0) + (x->output_index >= 0);
        size_t bytes = (size_t)x->sample_elems * sizeof(float) * (size_t)max_batch;
        total += (size_t)uses * ((bytes + CUDA_STAGE_ALIGN - 1) / CUDA_STAGE_ALIGN * CUDA_STAGE_ALIGN);
        *edges += uses;
    }
    return total;
}

static enum rt_status session_init(struct cuda_session *cs, const struct rt_plan *p, int max_batch,
                                   size_t arena_bytes, struct rt_error *err)
{
    struct cuda_backend *cb = cs->cb;
    int edges;
    cs->stage_bytes = stage_bytes(p, max_batch, &edges);
    cs->cap_ops = edges + 3 * p->n_steps;   /* each step, and two profile marks around it */
    cs->ops = calloc((size_t)cs->cap_ops, sizeof(*cs->ops));
    if (!cs->ops)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    CUDA_CHECK(cb, cudaSetDevice(cs->device), err);
    /* non-blocking: no implicit synchronisation with the legacy stream, which
     * would break another session's graph capture */
    CUDA_CHECK(cb, cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking), err);
    CUDA_CHECK(cb, cudaMalloc((void **)&cs->arena, arena_bytes ? arena_bytes : RT_ARENA_ALIGN), err);
    CUDA_CHECK(cb, cudaHostAlloc((void **)&cs->pinned, cs->stage_bytes, cudaHostAllocDefault), err);
    /* no copy threads where no copy can be large enough to split (lenet5's) */
    if (cb->copy_threads > 1 && cs->stage_bytes >= KCPU_COPY_SPLIT_BYTES &&
        !(cs->copiers = kcpu_threads_create(cb->copy_threads)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "could not start %d staging copy threads", cb->copy_threads);
    if (cs->dt == KCUDA_F16)
        CUDA_CHECK(cb, cudaMalloc((void **)&cs->dstage, cs->stage_bytes), err);
    for (int i = 0; i < p->n_steps; i++) {
        const struct cuda_step_prep *pr = p->steps[i].prep;
        if (pr && pr->cudnn)
            return cuda_dnn_session_create(cs, max_batch, err);
    }
    return RT_OK;
}

static enum rt_status cuda_session_create(struct rt_backend *b, const struct rt_plan *p, int max_batch,
                                          size_t arena_bytes, void **out, struct rt_error *err)
{
    struct cuda_backend *cb = b->ctx;
    if (__atomic_load_n(&cb->poisoned, __ATOMIC_ACQUIRE))
        return rt_error_set(err, RT_ERR_DEVICE, "an earlier CUDA error left the GPU context unusable");
    struct cuda_session *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    cs->cb = cb;
    cs->plan = p;
    cs->slot = (int)(__atomic_fetch_add(&cb->next_slot, 1, __ATOMIC_RELAXED) % (unsigned)cb->n_dev);
    cs->device = cb->dev[cs->slot];
    cs->dt = plan_dtype(p);
    cs->graphs = (struct cuda_graph_cache){.api = &CUDA_GRAPH_API_RUNTIME, .enabled = cb->graphs};
    enum rt_status s = session_init(cs, p, max_batch, arena_bytes, err);
    if (s != RT_OK) {
        cuda_session_free(cs);
        return s;
    }
    *out = cs;
    return RT_OK;
}

static void *cuda_session_arena(void *ctx) { return ((struct cuda_session *)ctx)->arena; }

static int cuda_device_count(const struct rt_backend *b)
{
    return ((const struct cuda_backend *)b->ctx)->n_dev;
}

static bool cuda_device_info(const struct rt_backend *b, int i, struct rt_device_info *out)
{
    const struct cuda_backend *cb = b->ctx;
    out->id = cb->dev[i];
    return rt_gpu_info(cb->dev[i], &out->used_bytes, &out->total_bytes, &out->util_percent);
}

static const struct rt_backend_iface CUDA_IFACE = {
    .name = "cuda",
    .device_kind = RT_DEVICE_GPU,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .free = cuda_free_backend,
    .supports_step = cuda_supports_step,
    .prepare_step = cuda_prepare_step,
    .release_step = cuda_release_step,
    .session_create = cuda_session_create,
    .session_free = cuda_session_free,
    .session_arena = cuda_session_arena,
    .copy_in = cuda_exec_copy_in,
    .copy_out = cuda_exec_copy_out,
    .run_step = cuda_exec_run_step,
    .sync = cuda_exec_sync,
    .profile_set = cuda_profile_set,
    .profile_mark = cuda_exec_profile_mark,
    .profile_read = cuda_profile_read,
    .device_time_set = cuda_span_set,
    .device_time_read = cuda_span_read,
    .describe_step = cuda_describe_step,
    .measure_rates = cuda_measure_rates,
};

/* Makes device d current, creates its context and prepares the kernels;
 * false with the reason in why when it cannot serve. */
static bool device_usable(int d, struct cudaDeviceProp *prop, char *why, size_t why_len)
{
    cudaError_t e = cudaGetDeviceProperties(prop, d);
    if (e == cudaSuccess && prop->major * 10 + prop->minor < INFERD_CUDA_MIN_SM) {
        snprintf(why, why_len, "device %d (%s) is sm_%d%d; this build's oldest target is sm_%d", d, prop->name,
                 prop->major, prop->minor, INFERD_CUDA_MIN_SM);
        return false;
    }
    if (e == cudaSuccess)
        e = cudaSetDevice(d);
    if (e == cudaSuccess)
        e = cudaFree(NULL);   /* creates the context now, not on the first request */
    if (e == cudaSuccess)
        e = kcuda_init();
    if (e != cudaSuccess) {
        snprintf(why, why_len, "device %d: %s", d, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

enum rt_status rt_backend_cuda_create(const struct rt_backend_options *opt, struct rt_backend **out,
                                      struct rt_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return rt_error_set(err, RT_ERR_UNAVAILABLE, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    if (count < 1)
        return rt_error_set(err, RT_ERR_UNAVAILABLE, "no CUDA device is present");
    if (opt->device >= count)
        return rt_error_set(err, RT_ERR_UNAVAILABLE, "CUDA device %d asked for; %d present", opt->device, count);
    struct rt_backend *b = calloc(1, sizeof(*b));
    struct cuda_backend *cb = calloc(1, sizeof(*cb));
    if (!b || !cb) {
        free(b);
        free(cb);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    char why[160] = "";
    struct cudaDeviceProp prop, first;
    memset(&first, 0, sizeof(first));
    int lo = opt->device >= 0 ? opt->device : 0, hi = opt->device >= 0 ? opt->device : count - 1;
    for (int d = lo; d <= hi && cb->n_dev < CUDA_MAX_DEVICES; d++) {
        if (!device_usable(d, &prop, why, sizeof(why)))
            continue;
        if (cb->n_dev == 0)
            first = prop;
        cb->sm[cb->n_dev] = prop.major * 10 + prop.minor;
        cb->sms[cb->n_dev] = prop.multiProcessorCount;
        cb->dev[cb->n_dev++] = d;
    }
    if (cb->n_dev == 0) {
        free(cb);
        free(b);
        return rt_error_set(err, RT_ERR_UNAVAILABLE, "%s", why);
    }
    cb->graphs = opt->cuda_graphs != RT_CUDA_GRAPHS_OFF;
    cb->baseline = opt->cuda_kernels == RT_CUDA_KERNELS_BASELINE;
    /* Staging copies gain little past the memory's bandwidth: 8 threads
     * unless asked (the server asks for half the cores). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cb->copy_threads = opt->threads > 0 ? opt->threads : cores > 8 ? 8 : cores > 1 ? (int)cores : 1;
    if (cb->copy_threads > 16)
        cb->copy_threads = 16;
    pthread_mutex_init(&cb->dnn_lock, NULL);
    b->iface = &CUDA_IFACE;
    b->ctx = cb;
    snprintf(b->description, sizeof(b->description), "cuda (%.60s, sm_%d%d, %d device%s, %d copy thread%s%s%s)",
             first.name, first.major, first.minor, cb->n_dev, cb->n_dev > 1 ? "s" : "", cb->copy_threads,
             cb->copy_threads > 1 ? "s" : "", cb->graphs ? "" : ", graphs off",
             cb->baseline ? ", baseline kernels" : "");
    *out = b;
    return RT_OK;
}
