/* test_cuda_ops.c - every kernels/cuda op against the reference kernels
 * (kernels/ref) on fresh random shapes and data, FP32 and FP16: outputs
 * poisoned with NaN and followed by guard elements, checked to be fully
 * written, finite, unchanged past the end, and within 1e-5 (FP32) or 2e-3
 * (FP16) relative error. FP16 references see the same half-rounded inputs
 * as the kernel. Every test SKIPs when no usable CUDA device is present,
 * except cuda_pack_emulated, which checks the GEMM's data layout on the host. */
#include <stdlib.h>
#include <string.h>

#include "kernel_test_util.h"
#include "kernels/ref/kref.h"
#include "op_shapes.h"
#include "test_cuda_util.h"

static const enum kcuda_dtype DTYPES[2] = {KCUDA_F32, KCUDA_F16};

/* ------------------------------------------------------------------ conv2d */

/* One convolution through every kernel set (GSET_*). */
static bool conv_case(const struct k_conv2d *p, bool use_bias, bool use_res, enum kcuda_dtype t)
{
    int64_t nx = (int64_t)p->n * p->c * p->h * p->w, ny = (int64_t)p->n * p->oc * p->oh * p->ow;
    int64_t nw = (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw;
    float *x = rand_buf(nx, -1, 1, t), *w = rand_buf(nw, -1, 1, t), *r = rand_buf(ny, -1, 1, t);
    float *b = rand_buf(p->oc, -1, 1, KCUDA_F32), *ref = out_buf(ny), *pre = out_buf(ny);
    ref_conv2d_and_pre(p, x, w, use_bias ? b : NULL, use_res ? r : NULL, ref, pre);
    size_t pe = kcuda_conv2d_packed_elems(p), tb = kcuda_conv2d_table_bytes(p);
    float *packed = out_buf((int64_t)pe), *table = out_buf((int64_t)(tb / sizeof(float)));
    kcuda_conv2d_pack(p, KCUDA_NCHW, w, packed, table);
    void *dx = dbuf_upload(x, nx, t), *dw = dbuf_upload(packed, (int64_t)pe, t);
    void *dt = dbuf_upload(table, (int64_t)(tb / sizeof(float)), KCUDA_F32);   /* raw bytes */
    void *db = dbuf_upload(b, p->oc, KCUDA_F32), *dr = dbuf_upload(r, ny, t);
    bool ok = true;
    for (int ks = 0; ks < GSET_COUNT; ks++) {
        int sms = gset_sms(ks);
        void *dy = dbuf_poisoned(ny, t), *dy2 = dbuf_poisoned(ny, t);
        cudaError_t e = kcuda_conv2d(p, sms, t, KCUDA_NCHW, KCUDA_NCHW, dx, dw, dt, use_bias ? db : NULL,
                                     use_res ? dr : NULL, dy, 0);
        cudaError_t e2 = kcuda_conv2d(p, sms, t, KCUDA_NCHW, KCUDA_NCHW, dx, dw, dt, use_bias ? db : NULL,
                                      use_res ? dr : NULL, dy2, 0);
        char what[240];
        snprintf(what, sizeof(what), "conv n%d c%d %dx%d oc%d k%dx%d s%d,%d p%d,%d d%d,%d g%d act%d%s%s (%s: %s)",
                 p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->stride_h, p->stride_w, p->pad_t, p->pad_l, p->dil_h,
                 p->dil_w, p->groups, p->act, use_bias ? " bias" : "", use_res ? " res" : "", GSET_NAME[ks],
                 kcuda_conv2d_plan(p, sms, t, KCUDA_NCHW, KCUDA_NCHW).name);
        ok = check_launch_scaled(what, dy, ref, pre, ny, t, e) && check_repeat(what, dy, dy2, ny, t, e2) && ok;
        dbuf_free(dy), dbuf_free(dy2);
    }
    dbuf_free(dx), dbuf_free(dw), dbuf_free(dt), dbuf_free(db), dbuf_free(dr);
    free(x), free(w), free(r), free(b), free(ref), free(pre), free(packed), free(table);
    return ok;
}

/* Beside the shipped models' layers (TEST_MODEL_CONVS): shapes that reach
 * every tile size, and small maps (at most 64 rows) for split-K: 128
 * columns a block, ragged rows and columns, strided, grouped. */
static const struct k_conv2d TILE_CONVS[] = {
    {.n = 2, .c = 24, .h = 9, .w = 9, .oc = 200, .oh = 9, .ow = 9, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1},
    {.n = 2, .c = 8, .h = 10, .w = 10, .oc = 8, .oh = 10, .ow = 10, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1,
     .groups = 8},
    {.n = 1, .c = 128, .h = 4, .w = 4, .oc = 256, .oh = 4, .ow = 4, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1},
    {.n = 3, .c = 40, .h = 7, .w = 7, .oc = 70, .oh = 3, .ow = 3, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2},
    {.n = 1, .c = 32, .h = 5, .w = 5, .oc = 64, .oh = 5, .ow = 5, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1,
     .groups = 4},
    {.n = 1, .c = 6, .h = 14, .w = 14, .oc = 16, .oh = 10, .ow = 10, .kh = 5, .kw = 5},   /* lenet5 conv2 */
    /* depthwise (the direct kernel): MobileNetV2's stride-2 3x3, a channel
     * multiplier of 2 at 5x5, 7x7 over several pixel blocks; 9x9 (81 taps)
     * stays on the GEMM */
    {.n = 2, .c = 32, .h = 15, .w = 15, .oc = 32, .oh = 8, .ow = 8, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2,
     .pad_t = 1, .pad_l = 1, .groups = 32},
    {.n = 1, .c = 8, .h = 9, .w = 9, .oc = 16, .oh = 9, .ow = 9, .kh = 5, .kw = 5, .pad_t = 2, .pad_l = 2,
     .groups = 8},
    {.n = 2, .c = 40, .h = 20, .w = 19, .oc = 40, .oh = 20, .ow = 19, .kh = 7, .kw = 7, .pad_t = 3, .pad_l = 3,
     .groups = 40},
    {.n = 1, .c = 4, .h = 9, .w = 9, .oc = 4, .oh = 1, .ow = 1, .kh = 9, .kw = 9, .groups = 4},
};

static enum test_result conv_test(enum kcuda_dtype t)
{
    CUDA_REQUIRE();
    int failed = 0;
    int fixed = TEST_MODEL_CONV_COUNT + (int)(sizeof(TILE_CONVS) / sizeof(TILE_CONVS[0]));
    for (int i = 0; i < fixed; i++) {
        struct k_conv2d p = i < TEST_MODEL_CONV_COUNT ? TEST_MODEL_CONVS[i] : TILE_CONVS[i - TEST_MODEL_CONV_COUNT];
        p.stride_h += !p.stride_h, p.stride_w += !p.stride_w, p.dil_h = p.dil_w = 1, p.groups += !p.groups;
        p.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        failed += !conv_case(&p, true, test_rand_int(0, 1), t);
    }
    for (int i = 0; i < 24; i++) {
        struct k_conv2d p = test_random_conv(true);
        failed += !conv_case(&p, test_rand_int(0, 1), test_rand_int(0, 1), t);
    }
    TEST_FAIL_IF(failed, "%d convolution cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_conv2d_f32)
{
    return conv_test(KCUDA_F32);
}

TEST(cuda_op_conv2d_f16)
{
    return conv_test(KCUDA_F16);
}

/* ------------------------------------------------------------------ linear */

/* One linear layer through every kernel set (GSET_*). */
static bool linear_case(const struct k_linear *p, bool use_bias, bool use_res, enum kcuda_dtype t)
{
    int64_t nx = (int64_t)p->n * p->k, ny = (int64_t)p->n * p->m, nw = (int64_t)p->m * p->k;
    float *x = rand_buf(nx, -1, 1, t), *w = rand_buf(nw, -1, 1, t), *r = rand_buf(ny, -1, 1, t);
    float *b = rand_buf(p->m, -1, 1, KCUDA_F32), *ref = out_buf(ny), *pre = out_buf(ny);
    ref_linear_and_pre(p, x, w, use_bias ? b : NULL, use_res ? r : NULL, ref, pre);
    size_t pe = kcuda_linear_packed_elems(p);
    float *packed = out_buf((int64_t)pe);
    kcuda_linear_pack(p, w, packed);
    void *dx = dbuf_upload(x, nx, t), *dw = dbuf_upload(packed, (int64_t)pe, t);
    void *db = dbuf_upload(b, p->m, KCUDA_F32), *dr = dbuf_upload(r, ny, t);
    bool ok = true;
    for (int ks = 0; ks < GSET_COUNT; ks++) {
        int sms = gset_sms(ks);
        void *dy = dbuf_poisoned(ny, t), *dy2 = dbuf_poisoned(ny, t);
        cudaError_t e = kcuda_linear(p, sms, t, dx, dw, use_bias ? db : NULL, use_res ? dr : NULL, dy, 0);
        cudaError_t e2 = kcuda_linear(p, sms, t, dx, dw, use_bias ? db : NULL, use_res ? dr : NULL, dy2, 0);
        char what[160];
        snprintf(what, sizeof(what), "linear n%d k%d m%d act%d%s%s (%s: %s)", p->n, p->k, p->m, p->act,
                 use_bias ? " bias" : "", use_res ? " res" : "", GSET_NAME[ks], kcuda_linear_plan(p, sms).name);
        ok = check_launch_scaled(what, dy, ref, pre, ny, t, e) && check_repeat(what, dy, dy2, ny, t, e2) && ok;
        dbuf_free(dy), dbuf_free(dy2);
    }
    dbuf_free(dx), dbuf_free(dw), dbuf_free(db), dbuf_free(dr);
    free(x), free(w), free(r), free(b), free(ref), free(pre), free(packed);
    return ok;
}

static enum test_result linear_test(enum kcuda_dtype t)
{
    CUDA_REQUIRE();
    static const struct k_linear FIXED[] = {
        {64, 400, 120, K_ACT_NONE}, {64, 120, 84, K_ACT_NONE}, {64, 84, 10, K_ACT_NONE}, {256, 64, 10, K_ACT_NONE},
        /* batch 1 (split-K: lenet5's fc1..fc3, 128 columns a block, K not a multiple of 8), and 9 rows */
        {1, 400, 120, K_ACT_NONE}, {1, 120, 84, K_ACT_NONE}, {1, 84, 10, K_ACT_NONE}, {1, 1000, 512, K_ACT_NONE},
        {1, 333, 257, K_ACT_NONE}, {9, 256, 130, K_ACT_NONE}};
    int failed = 0;
    for (size_t i = 0; i < sizeof(FIXED) / sizeof(FIXED[0]); i++) {
        struct k_linear p = FIXED[i];
        p.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        failed += !linear_case(&p, true, false, t);
    }
    for (int i = 0; i < 24; i++) {
        struct k_linear p = {test_rand_int(1, 70), test_rand_int(1, 300), test_rand_int(1, 200),
                             (enum k_act)test_rand_int(0, K_ACT_COUNT - 1)};
        if (test_rand_int(0, 1))
            p.k = (p.k + 7) / 8 * 8;   /* the 16-byte copy path of FP16 */
        failed += !linear_case(&p, test_rand_int(0, 1), test_rand_int(0, 1), t);
    }
    TEST_FAIL_IF(failed, "%d linear cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_linear_f32)
{
    return linear_test(KCUDA_F32);
}

TEST(cuda_op_linear_f16)
{
    return linear_test(KCUDA_F16);
}

/* Many k tiles, full 128 x 128 tiles, ragged edges. */
TEST(cuda_op_gemm_large)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        struct k_linear p = {test_rand_int(300, 520), 8 * test_rand_int(60, 64), test_rand_int(300, 520), K_ACT_NONE};
        failed += !linear_case(&p, true, true, DTYPES[i]);
    }
    TEST_FAIL_IF(failed, "%d large GEMM cases failed", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ pooling */

static int pool_out(int size, int k, int s, int pad, int dil, bool ceil_mode)
{
    int span = size + 2 * pad - dil * (k - 1) - 1;
    if (span < 0)
        return 0;
    int o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= size + pad)   /* PyTorch: the last window starts inside */
        o--;
    return o;
}

TEST(cuda_op_pool2d)
{
    CUDA_REQUIRE();
    int failed = 0, cases = 0;
    while (cases < 48) {
        bool is_max = cases % 2 == 0;
        bool ceil_mode = test_rand_int(0, 1);
        struct k_pool2d p = {.n = test_rand_int(1, 2), .c = test_rand_int(1, 5), .h = test_rand_int(1, 20),
                             .w = test_rand_int(1, 20), .kh = test_rand_int(1, 4), .kw = test_rand_int(1, 4),
                             .stride_h = test_rand_int(1, 3), .stride_w = test_rand_int(1, 3),
                             .dil_h = is_max ? test_rand_int(1, 2) : 1, .dil_w = is_max ? test_rand_int(1, 2) : 1,
                             .count_include_pad = test_rand_int(0, 1)};
        p.pad_t = test_rand_int(0, p.kh / 2), p.pad_l = test_rand_int(0, p.kw / 2);
        p.oh = pool_out(p.h, p.kh, p.stride_h, p.pad_t, p.dil_h, ceil_mode);
        p.ow = pool_out(p.w, p.kw, p.stride_w, p.pad_l, p.dil_w, ceil_mode);
        if (p.oh < 1 || p.ow < 1)
            continue;
        enum kcuda_dtype t = DTYPES[cases / 2 % 2];
        int64_t nx = (int64_t)p.n * p.c * p.h * p.w, ny = (int64_t)p.n * p.c * p.oh * p.ow;
        float *x = rand_buf(nx, -4, 4, t), *ref = out_buf(ny);
        (is_max ? kref_max_pool2d_f32 : kref_avg_pool2d_f32)(&p, x, ref);
        if (test_count_nonfinite(ref, ny) == 0) {   /* a window over padding only has no max */
            void *dx = dbuf_upload(x, nx, t), *dy = dbuf_poisoned(ny, t);
            cudaError_t e = (is_max ? kcuda_max_pool2d : kcuda_avg_pool2d)(&p, t, dx, dy, 0);
            char what[160];
            snprintf(what, sizeof(what), "%s pool %dx%d k%dx%d s%d,%d p%d,%d d%d,%d -> %dx%d", is_max ? "max" : "avg",
                     p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_t, p.pad_l, p.dil_h, p.dil_w, p.oh, p.ow);
            failed += !check_launch(what, dy, ref, ny, t, e);
            dbuf_free(dx), dbuf_free(dy);
            cases++;
        }
        free(x), free(ref);
    }
    TEST_FAIL_IF(failed, "%d pooling cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_global_avg_pool)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 12; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        int n = test_rand_int(1, 9), c = test_rand_int(1, 70);
        int64_t hw = i < 2 ? 49 : test_rand_int(1, 400);
        float *x = rand_buf((int64_t)n * c * hw, -2, 2, t), *ref = out_buf((int64_t)n * c);
        kref_global_avg_pool_f32(n, c, hw, x, ref);
        void *dx = dbuf_upload(x, (int64_t)n * c * hw, t), *dy = dbuf_poisoned((int64_t)n * c, t);
        failed += !check_launch("global avg pool", dy, ref, (int64_t)n * c, t, kcuda_global_avg_pool(n, c, hw, t, dx, dy, 0));
        dbuf_free(dx), dbuf_free(dy);
        free(x), free(ref);
    }
    TEST_FAIL_IF(failed, "%d global pooling cases failed", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ element-wise */

TEST(cuda_op_channel_affine)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 8; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        struct k_channel_affine p = {test_rand_int(1, 5), test_rand_int(1, 40), test_rand_int(1, 300)};
        int64_t n = (int64_t)p.n * p.c * p.inner;
        float *x = rand_buf(n, -3, 3, t), *sc = rand_buf(p.c, 0.5f, 2, KCUDA_F32), *sh = rand_buf(p.c, -1, 1, KCUDA_F32);
        float *ref = out_buf(n);
        kref_channel_affine_f32(&p, x, sc, sh, ref);
        void *dx = dbuf_upload(x, n, t), *dy = dbuf_poisoned(n, t);
        void *dsc = dbuf_upload(sc, p.c, KCUDA_F32), *dsh = dbuf_upload(sh, p.c, KCUDA_F32);
        failed += !check_launch("channel affine", dy, ref, n, t, kcuda_channel_affine(&p, t, dx, dsc, dsh, dy, 0));
        dbuf_free(dx), dbuf_free(dy), dbuf_free(dsc), dbuf_free(dsh);
        free(x), free(sc), free(sh), free(ref);
    }
    TEST_FAIL_IF(failed, "%d affine cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_act)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int a = 0; a < K_ACT_COUNT; a++)
        for (int i = 0; i < 2; i++) {
            enum kcuda_dtype t = DTYPES[i];
            /* one launch longer than the grid cap (65536 blocks of 256) runs the grid-stride loop */
            int64_t n = a == K_ACT_RELU && i == 0 ? (int64_t)65536 * 256 + 1234 : test_rand_int(1, 5000);
            float *x = rand_buf(n, -8, 8, t), *ref = out_buf(n);
            kref_act_f32_n((enum k_act)a, n, x, ref);
            void *dx = dbuf_upload(x, n, t), *dy = dbuf_poisoned(n, t);
            char what[32];
            snprintf(what, sizeof(what), "act %d n%lld", a, (long long)n);
            failed += !check_launch(what, dy, ref, n, t, kcuda_act((enum k_act)a, n, t, dx, dy, 0));
            /* in place, as the contract allows */
            failed += !check_launch(what, dx, ref, n, t, kcuda_act((enum k_act)a, n, t, dx, dx, 0));
            dbuf_free(dx), dbuf_free(dy);
            free(x), free(ref);
        }
    TEST_FAIL_IF(failed, "%d activation cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_add)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 6; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        int64_t n = test_rand_int(1, 20000);
        float *a = rand_buf(n, -4, 4, t), *b = rand_buf(n, -4, 4, t), *ref = out_buf(n);
        kref_add_f32(n, a, b, ref);
        void *da = dbuf_upload(a, n, t), *db = dbuf_upload(b, n, t), *dy = dbuf_poisoned(n, t);
        failed += !check_launch("add", dy, ref, n, t, kcuda_add(n, t, da, db, dy, 0));
        dbuf_free(da), dbuf_free(db), dbuf_free(dy);
        free(a), free(b), free(ref);
    }
    TEST_FAIL_IF(failed, "%d add cases failed", failed);
    return TEST_PASS;
}

/* The cuDNN path's epilogue: y = act(y + bias[c] + residual), in place. */
TEST(cuda_op_bias_act)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 8; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        int n = test_rand_int(1, 4), c = test_rand_int(1, 40);
        int64_t hw = test_rand_int(1, 200), count = (int64_t)n * c * hw;
        enum k_act act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        bool use_res = i % 4 < 2;
        float *y = rand_buf(count, -3, 3, t), *r = rand_buf(count, -1, 1, t), *b = rand_buf(c, -1, 1, KCUDA_F32);
        float *ref = out_buf(count);
        for (int64_t k = 0; k < count; k++)
            ref[k] = kref_act_f32(act, (float)((double)y[k] + b[k / hw % c] + (use_res ? r[k] : 0.0)));
        void *dy = dbuf_upload(y, count, t), *dr = dbuf_upload(r, count, t), *db = dbuf_upload(b, c, KCUDA_F32);
        failed += !check_launch("bias act", dy, ref, count, t,
                          kcuda_bias_act(n, c, hw, t, db, use_res ? dr : NULL, act, dy, 0));
        dbuf_free(dy), dbuf_free(dr), dbuf_free(db);
        free(y), free(r), free(b), free(ref);
    }
    TEST_FAIL_IF(failed, "%d bias+act cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_convert)
{
    CUDA_REQUIRE();
    int64_t n = test_rand_int(1, 50000);
    float *x = rand_buf(n, -70000, 70000, KCUDA_F32), *ref = out_buf(n), *out = out_buf(n);
    memcpy(ref, x, sizeof(float) * (size_t)n);
    round_to_half(ref, n);   /* out of half's range rounds to infinity, as on the host */
    void *dx = dbuf_upload(x, n, KCUDA_F32), *dh = dbuf_poisoned(n, KCUDA_F16), *dy = dbuf_poisoned(n, KCUDA_F32);
    cudaError_t e = kcuda_convert(n, KCUDA_F32, dx, KCUDA_F16, dh, 0);
    if (e == cudaSuccess)
        e = kcuda_convert(n, KCUDA_F16, dh, KCUDA_F32, dy, 0);
    bool ok = e == cudaSuccess && dbuf_download(out, dy, n, KCUDA_F32);
    int64_t differ = 0;
    for (int64_t i = 0; ok && i < n; i++)
        differ += !test_same_bits(&out[i], &ref[i], sizeof(float));
    dbuf_free(dx), dbuf_free(dh), dbuf_free(dy);
    free(x), free(ref), free(out);
    TEST_FAIL_IF(!ok, "conversion failed: %s", cudaGetErrorString(e));
    ASSERT_EQ_INT(differ, 0);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ softmax, concat */

TEST(cuda_op_softmax)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 12; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        struct k_softmax p = {test_rand_int(1, 300), test_rand_int(1, 100), i < 6 ? 1 : test_rand_int(2, 30), 0};
        int64_t n = p.outer * p.axis_len * p.inner;
        float *x = rand_buf(n, -10, 10, t), *ref = out_buf(n);
        kref_softmax_f32(&p, x, ref);
        void *dx = dbuf_upload(x, n, t), *dy = dbuf_poisoned(n, t);
        failed += !check_launch("softmax", dy, ref, n, t, kcuda_softmax(&p, t, dx, dy, 0));
        dbuf_free(dx), dbuf_free(dy);
        free(x), free(ref);
    }
    TEST_FAIL_IF(failed, "%d softmax cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_concat)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 8; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        struct k_concat p = {test_rand_int(1, 6), test_rand_int(1, 50), test_rand_int(1, i == 0 ? 16 : 5)};
        int64_t lens[KCUDA_CONCAT_MAX], total = 0;
        float *in[KCUDA_CONCAT_MAX];
        const void *din[KCUDA_CONCAT_MAX];
        for (int k = 0; k < p.count; k++) {
            lens[k] = test_rand_int(1, 20);
            total += lens[k];
            in[k] = rand_buf(p.outer * lens[k] * p.inner, -1, 1, t);
            din[k] = dbuf_upload(in[k], p.outer * lens[k] * p.inner, t);
        }
        int64_t n = p.outer * total * p.inner;
        float *ref = out_buf(n);
        kref_concat_f32(&p, (const float *const *)in, lens, ref);
        void *dy = dbuf_poisoned(n, t);
        failed += !check_launch("concat", dy, ref, n, t, kcuda_concat(&p, t, din, lens, dy, 0));
        dbuf_free(dy);
        for (int k = 0; k < p.count; k++) {
            dbuf_free((void *)din[k]);
            free(in[k]);
        }
        free(ref);
    }
    TEST_FAIL_IF(failed, "%d concat cases failed", failed);
    return TEST_PASS;
}

/* ------------------------------------------------------------------ no GPU needed */

/* The implicit GEMM's data contract emulated on the host, so CI checks it
 * without a GPU: packed weights B[g][k][n] (Kpad x Npad per group) and the
 * gather table {channel offset, dh, dw, 0} per k must reproduce kref's
 * convolution when A(m, k) is read exactly as the kernel reads it. */
TEST(cuda_pack_emulated)
{
    int failed = 0;
    for (int it = 0; it < 40; it++) {
        struct k_conv2d p = test_random_conv(true);
        int cg = p.c / p.groups, n_cols = p.oc / p.groups, pixels = p.oh * p.ow;
        int64_t nx = (int64_t)p.n * p.c * p.h * p.w, ny = (int64_t)p.n * p.oc * pixels;
        float *x = rand_buf(nx, -1, 1, KCUDA_F32), *w = rand_buf((int64_t)p.oc * cg * p.kh * p.kw, -1, 1, KCUDA_F32);
        float *ref = out_buf(ny), *y = out_buf(ny);
        p.act = K_ACT_NONE;
        kref_conv2d_f32(&p, x, w, NULL, NULL, ref);
        size_t pe = kcuda_conv2d_packed_elems(&p), tb = kcuda_conv2d_table_bytes(&p);
        float *packed = out_buf((int64_t)pe);
        int *table = malloc(tb);
        RT_ASSERT(table);
        kcuda_conv2d_pack(&p, KCUDA_NCHW, w, packed, table);
        int kpad = (int)(tb / (4 * sizeof(int))), npad = (int)(pe / ((size_t)p.groups * (size_t)kpad));
        for (int g = 0; g < p.groups; g++)
            for (int m = 0; m < p.n * pixels; m++) {
                int img = m / pixels, pix = m % pixels;
                int ih0 = pix / p.ow * p.stride_h - p.pad_t, iw0 = pix % p.ow * p.stride_w - p.pad_l;
                const float *xb = x + ((int64_t)img * p.c + (int64_t)g * cg) * p.h * p.w;
                for (int n = 0; n < n_cols; n++) {
                    double acc = 0;
                    for (int k = 0; k < kpad; k++) {
                        const int *t = table + (size_t)k * 4;
                        int ih = ih0 + t[1], iw = iw0 + t[2];
                        bool in = (unsigned)ih < (unsigned)p.h && (unsigned)iw < (unsigned)p.w;
                        acc += (in ? xb[t[0] + ih * p.w + iw] : 0.0) * packed[((int64_t)g * kpad + k) * npad + n];
                    }
                    y[(int64_t)img * p.oc * pixels + (int64_t)(g * n_cols + n) * pixels + pix] = (float)acc;
                }
            }
        failed += !cuda_check_close("emulated conv", y, ref, ny, KCUDA_F32);
        free(x), free(w), free(ref), free(y), free(packed), free(table);
    }
    TEST_FAIL_IF(failed, "%d emulated convolutions differ from kref", failed);
    return TEST_PASS;
}

/* The direct depthwise kernels' arithmetic, run on the host by
 * kcuda_depthwise_host over the weights as kcuda_conv2d_pack packs them:
 * kref's convolution for random convolutions with one input channel a
 * group (channel multipliers 1 to 3, up to 8x8 taps, strides, dilations,
 * asymmetric padding, bias, residual and every activation). And which convolutions take that
 * kernel: one input channel a group, NCHW x, at most KCUDA_DW_MAX_TAPS
 * taps, not in the baseline set. */
TEST(cuda_depthwise_host)
{
    int failed = 0;
    for (int it = 0; it < 60; it++) {
        struct k_conv2d p = {.n = test_rand_int(1, 3), .c = test_rand_int(1, 40), .h = test_rand_int(1, 20),
                             .w = test_rand_int(1, 20), .kh = test_rand_int(1, 8), .kw = test_rand_int(1, 8),
                             .stride_h = test_rand_int(1, 3), .stride_w = test_rand_int(1, 3),
                             .dil_h = test_rand_int(1, 2), .dil_w = test_rand_int(1, 2),
                             .act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1)};
        p.groups = p.c;
        p.oc = p.c * test_rand_int(1, 3);
        p.pad_t = test_rand_int(0, p.kh - 1), p.pad_l = test_rand_int(0, p.kw - 1);
        int pad_b = test_rand_int(0, p.kh - 1), pad_r = test_rand_int(0, p.kw - 1);
        p.oh = conv_out(p.h, p.pad_t, pad_b, p.kh, p.dil_h, p.stride_h);
        p.ow = conv_out(p.w, p.pad_l, pad_r, p.kw, p.dil_w, p.stride_w);
        if (p.oh < 1 || p.ow < 1) {
            it--;
            continue;
        }
        int64_t nx = (int64_t)p.n * p.c * p.h * p.w, ny = (int64_t)p.n * p.oc * p.oh * p.ow;
        bool use_bias = test_rand_int(0, 1), use_res = test_rand_int(0, 1);
        float *x = rand_buf(nx, -1, 1, KCUDA_F32), *w = rand_buf((int64_t)p.oc * p.kh * p.kw, -1, 1, KCUDA_F32);
        float *b = rand_buf(p.oc, -1, 1, KCUDA_F32), *r = rand_buf(ny, -1, 1, KCUDA_F32);
        float *ref = out_buf(ny), *pre = out_buf(ny), *y = out_buf(ny);
        ref_conv2d_and_pre(&p, x, w, use_bias ? b : NULL, use_res ? r : NULL, ref, pre);
        float *packed = out_buf((int64_t)kcuda_conv2d_packed_elems(&p));
        void *table = malloc(kcuda_conv2d_table_bytes(&p));
        RT_ASSERT(table);
        kcuda_conv2d_pack(&p, KCUDA_NCHW, w, packed, table);
        kcuda_depthwise_host(&p, x, packed, use_bias ? b : NULL, use_res ? r : NULL, y);
        char what[160];
        snprintf(what, sizeof(what), "depthwise n%d c%d oc%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d act%d%s%s", p.n, p.c,
                 p.oc, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_t, p.pad_l, p.dil_h, p.dil_w, p.act,
                 use_bias ? " bias" : "", use_res ? " res" : "");
        failed += !cuda_check_scaled(what, y, ref, pre, ny, KCUDA_F32);
        failed += !kcuda_depthwise_takes(&p, KCUDA_NCHW) || kcuda_depthwise_takes(&p, KCUDA_NHWC);
        free(x), free(w), free(b), free(r), free(ref), free(pre), free(y), free(packed), free(table);
    }
    TEST_FAIL_IF(failed, "%d depthwise cases differ from kref or were not taken", failed);

    struct k_conv2d dw = {.n = 8, .c = 96, .h = 14, .w = 14, .oc = 96, .oh = 14, .ow = 14, .kh = 3, .kw = 3,
                          .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 96};
    ASSERT_STR_EQ(kcuda_conv2d_plan(&dw, 132, KCUDA_F16, KCUDA_NCHW, KCUDA_NCHW).name, "depthwise direct");
    ASSERT_EQ_INT(kcuda_conv2d_plan(&dw, 132, KCUDA_F16, KCUDA_NCHW, KCUDA_NCHW).blocks, 8 * 96);
    ASSERT_STR_EQ(kcuda_conv2d_plan(&dw, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NHWC).name, "depthwise direct 32x32");
    ASSERT_EQ_INT(kcuda_conv2d_plan(&dw, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NHWC).blocks, 7 * 3 * 8);
    ASSERT_STR_EQ(kcuda_conv2d_plan(&dw, 0, KCUDA_F32, KCUDA_NCHW, KCUDA_NCHW).name, "tile 64x32");   /* baseline */
    struct k_conv2d small = dw;   /* a 7x7 plane: a block of 64 threads, not 256 */
    small.h = small.w = small.oh = small.ow = 7;
    ASSERT_EQ_INT(kcuda_conv2d_plan(&small, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NCHW).rows, 64);
    ASSERT_EQ_INT(kcuda_conv2d_plan(&dw, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NCHW).rows, 224);
    struct k_conv2d grouped = dw, wide = dw;
    grouped.groups = 48;   /* two input channels a group: the GEMM */
    ASSERT_FALSE(kcuda_depthwise_takes(&grouped, KCUDA_NCHW));
    wide.kh = wide.kw = 9, wide.pad_t = wide.pad_l = 4;   /* 81 taps: the GEMM */
    ASSERT_FALSE(kcuda_depthwise_takes(&wide, KCUDA_NCHW));
    return TEST_PASS;
}

/* The GEMM tile choice (kcuda_gemm_plan, host code): the baseline keeps the
 * tile by columns; the device's choice puts lenet5's fc1 at batch 1 on
 * split-K instead of one 128x128 tile, keeps large GEMMs on the large tile,
 * and takes smaller tiles when the large one leaves SMs idle. */
TEST(cuda_gemm_plan_choice)
{
    const int H100 = 132;
    struct k_linear fc1 = {1, 400, 120, K_ACT_NONE};
    struct kcuda_gemm_plan pl = kcuda_linear_plan(&fc1, 0);
    ASSERT_STR_EQ(pl.name, "tile 128x128");
    ASSERT_EQ_INT(pl.blocks, 1);
    ASSERT_EQ_INT(pl.k_split, 1);
    pl = kcuda_linear_plan(&fc1, H100);
    ASSERT_STR_EQ(pl.name, "split-k 8x32");
    ASSERT_EQ_INT(pl.rows, 8);
    ASSERT_EQ_INT(pl.cols, 32);
    ASSERT_EQ_INT(pl.k_split, 8);
    ASSERT_EQ_INT(pl.blocks, 4);   /* 120 columns, packed to 128 */

    /* batch 1, 4096 -> 4096: 128 blocks of 32 columns on an H100, 32 of 128 on 16 SMs */
    ASSERT_STR_EQ(kcuda_gemm_plan(1, 4096, 1, H100).name, "split-k 8x32");
    ASSERT_EQ_INT(kcuda_gemm_plan(1, 4096, 1, H100).blocks, 128);
    ASSERT_STR_EQ(kcuda_gemm_plan(1, 4096, 1, 16).name, "split-k 8x128");
    ASSERT_EQ_INT(kcuda_gemm_plan(1, 4096, 1, 16).blocks, 32);
    /* large: the same tile in both sets */
    for (int sms = 0; sms <= H100; sms += H100) {
        pl = kcuda_gemm_plan(4096, 4096, 1, sms);
        ASSERT_STR_EQ(pl.name, "tile 128x128");
        ASSERT_EQ_INT(pl.blocks, 32 * 32);
        ASSERT_STR_EQ(kcuda_gemm_plan((int64_t)64 * 56 * 56, 64, 1, sms).name, "tile 128x64");   /* batch 64, 56x56 */
        ASSERT_STR_EQ(kcuda_gemm_plan(4096, 30, 1, sms).name, "tile 64x32");
    }
    /* a 4x4 map at batch 1, 256 channels: 16 rows; and 48 rows */
    pl = kcuda_gemm_plan(16, 256, 1, H100);
    ASSERT_STR_EQ(pl.name, "split-k 8x32");
    ASSERT_EQ_INT(pl.blocks, 2 * 8);
    ASSERT_STR_EQ(kcuda_gemm_plan(16, 256, 1, 0).name, "tile 128x128");
    ASSERT_STR_EQ(kcuda_gemm_plan(48, 1024, 1, 16).name, "split-k 8x128");   /* 8 tiles < 16 SMs */
    ASSERT_STR_EQ(kcuda_gemm_plan(48, 4096, 1, 16).name, "tile 128x128");    /* 32 tiles fill 16 SMs */
    /* more rows, idle SMs: the largest smaller tile that fills them, else the smallest */
    ASSERT_STR_EQ(kcuda_gemm_plan(10000, 128, 1, H100).name, "tile 128x64");   /* 79 -> 158 blocks */
    ASSERT_STR_EQ(kcuda_gemm_plan(4000, 128, 1, H100).name, "tile 64x32");     /* 32, 64 -> 252 */
    ASSERT_STR_EQ(kcuda_gemm_plan(200, 100, 1, H100).name, "tile 64x32");      /* the most there is: 16 */
    ASSERT_STR_EQ(kcuda_gemm_plan(200, 100, 1, 0).name, "tile 128x128");
    /* groups count as blocks: a depthwise layer on a 7x7 map already fills the GPU */
    ASSERT_STR_EQ(kcuda_gemm_plan(49, 1, 512, H100).name, "tile 64x32");
    ASSERT_EQ_INT(kcuda_gemm_plan(49, 1, 512, H100).blocks, 512);
    ASSERT_EQ_INT(kcuda_gemm_plan(0, 120, 1, H100).blocks, 0);
    return TEST_PASS;
}
