/*
 * backend_cuda_cudnn.c - convolutions through cuDNN, for models whose
 * model.json says "conv_engine": "cudnn", so the two engines can be compared
 * on one model.
 *
 * libcudnn is opened with dlopen when the backend starts: a machine with the
 * NVIDIA driver but no cuDNN still runs, on inferd's kernels. The legacy
 * convolution API is used (cudnnConvolutionForward, heuristics from
 * cudnnGetConvolutionForwardAlgorithm_v7, which run on the host, so a graph
 * capture can include them). Each session has its own handle on its stream
 * and one workspace sized at session creation for the largest batch; the
 * algorithm is chosen per step and batch size among those that fit it.
 * FP32 convolutions ask for FMA math (no TF32: results must match the CPU
 * within 1e-5); FP16 ones for tensor cores with FP32 accumulation. Only
 * GEMM-family and direct algorithms are taken (cuda_dnn_algo_allowed). An
 * algorithm the heuristics offer can still be refused when run (the first
 * GPU run saw CUDNN_STATUS_BAD_PARAM for ResNet-50 FP16 at batch 256): the
 * step then runs the next one offered, and says so on stderr.
 *
 * FP16 rounds twice per convolution here: cuDNN writes the convolution in
 * half, then kcuda_bias_act adds bias and residual and rounds again, where
 * inferd's kernels and the CPU's FP16 path round once. The FP16 model checks
 * count two roundings for such a step (tests/fp16_bound.h).
 */
#include "runtime/backend/backend_cuda_impl.h"

#if __has_include(<cudnn.h>)

#include <cudnn.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define DNN_WORKSPACE_CAP ((size_t)256 << 20)

#define DNN_FUNCS(X)                                                                                     \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)           \
    X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor)          \
    X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor)          \
    X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)                              \
    X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)   \
    X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnConvolutionForward)

struct cuda_dnn {
    void *lib;
#define DNN_FIELD(name) __typeof__(name) *name; // NOLINT(bugprone-macro-parentheses): name is the declarator
    DNN_FUNCS(DNN_FIELD)
#undef DNN_FIELD
};

struct cuda_dnn_session {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    void *ws;
    size_t ws_bytes;
    struct {
        int batch;
        cudnnConvolutionFwdAlgo_t algo;
        unsigned refused;                 /* 1 << algo for each that failed at this batch */
    } *algo;                              /* per plan step: the last choice */
};

static enum rt_status dnn_fail(const struct cuda_dnn *d, cudnnStatus_t s, const char *what, struct rt_error *err)
{
    return rt_error_set(err, RT_ERR_DEVICE, "cuDNN error in %s: %s", what, d->cudnnGetErrorString(s));
}

