/*
 * test_kernels_dw.c - the direct depthwise / grouped convolution kernel
 * (kernels/cpu/kcpu_dwconv.c), reached through kcpu_conv2d_* as the runtime
 * reaches it, against the reference convolution (kernels/ref), under every
 * instruction set this CPU has and with pools of 1 to 3 threads (and none).
 *
 * Random shapes stress what the kernel's padded, stride-phase-split grid
 * has to get right: strides 1 to 3 (2 most often), asymmetric padding up to
 * the kernel size, dilation, 1-wide and odd-sized planes, channel
 * multipliers that leave a partial block of output channels; every
 * activation is cycled through, with and without bias and residual.
 * Outputs are poisoned with NaN and followed by guard floats. Accuracy as
 * in test_kernels.c: max |difference| over max |pre-activation reference|,
 * at most 1e-5 (the reference accumulates in double).
 */
#include <stdlib.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_dwconv.h"
#include "kernels/ref/kref.h"
#include "runtime/rt_status.h"
#include "kernel_test_util.h"
#include "test.h"

#define TOL 1e-5
#define GUARD 29
#define GUARD_VALUE (-777.25f)

static float *rand_buf(int64_t count)
{
    float *x = malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
    RT_ASSERT(x);
    test_rand_fill(x, count, -1.0f, 1.0f);
    return x;
}

/* max |got - want| / max |scale|, infinite for a NaN or a broken guard. */
static double dw_error(const float *got, const float *want, const float *scale, int64_t count)
{
    double diff = 0, top = 1e-30;
    for (int i = 0; i < GUARD; i++)
        if (got[count + i] != GUARD_VALUE)
            return INFINITY;
    for (int64_t i = 0; i < count; i++) {
        if (isnan(got[i]))
            return INFINITY;
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        top = fmax(top, fabs((double)scale[i]));
    }
    return diff / top;
}

/* groups x (cg in, mg out) channels, random geometry, the given act. */
static struct k_conv2d random_grouped(int groups, int cg, int mg, enum k_act act)
{
    struct k_conv2d p = {.n = test_rand_int(1, 3), .groups = groups, .c = groups * cg, .oc = groups * mg,
                         .act = act};
    do {
        p.h = test_rand_int(0, 5) ? test_rand_int(1, 40) : 1;
        p.w = test_rand_int(0, 5) ? test_rand_int(1, 40) : 1;
        p.kh = test_rand_int(1, 5);
        p.kw = test_rand_int(1, 5);
        int s = test_rand_int(0, 4);
        p.stride_h = s == 0 ? 1 : s == 4 ? 3 : 2;
        p.stride_w = test_rand_int(0, 3) ? p.stride_h : test_rand_int(1, 3);
        p.dil_h = test_rand_int(0, 3) ? 1 : 2;
        p.dil_w = test_rand_int(0, 3) ? 1 : 2;
        p.pad_t = test_rand_int(0, p.kh);
        p.pad_l = test_rand_int(0, p.kw);
        p.oh = conv_out(p.h, p.pad_t, test_rand_int(0, p.kh), p.kh, p.dil_h, p.stride_h);
        p.ow = conv_out(p.w, p.pad_l, test_rand_int(0, p.kw), p.kw, p.dil_w, p.stride_w);
    } while (p.oh < 1 || p.ow < 1);
    return p;
}

/* Runs p through kcpu_conv2d_* under every ISA the CPU has, on a random
 * pool; returns the largest error seen (and prints the failing case). */
