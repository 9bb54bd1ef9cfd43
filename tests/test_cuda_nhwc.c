/* test_cuda_nhwc.c - the channels-last (NHWC) kernels of kernels/cuda
 * against the reference kernels (kernels/ref, NCHW), the data transposed on
 * the host: convolution in its three layout pairs with NHWC (x, y or both)
 * through every GEMM kernel set, pooling, global average pooling, the
 * per-channel affine and concat along NHWC channels; FP32 and FP16, outputs
 * poisoned, guarded and checked as in test_cuda_ops.c. They SKIP without a
 * usable CUDA device, except the host checks: the NHWC packing emulated
 * (the 16-byte gather's data contract) and the launch preconditions. */
#include <stdlib.h>
#include <string.h>

#include "kernel_test_util.h"
#include "kernels/ref/kref.h"
#include "op_shapes.h"
#include "test_cuda_util.h"

static const enum kcuda_dtype DTYPES[2] = {KCUDA_F32, KCUDA_F16};

/* [n, c, hw] -> a new [n, hw, c] */
static float *nhwc_of(const float *x, int n, int c, int64_t hw)
{
    float *y = out_buf((int64_t)n * c * hw);
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int64_t q = 0; q < hw; q++)
                y[((int64_t)i * hw + q) * c + ch] = x[((int64_t)i * c + ch) * hw + q];
    return y;
}

/* p with each group's channels rounded up to a multiple of 8: NHWC-readable
 * in both types. */
static struct k_conv2d nhwc_readable(struct k_conv2d p)
{
    int cg = p.c / p.groups;
    p.c = (cg + 7) / 8 * 8 * p.groups;
    return p;
}

/* ------------------------------------------------------------------ no GPU needed */

/* The NHWC gather's data contract on the host: with x NHWC, packed k runs
 * over (tap, channel), and the kernel reads A(m, k .. k + VEC - 1) as one
 * piece through the table entry of its first column alone. Reading so must
 * reproduce kref's convolution, for both piece sizes (FP32: 4, FP16: 8). */
TEST(cuda_nhwc_pack_emulated)
{
    int failed = 0;
    for (int it = 0; it < 40; it++) {
        struct k_conv2d p = nhwc_readable(test_random_conv(true));
        p.act = K_ACT_NONE;
        const int vec = it % 2 ? 8 : 4, cg = p.c / p.groups, n_cols = p.oc / p.groups, pixels = p.oh * p.ow;
        int64_t hw = (int64_t)p.h * p.w, nx = (int64_t)p.n * p.c * hw, ny = (int64_t)p.n * p.oc * pixels;
        float *x = rand_buf(nx, -1, 1, KCUDA_F32), *w = rand_buf((int64_t)p.oc * cg * p.kh * p.kw, -1, 1, KCUDA_F32);
        float *ref = out_buf(ny), *y = out_buf(ny), *xn = nhwc_of(x, p.n, p.c, hw);
        kref_conv2d_f32(&p, x, w, NULL, NULL, ref);
        size_t pe = kcuda_conv2d_packed_elems(&p), tb = kcuda_conv2d_table_bytes(&p);
        float *packed = out_buf((int64_t)pe);
        int *table = malloc(tb);
        RT_ASSERT(table);
        kcuda_conv2d_pack(&p, KCUDA_NHWC, w, packed, table);
        int kpad = (int)(tb / (4 * sizeof(int))), npad = (int)(pe / ((size_t)p.groups * (size_t)kpad));
        for (int g = 0; g < p.groups; g++)
            for (int m = 0; m < p.n * pixels; m++) {
                int img = m / pixels, pix = m % pixels;
                int ih0 = pix / p.ow * p.stride_h - p.pad_t, iw0 = pix % p.ow * p.stride_w - p.pad_l;
                const float *xb = xn + (int64_t)img * hw * p.c + (int64_t)g * cg;
                for (int n = 0; n < n_cols; n++) {
                    double acc = 0;
                    for (int k0 = 0; k0 < kpad; k0 += vec) {
                        const int *t = table + (size_t)k0 * 4;
                        int ih = ih0 + t[1], iw = iw0 + t[2];
                        if ((unsigned)ih >= (unsigned)p.h || (unsigned)iw >= (unsigned)p.w)
                            continue;
                        for (int j = 0; j < vec; j++)
                            acc += xb[(ih * p.w + iw) * p.c + t[0] + j] *
                                   packed[((int64_t)g * kpad + k0 + j) * npad + n];
                    }
                    y[(int64_t)img * p.oc * pixels + (int64_t)(g * n_cols + n) * pixels + pix] = (float)acc;
                }
            }
        failed += !cuda_check_close("emulated nhwc conv", y, ref, ny, KCUDA_F32);
        free(x), free(w), free(ref), free(y), free(xn), free(packed), free(table);
    }
    TEST_FAIL_IF(failed, "%d emulated NHWC convolutions differ from kref", failed);
    return TEST_PASS;
}

