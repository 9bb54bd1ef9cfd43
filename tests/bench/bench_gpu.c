/*
 * bench_gpu.c - GPU benchmarks, each figure a ratio against a peer measured
 * in the same run on the same device:
 *
 *   1. our FP16 GEMM (kcuda_linear) against cuBLAS (cublasGemmEx, FP16 in and
 *      out, FP32 accumulation) at 4096^3 and at the GEMM shapes of the shipped
 *      models' layers at batch 256: TFLOP/s from CUDA events, median of
 *      --repeats timed loops after a warm-up, operands rotated through more
 *      memory than L2 holds;
 *   1b. INT8 GEMM at the same shapes: our IMMA kernel (kcuda_linear_q8_mma,
 *      sm_80 and later) against our dp4a baseline (kcuda_linear_q8), cuBLAS
 *      INT8 (cublasGemmEx, s8 in, s32 out, TN: IMMA where cuBLAS supports
 *      the shape) and our FP16 GEMM of 1. TOP/s; the int32 outputs (zero
 *      bias, out_i32) of all three compared bit for bit;
 *   2. the shipped models through the CUDA backend (rt_session_run, host
 *      memory to host memory, CUDA graphs on) at batch 1, 8, 64, 256 and
 *      1024, FP32 and FP16, our convolutions and cuDNN's: images/s and
 *      latency per call, median of --repeats windows of 0.2 s;
 *   3. PyTorch on the same weights and batches (models/bench_torch_gpu.py:
 *      eager with cudnn.benchmark, CUDA graphs), then the goals.
 *
 *   build/bench_gpu [--repeats R] [--no-torch] [--python PYTHON] [--skip-models]
 *
 * cuBLAS is opened with dlopen (libcublas.so.13 or .12), as the GPU machine
 * provides it; the rest needs only the NVIDIA driver.
 */
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "kernels/cuda/kcuda.h"
#include "tests/model_variant.h"
#include "runtime/rt_model.h"

#define MAX_REPEATS 31
#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static int repeats = 7;
static int device_sms;   /* the device's SM count: our GEMM's tile choice (kcuda_gemm_plan) */

/* ------------------------------------------------------------------ cuBLAS */

static struct {
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasGemmEx) *gemm;
} blas;