static double check_dw(struct kcpu_threads *const *pools, const struct k_conv2d *p, int with_bias, int with_res)
{
    int64_t xn = (int64_t)p->n * p->c * p->h * p->w;
    int64_t wn = (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw;
    int64_t yn = (int64_t)p->n * p->oc * p->oh * p->ow;
    float *x = rand_buf(xn), *w = rand_buf(wn), *bias = with_bias ? rand_buf(p->oc) : NULL;
    float *res = with_res ? rand_buf(yn) : NULL;
    float *want = malloc((size_t)yn * sizeof(float)), *pre = malloc((size_t)yn * sizeof(float));
    float *y = malloc((size_t)(yn + GUARD) * sizeof(float));
    float *packed = aligned_alloc(64, (kcpu_conv2d_packed_floats(p) * sizeof(float) + 63) / 64 * 64);
    RT_ASSERT(want && pre && y && packed);
    kref_conv2d_f32(p, x, w, bias, res, want);
    struct k_conv2d linear = *p;
    linear.act = K_ACT_NONE;
    kref_conv2d_f32(&linear, x, w, bias, res, pre);
    kcpu_conv2d_pack(p, w, packed);
    double worst = 0;
    int saved __attribute__((cleanup(restore_isa))) = (int)kcpu_isa(); // NOLINT(clang-analyzer-deadcode.DeadStores): restore_isa reads it at scope exit
    for (int isa = KCPU_ISA_SCALAR; isa <= (int)kcpu_isa_hardware(); isa++) {
        RT_ASSERT(kcpu_isa_set((enum kcpu_isa)isa) == 0);
        struct kcpu_threads *pool = pools[test_rand_int(0, 3)];
        /* the runtime sizes scratch for its largest batch */
        struct k_conv2d sized = *p;
        sized.n += test_rand_int(0, 2);
        void *scratch = malloc(kcpu_conv2d_scratch_bytes(&sized, kcpu_threads_count(pool)));
        RT_ASSERT(scratch);
        for (int64_t i = 0; i < yn; i++)
            y[i] = NAN;
        for (int i = 0; i < GUARD; i++)
            y[yn + i] = GUARD_VALUE;
        kcpu_conv2d_f32(pool, p, x, packed, bias, res, y, scratch);
        double e = dw_error(y, want, pre, yn);
        if (!(e <= TOL))
            printf("  n%d c%d %dx%d -> oc%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d g%d act %d%s%s, isa %s, %d threads: "
                   "error %.3g\n", p->n, p->c, p->h, p->w, p->oc, p->oh, p->ow, p->kh, p->kw, p->stride_h,
                   p->stride_w, p->pad_t, p->pad_l, p->dil_h, p->dil_w, p->groups, (int)p->act,
                   bias ? " bias" : "", res ? " residual" : "", kcpu_isa_name((enum kcpu_isa)isa),
                   kcpu_threads_count(pool), e);
        if (!(e <= worst))
            worst = e;
        free(scratch);
    }
    free(x), free(w), free(bias), free(res), free(want), free(pre), free(y), free(packed);
    return worst;
}

TEST(kernels_dw_depthwise_random)
{
    struct pools ps;
    pools_open(&ps);
    double worst = 0;
    for (int i = 0; i < 200 && worst <= TOL; i++) {
        struct k_conv2d p = random_grouped(test_rand_int(2, 24), 1, 1, (enum k_act)(i % K_ACT_COUNT));
        worst = fmax(worst, check_dw(ps.p, &p, test_rand_int(0, 3) > 0, test_rand_int(0, 1)));
    }
    pools_close(&ps);
    printf("  worst error %.2e\n", worst);
    ASSERT_LE(worst, TOL);
    return TEST_PASS;
}

/* Channel multipliers and several input channels per group: blocks of up
 * to KCPU_DW_MAX_MO output channels, of unequal sizes when the group's
 * channels do not split evenly (7 as 4 + 3); one group of one input channel
 * too (a dense convolution of a grayscale image's first layer). */
TEST(kernels_dw_grouped_random)
{
    struct pools ps;
    pools_open(&ps);
    double worst = 0;
    for (int i = 0; i < 150 && worst <= TOL; i++) {
        int groups = test_rand_int(1, 9);
        struct k_conv2d p = random_grouped(groups, groups == 1 ? 1 : test_rand_int(1, 6), test_rand_int(1, 8),
                                           (enum k_act)(i % K_ACT_COUNT));
        ASSERT_TRUE(kcpu_dwconv_applies(&p));
        worst = fmax(worst, check_dw(ps.p, &p, test_rand_int(0, 1), test_rand_int(0, 1)));
    }
    pools_close(&ps);
    printf("  worst error %.2e\n", worst);
    ASSERT_LE(worst, TOL);
    return TEST_PASS;
}

/* LeNet-5's conv1 (1 -> 6 channels, 5x5, pad 2, 28x28) as it is, and
 * resnet-mini's (1 -> 16, 3x3, pad 1) and a wider one at stride 2, at
 * batch 1 (their blocks of channels split over the threads) and 3: dense
 * convolutions the direct kernel takes as one group. */
TEST(kernels_dw_single_input_channel)
{
    struct pools ps;
    pools_open(&ps);
    struct k_conv2d lenet = {.n = 3, .c = 1, .h = 28, .w = 28, .oc = 6, .oh = 28, .ow = 28, .kh = 5, .kw = 5,
                             .stride_h = 1, .stride_w = 1, .pad_t = 2, .pad_l = 2, .dil_h = 1, .dil_w = 1,
                             .groups = 1, .act = K_ACT_RELU};
    ASSERT_TRUE(kcpu_dwconv_applies(&lenet));
    double worst = fmax(check_dw(ps.p, &lenet, 1, 0), check_dw(ps.p, &lenet, 1, 1));
    struct k_conv2d stem = lenet;
    stem.kh = stem.kw = 3, stem.pad_t = stem.pad_l = 1, stem.oc = 16;
    for (stem.n = 1; stem.n <= 3; stem.n += 2) {
        ASSERT_TRUE(kcpu_dwconv_applies(&stem));
        worst = fmax(worst, check_dw(ps.p, &stem, 1, stem.n == 1));
    }
    stem.n = 1, stem.oc = 64, stem.h = stem.w = 23, stem.stride_h = stem.stride_w = 2, stem.oh = stem.ow = 12;
    ASSERT_TRUE(kcpu_dwconv_applies(&stem));
    worst = fmax(worst, check_dw(ps.p, &stem, 0, 0));
    pools_close(&ps);
    printf("  worst error %.2e\n", worst);
    ASSERT_LE(worst, TOL);
    return TEST_PASS;
}

/* The 3x3 stride-1/2 path that reads the input planes directly
 * (kcpu_dw3x3_avx512, kcpu_dw3x3_avx2): widths across the 8- and
 * 16-column chunk edges, every padding up to 3 on either side (outputs
 * whose taps all fall in the padding), rows left over from the row
 * bands, and every activation, with and without the residual. */
TEST(kernels_dw_3x3_direct)
{
    static const int W[] = {1, 2, 3, 7, 8, 14, 15, 16, 17, 31, 32, 33, 34, 47, 56, 65};
    struct pools ps;
    pools_open(&ps);
    double worst = 0;
    for (int i = 0; i < 160 && worst <= TOL; i++) {
        int s = 1 + i % 2;
        struct k_conv2d p = {.n = test_rand_int(1, 2), .c = test_rand_int(1, 5), .kh = 3, .kw = 3, .stride_h = s,
                             .stride_w = s, .dil_h = 1, .dil_w = 1, .act = (enum k_act)(i % K_ACT_COUNT)};
        p.groups = p.oc = p.c;
        /* every third case padded by 1 all round, MobileNet's */
        const int same = i % 3 == 0;
        do {
            p.h = test_rand_int(1, 20);
            p.w = W[test_rand_int(0, (int)(sizeof(W) / sizeof(W[0])) - 1)];
            p.pad_t = same ? 1 : test_rand_int(0, 3);
            p.pad_l = same ? 1 : test_rand_int(0, 3);
            p.oh = conv_out(p.h, p.pad_t, same ? 1 : test_rand_int(0, 3), 3, 1, s);
            p.ow = conv_out(p.w, p.pad_l, same ? 1 : test_rand_int(0, 3), 3, 1, s);
        } while (p.oh < 1 || p.ow < 1);
        worst = fmax(worst, check_dw(ps.p, &p, test_rand_int(0, 3) > 0, test_rand_int(0, 1)));
    }
    pools_close(&ps);
    printf("  worst error %.2e\n", worst);
    ASSERT_LE(worst, TOL);
    return TEST_PASS;
}

/* MobileNetV2's depthwise layers at 224x224 input, batch 1 and 2. */
TEST(kernels_dw_mobilenet_v2_shapes)
{
    static const struct { int c, h, stride; } LAYERS[] = {
        {32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1},
        {192, 28, 2}, {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1},
    };
    struct pools ps;
    pools_open(&ps);
    double worst = 0;
    for (size_t i = 0; i < sizeof(LAYERS) / sizeof(LAYERS[0]); i++) {
        int o = (LAYERS[i].h - 1) / LAYERS[i].stride + 1;
        struct k_conv2d p = {.n = 1 + (int)(i % 2), .c = LAYERS[i].c, .h = LAYERS[i].h, .w = LAYERS[i].h,
                             .oc = LAYERS[i].c, .oh = o, .ow = o, .kh = 3, .kw = 3,
                             .stride_h = LAYERS[i].stride, .stride_w = LAYERS[i].stride, .pad_t = 1, .pad_l = 1,
                             .dil_h = 1, .dil_w = 1, .groups = LAYERS[i].c, .act = K_ACT_RELU6};
        worst = fmax(worst, check_dw(ps.p, &p, 1, 0));
    }
    pools_close(&ps);
    printf("  worst error %.2e\n", worst);
    ASSERT_LE(worst, TOL);
    return TEST_PASS;
}

/* Which convolutions the direct kernel takes: grouped with at most 8
 * output channels per group, dense ones of one input channel with at most
 * 64; other dense ones and wide groups stay on the GEMM. */
TEST(kernels_dw_dispatch)
{
    struct k_conv2d p = {.n = 1, .c = 64, .oc = 64, .groups = 64};
    ASSERT_TRUE(kcpu_dwconv_applies(&p));
    p.oc = 128;   /* channel multiplier 2 */
    ASSERT_TRUE(kcpu_dwconv_applies(&p));
    p = (struct k_conv2d){.n = 1, .c = 256, .oc = 256, .groups = 32};
    ASSERT_TRUE(kcpu_dwconv_applies(&p));
    p.groups = 16;   /* 16 output channels per group */
    ASSERT_FALSE(kcpu_dwconv_applies(&p));
    p.groups = 1;
    ASSERT_FALSE(kcpu_dwconv_applies(&p));
    p = (struct k_conv2d){.n = 1, .c = 1, .oc = 6, .groups = 1};   /* LeNet-5's conv1 */
    ASSERT_TRUE(kcpu_dwconv_applies(&p));
    p.oc = 64;   /* a grayscale stem */
    ASSERT_TRUE(kcpu_dwconv_applies(&p));
    p.oc = 65;
    ASSERT_FALSE(kcpu_dwconv_applies(&p));
    p.oc = 6, p.c = 2;
    ASSERT_FALSE(kcpu_dwconv_applies(&p));
    return TEST_PASS;
}
