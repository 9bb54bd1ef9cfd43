/*
 * test_precision_models.c - the shipped models at reduced precision on the
 * whole Fashion-MNIST test set: lenet5-int8 and resnet-mini-int8 within 0.5 point of
 * FP32 top-1 (PyTorch's, from the fixtures) and bit-identical under every
 * ISA; each FP32 model converted to FP16 within 0.1 point.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_impl.h"
#include "kernels/kernel_quant.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "runtime/rt_model.h"
#include "runtime/rt_model_impl.h"
#include "runtime/format/model_write.h"
#include "runtime/format/safetensors.h"
#include "test.h"
#include "fp16_bound.h"
#include "model_variant.h"
#include "test_model_util.h"

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best])
            best = i;
    }
    return best;
}

/* Logits of the first `count` test images by the model in dir. */
static bool run_model(const char *dir, const struct rt_dataset *ds, int count, float *logits, char *why, size_t cap)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    struct rt_session *s = NULL;
    bool ok = rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err) == RT_OK &&
              rt_model_load(dir, b, &m, &err) == RT_OK && rt_session_create(m, &s, &err) == RT_OK;
    const struct rt_model_config *cfg = ok ? rt_model_config(m) : NULL;
    int batch = ok ? cfg->max_batch_size : 0;
    float *x = ok ? malloc(sizeof(float) * (size_t)batch * 784) : NULL;
    for (int start = 0; ok && start < count; start += batch) {
        int nb = count - start < batch ? count - start : batch;
        for (int i = 0; ok && i < nb; i++) {
            struct rt_image img = {ds->cols, ds->rows, 1, ds->images + (size_t)(start + i) * 784};
            ok = rt_image_preprocess(&img, &cfg->pre, x + (size_t)i * 784, &err) == RT_OK;
        }
        const float *in[1] = {x};
        float *out[1] = {logits + (size_t)start * 10};
        ok = ok && rt_session_run(s, nb, in, out, &err) == RT_OK;
    }
    if (!ok)
        snprintf(why, cap, "%s: %s", dir, err.msg);
    free(x);
    rt_session_free(s);
    rt_model_free(m);
    rt_backend_free(b);
    return ok;
}

/* PyTorch's FP32 predictions for the test set (written by models/export.py). */
static const uint8_t *fp32_predictions(const char *name, struct rt_safetensors *fx)
{
    char path[256];
    snprintf(path, sizeof(path), "tests/data/%s.fixture.safetensors", name);
    struct rt_error err;
    if (rt_safetensors_open(path, path, fx, &err) != RT_OK)
        return NULL;
    const struct rt_st_tensor *p = rt_safetensors_find(fx, "predictions");
    return p && p->dtype == RT_DTYPE_U8 && p->elems == 10000 ? p->data : NULL;
}

/* Top-1 of dir against FP32's: at most `points` below it. */
static enum test_result check_accuracy(const char *name, const char *dir, double points)
{
    struct rt_dataset ds;
    struct rt_error err = {0};
    struct rt_safetensors fx;
    TEST_FAIL_IF(rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK, "%s", err.msg);
    const uint8_t *ref = fp32_predictions(name, &fx);
    ASSERT_TRUE(ref != NULL && ds.count == 10000);
    float *logits = malloc(sizeof(float) * 10 * (size_t)ds.count);
    char why[RT_ERROR_MSG_MAX + 64];
    RT_ASSERT(logits);
    enum test_result r = TEST_PASS;
    if (!run_model(dir, &ds, ds.count, logits, why, sizeof(why))) {
        test_fail_msg(__FILE__, __LINE__, "%s", why);
        r = TEST_FAIL;
    }
    int ok32 = 0, ok = 0, differ = 0;
    for (int i = 0; r == TEST_PASS && i < ds.count; i++) {
        int p = argmax(logits + (size_t)i * 10, 10);
        ok32 += ref[i] == ds.labels[i];
        ok += p == ds.labels[i];
        differ += p != ref[i];
    }
    if (r == TEST_PASS) {
        double a32 = 100.0 * ok32 / ds.count, a = 100.0 * ok / ds.count;
        printf("  %s: top-1 %.2f%% (fp32 %.2f%%), %d predictions differ from fp32\n", dir, a, a32, differ);
        if (a < a32 - points) {
            test_fail_msg(__FILE__, __LINE__, "%s: %.2f%% is more than %.1f point below fp32's %.2f%%", dir, a,
                          points, a32);
            r = TEST_FAIL;
        }
    }
    free(logits);
    rt_safetensors_close(&fx);
    rt_dataset_free(&ds);
    return r;
}

TEST(int8_shipped_models_meet_accuracy_goal)
{
    enum test_result r = check_accuracy("lenet5", "model_repository/lenet5-int8", 0.5);
    return r == TEST_PASS ? check_accuracy("resnet-mini", "model_repository/resnet-mini-int8", 0.5) : r;
}

static void restore_isa(int *saved)
{
    kcpu_isa_set((enum kcpu_isa)*saved);
}

