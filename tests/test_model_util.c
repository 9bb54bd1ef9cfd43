/* test_model_util.c - model folders for tests (see test_model_util.h). */
#include "test_model_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/ref/kref.h"
#include "test.h"

const char TINY_MODEL_JSON[] =
    "{\"format_version\": 1, \"max_batch_size\": 8,"
    " \"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"shape\": [-1, 1, 6, 6]}],"
    " \"outputs\": [{\"name\": \"y\", \"datatype\": \"FP32\", \"shape\": [-1, 5]}],"
    " \"nodes\": ["
    "  {\"name\": \"conv\", \"op\": \"conv2d\", \"inputs\": [\"x\"], \"outputs\": [\"c\"],"
    "   \"weights\": {\"weight\": \"conv.weight\"}, \"attrs\": {\"padding\": [1, 1]}},"
    "  {\"name\": \"bn\", \"op\": \"batch_norm\", \"inputs\": [\"c\"], \"outputs\": [\"b\"],"
    "   \"weights\": {\"weight\": \"bn.weight\", \"bias\": \"bn.bias\", \"running_mean\": \"bn.running_mean\","
    "   \"running_var\": \"bn.running_var\"}},"
    "  {\"name\": \"relu\", \"op\": \"relu\", \"inputs\": [\"b\"], \"outputs\": [\"r\"]},"
    "  {\"name\": \"pool\", \"op\": \"max_pool2d\", \"inputs\": [\"r\"], \"outputs\": [\"p\"],"
    "   \"attrs\": {\"kernel\": [2, 2]}},"
    "  {\"name\": \"flat\", \"op\": \"flatten\", \"inputs\": [\"p\"], \"outputs\": [\"f\"]},"
    "  {\"name\": \"fc\", \"op\": \"linear\", \"inputs\": [\"f\"], \"outputs\": [\"y\"],"
    "   \"weights\": {\"weight\": \"fc.weight\", \"bias\": \"fc.bias\"}}"
    " ]}";

void tiny_weights_init(struct tiny_weights *w)
{
    test_rand_fill(w->conv_w, 36, -1, 1);
    test_rand_fill(w->bn_w, 4, 0.5f, 1.5f);
    test_rand_fill(w->bn_b, 4, -0.5f, 0.5f);
    test_rand_fill(w->bn_mean, 4, -0.5f, 0.5f);
    test_rand_fill(w->bn_var, 4, 0.5f, 2.0f);
    test_rand_fill(w->fc_w, (int64_t)TINY_CLASSES * 36, -0.5f, 0.5f);
    test_rand_fill(w->fc_b, TINY_CLASSES, -0.5f, 0.5f);
}

void tiny_forward_ref(const struct tiny_weights *w, int n, const float *x, float *y)
{
    float *c = malloc(sizeof(float) * (size_t)n * 4 * 36);
    float *p = malloc(sizeof(float) * (size_t)n * 36);
    RT_ASSERT(c && p);
    struct k_conv2d cv = {.n = n, .c = 1, .h = 6, .w = 6, .oc = 4, .oh = 6, .ow = 6, .kh = 3, .kw = 3,
                          .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                          .groups = 1, .act = K_ACT_NONE};
    kref_conv2d_f32(&cv, x, w->conv_w, NULL, NULL, c);
    float scale[4], shift[4];
    for (int k = 0; k < 4; k++) {
        double s = w->bn_w[k] / sqrt((double)w->bn_var[k] + 1e-5);
        scale[k] = (float)s;
        shift[k] = (float)(w->bn_b[k] - w->bn_mean[k] * s);
    }
    struct k_channel_affine af = {.n = n, .c = 4, .inner = 36};
    kref_channel_affine_f32(&af, c, scale, shift, c);
    kref_act_f32_n(K_ACT_RELU, (int64_t)n * 4 * 36, c, c);
    struct k_pool2d pl = {.n = n, .c = 4, .h = 6, .w = 6, .oh = 3, .ow = 3, .kh = 2, .kw = 2,
                          .stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1};
    kref_max_pool2d_f32(&pl, c, p);
    struct k_linear ln = {.n = n, .k = 36, .m = TINY_CLASSES, .act = K_ACT_NONE};
    kref_linear_f32(&ln, p, w->fc_w, w->fc_b, NULL, y);
    free(c);
    free(p);
}

bool tmp_dir_make(char *out, size_t cap)
{
    snprintf(out, cap, "/tmp/inferd-test-XXXXXX");
    return mkdtemp(out) != NULL;
}

void tmp_dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[1024];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

bool write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

bool tiny_model_write(const char *dir, const char *json, const struct tiny_weights *w)
{
    const struct rt_st_write t[] = {
        {"conv.weight", RT_DTYPE_F32, {4, {4, 1, 3, 3}}, w->conv_w},
        {"bn.weight", RT_DTYPE_F32, {1, {4}}, w->bn_w},
        {"bn.bias", RT_DTYPE_F32, {1, {4}}, w->bn_b},
        {"bn.running_mean", RT_DTYPE_F32, {1, {4}}, w->bn_mean},
        {"bn.running_var", RT_DTYPE_F32, {1, {4}}, w->bn_var},
        {"fc.weight", RT_DTYPE_F32, {2, {TINY_CLASSES, 36}}, w->fc_w},
        {"fc.bias", RT_DTYPE_F32, {1, {TINY_CLASSES}}, w->fc_b},
    };
    char path[1024];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    struct rt_error err;
    if (rt_safetensors_write(path, t, (int)(sizeof(t) / sizeof(t[0])), NULL, 0, &err) != RT_OK)
        return false;
    return write_file(dir, "model.json", json, strlen(json));
}

char *str_replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    RT_ASSERT(at != NULL);
    const char *rest = at + strlen(from);
    // cppcheck-suppress ctunullpointer ; a caller passing to NULL passes from NULL and never gets here
    size_t size = (size_t)(at - text) + strlen(to) + strlen(rest) + 1;
    char *out = malloc(size);
    RT_ASSERT(out);
    snprintf(out, size, "%.*s%s%s", (int)(at - text), text, to, rest);
    return out;
}
