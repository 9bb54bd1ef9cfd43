/* test_cuda_q8.c - the INT8 CUDA kernels (kernels/cuda/q8.cu, and the
 * tensor-core conv2d / linear of q8_mma.cu where the GPU is sm_80 or newer)
 * against the reference INT8 kernels (kernels/ref/kref_q8.h) on fresh random
 * shapes, data and requantisation parameters, asserting exact (bitwise)
 * equality: outputs poisoned and followed by guard bytes, checked to be
 * unchanged past the end; every conv2d / linear case runs both kernel sets.
 * Then the shipped INT8 models on the CUDA backend (both kernel sets, graphs
 * on and off) against the CPU backend over the Fashion-MNIST test set,
 * outputs compared bit for bit. Every test SKIPs when no usable CUDA device
 * is present. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/ref/kref_q8.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "runtime/rt_model.h"
#include "runtime/precision/quant.h"
#include "op_shapes.h"
#include "test_cuda_util.h"

#define GUARD 64
#define POISON 0xa5

/* ------------------------------------------------------------------ device buffers */

static void *dput(const void *host, size_t bytes)
{
    void *d = NULL;
    RT_ASSERT(cudaMalloc(&d, bytes + GUARD) == cudaSuccess);
    RT_ASSERT(cudaMemset(d, POISON, bytes + GUARD) == cudaSuccess);
    if (host && bytes)
        RT_ASSERT(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    return d;
}

/* Downloads bytes of dev after the launch status e and compares with ref
 * bit for bit, the guard bytes untouched. */
static bool dcheck(const char *what, cudaError_t e, const void *dev, const void *ref, size_t bytes)
{
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    unsigned char *h = malloc(bytes + GUARD);
    RT_ASSERT(h);
    if (e == cudaSuccess)
        e = cudaMemcpy(h, dev, bytes + GUARD, cudaMemcpyDeviceToHost);
    bool ok = e == cudaSuccess;
    if (!ok)
        printf("  %s: CUDA error %s\n", what, cudaGetErrorString(e));
    for (size_t i = 0; ok && i < GUARD; i++) {
        if (h[bytes + i] != POISON) {
            printf("  %s: guard byte %zu written\n", what, i);
            ok = false;
        }
    }
    if (ok && memcmp(h, ref, bytes) != 0) {
        size_t i = 0;
        while (h[i] == ((const unsigned char *)ref)[i])
            i++;
        printf("  %s: byte %zu of %zu differs: 0x%02x, reference 0x%02x\n", what, i, bytes, h[i],
               ((const unsigned char *)ref)[i]);
        ok = false;
    }
    free(h);
    return ok;
}

/* ------------------------------------------------------------------ conv2d, linear */

/* The current device's compute capability, major * 10 + minor. */
static int device_sm(void)
{
    int dev = 0, major = 0, minor = 0;
    RT_ASSERT(cudaGetDevice(&dev) == cudaSuccess);
    RT_ASSERT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess);
    RT_ASSERT(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess);
    return major * 10 + minor;
}

/* The kernel sets a conv2d / linear case runs: baseline (dp4a), and IMMA
 * where the device and the shape take it. */
enum { KSET_BASELINE, KSET_MMA, KSET_COUNT };
static const char *const KSET_NAME[KSET_COUNT] = {"dp4a", "imma"};

/* Device copies of bias and mult in e (host pointers replaced). */
static struct k_q8_epilogue epi_upload(const struct test_epilogue *h, int oc, void **db, void **dm)
{
    struct k_q8_epilogue e = h->e;
    *db = dput(h->bias, sizeof(int32_t) * (size_t)oc);
    *dm = dput(h->mult, sizeof(*h->mult) * (size_t)oc);
    e.bias = *db;
    e.mult = *dm;
    return e;
}