/* kcuda_conv2d refuses NHWC x it cannot read in 16-byte pieces before it
 * touches the device: channels per group not a multiple of the piece (8
 * halves, 4 floats), or x not 16-byte aligned. And the tile plan of each
 * form. */
TEST(cuda_nhwc_host_rules)
{
    struct k_conv2d p = {.n = 1, .c = 12, .h = 4, .w = 4, .oc = 8, .oh = 4, .ow = 4, .kh = 1, .kw = 1,
                         .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    ASSERT_TRUE(kcuda_conv2d_nhwc_takes(&p, KCUDA_F32));
    ASSERT_TRUE(!kcuda_conv2d_nhwc_takes(&p, KCUDA_F16));
    p.groups = 2;   /* 6 channels a group */
    ASSERT_TRUE(!kcuda_conv2d_nhwc_takes(&p, KCUDA_F32));
    p.groups = 1;
    ASSERT_EQ_INT(kcuda_conv2d(&p, 0, KCUDA_F16, KCUDA_NHWC, KCUDA_NHWC, (void *)(uintptr_t)256, NULL, NULL, NULL,
                               NULL, NULL, 0),
                  cudaErrorInvalidValue);
    ASSERT_EQ_INT(kcuda_conv2d(&p, 0, KCUDA_F32, KCUDA_NHWC, KCUDA_NCHW, (void *)(uintptr_t)264, NULL, NULL, NULL,
                               NULL, NULL, 0),
                  cudaErrorInvalidValue);
    /* the plan: the 128x128 tile is FP16's alone with NHWC x, no form's that
     * reads NCHW x into NHWC y, and that form in FP32 has 64x32 only */
    struct k_conv2d big = {.n = 64, .c = 256, .h = 14, .w = 14, .oc = 256, .oh = 14, .ow = 14, .kh = 3, .kw = 3,
                           .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F16, KCUDA_NHWC, KCUDA_NHWC).name, "tile 128x128");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F16, KCUDA_NHWC, KCUDA_NCHW).name, "tile 128x128");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F32, KCUDA_NHWC, KCUDA_NHWC).name, "tile 128x64");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F16, KCUDA_NCHW, KCUDA_NHWC).name, "tile 128x64");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NHWC).name, "tile 64x32");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 132, KCUDA_F32, KCUDA_NCHW, KCUDA_NCHW).name, "tile 128x128");
    ASSERT_STR_EQ(kcuda_conv2d_plan(&big, 0, KCUDA_F32, KCUDA_NHWC, KCUDA_NCHW).name, "tile 128x64");
    return TEST_PASS;
}

/* ------------------------------------------------------------------ conv2d */

/* One convolution with x in xl and y (and the residual) in yl through every
 * kernel set, each launched twice. */
