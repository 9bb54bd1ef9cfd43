/*
 * gpu_gemm.c - bench_gpu's GEMM tables (see gpu_gemm.h).
 *
 * Every figure: CUDA events around a loop of calls (about 200 GFLOP, 10 to
 * 2000 calls) captured as one CUDA graph and replayed, so that a small
 * GEMM's time is its kernel's and not the host's launch (GPU.md); median of
 * `repeats` replays after 3 warm-up calls. Where a loop cannot be captured
 * it is timed as plain launches, and the table's note counts those. Operands
 * rotate through sets that together hold twice the L2 (at most 32 sets), so
 * that each call reads its operands from memory as a model's layer does.
 */
#include "gpu_gemm.h"

#include <cublas_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cuda/kcuda.h"

#define PROG "bench_gpu"
#define MAX_ROT 32

/* y[m, n] = x[m, k] . w[n, k]^T: m rows (batch x output pixels for a
 * convolution as implicit GEMM), n features (output channels), k inputs
 * (input channels x kernel area). */
struct gemm_shape {
    const char *name;
    int m, n, k;
};

/* 4096^3, then layers of the four models at batch 256. */
static const struct gemm_shape SHAPES[] = {
    {"square 4096", 4096, 4096, 4096},
    {"lenet5 conv1", 256 * 784, 6, 25},
    {"lenet5 conv2", 256 * 100, 16, 150},
    {"lenet5 fc1", 256, 120, 400},
    {"resnet-mini stem", 256 * 784, 16, 9},
    {"resnet-mini l1 conv", 256 * 784, 16, 144},
    {"resnet-mini l2 conv", 256 * 196, 32, 288},
    {"resnet-mini l3 conv", 256 * 49, 64, 576},
    {"resnet-mini fc", 256, 10, 64},
    {"resnet50 l1 1x1 56^2", 256 * 3136, 64, 256},      /* layer1 conv1, 256 -> 64 */
    {"resnet50 l3 3x3 14^2", 256 * 196, 256, 2304},     /* layer3 conv2, 256 x 3 x 3 -> 256 */
    {"resnet50 l4 1x1 7^2", 256 * 49, 2048, 512},       /* layer4 conv3, 512 -> 2048 */
    {"resnet50 fc", 256, 1000, 2048},
    {"mobilenet_v2 pw 14^2", 256 * 196, 384, 64},       /* an expansion, 64 -> 384 */
    {"mobilenet_v2 pw 7^2", 256 * 49, 960, 160},        /* an expansion, 160 -> 960 */
};
enum { N_SHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]) };

/* What every measurement of one run shares. */
struct gemm_bench {
    cudaStream_t st;
    cublasHandle_t h;
    void *blas_workspace;   /* set explicitly, so that cuBLAS allocates nothing inside a capture */
    size_t l2_bytes;
    int sms;          /* our GEMM's tile choice weighs it (kcuda_gemm_plan) */
    int repeats;
    bool mma;         /* our IMMA kernel runs on this device */
};

/* Per rotation: the input, our packed weights, the plain weights (cuBLAS's). */
struct operands {
    int rot;
    void *x[MAX_ROT], *wp[MAX_ROT], *wt[MAX_ROT];
};

/* ------------------------------------------------------------------ cuBLAS */

static struct {
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasSetWorkspace_v2) *set_workspace;
    __typeof__(cublasGemmEx) *gemm;
} blas;

static int plain_loops;   /* loops that could not be captured, timed as plain launches */