static bool conv_case(const struct k_conv2d *p, bool use_res)
{
    int64_t nx = (int64_t)p->n * p->c * p->h * p->w, ny = (int64_t)p->n * p->oc * p->oh * p->ow;
    int64_t depth = (int64_t)(p->c / p->groups) * p->kh * p->kw, nw = (int64_t)p->oc * depth;
    int8_t *x = test_rand_q8(nx), *w = test_rand_q8(nw), *r = test_rand_q8(ny);
    struct test_epilogue eh;
    test_epilogue_init(&eh, p->oc, depth, test_rand_int(0, 3) == 0);
    size_t ysize = eh.e.out_i32 ? sizeof(int32_t) : 1;
    void *ref = malloc((size_t)ny * ysize + 1);
    RT_ASSERT(ref);
    kref_conv2d_q8(p, x, w, &eh.e, use_res && !eh.e.out_i32 ? r : NULL, ref);
    int8_t *packed = malloc(kcuda_q8_packed_bytes(p->oc, depth));
    RT_ASSERT(packed);
    kcuda_q8_pack(p->oc, depth, w, packed);
    void *db, *dm, *dx = dput(x, (size_t)nx), *dw = dput(packed, kcuda_q8_packed_bytes(p->oc, depth));
    void *dr = dput(r, (size_t)ny);
    struct k_q8_epilogue e = epi_upload(&eh, p->oc, &db, &dm);
    bool ok = true;
    for (int ks = 0; ks < KSET_COUNT; ks++) {
        if (ks == KSET_MMA && !kcuda_q8_mma_takes(device_sm(), p))
            continue;
        void *dy = dput(NULL, (size_t)ny * ysize);
        cudaError_t err = ks == KSET_MMA ? kcuda_conv2d_q8_mma(p, dx, dw, &e, use_res ? dr : NULL, dy, 0)
                                         : kcuda_conv2d_q8(p, dx, dw, &e, use_res ? dr : NULL, dy, 0);
        char what[220];
        snprintf(what, sizeof(what), "%s conv q8 n%d c%d %dx%d oc%d k%dx%d s%d,%d p%d,%d d%d,%d g%d lo%d hi%d%s%s",
                 KSET_NAME[ks], p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->stride_h, p->stride_w, p->pad_t,
                 p->pad_l, p->dil_h, p->dil_w, p->groups, eh.e.lo, eh.e.hi, eh.e.out_i32 ? " i32" : "",
                 use_res ? " res" : "");
        ok &= dcheck(what, err, dy, ref, (size_t)ny * ysize);
        cudaFree(dy);
    }
    cudaFree(db), cudaFree(dm), cudaFree(dx), cudaFree(dw), cudaFree(dr);
    free(x), free(w), free(r), free(ref), free(packed), test_epilogue_free(&eh);
    return ok;
}