static bool conv_case(const struct k_conv2d *p, enum kcuda_layout xl, enum kcuda_layout yl, bool use_res,
                      enum kcuda_dtype t)
{
    int64_t hw = (int64_t)p->h * p->w, pixels = (int64_t)p->oh * p->ow;
    int64_t nx = (int64_t)p->n * p->c * hw, ny = (int64_t)p->n * p->oc * pixels;
    int64_t nw = (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw;
    float *x = rand_buf(nx, -1, 1, t), *w = rand_buf(nw, -1, 1, t), *r = rand_buf(ny, -1, 1, t);
    float *b = rand_buf(p->oc, -1, 1, KCUDA_F32), *ref = out_buf(ny), *pre = out_buf(ny);
    ref_conv2d_and_pre(p, x, w, b, use_res ? r : NULL, ref, pre);
    bool yn = yl == KCUDA_NHWC;
    float *xs = xl == KCUDA_NHWC ? nhwc_of(x, p->n, p->c, hw) : x;
    float *rs = yn ? nhwc_of(r, p->n, p->oc, pixels) : r, *refs = yn ? nhwc_of(ref, p->n, p->oc, pixels) : ref;
    float *pres = yn ? nhwc_of(pre, p->n, p->oc, pixels) : pre;
    size_t pe = kcuda_conv2d_packed_elems(p), tb = kcuda_conv2d_table_bytes(p);
    float *packed = out_buf((int64_t)pe), *table = out_buf((int64_t)(tb / sizeof(float)));
    kcuda_conv2d_pack(p, xl, w, packed, table);
    void *dx = dbuf_upload(xs, nx, t), *dw = dbuf_upload(packed, (int64_t)pe, t);
    void *dt = dbuf_upload(table, (int64_t)(tb / sizeof(float)), KCUDA_F32);   /* raw bytes */
    void *db = dbuf_upload(b, p->oc, KCUDA_F32), *dr = dbuf_upload(rs, ny, t);
    bool ok = true;
    for (int ks = 0; ks < GSET_COUNT; ks++) {
        int sms = gset_sms(ks);
        void *dy = dbuf_poisoned(ny, t), *dy2 = dbuf_poisoned(ny, t);
        cudaError_t e = kcuda_conv2d(p, sms, t, xl, yl, dx, dw, dt, db, use_res ? dr : NULL, dy, 0);
        cudaError_t e2 = kcuda_conv2d(p, sms, t, xl, yl, dx, dw, dt, db, use_res ? dr : NULL, dy2, 0);
        char what[240];
        snprintf(what, sizeof(what), "conv %s->%s n%d c%d %dx%d oc%d k%dx%d s%d,%d p%d,%d d%d,%d g%d act%d%s (%s: %s)",
                 xl == KCUDA_NHWC ? "nhwc" : "nchw", yn ? "nhwc" : "nchw", p->n, p->c, p->h, p->w, p->oc, p->kh,
                 p->kw, p->stride_h, p->stride_w, p->pad_t, p->pad_l, p->dil_h, p->dil_w, p->groups, p->act,
                 use_res ? " res" : "", GSET_NAME[ks], kcuda_conv2d_plan(p, sms, t, xl, yl).name);
        ok = check_launch_scaled(what, dy, refs, pres, ny, t, e) && check_repeat(what, dy, dy2, ny, t, e2) && ok;
        dbuf_free(dy), dbuf_free(dy2);
    }
    dbuf_free(dx), dbuf_free(dw), dbuf_free(dt), dbuf_free(db), dbuf_free(dr);
    if (xs != x)
        free(xs);
    if (yn)
        free(rs), free(refs), free(pres);
    free(x), free(w), free(r), free(b), free(ref), free(pre), free(packed), free(table);
    return ok;
}

/* NHWC shapes beside the models' layers: every tile size, few rows
 * (split-K, 128 columns a block), grouped with whole pieces per group,
 * and a 1x1 map. */
static const struct k_conv2d NHWC_CONVS[] = {
    {.n = 2, .c = 24, .h = 9, .w = 9, .oc = 200, .oh = 9, .ow = 9, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1},
    {.n = 4, .c = 64, .h = 17, .w = 15, .oc = 128, .oh = 9, .ow = 8, .kh = 3, .kw = 3, .stride_h = 2,
     .stride_w = 2, .pad_t = 1, .pad_l = 1},
    {.n = 1, .c = 128, .h = 4, .w = 4, .oc = 256, .oh = 4, .ow = 4, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1},
    {.n = 1, .c = 32, .h = 5, .w = 5, .oc = 64, .oh = 5, .ow = 5, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1,
     .groups = 4},
    {.n = 3, .c = 16, .h = 1, .w = 1, .oc = 40, .oh = 1, .ow = 1, .kh = 1, .kw = 1},
    /* depthwise into NHWC y (the direct kernel's 32x32 tiles, ragged at
     * both edges), stride 2, and a channel multiplier of 3 */
    {.n = 2, .c = 72, .h = 13, .w = 11, .oc = 72, .oh = 7, .ow = 6, .kh = 3, .kw = 3, .stride_h = 2,
     .stride_w = 2, .pad_t = 1, .pad_l = 1, .groups = 72},
    {.n = 1, .c = 5, .h = 6, .w = 6, .oc = 15, .oh = 6, .ow = 6, .kh = 3, .kw = 3, .pad_t = 1, .pad_l = 1,
     .groups = 5},
};

static enum test_result conv_test(enum kcuda_dtype t)
{
    CUDA_REQUIRE();
    int failed = 0, runs = 0;
    int fixed = TEST_MODEL_CONV_COUNT + (int)(sizeof(NHWC_CONVS) / sizeof(NHWC_CONVS[0]));
    for (int i = 0; i < fixed + 16; i++) {
        struct k_conv2d p = i < TEST_MODEL_CONV_COUNT ? TEST_MODEL_CONVS[i]
                            : i < fixed                ? NHWC_CONVS[i - TEST_MODEL_CONV_COUNT]
                                                       : nhwc_readable(test_random_conv(true));
        p.stride_h += !p.stride_h, p.stride_w += !p.stride_w, p.groups += !p.groups;
        p.dil_h += !p.dil_h, p.dil_w += !p.dil_w;
        p.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        bool nhwc_x = kcuda_conv2d_nhwc_takes(&p, t);
        for (int pair = 1; pair < 4; pair++) {   /* (x, y): (nchw, nhwc), (nhwc, nchw), (nhwc, nhwc) */
            enum kcuda_layout xl = pair & 2 ? KCUDA_NHWC : KCUDA_NCHW, yl = pair & 1 ? KCUDA_NHWC : KCUDA_NCHW;
            if (xl == KCUDA_NHWC && !nhwc_x)
                continue;
            failed += !conv_case(&p, xl, yl, test_rand_int(0, 1), t);
            runs++;
        }
    }
    printf("  %d convolutions, %d failed\n", runs, failed);
    TEST_FAIL_IF(failed, "%d NHWC convolution cases failed", failed);
    return TEST_PASS;
}

TEST(cuda_op_conv2d_nhwc_f32)
{
    return conv_test(KCUDA_F32);
}

TEST(cuda_op_conv2d_nhwc_f16)
{
    return conv_test(KCUDA_F16);
}

/* ------------------------------------------------------------------ the rest */

/* Max and average pooling, NHWC in and out, on windows with padding,
 * strides, dilation (max) and both divisors (average). */
TEST(cuda_op_pool2d_nhwc)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 16;) {
        bool is_max = i % 2 == 0;
        enum kcuda_dtype t = DTYPES[i / 2 % 2];
        struct k_pool2d p = {.n = test_rand_int(1, 3), .c = test_rand_int(1, 40), .h = test_rand_int(3, 20),
                             .w = test_rand_int(3, 20), .kh = test_rand_int(1, 3), .kw = test_rand_int(1, 3),
                             .stride_h = test_rand_int(1, 2), .stride_w = test_rand_int(1, 2),
                             .dil_h = is_max ? test_rand_int(1, 2) : 1, .dil_w = 1,
                             .count_include_pad = test_rand_int(0, 1)};
        p.pad_t = test_rand_int(0, p.kh / 2), p.pad_l = test_rand_int(0, p.kw / 2);
        p.oh = (p.h + 2 * p.pad_t - p.dil_h * (p.kh - 1) - 1) / p.stride_h + 1;
        p.ow = (p.w + 2 * p.pad_l - p.dil_w * (p.kw - 1) - 1) / p.stride_w + 1;
        if (p.h + 2 * p.pad_t < p.dil_h * (p.kh - 1) + 1 || p.w + 2 * p.pad_l < p.dil_w * (p.kw - 1) + 1)
            continue;   /* no window fits */
        int64_t hw = (int64_t)p.h * p.w, ohw = (int64_t)p.oh * p.ow;
        int64_t nx = (int64_t)p.n * p.c * hw, ny = (int64_t)p.n * p.c * ohw;
        float *x = rand_buf(nx, -4, 4, t), *ref = out_buf(ny);
        (is_max ? kref_max_pool2d_f32 : kref_avg_pool2d_f32)(&p, x, ref);
        if (test_count_nonfinite(ref, ny) != 0) {   /* a window over padding only has no max */
            free(x), free(ref);
            continue;
        }
        i++;
        float *xn = nhwc_of(x, p.n, p.c, hw), *refn = nhwc_of(ref, p.n, p.c, ohw);
        void *dx = dbuf_upload(xn, nx, t), *dy = dbuf_poisoned(ny, t);
        cudaError_t e = (is_max ? kcuda_max_pool2d_nhwc : kcuda_avg_pool2d_nhwc)(&p, t, dx, dy, 0);
        char what[160];
        snprintf(what, sizeof(what), "%s pool nhwc c%d %dx%d k%dx%d s%d,%d p%d,%d d%d -> %dx%d",
                 is_max ? "max" : "avg", p.c, p.h, p.w, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_t, p.pad_l, p.dil_h,
                 p.oh, p.ow);
        failed += !check_launch(what, dy, refn, ny, t, e);
        dbuf_free(dx), dbuf_free(dy);
        free(x), free(ref), free(xn), free(refn);
    }
    TEST_FAIL_IF(failed, "%d NHWC pooling cases failed", failed);
    return TEST_PASS;
}