static bool blas_load(void)
{
    static const char *const NAMES[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void *lib = NULL;
    for (int i = 0; i < 3 && !lib; i++)
        lib = dlopen(NAMES[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    *(void **)&blas.create = dlsym(lib, "cublasCreate_v2");
    *(void **)&blas.destroy = dlsym(lib, "cublasDestroy_v2");
    *(void **)&blas.set_stream = dlsym(lib, "cublasSetStream_v2");
    *(void **)&blas.set_workspace = dlsym(lib, "cublasSetWorkspace_v2");
    *(void **)&blas.gemm = dlsym(lib, "cublasGemmEx");
    return blas.create && blas.destroy && blas.set_stream && blas.set_workspace && blas.gemm;
}

/* ------------------------------------------------------------------ timing */

typedef cudaError_t (*gemm_fn)(void *ctx, int rot);

/* The loop of iters calls of f as one instantiated CUDA graph (the
 * backend's capture mode); NULL, with the error cleared, where a call
 * cannot be captured. */
static cudaGraphExec_t capture_loop(const struct gemm_bench *b, gemm_fn f, void *ctx, int rot, int iters)
{
    if (cudaStreamBeginCapture(b->st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    bool ok = true;
    for (int i = 0; i < iters && ok; i++)
        ok = f(ctx, i % rot) == cudaSuccess;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    ok = cudaStreamEndCapture(b->st, &graph) == cudaSuccess && ok;
    ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return ok ? exec : NULL;
}

/* The loop once: the graph replayed, or the calls launched one by one. */
static void run_loop(const struct gemm_bench *b, cudaGraphExec_t exec, gemm_fn f, void *ctx, int rot, int iters)
{
    if (exec) {
        GPU_CHECK(cudaGraphLaunch(exec, b->st));
        return;
    }
    for (int i = 0; i < iters; i++)
        GPU_CHECK(f(ctx, i % rot));
}

/* Milliseconds per call of f: median over repeats of a loop of iters calls
 * cycling through rot operand sets, after a warm-up. */
static double time_ms(const struct gemm_bench *b, gemm_fn f, void *ctx, int rot, int iters)
{
    cudaEvent_t start, stop;
    GPU_CHECK(cudaEventCreate(&start));
    GPU_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++)
        GPU_CHECK(f(ctx, i % rot));
    cudaGraphExec_t exec = capture_loop(b, f, ctx, rot, iters);
    plain_loops += !exec;
    double ms[GPU_MAX_REPEATS] = {0};
    for (int r = 0; r < b->repeats; r++) {
        GPU_CHECK(cudaEventRecord(start, b->st));
        run_loop(b, exec, f, ctx, rot, iters);
        GPU_CHECK(cudaEventRecord(stop, b->st));
        GPU_CHECK(cudaEventSynchronize(stop));
        float t;
        GPU_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms[r] = (double)t / iters;
    }
    GPU_CHECK(cudaEventDestroy(start));
    GPU_CHECK(cudaEventDestroy(stop));
    if (exec)
        GPU_CHECK(cudaGraphExecDestroy(exec));
    return bench_median(ms, b->repeats);
}

/* Operand sets of set_bytes each that together hold twice the L2. */
static int rotations(const struct gemm_bench *b, size_t set_bytes)
{
    size_t rot = 2 * b->l2_bytes / set_bytes + 1;
    return rot > MAX_ROT ? MAX_ROT : (int)rot;
}

/* Calls per timed loop: about 200 G operations, 10 to 2000 calls. */
static int loop_calls(double ops)
{
    double calls = 2e11 / ops;
    return calls < 10 ? 10 : calls > 2000 ? 2000 : (int)calls;
}

static void operands_free(struct operands *o)
{
    for (int i = 0; i < o->rot; i++) {
        GPU_CHECK(cudaFree(o->x[i]));
        GPU_CHECK(cudaFree(o->wp[i]));
        GPU_CHECK(cudaFree(o->wt[i]));
    }
}

/* ------------------------------------------------------------------ FP16 */

struct f16_ctx {
    const struct gemm_bench *b;
    struct k_linear p;        /* p.n rows, p.m features */
    struct operands o;        /* FP16 */
    void *y;                  /* FP16 [p.n, p.m] */
};

static cudaError_t run_ours(void *c, int r)
{
    struct f16_ctx *g = c;
    return kcuda_linear(&g->p, g->b->sms, KCUDA_F16, g->o.x[r], g->o.wp[r], NULL, NULL, g->y, g->b->st);
}

/* cuBLAS's y = x . w^T for linear p, operands of type in, y of type out:
 * in its column-major view y^T[m, n] = w[m, k] . x^T[k, n] (p's names).
 * one and zero are alpha and beta in the compute type's scalar type. */
static cublasStatus_t cublas_linear(const struct gemm_bench *b, const struct k_linear *p, const void *w,
                                    const void *x, void *y, cudaDataType in, cudaDataType out,
                                    cublasComputeType_t compute, const void *one, const void *zero)
{
    return blas.gemm(b->h, CUBLAS_OP_T, CUBLAS_OP_N, p->m, p->n, p->k, one, w, in, p->k, x, in, p->k, zero, y, out,
                     p->m, compute, CUBLAS_GEMM_DEFAULT);
}

static cudaError_t run_cublas(void *c, int r)
{
    struct f16_ctx *g = c;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublas_linear(g->b, &g->p, g->o.wt[r], g->o.x[r], g->y, CUDA_R_16F, CUDA_R_16F,
                                     CUBLAS_COMPUTE_32F, &one, &zero);
    return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

/* n FP32 numbers from the host, as FP16 on the device. */
static void *upload_half(const float *h, size_t n)
{
    void *f32, *f16;
    GPU_CHECK(cudaMalloc(&f32, n * 4));
    GPU_CHECK(cudaMalloc(&f16, n * 2));
    GPU_CHECK(cudaMemcpy(f32, h, n * 4, cudaMemcpyHostToDevice));
    GPU_CHECK(kcuda_convert((int64_t)n, KCUDA_F32, f32, KCUDA_F16, f16, 0));
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaFree(f32));
    return f16;
}

/* y (FP16, n elements) after f, as FP32 on the host. */
static float *f16_output(gemm_fn f, struct f16_ctx *g, size_t n)
{
    float *host = bench_alloc(PROG, n * 4);
    void *dev;
    GPU_CHECK(cudaMalloc(&dev, n * 4));
    GPU_CHECK(f(g, 0));
    GPU_CHECK(kcuda_convert((int64_t)n, KCUDA_F16, g->y, KCUDA_F32, dev, g->b->st));
    GPU_CHECK(cudaStreamSynchronize(g->b->st));
    GPU_CHECK(cudaMemcpy(host, dev, n * 4, cudaMemcpyDeviceToHost));
    GPU_CHECK(cudaFree(dev));
    return host;
}

/* Largest difference of our output and cuBLAS's over cuBLAS's largest
 * magnitude (both y[rows][features] row-major: cuBLAS's is column-major
 * features x rows). */
static double f16_difference(struct f16_ctx *g, size_t n)
{
    float *a = f16_output(run_ours, g, n), *b = f16_output(run_cublas, g, n);
    double diff = 0, most = 1e-30;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        most = fmax(most, fabs((double)b[i]));
    }
    free(a);
    free(b);
    return diff / most;
}

/* One row of the FP16 table; returns ours over cuBLAS, *ours_tflops ours. */
static double bench_f16(const struct gemm_bench *b, const struct gemm_shape *s, double *ours_tflops)
{
    struct f16_ctx g = {.b = b, .p = {.n = s->m, .k = s->k, .m = s->n, .act = K_ACT_NONE}};
    size_t nx = (size_t)s->m * s->k, nw = (size_t)s->n * s->k, np = kcuda_linear_packed_elems(&g.p);
    size_t ny = (size_t)s->m * s->n;
    g.o.rot = rotations(b, (nx + nw + np) * 2);
    float *hx = bench_alloc(PROG, nx * 4), *hw = bench_alloc(PROG, nw * 4), *hp = bench_alloc(PROG, np * 4);
    bench_fill_uniform(hx, nx, 7, -0.5f, 0.5f);
    bench_fill_uniform(hw, nw, 8, -0.5f, 0.5f);
    kcuda_linear_pack(&g.p, hw, hp);
    for (int r = 0; r < g.o.rot; r++) {
        g.o.x[r] = upload_half(hx, nx);
        g.o.wp[r] = upload_half(hp, np);
        g.o.wt[r] = upload_half(hw, nw);
    }
    free(hx);
    free(hw);
    free(hp);
    GPU_CHECK(cudaMalloc(&g.y, ny * 2));

    double flop = 2.0 * s->m * s->n * s->k, diff = f16_difference(&g, ny);
    int iters = loop_calls(flop);
    double ours = time_ms(b, run_ours, &g, g.o.rot, iters), theirs = time_ms(b, run_cublas, &g, g.o.rot, iters);
    *ours_tflops = flop / ours * 1e-9;
    printf("%-22s %7d %5d %5d %9.1f %9.1f %7.2f   %.1e\n", s->name, s->m, s->n, s->k, *ours_tflops,
           flop / theirs * 1e-9, theirs / ours, diff);
    operands_free(&g.o);
    GPU_CHECK(cudaFree(g.y));
    return theirs / ours;
}

/* ------------------------------------------------------------------ INT8 */

struct q8_ctx {
    const struct gemm_bench *b;
    struct k_linear p;
    struct operands o;        /* int8 */
    void *y;                  /* int32 [p.n, p.m] */
    struct k_q8_epilogue e;   /* out_i32 with zero bias: y holds the accumulators */
};

static cudaError_t run_q8_mma(void *c, int r)
{
    struct q8_ctx *g = c;
    return kcuda_linear_q8_mma(&g->p, g->o.x[r], g->o.wp[r], &g->e, NULL, g->y, g->b->st);
}

static cudaError_t run_q8_dp4a(void *c, int r)
{
    struct q8_ctx *g = c;
    return kcuda_linear_q8(&g->p, g->o.x[r], g->o.wp[r], &g->e, NULL, g->y, g->b->st);
}

static cudaError_t run_cublas_q8(void *c, int r)
{
    struct q8_ctx *g = c;
    const int32_t one = 1, zero = 0;
    cublasStatus_t s = cublas_linear(g->b, &g->p, g->o.wt[r], g->o.x[r], g->y, CUDA_R_8I, CUDA_R_32I,
                                     CUBLAS_COMPUTE_32I, &one, &zero);
    return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorNotSupported;
}

static void *upload_bytes(const void *h, size_t n)
{
    void *d;
    GPU_CHECK(cudaMalloc(&d, n + 16));
    GPU_CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    return d;
}

/* n numbers in [-127, 127], the same for the same seed. */
static void fill_i8(int8_t *v, size_t n, uint32_t seed)
{
    uint32_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v[i] = (int8_t)((int)(s >> 24) % 255 - 127);
    }
}

/* y of f(ctx, 0) into host out (n int32); false when f fails (cuBLAS: the
 * shape unsupported). */
static bool q8_output(gemm_fn f, struct q8_ctx *g, int32_t *out, size_t n)
{
    GPU_CHECK(cudaMemsetAsync(g->y, 0xa5, n * 4, g->b->st));
    if (f(g, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    GPU_CHECK(cudaStreamSynchronize(g->b->st));
    GPU_CHECK(cudaMemcpy(out, g->y, n * 4, cudaMemcpyDeviceToHost));
    return true;
}

/* The operands and epilogue of one INT8 shape on the device. */
static void q8_upload(struct q8_ctx *g, const struct gemm_shape *s)
{
    size_t nx = (size_t)s->m * s->k, nw = (size_t)s->n * s->k, np = kcuda_q8_packed_bytes(s->n, s->k);
    g->o.rot = rotations(g->b, nx + nw + np);
    int8_t *hx = bench_alloc(PROG, nx), *hw = bench_alloc(PROG, nw), *hp = bench_alloc(PROG, np);
    fill_i8(hx, nx, 11);
    fill_i8(hw, nw, 12);
    kcuda_q8_pack(s->n, s->k, hw, hp);
    for (int r = 0; r < g->o.rot; r++) {
        g->o.x[r] = upload_bytes(hx, nx);
        g->o.wp[r] = upload_bytes(hp, np);
        g->o.wt[r] = upload_bytes(hw, nw);
    }
    free(hx);
    free(hw);
    free(hp);
    int32_t *bias = calloc((size_t)s->n, sizeof(int32_t));
    struct k_q8_mult *mult = calloc((size_t)s->n, sizeof(*mult));
    if (!bias || !mult)
        abort();
    g->e.bias = upload_bytes(bias, (size_t)s->n * sizeof(int32_t));
    g->e.mult = upload_bytes(mult, (size_t)s->n * sizeof(*mult));
    free(bias);
    free(mult);
    GPU_CHECK(cudaMalloc(&g->y, (size_t)s->m * s->n * 4));
}

/* "same", or which outputs differ. have_*: that kernel ran. */
static const char *q8_agreement(struct q8_ctx *g, size_t ny, bool *have_mma, bool *have_blas)
{
    int32_t *y_mma = bench_alloc(PROG, ny * 4), *y_dp4a = bench_alloc(PROG, ny * 4);
    int32_t *y_blas = bench_alloc(PROG, ny * 4);
    *have_blas = q8_output(run_cublas_q8, g, y_blas, ny);
    *have_mma = g->b->mma && q8_output(run_q8_mma, g, y_mma, ny);
    if (!q8_output(run_q8_dp4a, g, y_dp4a, ny)) {
        fprintf(stderr, "%s: the dp4a kernel failed\n", PROG);
        exit(1);
    }
    const char *same = "same";
    if (*have_mma && memcmp(y_mma, y_dp4a, ny * 4) != 0)
        same = "DIFFER (imma vs dp4a)";
    else if (*have_blas && memcmp(y_blas, y_dp4a, ny * 4) != 0)
        same = "DIFFER (cuBLAS vs dp4a)";
    free(y_mma);
    free(y_dp4a);
    free(y_blas);
    return same;
}

static double tops(double ops, double ms) { return ms > 0 ? ops / ms * 1e-9 : 0; }
static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* One row of the INT8 table; fp16_tflops is our FP16 GEMM's at the shape. */
static void bench_q8(const struct gemm_bench *b, const struct gemm_shape *s, double fp16_tflops)
{
    struct q8_ctx g = {.b = b, .p = {.n = s->m, .k = s->k, .m = s->n, .act = K_ACT_NONE}, .e = {.out_i32 = 1}};
    q8_upload(&g, s);
    size_t ny = (size_t)s->m * s->n;
    bool have_mma, have_blas;
    const char *same = q8_agreement(&g, ny, &have_mma, &have_blas);
    double ops = 2.0 * s->m * s->n * s->k;
    int iters = loop_calls(ops);
    double t_dp4a = time_ms(b, run_q8_dp4a, &g, g.o.rot, iters);
    double t_mma = have_mma ? time_ms(b, run_q8_mma, &g, g.o.rot, iters) : 0;
    double t_blas = have_blas ? time_ms(b, run_cublas_q8, &g, g.o.rot, iters) : 0;
    double mma = tops(ops, t_mma), dp4a = tops(ops, t_dp4a), cublas = tops(ops, t_blas);
    printf("%-22s %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f   %s\n", s->name, mma, dp4a, cublas, fp16_tflops,
           ratio(mma, dp4a), ratio(mma, cublas), ratio(mma, fp16_tflops), same);
    operands_free(&g.o);
    GPU_CHECK(cudaFree((void *)g.e.bias));
    GPU_CHECK(cudaFree((void *)g.e.mult));
    GPU_CHECK(cudaFree(g.y));
}

/* ------------------------------------------------------------------ tables */

double gpu_gemm_tables(const struct cudaDeviceProp *prop, int repeats)
{
    if (!blas_load()) {
        printf("\ncuBLAS not found (libcublas.so.13 or .12): the GEMM tables are left out\n");
        return 0;
    }
    int sm = prop->major * 10 + prop->minor;
    struct gemm_bench b = {.l2_bytes = (size_t)prop->l2CacheSize, .sms = prop->multiProcessorCount,
                           .repeats = repeats, .mma = kcuda_q8_mma_takes(sm, NULL)};
    GPU_CHECK(cudaStreamCreateWithFlags(&b.st, cudaStreamNonBlocking));
    enum { BLAS_WORKSPACE = 64 << 20 };   /* what cuBLAS asks for on Hopper, with room */
    GPU_CHECK(cudaMalloc(&b.blas_workspace, BLAS_WORKSPACE));
    if (blas.create(&b.h) != CUBLAS_STATUS_SUCCESS || blas.set_stream(b.h, b.st) != CUBLAS_STATUS_SUCCESS ||
        blas.set_workspace(b.h, b.blas_workspace, BLAS_WORKSPACE) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "%s: cublasCreate failed\n", PROG);
        exit(1);
    }
    printf("\nFP16 GEMM y[m,n] = x[m,k] w[n,k]^T (the layers at batch 256), TFLOP/s\n"
           "%-22s %7s %5s %5s %9s %9s %7s   %s\n",
           "shape", "m", "n", "k", "ours", "cuBLAS", "ratio", "rel diff");
    double fp16[N_SHAPES], square = 0;
    for (int i = 0; i < N_SHAPES; i++) {
        double r = bench_f16(&b, &SHAPES[i], &fp16[i]);
        square = i == 0 ? r : square;
    }
    printf("\nINT8 GEMM (int32 out), TOP/s: ours on tensor cores (imma%s), our dp4a baseline, cuBLAS INT8 "
           "(0: shape unsupported); our FP16 (TFLOP/s) from above\n%-22s %9s %9s %9s %9s %8s %8s %8s   %s\n",
           b.mma ? "" : ": not on this sm", "shape", "imma", "dp4a", "cuBLAS", "fp16", "/dp4a", "/cuBLAS", "/fp16",
           "outputs");
    for (int i = 0; i < N_SHAPES; i++)
        bench_q8(&b, &SHAPES[i], fp16[i]);
    if (plain_loops)
        printf("%d timed loops could not be captured as CUDA graphs: timed as plain launches (a small shape's "
               "figure is then launch-bound)\n", plain_loops);
    else
        printf("every timed loop of calls ran as one captured CUDA graph\n");
    blas.destroy(b.h);
    GPU_CHECK(cudaFree(b.blas_workspace));
    GPU_CHECK(cudaStreamDestroy(b.st));
    return square;
}
