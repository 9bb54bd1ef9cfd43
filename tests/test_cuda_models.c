/* test_cuda_models.c - the CUDA backend as the runtime uses it: no-GPU
 * behaviour and error mapping (these run everywhere), then, on a GPU, a tiny
 * model through sessions (graphs on and off, several batch sizes, two
 * sessions interleaved), the shipped models against the CPU backend running
 * the same precision over the Fashion-MNIST test set (INFERD_TEST_IMAGES
 * limits it) and the generated ImageNet models (ResNet-50, MobileNetV2) over
 * random pictures, in FP32 and FP16 with both convolution engines, and a
 * sticky CUDA error turning into RT_ERR_DEVICE. */
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/backend/backend_cuda_impl.h"
#include "runtime/image/dataset.h"
#include "runtime/backend/backend_cuda_info.h"
#include "runtime/image/image.h"
#include "runtime/rt_model.h"
#include "runtime/rt_model_impl.h"
#include "fp16_bound.h"
#include "model_variant.h"
#include "test_cuda_util.h"
#include "test_model_util.h"

extern char **environ;

/* ------------------------------------------------------------------ no GPU needed */

TEST(cuda_backend_no_device)
{
    if (!cuda_test_unusable())
        SKIP("a CUDA device is usable here; this test checks the no-GPU path");
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_backend_options opt = {.threads = 1, .device = -1};
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CUDA, &opt, &b, &err), RT_ERR_UNAVAILABLE);
    ASSERT_TRUE(b == NULL);
    ASSERT_TRUE(err.msg[0] != '\0');
    printf("  cuda backend: %s\n", err.msg);
    /* auto falls back to the CPU with one log line */
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_AUTO, &opt, &b, &err), RT_OK);
    ASSERT_EQ_INT(rt_backend_device_kind(b), RT_DEVICE_CPU);
    ASSERT_EQ_INT(rt_backend_device_count(b), 0);
    rt_backend_free(b);
    return TEST_PASS;
}

TEST(cuda_backend_error_mapping)
{
    struct cuda_backend cb = {0};
    struct rt_error err = {0};
    ASSERT_EQ_INT(cuda_fail(&cb, cudaErrorInvalidValue, "cudaMemcpyAsync(a, b, c)", &err), RT_ERR_DEVICE);
    ASSERT_STR_CONTAINS(err.msg, "cudaMemcpyAsync: cudaErrorInvalidValue");
    ASSERT_EQ_INT(cb.poisoned, 0);
    ASSERT_EQ_INT(cuda_fail(&cb, cudaErrorMemoryAllocation, "cudaMalloc(p, n)", &err), RT_ERR_NO_MEMORY);
    ASSERT_EQ_INT(cb.poisoned, 0);
    ASSERT_EQ_INT(cuda_fail(&cb, cudaErrorIllegalAddress, "cudaStreamSynchronize(s)", &err), RT_ERR_DEVICE);
    ASSERT_STR_CONTAINS(err.msg, "context is lost");
    ASSERT_EQ_INT(cb.poisoned, 1);
    return TEST_PASS;
}

TEST(cuda_gpu_info)
{
    int n = rt_gpu_count();
    uint64_t used = 0, total = 0;
    double util = 0;
    ASSERT_TRUE(n >= 0);
    if (n == 0) {
        ASSERT_FALSE(rt_gpu_info(0, &used, &total, &util));
        return TEST_PASS;
    }
    for (int d = 0; d < n; d++) {
        if (!rt_gpu_info(d, &used, &total, &util))
            continue;
        printf("  gpu %d: %.0f of %.0f MiB used, utilisation %.0f%%\n", d, (double)used / 1048576.0,
               (double)total / 1048576.0, util);
        ASSERT_TRUE(total > 0 && used <= total);
        ASSERT_TRUE(util == -1.0 || (util >= 0 && util <= 100));
    }
    return TEST_PASS;
}

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define HAVE_CUDNN_H 1
#endif

/* cuDNN's algorithms are limited to those that keep the precision contract:
 * Winograd and FFT never; tensor cores (TF32) never on FP32 data. */