/* Global average pooling [n, hw, c] -> [n, c], and the per-channel affine
 * on [n, hw, c]. */
TEST(cuda_op_channels_nhwc)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 12; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        int n = test_rand_int(1, 9), c = test_rand_int(1, 70);
        int64_t hw = i < 2 ? 49 : test_rand_int(1, 300), count = (int64_t)n * c * hw;
        float *x = rand_buf(count, -2, 2, t), *ref = out_buf(count), *xn = nhwc_of(x, n, c, hw);
        void *dx = dbuf_upload(xn, count, t), *dy = dbuf_poisoned(count, t);
        kref_global_avg_pool_f32(n, c, hw, x, ref);
        failed += !check_launch("global avg pool nhwc", dy, ref, (int64_t)n * c, t,
                                kcuda_global_avg_pool_nhwc(n, c, hw, t, dx, dy, 0));
        struct k_channel_affine p = {n, c, hw};
        float *sc = rand_buf(c, 0.5f, 2, KCUDA_F32), *sh = rand_buf(c, -1, 1, KCUDA_F32);
        kref_channel_affine_f32(&p, x, sc, sh, ref);
        float *refn = nhwc_of(ref, n, c, hw);
        void *dsc = dbuf_upload(sc, c, KCUDA_F32), *dsh = dbuf_upload(sh, c, KCUDA_F32), *dz = dbuf_poisoned(count, t);
        failed += !check_launch("channel affine nhwc", dz, refn, count, t,
                                kcuda_channel_affine_nhwc(&p, t, dx, dsc, dsh, dz, 0));
        dbuf_free(dx), dbuf_free(dy), dbuf_free(dz), dbuf_free(dsc), dbuf_free(dsh);
        free(x), free(ref), free(xn), free(refn), free(sc), free(sh);
    }
    TEST_FAIL_IF(failed, "%d NHWC channel cases failed", failed);
    return TEST_PASS;
}

