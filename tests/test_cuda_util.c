/* test_cuda_util.c - device helpers for the CUDA tests (see test_cuda_util.h). */
#include "test_cuda_util.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/image/image.h"

const char *cuda_test_unusable(void)
{
    static int state;   /* 0 unknown, 1 usable, 2 not */
    static char why[200];
    if (state == 1)
        return NULL;
    if (state == 2)
        return why;
    state = 2;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, sizeof(why), "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return why;
    }
    for (int d = 0; d < count; d++) {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess || prop.major * 10 + prop.minor < INFERD_CUDA_MIN_SM)
            continue;
        if (cudaSetDevice(d) == cudaSuccess && kcuda_init() == cudaSuccess) {
            printf("  (CUDA device %d: %s, sm_%d%d)\n", d, prop.name, prop.major, prop.minor);
            state = 1;
            return NULL;
        }
    }
    snprintf(why, sizeof(why), "%d device(s), none sm_%d or newer and working", count, INFERD_CUDA_MIN_SM);
    return why;
}

void round_to_half(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = k_f16_round(x[i]);
}

void *dbuf_upload(const float *host, int64_t n, enum kcuda_dtype t)
{
    size_t es = kcuda_dtype_size(t);
    void *dev, *buf = malloc((size_t)n * es + 1);
    RT_ASSERT(buf);
    if (t == KCUDA_F16) {
        uint16_t *h = buf;
        for (int64_t i = 0; i < n; i++)
            h[i] = k_f16_from_f32(host[i]);
    } else {
        memcpy(buf, host, (size_t)n * es);
    }
    dev = dbuf_poisoned(n, t);
    RT_ASSERT(cudaMemcpy(dev, buf, (size_t)n * es, cudaMemcpyHostToDevice) == cudaSuccess);
    free(buf);
    return dev;
}

void *dbuf_poisoned(int64_t n, enum kcuda_dtype t)
{
    size_t bytes = (size_t)(n + DBUF_GUARD) * kcuda_dtype_size(t);
    void *dev = NULL;
    RT_ASSERT(cudaMalloc(&dev, bytes) == cudaSuccess);
    RT_ASSERT(cudaMemset(dev, 0xff, bytes) == cudaSuccess);
    return dev;
}

bool dbuf_download(float *host, const void *dev, int64_t n, enum kcuda_dtype t)
{
    size_t es = kcuda_dtype_size(t), bytes = (size_t)(n + DBUF_GUARD) * es;
    unsigned char *buf = malloc(bytes);
    RT_ASSERT(buf);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaMemcpy(buf, dev, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("  CUDA error: %s\n", cudaGetErrorString(e));
        free(buf);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        host[i] = t == KCUDA_F16 ? k_f32_from_f16(((const uint16_t *)(const void *)buf)[i]) : ((const float *)(const void *)buf)[i];
    bool guard_ok = true;
    for (size_t i = (size_t)n * es; i < bytes; i++)
        guard_ok &= buf[i] == 0xff;
    if (!guard_ok)
        printf("  a kernel wrote past the end of its output\n");
    free(buf);
    return guard_ok;
}

void dbuf_free(void *dev) { cudaFree(dev); }

bool cuda_check_close(const char *what, const float *out, const float *ref, int64_t n, enum kcuda_dtype t)
{
    return cuda_check_scaled(what, out, ref, ref, n, t);
}

bool cuda_check_scaled(const char *what, const float *out, const float *ref, const float *scale, int64_t n,
                       enum kcuda_dtype t)
{
    int64_t bad = test_count_nonfinite(out, n);
    double e = test_scaled_error(out, ref, scale, n), tol = t == KCUDA_F16 ? 2e-3 : 1e-5;
    bool ok = bad == 0 && e <= tol;
    if (!ok || getenv("INFERD_TEST_VERBOSE"))
        printf("  %s %s: rel error %.3g (tol %g), %lld of %lld not written or not finite\n", what,
               t == KCUDA_F16 ? "f16" : "f32", e, tol, (long long)bad, (long long)n);
    return ok;
}

float *rand_buf(int64_t n, float lo, float hi, enum kcuda_dtype t)
{
    float *x = out_buf(n);
    test_rand_fill(x, n, lo, hi);
    if (t == KCUDA_F16)
        round_to_half(x, n);
    return x;
}

float *out_buf(int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    RT_ASSERT(x);
    return x;
}

const char *const GSET_NAME[GSET_COUNT] = {"baseline", "device", "wide"};

int gset_sms(int ks)
{
    int device = 0, sms = 0;
    if (ks == GSET_BASELINE)
        return 0;
    if (ks == GSET_WIDE)
        return GSET_WIDE_SMS;
    RT_ASSERT(cudaGetDevice(&device) == cudaSuccess &&
              cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess);
    return sms;
}

bool check_repeat(const char *what, const void *dev, const void *again, int64_t n, enum kcuda_dtype t,
                  cudaError_t launch)
{
    float *a = out_buf(n), *b = out_buf(n);
    bool ok = launch == cudaSuccess && dbuf_download(a, dev, n, t) && dbuf_download(b, again, n, t) &&
              memcmp(a, b, sizeof(float) * (size_t)n) == 0;
    if (!ok)
        printf("  %s: a second run differs from the first\n", what);
    free(a), free(b);
    return ok;
}

bool check_launch(const char *what, const void *dev, const float *ref, int64_t n, enum kcuda_dtype t,
                  cudaError_t launch)
{
    return check_launch_scaled(what, dev, ref, ref, n, t, launch);
}

bool check_launch_scaled(const char *what, const void *dev, const float *ref, const float *scale, int64_t n,
                         enum kcuda_dtype t, cudaError_t launch)
{
    float *out = out_buf(n);
    bool ok = launch == cudaSuccess;
    if (!ok)
        printf("  %s: launch failed: %s\n", what, cudaGetErrorString(launch));
    ok = ok && dbuf_download(out, dev, n, t) && cuda_check_scaled(what, out, ref, scale, n, t);
    free(out);
    return ok;
}

bool cuda_test_dataset(struct rt_dataset *ds, char *why, size_t cap)
{
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist("test", ds, &err) != RT_OK) {
        snprintf(why, cap, "the Fashion-MNIST test set is not here (%s); set FASHION_MNIST_DIR", err.msg);
        return false;
    }
    const char *limit = getenv("INFERD_TEST_IMAGES");
    long n = limit ? strtol(limit, NULL, 10) : 0;
    if (n > 0 && n < ds->count)
        ds->count = (int)n;
    printf("  %d test images\n", ds->count);
    return true;
}