TEST(cuda_dnn_algorithms_keep_precision)
{
#ifndef HAVE_CUDNN_H
    SKIP("this build found no cudnn.h");
#else
    static const cudnnConvolutionFwdAlgo_t KEEP[] = {
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT};
    static const cudnnConvolutionFwdAlgo_t DROP[] = {
        CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED};
    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(cuda_dnn_algo_allowed(KCUDA_F32, KEEP[i], CUDNN_FMA_MATH));
        ASSERT_TRUE(cuda_dnn_algo_allowed(KCUDA_F32, KEEP[i], CUDNN_DEFAULT_MATH));
        ASSERT_FALSE(cuda_dnn_algo_allowed(KCUDA_F32, KEEP[i], CUDNN_TENSOR_OP_MATH));
        ASSERT_FALSE(cuda_dnn_algo_allowed(KCUDA_F32, KEEP[i], CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
        ASSERT_TRUE(cuda_dnn_algo_allowed(KCUDA_F16, KEEP[i], CUDNN_TENSOR_OP_MATH));
        for (int d = 0; d < 4; d++) {
            ASSERT_FALSE(cuda_dnn_algo_allowed(KCUDA_F32, DROP[d], CUDNN_FMA_MATH));
            ASSERT_FALSE(cuda_dnn_algo_allowed(KCUDA_F16, DROP[d], CUDNN_TENSOR_OP_MATH));
        }
    }
    return TEST_PASS;
#endif
}

/* The algorithm a cuDNN step runs: the heuristics' first that is usable,
 * keeps the precision contract and fits the workspace; after a refusal at
 * run time (the bits of `refused`), the next such one. */
TEST(cuda_dnn_pick_skips_refused)
{
#ifndef HAVE_CUDNN_H
    SKIP("this build found no cudnn.h");
#else
    const struct cuda_dnn_candidate c[] = {
        {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_TENSOR_OP_MATH, true, 0},   /* not allowed */
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_TENSOR_OP_MATH, true, 1000},
        {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_TENSOR_OP_MATH, false, 0},                /* not usable */
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_TENSOR_OP_MATH, true, 0},
        {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_TENSOR_OP_MATH, true, 0},
    };
    const unsigned precomp = 1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    const unsigned implicit = 1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    const unsigned direct = 1u << CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F16, 1000, 0), 1);
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F16, 999, 0), 3);          /* workspace too small for #1 */
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F16, 1000, precomp), 3);
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F16, 1000, precomp | implicit), 4);
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F16, 1000, precomp | implicit | direct), -1);
    ASSERT_EQ_INT(cuda_dnn_pick(c, 5, KCUDA_F32, 1000, 0), -1);         /* tensor-op math: TF32 on FP32 data */
    ASSERT_EQ_INT(cuda_dnn_pick(c, 0, KCUDA_F16, 1000, 0), -1);
    return TEST_PASS;
#endif
}

TEST(cuda_conv_engine_parse)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct tiny_weights w;
    tiny_weights_init(&w);
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    static const char *const VALUES[] = {"\"cudnn\"", "\"custom\"", "\"fast\"", "3"};
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 4 && r == TEST_PASS; i++) {
        char *json = json_field_set(TINY_MODEL_JSON, "conv_engine", VALUES[i]);
        RT_ASSERT(tiny_model_write(dir, json, &w));
        struct rt_model *m = NULL;
        enum rt_status s = rt_model_load(dir, b, &m, &err);
        if (i < 2 && (s != RT_OK || rt_model_config(m)->conv_engine != (i == 0 ? RT_CONV_ENGINE_CUDNN
                                                                              : RT_CONV_ENGINE_CUSTOM))) {
            test_fail_msg(__FILE__, __LINE__, "conv_engine %s: %s", VALUES[i], err.msg);
            r = TEST_FAIL;
        }
        if (i >= 2 && (s != RT_ERR_BAD_MODEL || !strstr(err.msg, "conv_engine"))) {
            test_fail_msg(__FILE__, __LINE__, "conv_engine %s accepted or wrong error: %s", VALUES[i], err.msg);
            r = TEST_FAIL;
        }
        rt_model_free(m);
        free(json);
    }
    rt_backend_free(b);
    tmp_dir_remove(dir);
    return r;
}