/* Concat along NHWC channels: kcuda_concat over rows of pixels (outer
 * n * h * w, inner 1), as the backend launches it. */
TEST(cuda_op_concat_nhwc)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int i = 0; i < 6; i++) {
        enum kcuda_dtype t = DTYPES[i % 2];
        int n = test_rand_int(1, 4), count = test_rand_int(2, 5);
        int64_t hw = test_rand_int(1, 60), lens[KCUDA_CONCAT_MAX], total = 0;
        float *in[KCUDA_CONCAT_MAX];
        const void *din[KCUDA_CONCAT_MAX];
        for (int k = 0; k < count; k++) {
            lens[k] = test_rand_int(1, 20);
            total += lens[k];
            in[k] = rand_buf(n * lens[k] * hw, -1, 1, t);
            float *xn = nhwc_of(in[k], n, (int)lens[k], hw);
            din[k] = dbuf_upload(xn, n * lens[k] * hw, t);
            free(xn);
        }
        struct k_concat nchw = {n, hw, count}, rows = {n * hw, 1, count};
        float *ref = out_buf(n * total * hw);
        kref_concat_f32(&nchw, (const float *const *)in, lens, ref);
        float *refn = nhwc_of(ref, n, (int)total, hw);
        void *dy = dbuf_poisoned(n * total * hw, t);
        failed += !check_launch("concat nhwc", dy, refn, n * total * hw, t, kcuda_concat(&rows, t, din, lens, dy, 0));
        dbuf_free(dy);
        for (int k = 0; k < count; k++) {
            dbuf_free((void *)din[k]);
            free(in[k]);
        }
        free(ref), free(refn);
    }
    TEST_FAIL_IF(failed, "%d NHWC concat cases failed", failed);
    return TEST_PASS;
}