TEST(int8_shipped_models_identical_across_isas)
{
    enum { COUNT = 64 };
    struct rt_dataset ds;
    struct rt_error err = {0};
    TEST_FAIL_IF(rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK, "%s", err.msg);
    static float want[COUNT * 10], got[COUNT * 10];
    static const char *const DIRS[] = {"model_repository/lenet5-int8", "model_repository/resnet-mini-int8"};
    char why[RT_ERROR_MSG_MAX + 64];
    int saved __attribute__((cleanup(restore_isa))) = (int)kcpu_isa(); // NOLINT(clang-analyzer-deadcode.DeadStores): restore_isa reads it at scope exit
    enum test_result r = TEST_PASS;
    for (int d = 0; d < 2 && r == TEST_PASS; d++) {
        for (int isa = (int)kcpu_isa_hardware(); isa >= KCPU_ISA_SCALAR && r == TEST_PASS; isa--) {
            kcpu_isa_set((enum kcpu_isa)isa);
            if (!run_model(DIRS[d], &ds, COUNT, isa == (int)kcpu_isa_hardware() ? want : got, why, sizeof(why))) {
                test_fail_msg(__FILE__, __LINE__, "%s", why);
                r = TEST_FAIL;
            } else if (isa != (int)kcpu_isa_hardware() && !test_same_bits(got, want, sizeof(got))) {
                test_fail_msg(__FILE__, __LINE__, "%s: %s outputs differ from %s's", DIRS[d],
                              kcpu_isa_name((enum kcpu_isa)isa), kcpu_isa_name(kcpu_isa_hardware()));
                r = TEST_FAIL;
            }
        }
    }
    rt_dataset_free(&ds);
    return r;
}

/* The FP32 model folder written at FP16 (inferctl convert) into dst. */
static bool convert_fp16(const char *src, const char *dst, char *why, size_t cap)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/model.json", src);
    FILE *f = fopen(path, "rb");
    static char json[1 << 16];
    size_t len = f ? fread(json, 1, sizeof(json) - 1, f) : 0;
    if (f)
        fclose(f);
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    struct rt_write_options wo = {.name = strrchr(dst, '/') + 1, .precision = RT_PRECISION_FP16};
    bool ok = len > 0 && rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) == RT_OK &&
              rt_model_load(src, b, &m, &err) == RT_OK &&
              rt_model_write(dst, json, len, rt_model_config(m), rt_model_graph(m), &wo, &err) == RT_OK;
    if (!ok)
        snprintf(why, cap, "%s: %s", src, len ? err.msg : "cannot read model.json");
    rt_model_free(m);
    rt_backend_free(b);
    return ok;
}

TEST(fp16_models_within_a_tenth_of_fp32)
{
    static const char *const NAMES[] = {"lenet5", "resnet-mini"};
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 2 && r == TEST_PASS; i++) {
        char src[128], dir[64], why[RT_ERROR_MSG_MAX + 64];
        snprintf(src, sizeof(src), "model_repository/%s", NAMES[i]);
        ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
        if (!convert_fp16(src, dir, why, sizeof(why))) {
            test_fail_msg(__FILE__, __LINE__, "%s", why);
            r = TEST_FAIL;
        } else {
            r = check_accuracy(NAMES[i], dir, 0.1);
        }
        tmp_dir_remove(dir);
    }
    return r;
}

/* The FP16 error bound the GPU checks use (fp16_bound.h), tried where it
 * can be without a GPU: the CPU's FP16 path against its FP32 path on the
 * shipped models stays within R * u, and the bound is not vacuous. */
TEST(fp16_bound_holds_on_cpu)
{
    static const char *const NAMES[] = {"lenet5", "resnet-mini"};
    enum { COUNT = 500 };
    struct rt_dataset ds;
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK)
        SKIP("Fashion-MNIST test set not installed: %s", err.msg);
    float *logits[2] = {malloc(sizeof(float) * COUNT * 10), malloc(sizeof(float) * COUNT * 10)};
    RT_ASSERT(logits[0] && logits[1]);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 2 && r == TEST_PASS; i++) {
        char src[128], dir[2][64], why[RT_ERROR_MSG_MAX + 64] = "";
        snprintf(src, sizeof(src), "model_repository/%s", NAMES[i]);
        RT_ASSERT(model_variant_make(src, dir[0], sizeof(dir[0]), "\"fp32\"", "\"custom\"", 64));
        RT_ASSERT(model_variant_make(src, dir[1], sizeof(dir[1]), "\"fp16\"", "\"custom\"", 64));
        struct rt_backend *b = NULL;
        struct rt_model *m = NULL;
        bool ok = rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) == RT_OK &&
                  rt_model_load(dir[1], b, &m, &err) == RT_OK;
        int roundings = ok ? fp16_roundings(m) : 0;
        rt_model_free(m);
        rt_backend_free(b);
        ok = ok && run_model(dir[0], &ds, COUNT, logits[0], why, sizeof(why)) &&
             run_model(dir[1], &ds, COUNT, logits[1], why, sizeof(why));
        model_variant_remove(dir[0]);
        model_variant_remove(dir[1]);
        if (!ok) {
            test_fail_msg(__FILE__, __LINE__, "%s: %s%s", NAMES[i], err.msg, why);
            r = TEST_FAIL;
            break;
        }
        double e = test_rel_error(logits[1], logits[0], (int64_t)COUNT * 10), bound = fp16_bound_vs_fp32(roundings);
        printf("  %s: FP16 vs FP32 rel error %.3g, bound %d roundings * 2^-11 = %.3g (%.0f%% of it)\n", NAMES[i], e,
               roundings, bound, 100 * e / bound);
        if (!(e > 0 && e <= bound && bound < 0.02)) {
            test_fail_msg(__FILE__, __LINE__, "%s: error %.3g outside (0, %.3g], or the bound is vacuous", NAMES[i],
                          e, bound);
            r = TEST_FAIL;
        }
    }
    free(logits[0]), free(logits[1]);
    rt_dataset_free(&ds);
    return r;
}