/* ------------------------------------------------------------------ on a GPU */

/* What the GPU run is on: the first lines of every GPU log. */
TEST(cuda_device_query)
{
    CUDA_REQUIRE();
    int driver = 0, runtime = 0, count = 0;
    ASSERT_EQ_INT(cudaDriverGetVersion(&driver), cudaSuccess);
    ASSERT_EQ_INT(cudaRuntimeGetVersion(&runtime), cudaSuccess);
    ASSERT_EQ_INT(cudaGetDeviceCount(&count), cudaSuccess);
    printf("  driver API %d.%d, runtime %d.%d, %d device(s)\n", driver / 1000, driver % 1000 / 10, runtime / 1000,
           runtime % 1000 / 10, count);
    for (int d = 0; d < count; d++) {
        struct cudaDeviceProp p;
        ASSERT_EQ_INT(cudaGetDeviceProperties(&p, d), cudaSuccess);
        printf("  device %d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB, %zu KiB shared per block (opt-in)\n", d, p.name,
               p.major, p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30), p.l2CacheSize >> 20,
               p.sharedMemPerBlockOptin >> 10);
    }
    struct rt_error err = {0};
    struct rt_backend *b;
    TEST_FAIL_IF(rt_backend_create(RT_BACKEND_CUDA, &(struct rt_backend_options){.device = -1}, &b, &err) != RT_OK,
                 "%s", err.msg);
    printf("  backend: %s\n", rt_backend_describe(b));
    /* What /metrics and the Triton config ask of it: a GPU, its devices, their memory. */
    enum rt_device_kind kind = rt_backend_device_kind(b);
    int n = rt_backend_device_count(b);
    bool ok = kind == RT_DEVICE_GPU && n >= 1 && n <= count;
    for (int i = 0; ok && i < n; i++) {
        struct rt_device_info info;
        if (!rt_backend_device_info(b, i, &info))
            continue;
        printf("  backend device %d (cuda %d): %.0f of %.0f MiB used\n", i, info.id, (double)info.used_bytes / 1048576.0,
               (double)info.total_bytes / 1048576.0);
        ok = info.id >= 0 && info.id < count && info.total_bytes > 0 && info.used_bytes <= info.total_bytes;
    }
    rt_backend_free(b);
    TEST_FAIL_IF(!ok, "device query: kind %d, %d device(s) of %d", (int)kind, n, count);
    return TEST_PASS;
}

/* Whether a CUDA backend made with graphs (and $INFERD_CUDA_GRAPHS = env,
 * NULL: unset) captures graphs, as its description says; -1 when none. */
static int graphs_on(enum rt_cuda_graphs graphs, const char *env)
{
    if (env)
        setenv("INFERD_CUDA_GRAPHS", env, 1);
    struct rt_error err = {0};
    struct rt_backend *b;
    enum rt_status s = rt_backend_create(RT_BACKEND_CUDA, &(struct rt_backend_options){.device = -1, .cuda_graphs = graphs},
                                         &b, &err);
    unsetenv("INFERD_CUDA_GRAPHS");
    if (s != RT_OK)
        return -1;
    int on = strstr(rt_backend_describe(b), "graphs off") == NULL;
    rt_backend_free(b);
    return on;
}

/* The cuda_graphs option, and $INFERD_CUDA_GRAPHS as its fallback. */
TEST(cuda_graph_option)
{
    CUDA_REQUIRE();
    ASSERT_EQ_INT(graphs_on(RT_CUDA_GRAPHS_AUTO, NULL), 1);
    ASSERT_EQ_INT(graphs_on(RT_CUDA_GRAPHS_OFF, NULL), 0);
    ASSERT_EQ_INT(graphs_on(RT_CUDA_GRAPHS_AUTO, "0"), 0);
    ASSERT_EQ_INT(graphs_on(RT_CUDA_GRAPHS_ON, "0"), 1);    /* the option wins */
    ASSERT_EQ_INT(graphs_on(RT_CUDA_GRAPHS_OFF, "1"), 0);
    return TEST_PASS;
}