#define DNN_CHECK(d, call, err)                                              \
    do {                                                                     \
        cudnnStatus_t s_ = (d)->call;                                        \
        if (s_ != CUDNN_STATUS_SUCCESS)                                      \
            return dnn_fail((d), s_, #call, (err));                          \
    } while (0)

/* Describes convolution k (batch k->n) in the session's descriptors. */
static enum rt_status set_descriptors(const struct cuda_dnn *d, struct cuda_dnn_session *ds,
                                      const struct k_conv2d *k, enum kcuda_dtype dt, struct rt_error *err)
{
    cudnnDataType_t t = dt == KCUDA_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    DNN_CHECK(d, cudnnSetTensor4dDescriptor(ds->xd, CUDNN_TENSOR_NCHW, t, k->n, k->c, k->h, k->w), err);
    DNN_CHECK(d, cudnnSetTensor4dDescriptor(ds->yd, CUDNN_TENSOR_NCHW, t, k->n, k->oc, k->oh, k->ow), err);
    DNN_CHECK(d, cudnnSetFilter4dDescriptor(ds->wd, t, CUDNN_TENSOR_NCHW, k->oc, k->c / k->groups, k->kh, k->kw), err);
    DNN_CHECK(d, cudnnSetConvolution2dDescriptor(ds->cd, k->pad_t, k->pad_l, k->stride_h, k->stride_w, k->dil_h,
                                                 k->dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), err);
    DNN_CHECK(d, cudnnSetConvolutionGroupCount(ds->cd, k->groups), err);
    DNN_CHECK(d, cudnnSetConvolutionMathType(ds->cd, dt == KCUDA_F16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), err);
    return RT_OK;
}

bool cuda_dnn_algo_allowed(enum kcuda_dtype dt, int algo, int math_type)
{
    /* Winograd and FFT transform the operands first: their error grows with
     * the transform, beyond FP32's 1e-5 and FP16's one-rounding-per-step
     * bound. The GEMM family and direct convolution sum products in FP32. */
    switch ((cudnnConvolutionFwdAlgo_t)algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
        break;
    default:
        return false;
    }
    /* tensor cores on FP32 data would mean TF32 (10-bit mantissas) */
    bool tensor_op = math_type == CUDNN_TENSOR_OP_MATH || math_type == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    return dt == KCUDA_F16 || !tensor_op;
}

int cuda_dnn_pick(const struct cuda_dnn_candidate *c, int n, enum kcuda_dtype dt, size_t limit, unsigned refused)
{
    for (int i = 0; i < n; i++) {
        bool was_refused = c[i].algo >= 0 && c[i].algo < 32 && (refused >> c[i].algo & 1u);
        if (c[i].usable && c[i].memory <= limit && !was_refused &&
            cuda_dnn_algo_allowed(dt, c[i].algo, c[i].math_type))
            return i;
    }
    return -1;
}

/* The heuristics' best algorithm needing at most `limit` workspace bytes,
 * other than those in `refused` (cuda_dnn_pick). */
static enum rt_status pick_algo(const struct cuda_dnn *d, struct cuda_dnn_session *ds, enum kcuda_dtype dt,
                                size_t limit, unsigned refused, cudnnConvolutionFwdAlgo_t *algo, size_t *bytes,
                                struct rt_error *err)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    struct cuda_dnn_candidate c[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    DNN_CHECK(d, cudnnGetConvolutionForwardAlgorithm_v7(ds->h, ds->xd, ds->wd, ds->cd, ds->yd,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf), err);
    for (int i = 0; i < n; i++)
        c[i] = (struct cuda_dnn_candidate){.algo = (int)perf[i].algo, .math_type = (int)perf[i].mathType,
                                           .usable = perf[i].status == CUDNN_STATUS_SUCCESS,
                                           .memory = perf[i].memory};
    int i = cuda_dnn_pick(c, n, dt, limit, refused);
    if (i < 0)
        return rt_error_set(err, RT_ERR_UNSUPPORTED,
                            "cuDNN offers no algorithm for this convolution within %zu bytes%s", limit,
                            refused ? " that it does not refuse" : "");
    *algo = perf[i].algo;
    *bytes = perf[i].memory;
    return RT_OK;
}

static void dnn_session_destroy(const struct cuda_dnn *d, struct cuda_dnn_session *ds)
{
    if (ds->cd)
        d->cudnnDestroyConvolutionDescriptor(ds->cd);
    if (ds->wd)
        d->cudnnDestroyFilterDescriptor(ds->wd);
    if (ds->yd)
        d->cudnnDestroyTensorDescriptor(ds->yd);
    if (ds->xd)
        d->cudnnDestroyTensorDescriptor(ds->xd);
    if (ds->h)
        d->cudnnDestroy(ds->h);
    cudaFree(ds->ws);
    free(ds->algo);
    free(ds);
}

static enum rt_status dnn_session_init(const struct cuda_dnn *d, struct cuda_dnn_session *ds, cudaStream_t st,
                                       struct rt_error *err)
{
    DNN_CHECK(d, cudnnCreate(&ds->h), err);
    DNN_CHECK(d, cudnnSetStream(ds->h, st), err);
    DNN_CHECK(d, cudnnCreateTensorDescriptor(&ds->xd), err);
    DNN_CHECK(d, cudnnCreateTensorDescriptor(&ds->yd), err);
    DNN_CHECK(d, cudnnCreateFilterDescriptor(&ds->wd), err);
    DNN_CHECK(d, cudnnCreateConvolutionDescriptor(&ds->cd), err);
    return RT_OK;
}

struct cuda_dnn *cuda_dnn_load(char *why, size_t why_len)
{
    struct cuda_dnn *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    d->lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!d->lib)
        d->lib = dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        snprintf(why, why_len, "libcudnn.so.9 could not be loaded");
        free(d);
        return NULL;
    }
    const char *missing = NULL;