static bool blas_load(void)
{
    static const char *const NAMES[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void *lib = NULL;
    for (int i = 0; i < 3 && !lib; i++)
        lib = dlopen(NAMES[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    *(void **)&blas.create = dlsym(lib, "cublasCreate_v2");
    *(void **)&blas.set_stream = dlsym(lib, "cublasSetStream_v2");
    *(void **)&blas.gemm = dlsym(lib, "cublasGemmEx");
    return blas.create && blas.set_stream && blas.gemm;
}

/* ------------------------------------------------------------------ GEMM */

struct gemm_shape {
    const char *name;
    int m, n, k;   /* y[m, n] = x[m, k] . w[n, k]^T (a linear layer: m = rows, n = features) */
};

/* Milliseconds per call of f, from CUDA events: median over repeats of a
 * loop of iters calls, after a warm-up. */
typedef cudaError_t (*gemm_fn)(void *ctx, int rot);
static double time_ms(gemm_fn f, void *ctx, int rotations, int iters, cudaStream_t st)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++)
        CHECK(f(ctx, i % rotations));
    double ms[MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        CHECK(cudaEventRecord(a, st));
        for (int i = 0; i < iters; i++)
            CHECK(f(ctx, i % rotations));
        CHECK(cudaEventRecord(b, st));
        CHECK(cudaEventSynchronize(b));
        float t;
        CHECK(cudaEventElapsedTime(&t, a, b));
        ms[r] = (double)t / iters;
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return bench_median(ms, repeats);
}

struct gemm_ctx {
    struct k_linear p;
    void **x, **wp, **wt;   /* per rotation: input, our packed weights, plain weights (cuBLAS) */
    void *y;
    cudaStream_t st;
    cublasHandle_t h;
};

static cudaError_t run_ours(void *c, int r)
{
    struct gemm_ctx *g = c;
    return kcuda_linear(&g->p, device_sms, KCUDA_F16, g->x[r], g->wp[r], NULL, NULL, g->y, g->st);
}

static cudaError_t run_cublas(void *c, int r)
{
    struct gemm_ctx *g = c;
    const float one = 1.0f, zero = 0.0f;
    /* column-major view: y^T[n, m] = w[n, k] . x^T[k, m] */
    cublasStatus_t s = blas.gemm(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->p.m, g->p.n, g->p.k, &one, g->wt[r], CUDA_R_16F,
                                 g->p.k, g->x[r], CUDA_R_16F, g->p.k, &zero, g->y, CUDA_R_16F, g->p.m,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

static void *upload_half(const float *h, size_t n)
{
    void *f32, *f16;
    CHECK(cudaMalloc(&f32, n * 4));
    CHECK(cudaMalloc(&f16, n * 2));
    CHECK(cudaMemcpy(f32, h, n * 4, cudaMemcpyHostToDevice));
    CHECK(kcuda_convert((int64_t)n, KCUDA_F32, f32, KCUDA_F16, f16, 0));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(f32));
    return f16;
}

/* Relative difference of our output and cuBLAS's (both FP16) over y. */
static double compare_outputs(struct gemm_ctx *g, size_t n)
{
    void *ours, *theirs;
    CHECK(cudaMalloc(&ours, n * 4));
    CHECK(cudaMalloc(&theirs, n * 4));
    CHECK(run_ours(g, 0));
    CHECK(kcuda_convert((int64_t)n, KCUDA_F16, g->y, KCUDA_F32, ours, g->st));
    CHECK(run_cublas(g, 0));
    CHECK(kcuda_convert((int64_t)n, KCUDA_F16, g->y, KCUDA_F32, theirs, g->st));
    float *a = malloc(n * 4), *b = malloc(n * 4);
    CHECK(cudaStreamSynchronize(g->st));
    CHECK(cudaMemcpy(a, ours, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b, theirs, n * 4, cudaMemcpyDeviceToHost));
    double diff = 0, mx = 1e-30;   /* both are y[m][n] row-major (cuBLAS: n x m column-major) */
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs((double)b[i]));
    }
    free(a), free(b);
    CHECK(cudaFree(ours));
    CHECK(cudaFree(theirs));
    return diff / mx;
}

/* Returns our TFLOP/s divided by cuBLAS's; *ours_tflops: ours. */
static double bench_gemm(const struct gemm_shape *s, size_t l2_bytes, cudaStream_t st, cublasHandle_t h,
                         double *ours_tflops)
{
    struct gemm_ctx g = {.p = {s->m, s->k, s->n, K_ACT_NONE}, .st = st, .h = h};
    size_t nx = (size_t)s->m * s->k, nw = (size_t)s->n * s->k, np = kcuda_linear_packed_elems(&g.p);
    size_t set_bytes = (nx + nw + np) * 2;
    int rot = (int)((2 * l2_bytes) / set_bytes) + 1;
    rot = rot > 32 ? 32 : rot;
    g.x = calloc((size_t)rot, sizeof(void *));
    g.wp = calloc((size_t)rot, sizeof(void *));
    g.wt = calloc((size_t)rot, sizeof(void *));
    float *hx = malloc(nx * 4), *hw = malloc(nw * 4), *hp = malloc(np * 4);
    if (!g.x || !g.wp || !g.wt || !hx || !hw || !hp)
        abort();
    srand(7); // NOLINT(cert-msc32-c,cert-msc51-cpp): the same inputs every run
    for (size_t i = 0; i < nx; i++)
        hx[i] = (float)rand() / (float)RAND_MAX - 0.5f; // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    for (size_t i = 0; i < nw; i++)
        hw[i] = (float)rand() / (float)RAND_MAX - 0.5f; // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    kcuda_linear_pack(&g.p, hw, hp);
    for (int r = 0; r < rot; r++) {
        g.x[r] = upload_half(hx, nx);
        g.wp[r] = upload_half(hp, np);
        g.wt[r] = upload_half(hw, nw);
    }
    CHECK(cudaMalloc(&g.y, (size_t)s->m * s->n * 2));
    double flop = 2.0 * s->m * s->n * s->k;
    int iters = (int)(2e11 / flop);   /* about 200 GFLOP per timed loop, 10 to 2000 calls */
    iters = iters < 10 ? 10 : iters > 2000 ? 2000 : iters;
    double err = compare_outputs(&g, (size_t)s->m * s->n);
    double ours = time_ms(run_ours, &g, rot, iters, st), theirs = time_ms(run_cublas, &g, rot, iters, st);
    double r = theirs / ours;
    *ours_tflops = flop / ours * 1e-9;
    printf("%-22s %6d %6d %6d %9.1f %9.1f %7.2f   %.1e\n", s->name, s->m, s->n, s->k, flop / ours * 1e-9,
           flop / theirs * 1e-9, r, err);
    for (int i = 0; i < rot; i++) {
        CHECK(cudaFree(g.x[i]));
        CHECK(cudaFree(g.wp[i]));
        CHECK(cudaFree(g.wt[i]));
    }
    CHECK(cudaFree(g.y));
    free(g.x), free(g.wp), free(g.wt), free(hx), free(hw), free(hp);
    return r;
}

/* ------------------------------------------------------------------ INT8 GEMM */

struct q8_ctx {
    struct k_linear p;
    void **x, **wp, **wt;           /* per rotation: int8 input, packed weights, plain weights (cuBLAS) */
    void *y;                        /* int32 [p.n, p.m] */
    struct k_q8_epilogue e;         /* out_i32 with zero bias: y holds the accumulators */
    cudaStream_t st;
    cublasHandle_t h;
};

static cudaError_t run_q8_mma(void *c, int r)
{
    struct q8_ctx *g = c;
    return kcuda_linear_q8_mma(&g->p, g->x[r], g->wp[r], &g->e, NULL, g->y, g->st);
}

static cudaError_t run_q8_dp4a(void *c, int r)
{
    struct q8_ctx *g = c;
    return kcuda_linear_q8(&g->p, g->x[r], g->wp[r], &g->e, NULL, g->y, g->st);
}

static cudaError_t run_cublas_q8(void *c, int r)
{
    struct q8_ctx *g = c;
    const int32_t one = 1, zero = 0;
    cublasStatus_t s = blas.gemm(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->p.m, g->p.n, g->p.k, &one, g->wt[r], CUDA_R_8I,
                                 g->p.k, g->x[r], CUDA_R_8I, g->p.k, &zero, g->y, CUDA_R_32I, g->p.m,
                                 CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorNotSupported;
}

static void *upload_bytes(const void *h, size_t n)
{
    void *d;
    CHECK(cudaMalloc(&d, n + 16));
    CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    return d;
}

/* y of f(ctx, 0) into host out (n int32); false when f fails (cuBLAS: the
 * shape unsupported). */
static bool q8_output(gemm_fn f, struct q8_ctx *g, int32_t *out, size_t n)
{
    CHECK(cudaMemsetAsync(g->y, 0xa5, n * 4, g->st));
    if (f(g, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    CHECK(cudaStreamSynchronize(g->st));
    CHECK(cudaMemcpy(out, g->y, n * 4, cudaMemcpyDeviceToHost));
    return true;
}

/* One row of the INT8 table; fp16_tflops is our FP16 GEMM's at the shape (0: not measured). */
static void bench_q8(const struct gemm_shape *s, size_t l2_bytes, bool mma, cudaStream_t st, cublasHandle_t h,
                     double fp16_tflops)
{
    struct q8_ctx g = {.p = {s->m, s->k, s->n, K_ACT_NONE}, .st = st, .h = h, .e = {.out_i32 = 1}};
    size_t nx = (size_t)s->m * s->k, nw = (size_t)s->n * s->k, np = kcuda_q8_packed_bytes(s->n, s->k);
    size_t ny = (size_t)s->m * s->n, set_bytes = nx + nw + np;
    int rot = (int)((2 * l2_bytes) / set_bytes) + 1;
    rot = rot > 32 ? 32 : rot;
    g.x = calloc((size_t)rot, sizeof(void *));
    g.wp = calloc((size_t)rot, sizeof(void *));
    g.wt = calloc((size_t)rot, sizeof(void *));
    int8_t *hx = malloc(nx), *hw = malloc(nw), *hp = malloc(np);
    int32_t *bias = calloc((size_t)s->n, sizeof(int32_t));
    struct k_q8_mult *mult = calloc((size_t)s->n, sizeof(*mult));
    int32_t *y_mma = malloc(ny * 4), *y_dp4a = malloc(ny * 4), *y_blas = malloc(ny * 4);
    if (!g.x || !g.wp || !g.wt || !hx || !hw || !hp || !bias || !mult || !y_mma || !y_dp4a || !y_blas)
        abort();
    srand(11); // NOLINT(cert-msc32-c,cert-msc51-cpp): the same inputs every run
    for (size_t i = 0; i < nx; i++)
        hx[i] = (int8_t)(rand() % 255 - 127); // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    for (size_t i = 0; i < nw; i++)
        hw[i] = (int8_t)(rand() % 255 - 127); // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    kcuda_q8_pack(s->n, s->k, hw, hp);
    for (int r = 0; r < rot; r++) {
        g.x[r] = upload_bytes(hx, nx);
        g.wp[r] = upload_bytes(hp, np);
        g.wt[r] = upload_bytes(hw, nw);
    }
    g.e.bias = upload_bytes(bias, (size_t)s->n * sizeof(int32_t));
    g.e.mult = upload_bytes(mult, (size_t)s->n * sizeof(*mult));
    CHECK(cudaMalloc(&g.y, ny * 4));

    double ops = 2.0 * s->m * s->n * s->k;
    int iters = (int)(2e11 / ops);
    iters = iters < 10 ? 10 : iters > 2000 ? 2000 : iters;
    bool have_blas = q8_output(run_cublas_q8, &g, y_blas, ny);
    bool have_mma = mma && q8_output(run_q8_mma, &g, y_mma, ny);
    if (!q8_output(run_q8_dp4a, &g, y_dp4a, ny)) {
        fprintf(stderr, "%s: the dp4a kernel failed\n", s->name);
        exit(1);
    }
    const char *same = "same";
    if (have_mma && memcmp(y_mma, y_dp4a, ny * 4) != 0)
        same = "DIFFER (imma vs dp4a)";
    else if (have_blas && memcmp(y_blas, y_dp4a, ny * 4) != 0)
        same = "DIFFER (cuBLAS vs dp4a)";
    double t_dp4a = time_ms(run_q8_dp4a, &g, rot, iters, st);
    double t_mma = have_mma ? time_ms(run_q8_mma, &g, rot, iters, st) : 0;
    double t_blas = have_blas ? time_ms(run_cublas_q8, &g, rot, iters, st) : 0;
    double top_mma = t_mma > 0 ? ops / t_mma * 1e-9 : 0, top_dp4a = ops / t_dp4a * 1e-9;
    double top_blas = t_blas > 0 ? ops / t_blas * 1e-9 : 0;
    printf("%-22s %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f   %s\n", s->name, top_mma, top_dp4a, top_blas, fp16_tflops,
           top_dp4a > 0 ? top_mma / top_dp4a : 0, top_blas > 0 ? top_mma / top_blas : 0,
           fp16_tflops > 0 ? top_mma / fp16_tflops : 0, same);
    for (int i = 0; i < rot; i++) {
        CHECK(cudaFree(g.x[i]));
        CHECK(cudaFree(g.wp[i]));
        CHECK(cudaFree(g.wt[i]));
    }
    CHECK(cudaFree((void *)g.e.bias));
    CHECK(cudaFree((void *)g.e.mult));
    CHECK(cudaFree(g.y));
    free(g.x), free(g.wp), free(g.wt), free(hx), free(hw), free(hp), free(bias), free(mult);
    free(y_mma), free(y_dp4a), free(y_blas);
}

/* ------------------------------------------------------------------ models */

static const char *const MODELS[] = {"lenet5", "resnet-mini"};
static const int BATCHES[] = {1, 8, 64, 256, 1024};
#define N_BATCHES 5

/* [model][fp16][cudnn][batch]: images/s and ms per call */
static double rate[2][2][2][N_BATCHES], latency[2][2][2][N_BATCHES];

/* images/s and seconds per call: median over repeats of 0.2 s windows. */
static void measure(struct rt_session *s, int batch, int64_t in_elems, int64_t out_elems, double *ips, double *lat)
{
    float *x = malloc(sizeof(float) * (size_t)(batch * in_elems)), *y = malloc(sizeof(float) * (size_t)(batch * out_elems));
    if (!x || !y)
        abort();
    for (int64_t i = 0; i < batch * in_elems; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    const float *in[1] = {x};
    float *out[1] = {y};
    struct rt_error err;
    for (int i = 0; i < 3; i++) {   /* warm-up; the first run captures the graph */
        if (rt_session_run(s, batch, in, out, &err) != RT_OK) {
            fprintf(stderr, "run failed: %s\n", err.msg);
            exit(1);
        }
    }
    double rates[MAX_REPEATS] = {0}, lats[MAX_REPEATS] = {0};
    for (int r = 0; r < repeats; r++) {
        int calls = 0;
        double t0 = bench_now_s(), t;
        do {
            rt_session_run(s, batch, in, out, &err);
            calls++;
        } while ((t = bench_now_s() - t0) < 0.2);
        rates[r] = calls * batch / t;
        lats[r] = t / calls;
    }
    *ips = bench_median(rates, repeats);
    *lat = bench_median(lats, repeats);
    free(x), free(y);
}

static void bench_models(void)
{
    printf("\n%-12s %-5s %-7s %6s %12s %11s\n", "model", "prec", "conv", "batch", "images/s", "latency ms");
    for (int mi = 0; mi < 2; mi++)
        for (int f16 = 0; f16 < 2; f16++)
            for (int dnn = 0; dnn < 2; dnn++) {
                char src[128], dir[64];
                snprintf(src, sizeof(src), "model_repository/%s", MODELS[mi]);
                if (!model_variant_make(src, dir, sizeof(dir), f16 ? "\"fp16\"" : "\"fp32\"",
                                        dnn ? "\"cudnn\"" : "\"custom\"", 1024)) {
                    printf("%-12s (not available)\n", MODELS[mi]);
                    break;
                }
                struct rt_error err;
                struct rt_backend *b;
                struct rt_model *m;
                struct rt_session *s;
                bool loaded = rt_backend_create(RT_BACKEND_CUDA, &(struct rt_backend_options){.device = -1}, &b,
                                                &err) == RT_OK &&
                              rt_model_load(dir, b, &m, &err) == RT_OK && rt_session_create(m, &s, &err) == RT_OK;
                model_variant_remove(dir);
                if (!loaded) {
                    fprintf(stderr, "%s: %s\n", src, err.msg);
                    exit(1);
                }
                const struct rt_model_config *cfg = rt_model_config(m);
                for (int bi = 0; bi < N_BATCHES; bi++) {
                    double *r = &rate[mi][f16][dnn][bi], *l = &latency[mi][f16][dnn][bi];
                    measure(s, BATCHES[bi], cfg->inputs[0].sample_elems, cfg->outputs[0].sample_elems, r, l);
                    printf("%-12s %-5s %-7s %6d %12.0f %11.4f\n", MODELS[mi], f16 ? "fp16" : "fp32", dnn ? "cudnn" : "custom",
                           BATCHES[bi], *r, *l * 1e3);
                }
                rt_session_free(s);
                rt_model_free(m);
                rt_backend_free(b);
            }
}

/* ------------------------------------------------------------------ PyTorch */

/* [model][fp16][mode: eager, graph][batch] */
static double torch_rate[2][2][2][N_BATCHES], torch_lat[2][2][2][N_BATCHES];

static void bench_torch(const char *python)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s models/bench_torch_gpu.py --repeats %d --batches 1,8,64,256,1024", python, repeats);
    fprintf(stderr, "running: %s\n", cmd);
    FILE *p = popen(cmd, "r"); // NOLINT(cert-env33-c): our own script, with our own arguments
    char line[256], model[64], prec[16], mode[16];
    int batch;
    double ips, ms;
    while (p && fgets(line, sizeof(line), p)) {
        if (sscanf(line, "%63s %15s %15s %d %lf %lf", model, prec, mode, &batch, &ips, &ms) != 6) // NOLINT(cert-err34-c): the output of our own script
            continue;
        int mi = strcmp(model, MODELS[0]) == 0 ? 0 : strcmp(model, MODELS[1]) == 0 ? 1 : -1;
        int md = strcmp(mode, "eager") == 0 ? 0 : strcmp(mode, "graph") == 0 ? 1 : -1;
        int f16 = strcmp(prec, "fp16") == 0;
        for (int bi = 0; bi < N_BATCHES && mi >= 0 && md >= 0; bi++) {
            if (BATCHES[bi] == batch) {
                torch_rate[mi][f16][md][bi] = ips;
                torch_lat[mi][f16][md][bi] = ms * 1e-3;
            }
        }
    }
    if (!p || pclose(p) != 0)
        fprintf(stderr, "the PyTorch benchmark failed; ratios against it are missing\n");
    printf("\n%-12s %-5s %6s %10s %10s %10s %10s\n", "model", "prec", "batch", "ours/eager", "ours/graph",
           "cudnn/eager", "torch img/s");
    for (int mi = 0; mi < 2; mi++)
        for (int f16 = 0; f16 < 2; f16++)
            for (int bi = 0; bi < N_BATCHES; bi++) {
                double e = torch_rate[mi][f16][0][bi], g = torch_rate[mi][f16][1][bi];
                if (e <= 0)
                    continue;
                printf("%-12s %-5s %6d %10.2f %10.2f %10.2f %10.0f\n", MODELS[mi], f16 ? "fp16" : "fp32", BATCHES[bi],
                       rate[mi][f16][0][bi] / e, g > 0 ? rate[mi][f16][0][bi] / g : 0.0, rate[mi][f16][1][bi] / e, e);
            }
}

int main(int argc, char **argv)
{
    const char *python = getenv("INFERD_PYTHON") ? getenv("INFERD_PYTHON") : "python3";
    bool torch = true, models = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            repeats = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc)
            python = argv[++i];
        else if (strcmp(argv[i], "--no-torch") == 0)
            torch = false;
        else if (strcmp(argv[i], "--skip-models") == 0)
            models = false;
        else {
            fprintf(stderr, "usage: %s [--repeats R] [--no-torch] [--python PYTHON] [--skip-models]\n", argv[0]);
            return 2;
        }
    }
    if (repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "--repeats must be 1..%d\n", MAX_REPEATS);
        return 2;
    }
    int dev = 0;
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceCount(&dev);
    if (e != cudaSuccess || dev < 1) {
        printf("no usable CUDA device (%s): nothing to measure\n", e != cudaSuccess ? cudaGetErrorString(e) : "none");
        return 1;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(kcuda_init());
    device_sms = prop.multiProcessorCount;
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M", gmtime(&t));
    printf("device: %s (sm_%d%d, %d SMs, %.0f MiB L2), %s UTC, repeats %d\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, prop.l2CacheSize / 1048576.0, date, repeats);

    double gemm_ratio = 0;
    if (!blas_load()) {
        printf("cuBLAS not found: GEMM comparison skipped\n");
    } else {
        cudaStream_t st;
        cublasHandle_t h;
        CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        if (blas.create(&h) != CUBLAS_STATUS_SUCCESS || blas.set_stream(h, st) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cublasCreate failed\n");
            return 1;
        }
        static const struct gemm_shape SHAPES[] = {
            {"square 4096", 4096, 4096, 4096},      {"lenet5 conv1 b256", 256 * 784, 6, 25},
            {"lenet5 conv2 b256", 256 * 100, 16, 150}, {"lenet5 fc1 b256", 256, 120, 400},
            {"resnet stem b256", 256 * 784, 16, 9},  {"resnet l1 conv b256", 256 * 784, 16, 144},
            {"resnet l2 conv b256", 256 * 196, 32, 288}, {"resnet l3 conv b256", 256 * 49, 64, 576},
            {"resnet fc b256", 256, 10, 64}};
        printf("\nFP16 GEMM (y[m,n] = x[m,k] w[n,k]^T), TFLOP/s\n%-22s %6s %6s %6s %9s %9s %7s   %s\n", "shape", "m",
               "n", "k", "ours", "cuBLAS", "ratio", "rel diff");
        enum { N_SHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]) };
        double fp16[N_SHAPES];
        for (size_t i = 0; i < N_SHAPES; i++) {
            double r = bench_gemm(&SHAPES[i], (size_t)prop.l2CacheSize, st, h, &fp16[i]);
            if (i == 0)
                gemm_ratio = r;
        }
        bool mma = kcuda_q8_mma_takes(prop.major * 10 + prop.minor, NULL);
        printf("\nINT8 GEMM (int32 out), TOP/s: ours on tensor cores (imma%s), our dp4a baseline, cuBLAS INT8 "
               "(0: shape unsupported); our FP16 (TFLOP/s) from above\n%-22s %9s %9s %9s %9s %8s %8s %8s   %s\n",
               mma ? "" : ": not on this sm", "shape", "imma", "dp4a", "cuBLAS", "fp16", "/dp4a", "/cuBLAS", "/fp16",
               "outputs");
        for (size_t i = 0; i < N_SHAPES; i++)
            bench_q8(&SHAPES[i], (size_t)prop.l2CacheSize, mma, st, h, fp16[i]);
    }
    if (models)
        bench_models();
    if (models && torch)
        bench_torch(python);

    printf("\ngoals (issue 5):\n");
    if (gemm_ratio > 0)
        printf("  FP16 GEMM 4096^3 >= 0.50 x cuBLAS:               %.2f  %s\n", gemm_ratio,
               gemm_ratio >= 0.5 ? "met" : "MISSED");
    double r256 = torch_rate[1][1][0][3] > 0 ? rate[1][1][0][3] / torch_rate[1][1][0][3] : 0;
    double l1 = latency[0][0][0][0] > 0 && torch_lat[0][0][0][0] > 0 ? latency[0][0][0][0] / torch_lat[0][0][0][0] : 0;
    if (r256 > 0)
        printf("  resnet-mini FP16 b256 >= 1.0 x PyTorch eager:    %.2f  %s\n", r256, r256 >= 1.0 ? "met" : "MISSED");
    if (l1 > 0)
        printf("  lenet5 b1 latency <= 0.5 x PyTorch eager (FP32): %.2f  %s\n", l1, l1 <= 0.5 ? "met" : "MISSED");
    return 0;
}