static enum rt_status cuda_backend_set(bool graphs, enum rt_cuda_kernels kernels, struct rt_backend **b,
                                       struct rt_error *err)
{
    const struct rt_backend_options opt = {
        .device = -1, .cuda_graphs = graphs ? RT_CUDA_GRAPHS_ON : RT_CUDA_GRAPHS_OFF, .cuda_kernels = kernels};
    enum rt_status s = rt_backend_create(RT_BACKEND_CUDA, &opt, b, err);
    if (s == RT_OK)
        printf("  backend: %s\n", rt_backend_describe(*b));
    return s;
}

static enum rt_status cuda_backend(bool graphs, struct rt_backend **b, struct rt_error *err)
{
    return cuda_backend_set(graphs, RT_CUDA_KERNELS_AUTO, b, err);
}

/* Runs `batch` samples and compares with the reference forward pass. */
static bool tiny_run(struct rt_session *s, const struct tiny_weights *w, int batch, enum kcuda_dtype t)
{
    float x[8 * TINY_IN_ELEMS], y[8 * TINY_CLASSES], ref[8 * TINY_CLASSES];
    test_rand_fill(x, (int64_t)batch * TINY_IN_ELEMS, -1, 1);
    if (t == KCUDA_F16)
        round_to_half(x, (int64_t)batch * TINY_IN_ELEMS);
    for (int i = 0; i < batch * TINY_CLASSES; i++)
        y[i] = NAN;   /* poisoned */
    tiny_forward_ref(w, batch, x, ref);
    struct rt_error err = {0};
    const float *in[1] = {x};
    float *out[1] = {y};
    if (rt_session_run(s, batch, in, out, &err) != RT_OK) {
        printf("  run failed: %s\n", err.msg);
        return false;
    }
    char what[32];
    snprintf(what, sizeof(what), "tiny model batch %d", batch);
    return cuda_check_close(what, y, ref, (int64_t)batch * TINY_CLASSES, t);
}