#define DNN_SYM(name)                                      \
    if (!missing && !(d->name = (__typeof__(name) *)dlsym(d->lib, #name))) \
        missing = #name;
    DNN_FUNCS(DNN_SYM)
#undef DNN_SYM
    if (missing || d->cudnnGetVersion() / 10000 != CUDNN_MAJOR) {
        if (missing)
            snprintf(why, why_len, "libcudnn lacks %s", missing);
        else
            snprintf(why, why_len, "libcudnn is version %zu; this build needs %d.x", d->cudnnGetVersion(),
                     CUDNN_MAJOR);
        cuda_dnn_unload(d);
        return NULL;
    }
    /* Probe once on the current device: cuDNN 9 loads its sub-libraries on
     * first use, and a missing one should mean "no cuDNN", not a failed run. */
    struct cuda_dnn_session *probe = calloc(1, sizeof(*probe));
    struct rt_error err = {0};
    struct k_conv2d k = {.n = 1, .c = 4, .h = 4, .w = 4, .oc = 4, .oh = 4, .ow = 4, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    cudnnConvolutionFwdAlgo_t algo;
    size_t bytes;
    enum rt_status s = probe ? RT_OK : RT_ERR_NO_MEMORY;
    if (s == RT_OK && (s = dnn_session_init(d, probe, 0, &err)) == RT_OK &&
        (s = set_descriptors(d, probe, &k, KCUDA_F32, &err)) == RT_OK)
        s = pick_algo(d, probe, KCUDA_F32, DNN_WORKSPACE_CAP, 0, &algo, &bytes, &err);
    if (probe)
        dnn_session_destroy(d, probe);
    if (s != RT_OK) {
        snprintf(why, why_len, "cuDNN does not work here (%s)", err.msg);
        cuda_dnn_unload(d);
        return NULL;
    }
    return d;
}

void cuda_dnn_unload(struct cuda_dnn *d)
{
    if (!d)
        return;
    dlclose(d->lib);
    free(d);
}

void cuda_dnn_describe(const struct cuda_dnn *d, char *out, size_t cap)
{
    size_t v = d->cudnnGetVersion();
    snprintf(out, cap, "cuDNN %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

bool cuda_dnn_conv_ok(const struct rt_step *s)
{
    const struct rt_conv_attrs *a = &s->node->a.conv;
    return a->pad[0] == a->pad[2] && a->pad[1] == a->pad[3];
}

enum rt_status cuda_dnn_session_create(struct cuda_session *cs, int max_batch, struct rt_error *err)
{
    const struct cuda_dnn *d = cs->cb->dnn;
    const struct rt_plan *p = cs->plan;
    struct cuda_dnn_session *ds = calloc(1, sizeof(*ds));
    if (ds)
        ds->algo = calloc((size_t)p->n_steps, sizeof(*ds->algo));
    if (!ds || !ds->algo) {
        free(ds);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    cs->dnn = ds;
    enum rt_status r = dnn_session_init(d, ds, cs->stream, err);
    for (int i = 0; i < p->n_steps && r == RT_OK; i++) {
        const struct cuda_step_prep *pr = p->steps[i].prep;
        if (!pr || !pr->cudnn)
            continue;
        struct k_conv2d k = rt_step_params(&p->steps[i], max_batch).conv;
        cudnnConvolutionFwdAlgo_t algo;
        size_t bytes = 0;
        if ((r = set_descriptors(d, ds, &k, cs->dt, err)) == RT_OK &&
            (r = pick_algo(d, ds, cs->dt, DNN_WORKSPACE_CAP, 0, &algo, &bytes, err)) == RT_OK &&
            bytes > ds->ws_bytes)
            ds->ws_bytes = bytes;
    }
    if (r == RT_OK && ds->ws_bytes > 0)
        CUDA_CHECK(cs->cb, cudaMalloc(&ds->ws, ds->ws_bytes), err);
    return r;
}

void cuda_dnn_session_free(struct cuda_session *cs)
{
    if (cs->dnn)
        dnn_session_destroy(cs->cb->dnn, cs->dnn);
    cs->dnn = NULL;
}

/* Describes step i at k->n and picks its algorithm unless cached. */
static enum rt_status choose(struct cuda_session *cs, int i, const struct k_conv2d *k, struct rt_error *err)
{
    const struct cuda_dnn *d = cs->cb->dnn;
    struct cuda_dnn_session *ds = cs->dnn;
    enum rt_status r = set_descriptors(d, ds, k, cs->dt, err);
    if (r == RT_OK && ds->algo[i].batch != k->n) {
        size_t bytes;
        ds->algo[i].refused = 0;
        r = pick_algo(d, ds, cs->dt, ds->ws_bytes, 0, &ds->algo[i].algo, &bytes, err);
        ds->algo[i].batch = r == RT_OK ? k->n : 0;
    }
    return r;
}

enum rt_status cuda_dnn_choose(struct cuda_session *cs, int batch, struct rt_error *err)
{
    const struct rt_plan *p = cs->plan;
    enum rt_status r = RT_OK;
    for (int i = 0; i < p->n_steps && r == RT_OK; i++) {
        const struct cuda_step_prep *pr = p->steps[i].prep;
        if (pr && pr->cudnn) {
            struct k_conv2d k = rt_step_params(&p->steps[i], batch).conv;
            r = choose(cs, i, &k, err);
        }
    }
    return r;
}

/* Whether cudnnConvolutionForward's status means this algorithm refused
 * these operands (another may take them), not a broken device or call. */
static bool algo_refused(cudnnStatus_t st)
{
    return st == CUDNN_STATUS_BAD_PARAM || st == CUDNN_STATUS_NOT_SUPPORTED;
}

enum rt_status cuda_dnn_conv(struct cuda_session *cs, const struct rt_step *s, const struct k_conv2d *k,
                             const void *x, const void *w, void *y, struct rt_error *err)
{
    const struct cuda_dnn *d = cs->cb->dnn;
    struct cuda_dnn_session *ds = cs->dnn;
    int i = (int)(s - cs->plan->steps);
    enum rt_status r = choose(cs, i, k, err);
    const float one = 1.0f, zero = 0.0f;
    while (r == RT_OK) {
        cudnnConvolutionFwdAlgo_t algo = ds->algo[i].algo;
        cudnnStatus_t st = d->cudnnConvolutionForward(ds->h, &one, ds->xd, x, ds->wd, w, ds->cd, algo, ds->ws,
                                                      ds->ws_bytes, &zero, ds->yd, y);
        if (st == CUDNN_STATUS_SUCCESS)
            return RT_OK;
        if (!algo_refused(st) || (unsigned)algo >= 32)
            return rt_error_set(err, RT_ERR_DEVICE,
                                "cuDNN error in cudnnConvolutionForward (step '%s', x %dx%dx%dx%d, w %dx%dx%dx%d, "
                                "algorithm %d): %s", s->node->name, k->n, k->c, k->h, k->w, k->oc,
                                k->c / k->groups, k->kh, k->kw, (int)algo, d->cudnnGetErrorString(st));
        fprintf(stderr, "inferd: cuDNN refused algorithm %d for step '%s' at batch %d (%s); trying the next\n",
                (int)algo, s->node->name, k->n, d->cudnnGetErrorString(st));
        ds->algo[i].refused |= 1u << algo;
        size_t bytes;
        r = pick_algo(d, ds, cs->dt, ds->ws_bytes, ds->algo[i].refused, &ds->algo[i].algo, &bytes, err);
        if (r != RT_OK)
            rt_error_prefix(err, "step '%s' at batch %d", s->node->name, k->n);
    }
    return r;
}

#else /* no cuDNN headers at build time: the engine is never available */

bool cuda_dnn_algo_allowed(enum kcuda_dtype dt, int algo, int math_type) { return false; }
int cuda_dnn_pick(const struct cuda_dnn_candidate *c, int n, enum kcuda_dtype dt, size_t limit, unsigned refused)
{
    return -1;
}

struct cuda_dnn *cuda_dnn_load(char *why, size_t why_len)
{
    snprintf(why, why_len, "this build found no cudnn.h");
    return NULL;
}

void cuda_dnn_unload(struct cuda_dnn *d) { (void)d; }
void cuda_dnn_describe(const struct cuda_dnn *d, char *out, size_t cap) { snprintf(out, cap, "no cuDNN"); }
bool cuda_dnn_conv_ok(const struct rt_step *s) { return false; }
enum rt_status cuda_dnn_session_create(struct cuda_session *cs, int max_batch, struct rt_error *err)
{
    return rt_error_set(err, RT_ERR_INTERNAL, "cuDNN is not compiled in");
}
void cuda_dnn_session_free(struct cuda_session *cs) { (void)cs; }
enum rt_status cuda_dnn_choose(struct cuda_session *cs, int batch, struct rt_error *err) { return RT_OK; }
enum rt_status cuda_dnn_conv(struct cuda_session *cs, const struct rt_step *s, const struct k_conv2d *k,
                             const void *x, const void *w, void *y, struct rt_error *err)
{
    return rt_error_set(err, RT_ERR_INTERNAL, "cuDNN is not compiled in");
}

#endif
