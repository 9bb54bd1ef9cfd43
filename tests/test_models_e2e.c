/* test_models_e2e.c - the shipped models against PyTorch: logits of the first
 * 256 test images within 1e-4 relative, and top-1 predictions on the whole
 * Fashion-MNIST test set identical image for image (fixtures written by
 * models/export.py). */
#include <stdlib.h>
#include <string.h>

#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "runtime/rt_model.h"
#include "runtime/format/safetensors.h"
#include "test.h"

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best])
            best = i;
    }
    return best;
}

static enum test_result check_model(const char *name)
{
    char dir[256], fixture_path[256];
    snprintf(dir, sizeof(dir), "model_repository/%s", name);
    snprintf(fixture_path, sizeof(fixture_path), "tests/data/%s.fixture.safetensors", name);
    struct rt_error err = {0};
    struct rt_safetensors fx;
    TEST_FAIL_IF(rt_safetensors_open(fixture_path, fixture_path, &fx, &err) != RT_OK, "%s", err.msg);
    const struct rt_st_tensor *ref_logits = rt_safetensors_find(&fx, "logits");
    const struct rt_st_tensor *ref_pred = rt_safetensors_find(&fx, "predictions");
    ASSERT_TRUE(ref_logits && ref_pred && ref_logits->dtype == RT_DTYPE_F32 && ref_pred->dtype == RT_DTYPE_U8);

    struct rt_dataset ds;
    TEST_FAIL_IF(rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(ds.count, ref_pred->elems);

    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err), RT_OK);
    struct rt_model *m;
    TEST_FAIL_IF(rt_model_load(dir, b, &m, &err) != RT_OK, "%s", err.msg);
    const struct rt_model_config *cfg = rt_model_config(m);
    struct rt_session *s;
    ASSERT_EQ_INT(rt_session_create(m, &s, &err), RT_OK);

    int batch = cfg->max_batch_size;
    int64_t in_elems = cfg->inputs[0].sample_elems, classes = cfg->outputs[0].sample_elems;
    float *x = malloc(sizeof(float) * (size_t)(batch * in_elems));
    float *y = malloc(sizeof(float) * (size_t)(ds.count * classes));
    RT_ASSERT(x && y);
    enum test_result r = TEST_PASS;
    for (int start = 0; start < ds.count && r == TEST_PASS; start += batch) {
        int nb = ds.count - start < batch ? ds.count - start : batch;
        for (int i = 0; i < nb; i++) {
            struct rt_image img = {ds.cols, ds.rows, 1, ds.images + (size_t)(start + i) * 784};
            if (rt_image_preprocess(&img, &cfg->pre, x + i * in_elems, &err) != RT_OK)
                r = TEST_FAIL;
        }
        const float *in[1] = {x};
        float *out[1] = {y + start * classes};
        if (r != TEST_PASS || rt_session_run(s, nb, in, out, &err) != RT_OK) {
            test_fail_msg(__FILE__, __LINE__, "%s", err.msg);
            r = TEST_FAIL;
        }
    }
    if (r == TEST_PASS) {
        double e = test_rel_error(y, ref_logits->data, ref_logits->elems);
        printf("  %s: logits relative error %.2e over %lld values\n", name, e, (long long)ref_logits->elems);
        if (e > 1e-4) {
            test_fail_msg(__FILE__, __LINE__, "logits differ from PyTorch: %g", e);
            r = TEST_FAIL;
        }
        int differ = 0, correct = 0;
        const uint8_t *pred = ref_pred->data;
        for (int i = 0; i < ds.count; i++) {
            int p = argmax(y + i * classes, (int)classes);
            differ += p != pred[i];
            correct += p == ds.labels[i];
        }
        printf("  %s: accuracy %.2f%%, PyTorch %s, %d predictions differ\n", name, 100.0 * correct / ds.count,
               rt_safetensors_meta(&fx, "accuracy") ? rt_safetensors_meta(&fx, "accuracy") : "?", differ);
        if (differ != 0) {
            test_fail_msg(__FILE__, __LINE__, "%d of %d predictions differ from PyTorch", differ, ds.count);
            r = TEST_FAIL;
        }
    }
    free(x);
    free(y);
    rt_session_free(s);
    rt_model_free(m);
    rt_backend_free(b);
    rt_dataset_free(&ds);
    rt_safetensors_close(&fx);
    return r;
}

TEST(e2e_lenet5_matches_pytorch)
{
    return check_model("lenet5");
}

TEST(e2e_resnet_mini_matches_pytorch)
{
    return check_model("resnet-mini");
}