TEST(cuda_session_tiny_model)
{
    CUDA_REQUIRE();
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct tiny_weights w;
    tiny_weights_init(&w);
    static const int BATCHES[] = {1, 3, 8, 8, 5, 1, 8, 3};
    int failed = 0;
    for (int v = 0; v < 4; v++) {
        bool graphs = v < 2;
        enum kcuda_dtype t = v % 2 ? KCUDA_F16 : KCUDA_F32;
        char *json = json_field_set(TINY_MODEL_JSON, "precision", t == KCUDA_F16 ? "\"fp16\"" : "\"fp32\"");
        RT_ASSERT(tiny_model_write(dir, json, &w));
        free(json);
        struct rt_error err = {0};
        struct rt_backend *b;
        struct rt_model *m;
        struct rt_session *s1, *s2;
        TEST_FAIL_IF(cuda_backend(graphs, &b, &err) != RT_OK, "%s", err.msg);
        TEST_FAIL_IF(rt_model_load(dir, b, &m, &err) != RT_OK, "%s", err.msg);
        ASSERT_EQ_INT(rt_session_create(m, &s1, &err), RT_OK);
        ASSERT_EQ_INT(rt_session_create(m, &s2, &err), RT_OK);
        for (size_t i = 0; i < sizeof(BATCHES) / sizeof(BATCHES[0]); i++) {
            failed += !tiny_run(s1, &w, BATCHES[i], t);   /* replays the batch size's graph after its first run */
            failed += !tiny_run(s2, &w, BATCHES[i], t);
        }
        rt_session_free(s1);
        rt_session_free(s2);
        rt_model_free(m);
        rt_backend_free(b);
    }
    tmp_dir_remove(dir);
    TEST_FAIL_IF(failed, "%d tiny-model runs failed", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ shipped models */

struct eval_set {
    int count;
    int64_t in_elems, classes;
    float *x;        /* count * in_elems, preprocessed */
};

static int argmax(const float *x, int64_t n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = x[i] > x[best] ? i : best;
    return best;
}

/* Steps of a model on the CUDA backend prepared channels last (x or y NHWC). */
static int nhwc_steps(const struct rt_model *m)
{
    const struct rt_plan *p = rt_model_plan(m);
    int n = 0;
    for (int i = 0; i < p->n_steps; i++) {
        const struct cuda_step_prep *pr = p->steps[i].prep;
        n += pr && (pr->x_nhwc || pr->y_nhwc);
    }
    return n;
}

/* Runs every image through model dir on backend b in batches of `batch`;
 * y receives count * classes logits (poisoned first). On the CUDA backend
 * nhwc (else NULL) receives nhwc_steps. */
static bool eval(const char *dir, struct rt_backend *b, const struct eval_set *es, float *y, int *nhwc,
                 struct rt_error *err)
{
    struct rt_model *m;
    struct rt_session *s;
    if (rt_model_load(dir, b, &m, err) != RT_OK)
        return false;
    if (nhwc)
        *nhwc = nhwc_steps(m);
    if (rt_session_create(m, &s, err) != RT_OK) {
        rt_model_free(m);
        return false;
    }
    int batch = rt_model_config(m)->max_batch_size;
    bool ok = true;
    for (int64_t i = 0; i < es->count * es->classes; i++)
        y[i] = NAN;
    for (int start = 0; start < es->count && ok; start += batch) {
        int nb = es->count - start < batch ? es->count - start : batch;
        const float *in[1] = {es->x + start * es->in_elems};
        float *out[1] = {y + start * es->classes};
        ok = rt_session_run(s, nb, in, out, err) == RT_OK;
    }
    rt_session_free(s);
    rt_model_free(m);
    return ok;
}

/* Logits of model dir (precision and engine set) on the CPU backend: the
 * reference for the CUDA run of the same variant. */
static bool cpu_reference(const char *src, const char *precision, struct rt_backend *cpu, const struct eval_set *es,
                          float *ref, int *roundings, struct rt_error *err)
{
    char dir[64];
    RT_ASSERT(model_variant_make(src, dir, sizeof(dir), precision, "\"custom\"", 256));
    struct rt_model *m;
    bool ok = rt_model_load(dir, cpu, &m, err) == RT_OK;
    if (ok) {
        *roundings = fp16_roundings(m);
        rt_model_free(m);
    }
    ok = ok && eval(dir, cpu, es, ref, NULL, err);
    model_variant_remove(dir);
    return ok;
}

/* Each precision/engine variant of a shipped model on the GPU against the
 * CPU backend running the same variant: FP32 within 1e-5, FP16 within the
 * bound derived from its roundings (fp16_bound.h; cuDNN's second rounding
 * per convolution counted), and top-1 agreement. With our kernels of the
 * new set, a model with channels_last runs steps NHWC (resnet-mini: from
 * the stem's output to the global pool), else none does. */
static enum test_result model_vs_cpu(const char *name, bool channels_last)
{
    CUDA_REQUIRE();
    char src[256], path[300], why[600];
    snprintf(src, sizeof(src), "model_repository/%s", name);
    snprintf(path, sizeof(path), "%s/model.safetensors", src);
    if (access(path, R_OK) != 0)
        SKIP("%s has no weights here (the ImageNet models are generated: make models-imagenet)", src);
    struct rt_error err = {0};
    struct rt_backend *cpu;
    struct rt_model *m;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 0}, &cpu, &err), RT_OK);
    TEST_FAIL_IF(rt_model_load(src, cpu, &m, &err) != RT_OK, "%s", err.msg);
    const struct rt_model_config *cfg = rt_model_config(m);
    struct cuda_test_inputs inputs;
    if (!cuda_test_inputs_make(cfg, &inputs, why, sizeof(why))) {
        rt_model_free(m);
        rt_backend_free(cpu);
        SKIP("%s", why);
    }
    struct eval_set es = {inputs.count, inputs.in_elems, cfg->outputs[0].sample_elems, inputs.x};
    int convs = fp16_conv_steps(m);
    size_t n_out = (size_t)(es.count * es.classes);
    float *ref[2] = {malloc(sizeof(float) * n_out), malloc(sizeof(float) * n_out)};   /* CPU FP32, FP16 */
    float *y = malloc(sizeof(float) * n_out);
    RT_ASSERT(ref[0] && ref[1] && y);
    rt_model_free(m);
    int roundings = 0, unused;
    bool cpu_ok = cpu_reference(src, "\"fp32\"", cpu, &es, ref[0], &unused, &err) &&
                  cpu_reference(src, "\"fp16\"", cpu, &es, ref[1], &roundings, &err);

    /* precision, engine, and the GEMM kernel set (our convolutions and
     * linear layers: the device's tile choice, with split-K for the last
     * batch's 16 rows, and the baseline's tile by columns) */
    static const struct {
        const char *prec, *engine;
        bool f16, dnn;
        enum rt_cuda_kernels kernels;
    } VARIANTS[] = {{"\"fp32\"", "\"custom\"", false, false, RT_CUDA_KERNELS_AUTO},
                    {"\"fp32\"", "\"cudnn\"", false, true, RT_CUDA_KERNELS_AUTO},
                    {"\"fp16\"", "\"custom\"", true, false, RT_CUDA_KERNELS_AUTO},
                    {"\"fp16\"", "\"cudnn\"", true, true, RT_CUDA_KERNELS_AUTO},
                    {"\"fp32\"", "\"custom\"", false, false, RT_CUDA_KERNELS_BASELINE},
                    {"\"fp16\"", "\"custom\"", true, false, RT_CUDA_KERNELS_BASELINE}};
    const int n_variants = (int)(sizeof(VARIANTS) / sizeof(VARIANTS[0]));
    int failed = 0;
    for (int v = 0; cpu_ok && v < n_variants; v++) {
        char dir[64];
        struct rt_backend *b;
        RT_ASSERT(model_variant_make(src, dir, sizeof(dir), VARIANTS[v].prec, VARIANTS[v].engine, 256));
        bool f16 = VARIANTS[v].f16, dnn = VARIANTS[v].dnn;
        bool ran = cuda_backend_set(true, VARIANTS[v].kernels, &b, &err) == RT_OK;
        int nhwc = 0;
        ran = ran && eval(dir, b, &es, y, &nhwc, &err);
        model_variant_remove(dir);
        if (!ran) {
            printf("  %s %s %s: %s\n", name, VARIANTS[v].prec, VARIANTS[v].engine, err.msg);
            failed++;
            continue;
        }
        const float *want = ref[f16];
        int agree = 0, correct = 0;
        for (int i = 0; i < es.count; i++) {
            int p = argmax(y + i * es.classes, es.classes);
            agree += p == argmax(want + i * es.classes, es.classes);
            correct += inputs.labels && p == inputs.labels[i];
        }
        int64_t bad = test_count_nonfinite(y, (int64_t)n_out);
        double e = test_rel_error(y, want, (int64_t)n_out);
        double tol = f16 ? fp16_bound_vs_fp16(roundings, dnn ? convs : 0) : 1e-5;
        char accuracy[32] = "no labels";
        if (inputs.labels)
            snprintf(accuracy, sizeof(accuracy), "%.2f%%", 100.0 * correct / es.count);
        printf("  %s %s conv %s vs CPU %s: rel error %.3g (tol %.3g), top-1 agrees on %d of %d, accuracy %s, "
               "%d steps nhwc (%s)\n", name, VARIANTS[v].prec, VARIANTS[v].engine, VARIANTS[v].prec, e, tol, agree,
               es.count, accuracy, nhwc, rt_backend_describe(b));
        /* FP32 may flip a near-tie or two in 10 000; FP16 rounds differently
         * near ties more often. On random pictures (no labels, random
         * weights) FP16's top-1 is only reported: near-ties are common. */
        bool top1_ok = agree * 10000LL >= (long long)es.count * (f16 ? 9990 : 9998) || (f16 && !inputs.labels);
        bool ok = bad == 0 && e <= tol && top1_ok;
        bool want_nhwc = channels_last && !dnn && VARIANTS[v].kernels != RT_CUDA_KERNELS_BASELINE;
        ok = ok && (nhwc > 0) == want_nhwc;
        failed += !ok;
        rt_backend_free(b);
    }
    rt_backend_free(cpu);
    cuda_test_inputs_free(&inputs);
    free(ref[0]), free(ref[1]), free(y);
    TEST_FAIL_IF(!cpu_ok, "CPU: %s", err.msg);
    TEST_FAIL_IF(failed, "%d of %d precision/engine/kernel-set variants failed", failed, n_variants);
    return TEST_PASS;
}