bool cuda_test_inputs_make(const struct rt_model_config *cfg, struct cuda_test_inputs *in, char *why, size_t cap)
{
    memset(in, 0, sizeof(*in));
    in->in_elems = cfg->inputs[cfg->pre.input].sample_elems;
    if (!cfg->pre.present) {
        snprintf(why, cap, "the model has no image preprocessing to feed it pictures through");
        return false;
    }
    bool gray = cfg->pre.channels == 1;
    if (gray && !cuda_test_dataset(&in->ds, why, cap))
        return false;
    in->count = gray ? in->ds.count : CUDA_TEST_PICTURES;
    in->labels = gray ? in->ds.labels : NULL;
    in->x = malloc(sizeof(float) * (size_t)in->count * (size_t)in->in_elems);
    enum { SIDE = 256 };
    uint8_t *noise = gray ? NULL : malloc((size_t)SIDE * SIDE * 3);
    if (!in->x || (!gray && !noise)) {
        free(noise);
        cuda_test_inputs_free(in);
        snprintf(why, cap, "out of memory");
        return false;
    }
    struct rt_error err = {0};
    bool ok = true;
    for (int i = 0; i < in->count && ok; i++) {
        struct rt_image img = {in->ds.cols, in->ds.rows, 1, NULL};
        if (gray) {
            img.pixels = in->ds.images + (size_t)i * (size_t)(in->ds.rows * in->ds.cols);
        } else {
            for (size_t b = 0; b < (size_t)SIDE * SIDE * 3; b++)
                noise[b] = (uint8_t)test_rand_int(0, 255);
            img = (struct rt_image){SIDE, SIDE, 3, noise};
        }
        ok = rt_image_preprocess(&img, &cfg->pre, in->x + (int64_t)i * in->in_elems, &err) == RT_OK;
    }
    free(noise);
    if (!ok) {
        snprintf(why, cap, "preprocessing a test picture: %s", err.msg);
        cuda_test_inputs_free(in);
        return false;
    }
    if (!gray)
        printf("  %d random %dx%d RGB pictures\n", in->count, SIDE, SIDE);
    return true;
}

void cuda_test_inputs_free(struct cuda_test_inputs *in)
{
    free(in->x);
    rt_dataset_free(&in->ds);
    memset(in, 0, sizeof(*in));
}