TEST(cuda_q8_conv2d)
{
    CUDA_REQUIRE();
    if (!kcuda_q8_mma_takes(device_sm(), NULL))
        printf("  imma: not run, the device is sm_%d (needs sm_%d)\n", device_sm(), KCUDA_Q8_MMA_MIN_SM);
    int failed = 0;
    for (int i = 0; i < 60; i++) {
        struct k_conv2d p = test_random_conv(i % 3 == 2);
        failed += !conv_case(&p, test_rand_int(0, 1));
    }
    /* a long reduction (many dp4a words, a tail of 1..3 values; 19 IMMA k
     * tiles, more than the pipeline's stages) */
    struct k_conv2d big = {.n = 2, .c = 67, .h = 9, .w = 9, .oc = 33, .oh = 9, .ow = 9, .kh = 3, .kw = 3,
                           .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    failed += !conv_case(&big, true);
    /* several IMMA tiles both ways (oc 130: three row tiles, the last
     * partial; 3 x 13 x 13 pixels: eight column tiles spanning images),
     * strided and padded */
    struct k_conv2d tiles = {.n = 3, .c = 20, .h = 25, .w = 25, .oc = 130, .oh = 13, .ow = 13, .kh = 3, .kw = 3,
                             .stride_h = 2, .stride_w = 2, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                             .groups = 1};
    failed += !conv_case(&tiles, true);
    failed += !conv_case(&tiles, false);
    TEST_FAIL_IF(failed, "%d INT8 conv2d cases differ from the reference", failed);
    return TEST_PASS;
}

/* The packed layout both kernel sets read (host code, no GPU): rows of k
 * padded to KCUDA_Q8_K_TILE, the row count to KCUDA_Q8_ROW_TILE, zeros in
 * every pad. */
TEST(cuda_pack_q8_layout)
{
    static const int64_t SHAPES[][2] = {{1, 1}, {6, 25}, {64, 32}, {65, 33}, {130, 400}};
    for (size_t i = 0; i < sizeof(SHAPES) / sizeof(SHAPES[0]); i++) {
        const int64_t rows = SHAPES[i][0], k = SHAPES[i][1];
        const int64_t kp = (k + KCUDA_Q8_K_TILE - 1) / KCUDA_Q8_K_TILE * KCUDA_Q8_K_TILE;
        const int64_t rp = (rows + KCUDA_Q8_ROW_TILE - 1) / KCUDA_Q8_ROW_TILE * KCUDA_Q8_ROW_TILE;
        ASSERT_EQ_INT((long long)kcuda_q8_packed_bytes(rows, k), (long long)(rp * kp));
        int8_t *w = test_rand_q8(rows * k), *packed = malloc((size_t)(rp * kp));
        RT_ASSERT(packed);
        memset(packed, 0x5a, (size_t)(rp * kp));
        kcuda_q8_pack(rows, k, w, packed);
        int64_t bad = -1;
        for (int64_t r = 0; r < rp && bad < 0; r++)
            for (int64_t j = 0; j < kp && bad < 0; j++)
                if (packed[r * kp + j] != (r < rows && j < k ? w[r * k + j] : 0))
                    bad = r * kp + j;
        free(w), free(packed);
        TEST_FAIL_IF(bad >= 0, "rows %lld k %lld: packed byte %lld is wrong", (long long)rows, (long long)k,
                     (long long)bad);
    }
    return TEST_PASS;
}

static bool linear_case(const struct k_linear *p, bool use_res)
{
    int64_t nx = (int64_t)p->n * p->k, nw = (int64_t)p->m * p->k, ny = (int64_t)p->n * p->m;
    int8_t *x = test_rand_q8(nx), *w = test_rand_q8(nw), *r = test_rand_q8(ny);
    struct test_epilogue eh;
    test_epilogue_init(&eh, p->m, p->k, test_rand_int(0, 3) == 0);
    size_t ysize = eh.e.out_i32 ? sizeof(int32_t) : 1;
    void *ref = malloc((size_t)ny * ysize + 1);
    int8_t *packed = malloc(kcuda_q8_packed_bytes(p->m, p->k));
    RT_ASSERT(ref && packed);
    kref_linear_q8(p, x, w, &eh.e, use_res && !eh.e.out_i32 ? r : NULL, ref);
    kcuda_q8_pack(p->m, p->k, w, packed);
    void *db, *dm, *dx = dput(x, (size_t)nx), *dw = dput(packed, kcuda_q8_packed_bytes(p->m, p->k));
    void *dr = dput(r, (size_t)ny);
    struct k_q8_epilogue e = epi_upload(&eh, p->m, &db, &dm);
    bool ok = true;
    for (int ks = 0; ks < KSET_COUNT; ks++) {
        if (ks == KSET_MMA && !kcuda_q8_mma_takes(device_sm(), NULL))
            continue;
        void *dy = dput(NULL, (size_t)ny * ysize);
        cudaError_t err = ks == KSET_MMA ? kcuda_linear_q8_mma(p, dx, dw, &e, use_res ? dr : NULL, dy, 0)
                                         : kcuda_linear_q8(p, dx, dw, &e, use_res ? dr : NULL, dy, 0);
        char what[160];
        snprintf(what, sizeof(what), "%s linear q8 n%d k%d m%d lo%d hi%d%s%s", KSET_NAME[ks], p->n, p->k, p->m,
                 eh.e.lo, eh.e.hi, eh.e.out_i32 ? " i32" : "", use_res ? " res" : "");
        ok &= dcheck(what, err, dy, ref, (size_t)ny * ysize);
        cudaFree(dy);
    }
    cudaFree(db), cudaFree(dm), cudaFree(dx), cudaFree(dw), cudaFree(dr);
    free(x), free(w), free(r), free(ref), free(packed), test_epilogue_free(&eh);
    return ok;
}

TEST(cuda_q8_linear)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 60; i++) {
        struct k_linear p = {.n = test_rand_int(1, 9), .k = test_rand_int(1, i % 4 == 0 ? 2000 : 300),
                             .m = test_rand_int(1, 130)};
        failed += !linear_case(&p, test_rand_int(0, 1));
    }
    /* several IMMA tiles both ways, k a multiple of 16 (16-byte loads of x)
     * and not (byte loads), and lenet5's fc1 at batch 1 */
    static const struct k_linear SHAPES[] = {{.n = 130, .k = 1024, .m = 200}, {.n = 67, .k = 999, .m = 129},
                                             {.n = 1, .k = 400, .m = 120}};
    for (size_t i = 0; i < sizeof(SHAPES) / sizeof(SHAPES[0]); i++)
        failed += !linear_case(&SHAPES[i], i != 1);
    TEST_FAIL_IF(failed, "%d INT8 linear cases differ from the reference", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ pooling */

TEST(cuda_q8_pool)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 40; i++) {
        bool avg = i % 2;
        struct k_pool2d p = test_random_pool(!avg);
        int64_t nx = (int64_t)p.n * p.c * p.h * p.w, ny = (int64_t)p.n * p.c * p.oh * p.ow;
        int8_t *x = test_rand_q8(nx), *ref = malloc((size_t)ny);
        int cells = p.kh * p.kw;
        struct k_q8_mult *cm = calloc((size_t)cells + 1, sizeof(*cm));
        RT_ASSERT(ref && cm);
        double gain = test_rand_float(0.5f, 2.0f);
        for (int c = 1; c <= cells; c++)
            cm[c] = rt_q8_mult(gain / c);
        if (avg)
            kref_avg_pool2d_q8(&p, cm, x, ref);
        else
            kref_max_pool2d_q8(&p, x, ref);
        void *dx = dput(x, (size_t)nx), *dy = dput(NULL, (size_t)ny);
        void *dcm = dput(cm, sizeof(*cm) * (size_t)(cells + 1));
        cudaError_t e = avg ? kcuda_avg_pool2d_q8(&p, dcm, dx, dy, 0) : kcuda_max_pool2d_q8(&p, dx, dy, 0);
        char what[160];
        snprintf(what, sizeof(what), "%s pool q8 n%d c%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d inc%d", avg ? "avg" : "max",
                 p.n, p.c, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_t, p.pad_l, p.dil_h, p.dil_w,
                 p.count_include_pad);
        failed += !dcheck(what, e, dy, ref, (size_t)ny);
        cudaFree(dx), cudaFree(dy), cudaFree(dcm);
        free(x), free(ref), free(cm);
    }
    for (int i = 0; i < 10; i++) {
        int n = test_rand_int(1, 4), c = test_rand_int(1, 70);
        int64_t hw = test_rand_int(1, i % 3 == 0 ? 3000 : 60);
        int8_t *x = test_rand_q8((int64_t)n * c * hw), *ref = malloc((size_t)n * c);
        RT_ASSERT(ref);
        struct k_q8_mult m = rt_q8_mult(test_rand_float(0.5f, 2.0f) / (double)hw);
        kref_global_avg_pool_q8(n, c, hw, m, x, ref);
        void *dx = dput(x, (size_t)n * c * hw), *dy = dput(NULL, (size_t)n * c);
        char what[80];
        snprintf(what, sizeof(what), "global avg pool q8 n%d c%d hw%lld", n, c, (long long)hw);
        failed += !dcheck(what, kcuda_global_avg_pool_q8(n, c, hw, m, dx, dy, 0), dy, ref, (size_t)n * c);
        cudaFree(dx), cudaFree(dy);
        free(x), free(ref);
    }
    TEST_FAIL_IF(failed, "%d INT8 pooling cases differ from the reference", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ element-wise */

TEST(cuda_q8_elementwise)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 12; i++) {
        int64_t n = test_rand_int(1, i % 3 == 0 ? 300000 : 3000);
        int8_t *a = test_rand_q8(n), *b = test_rand_q8(n), *ref = malloc((size_t)n), lut[256];
        float *xf = malloc(sizeof(float) * (size_t)n), *ref_f = malloc(sizeof(float) * (size_t)n);
        RT_ASSERT(ref && xf && ref_f);
        void *da = dput(a, (size_t)n), *db = dput(b, (size_t)n), *dy = dput(NULL, (size_t)n);
        void *dyf = dput(NULL, sizeof(float) * (size_t)n);
        char what[80];

        struct k_q8_mult ma = test_rand_mult(0.5), mb = test_rand_mult(0.5);
        kref_add_q8(n, a, ma, b, mb, ref);
        snprintf(what, sizeof(what), "add q8 %lld", (long long)n);
        failed += !dcheck(what, kcuda_add_q8(n, da, ma, db, mb, dy, 0), dy, ref, (size_t)n);

        static const enum k_act ACTS[] = {K_ACT_RELU, K_ACT_RELU6, K_ACT_SIGMOID, K_ACT_TANH, K_ACT_GELU};
        rt_q8_lut(ACTS[i % 5], test_rand_float(0.01f, 0.1f), test_rand_float(0.01f, 0.1f), lut);
        kref_lut_q8(n, lut, a, ref);
        snprintf(what, sizeof(what), "lut q8 act%d %lld", ACTS[i % 5], (long long)n);
        failed += !dcheck(what, kcuda_lut_q8(n, lut, da, dy, 0), dy, ref, (size_t)n);

        float scale = test_rand_float(0.001f, 0.1f);
        kref_dequantize_q8(n, a, scale, ref_f);
        snprintf(what, sizeof(what), "dequantize q8 %lld", (long long)n);
        failed += !dcheck(what, kcuda_dequantize_q8(n, da, scale, dyf, 0), dyf, ref_f, sizeof(float) * (size_t)n);

        /* quantize: random floats, exact half-way products, NaN and infinities */
        test_rand_fill(xf, n, -20, 20);
        float inv = 1.0f / scale;
        for (int64_t j = 0; j < n; j += 7)
            xf[j] = ((float)test_rand_int(-300, 300) + 0.5f) / inv;
        if (n > 3) {
            xf[1] = NAN;
            xf[2] = INFINITY;
            xf[3] = -INFINITY;
        }
        int8_t *q = malloc((size_t)n);
        RT_ASSERT(q);
        kref_quantize_q8(n, xf, inv, q);
        void *dxf = dput(xf, sizeof(float) * (size_t)n);
        snprintf(what, sizeof(what), "quantize q8 %lld", (long long)n);
        failed += !dcheck(what, kcuda_quantize_q8(n, dxf, inv, dy, 0), dy, q, (size_t)n);

        cudaFree(da), cudaFree(db), cudaFree(dy), cudaFree(dyf), cudaFree(dxf);
        free(a), free(b), free(ref), free(xf), free(ref_f), free(q);
    }
    /* I32 accumulators dequantised per channel */
    for (int i = 0; i < 6; i++) {
        int n = test_rand_int(1, 4), c = test_rand_int(1, 40);
        int64_t inner = test_rand_int(1, 50), count = (int64_t)n * c * inner;
        int32_t *x = malloc(sizeof(int32_t) * (size_t)count);
        float *sc = malloc(sizeof(float) * (size_t)c), *ref = malloc(sizeof(float) * (size_t)count);
        RT_ASSERT(x && sc && ref);
        for (int64_t j = 0; j < count; j++)
            x[j] = (int32_t)(test_rand_u64() >> 36) - (1 << 27);
        for (int j = 0; j < c; j++)
            sc[j] = test_rand_float(1e-7f, 1e-4f);
        kref_dequantize_i32(n, c, inner, x, sc, ref);
        void *dx = dput(x, sizeof(int32_t) * (size_t)count), *ds = dput(sc, sizeof(float) * (size_t)c);
        void *dy = dput(NULL, sizeof(float) * (size_t)count);
        char what[80];
        snprintf(what, sizeof(what), "dequantize i32 n%d c%d inner%lld", n, c, (long long)inner);
        failed += !dcheck(what, kcuda_dequantize_i32(n, c, inner, dx, ds, dy, 0), dy, ref, sizeof(float) * (size_t)count);
        cudaFree(dx), cudaFree(ds), cudaFree(dy);
        free(x), free(sc), free(ref);
    }
    TEST_FAIL_IF(failed, "%d INT8 element-wise cases differ from the reference", failed);
    return TEST_PASS;
}