TEST(cuda_model_lenet5)
{
    return model_vs_cpu("lenet5", false);   /* conv2 reads 6 channels: NCHW throughout */
}

TEST(cuda_model_resnet_mini)
{
    return model_vs_cpu("resnet-mini", true);
}

/* The ImageNet models are generated, not shipped (gpu_check.sh's
 * imagenet-export step makes them on the GPU machine). Both read the NCHW
 * input only in their stem, so the rest runs channels last. */
TEST(cuda_imagenet_resnet50)
{
    return model_vs_cpu("resnet50", true);
}

TEST(cuda_imagenet_mobilenet_v2)
{
    return model_vs_cpu("mobilenet_v2", true);
}

/* ------------------------------------------------------------------ sticky errors */

/* In a child process (a sticky error ends the CUDA context for good): an
 * illegal address makes the next run fail with RT_ERR_DEVICE, and every run
 * after it fails fast. */
static enum test_result sticky_child(void)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct tiny_weights w;
    tiny_weights_init(&w);
    RT_ASSERT(tiny_model_write(dir, TINY_MODEL_JSON, &w));
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m;
    struct rt_session *s;
    TEST_FAIL_IF(cuda_backend(true, &b, &err) != RT_OK, "%s", err.msg);
    TEST_FAIL_IF(rt_model_load(dir, b, &m, &err) != RT_OK, "%s", err.msg);
    tmp_dir_remove(dir);
    ASSERT_EQ_INT(rt_session_create(m, &s, &err), RT_OK);
    ASSERT_TRUE(tiny_run(s, &w, 4, KCUDA_F32));
    void *wild = (void *)(uintptr_t)0x100;
    ASSERT_EQ_INT(kcuda_add(1 << 20, KCUDA_F32, wild, wild, wild, 0), cudaSuccess);
    ASSERT_NE_INT(cudaDeviceSynchronize(), cudaSuccess);
    float x[4 * TINY_IN_ELEMS] = {1}, y[4 * TINY_CLASSES];
    const float *in[1] = {x};
    float *out[1] = {y};
    ASSERT_EQ_INT(rt_session_run(s, 4, in, out, &err), RT_ERR_DEVICE);
    printf("  first run after the fault: %s\n", err.msg);
    ASSERT_EQ_INT(rt_session_run(s, 4, in, out, &err), RT_ERR_DEVICE);
    ASSERT_STR_CONTAINS(err.msg, "unusable");
    return TEST_PASS;
}

TEST(cuda_sticky_error)
{
    CUDA_REQUIRE();
    if (getenv("INFERD_TEST_STICKY_CHILD"))
        return sticky_child();
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ASSERT_TRUE(n > 0);
    self[n] = '\0';
    char *argv[] = {self, "cuda_sticky_error", NULL};
    setenv("INFERD_TEST_STICKY_CHILD", "1", 1);
    pid_t pid;
    int rc = posix_spawn(&pid, self, NULL, NULL, argv, environ);
    unsetenv("INFERD_TEST_STICKY_CHILD");
    ASSERT_EQ_INT(rc, 0);
    int status = 0;
    ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
    TEST_FAIL_IF(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "the child run failed (status %d)", status);
    return TEST_PASS;
}