TEST(cuda_q8_concat)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 20; i++) {
        struct k_concat p = {test_rand_int(1, 6), test_rand_int(1, 40), test_rand_int(1, i == 0 ? KCUDA_CONCAT_MAX : 5)};
        int8_t *in[KCUDA_CONCAT_MAX];
        const void *din[KCUDA_CONCAT_MAX];
        int64_t lens[KCUDA_CONCAT_MAX], total = 0;
        struct k_q8_mult mults[KCUDA_CONCAT_MAX];
        for (int j = 0; j < p.count; j++) {
            lens[j] = test_rand_int(1, 9);
            total += lens[j];
            in[j] = test_rand_q8(p.outer * lens[j] * p.inner);
            din[j] = dput(in[j], (size_t)(p.outer * lens[j] * p.inner));
            mults[j] = test_rand_mult(0.7);
        }
        int64_t ny = p.outer * total * p.inner;
        RT_ASSERT(ny > 0);
        int8_t *ref = malloc((size_t)ny);
        RT_ASSERT(ref);
        kref_concat_q8(&p, (const int8_t *const *)in, lens, mults, ref);
        void *dy = dput(NULL, (size_t)ny);
        char what[80];
        snprintf(what, sizeof(what), "concat q8 outer%lld inner%lld count%d", (long long)p.outer,
                 (long long)p.inner, p.count);
        failed += !dcheck(what, kcuda_concat_q8(&p, (const int8_t *const *)din, lens, mults, dy, 0), dy, ref,
                          (size_t)ny);
        for (int j = 0; j < p.count; j++) {
            cudaFree((void *)din[j]);
            free(in[j]);
        }
        cudaFree(dy);
        free(ref);
    }
    TEST_FAIL_IF(failed, "%d INT8 concat cases differ from the reference", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ shipped models */

static bool run_model(const char *dir, struct rt_backend *b, int count, int in_elems, const float *x, int classes,
                      float *y, struct rt_error *err)
{
    struct rt_model *m;
    struct rt_session *s;
    if (rt_model_load(dir, b, &m, err) != RT_OK)
        return false;
    if (rt_session_create(m, &s, err) != RT_OK) {
        rt_model_free(m);
        return false;
    }
    int batch = rt_model_config(m)->max_batch_size;
    bool ok = true;
    for (int start = 0; start < count && ok; start += batch) {
        int nb = count - start < batch ? count - start : batch;
        const float *in[1] = {x + (int64_t)start * in_elems};
        float *out[1] = {y + (int64_t)start * classes};
        ok = rt_session_run(s, nb, in, out, err) == RT_OK;
    }
    rt_session_free(s);
    rt_model_free(m);
    return ok;
}

/* The model's outputs over its test inputs (cuda_test_inputs_make) on the
 * CUDA backend (new kernels with graphs on, then off; baseline kernels)
 * against the CPU backend's, bit for bit. */
static enum test_result int8_model_vs_cpu(const char *name)
{
    CUDA_REQUIRE();
    char src[256], path[300], why[600];
    snprintf(src, sizeof(src), "model_repository/%s", name);
    snprintf(path, sizeof(path), "%s/model.safetensors", src);
    if (access(path, R_OK) != 0)
        SKIP("%s has no weights here (the ImageNet models' INT8 copies are generated: gpu_check.sh imagenet-export)",
             src);
    struct rt_error err = {0};
    struct rt_backend *cpu, *gpu;
    struct rt_model *m;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 0}, &cpu, &err), RT_OK);
    TEST_FAIL_IF(rt_model_load(src, cpu, &m, &err) != RT_OK, "%s", err.msg);
    const struct rt_model_config *cfg = rt_model_config(m);
    int classes = (int)cfg->outputs[0].sample_elems;
    TEST_FAIL_IF(cfg->precision != RT_PRECISION_INT8, "%s is not an int8 model", src);
    struct cuda_test_inputs inputs;
    if (!cuda_test_inputs_make(cfg, &inputs, why, sizeof(why))) {
        rt_model_free(m);
        rt_backend_free(cpu);
        SKIP("%s", why);
    }
    rt_model_free(m);
    int count = inputs.count, in_elems = (int)inputs.in_elems;
    const float *x = inputs.x;
    float *ref = malloc(sizeof(float) * (size_t)count * (size_t)classes);
    float *y = malloc(sizeof(float) * (size_t)count * (size_t)classes);
    RT_ASSERT(ref && y && count > 0);
    bool cpu_ok = run_model(src, cpu, count, in_elems, x, classes, ref, &err);
    size_t n_out = (size_t)count * (size_t)classes;
    int failed = 0;
    static const struct {
        enum rt_cuda_graphs graphs;
        enum rt_cuda_kernels kernels;
        const char *name;
    } RUNS[] = {{RT_CUDA_GRAPHS_ON, RT_CUDA_KERNELS_NEW, "graphs on, new kernels"},
                {RT_CUDA_GRAPHS_OFF, RT_CUDA_KERNELS_NEW, "graphs off, new kernels"},
                {RT_CUDA_GRAPHS_ON, RT_CUDA_KERNELS_BASELINE, "graphs on, baseline kernels"}};
    for (size_t run = 0; cpu_ok && run < sizeof(RUNS) / sizeof(RUNS[0]); run++) {
        const struct rt_backend_options opt = {.device = -1, .cuda_graphs = RUNS[run].graphs,
                                               .cuda_kernels = RUNS[run].kernels};
        const char *how = RUNS[run].name;
        enum rt_status st = rt_backend_create(RT_BACKEND_CUDA, &opt, &gpu, &err);
        if (st != RT_OK) {
            printf("  %s, %s: CUDA backend: %s\n", name, how, err.msg);
            failed++;
            continue;
        }
        memset(y, 0xff, sizeof(float) * n_out);
        bool ran = run_model(src, gpu, count, in_elems, x, classes, y, &err);
        rt_backend_free(gpu);
        if (!ran) {
            printf("  %s, %s: %s\n", name, how, err.msg);
            failed++;
            continue;
        }
        size_t i = 0;
        while (i < n_out && test_same_bits(&y[i], &ref[i], sizeof(float)))
            i++;
        if (i < n_out) {
            printf("  %s, %s: output %zu (sample %zu) is %.9g on CUDA, %.9g on the CPU\n", name, how, i,
                   i / (size_t)classes, y[i], ref[i]);
            failed++;
        }
    }
    free(ref), free(y);
    cuda_test_inputs_free(&inputs);
    rt_backend_free(cpu);
    TEST_FAIL_IF(!cpu_ok, "CPU: %s", err.msg);
    TEST_FAIL_IF(failed, "%s: %d CUDA runs differ from the CPU backend", name, failed);
    return TEST_PASS;
}

TEST(cuda_q8_model_lenet5)
{
    return int8_model_vs_cpu("lenet5-int8");
}

TEST(cuda_q8_model_resnet_mini)
{
    return int8_model_vs_cpu("resnet-mini-int8");
}

/* The ImageNet models' INT8 copies (inferctl quantize on the GPU machine:
 * gpu_check.sh's imagenet-export step), over random pictures. */
TEST(cuda_imagenet_q8_resnet50)
{
    return int8_model_vs_cpu("resnet50-int8");
}

TEST(cuda_imagenet_q8_mobilenet_v2)
{
    return int8_model_vs_cpu("mobilenet_v2-int8");
}
