/* op_shapes.c - random and fixed op shapes shared by the kernel and backend tests (op_shapes.h). */
#include "op_shapes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_status.h"
#include "test.h"

/* Output length along one axis, or 0 when no window fits. */
static int window_count(int in, int pad_lead, int pad_trail, int k, int dil, int stride, bool ceil_mode)
{
    int span = in + pad_lead + pad_trail - dil * (k - 1) - 1;
    if (span < 0)
        return 0;
    int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_lead)   /* PyTorch: the last window starts inside */
        out--;
    return out;
}

/* Whether every one of `out` windows has a tap on the input (a dilated
 * window over a small input can fall on padding only). */
static bool windows_touch_input(int in, int pad_lead, int k, int dil, int stride, int out)
{
    for (int o = 0; o < out; o++) {
        bool hit = false;
        for (int t = 0; t < k && !hit; t++) {
            int at = o * stride - pad_lead + t * dil;
            hit = at >= 0 && at < in;
        }
        if (!hit)
            return false;
    }
    return true;
}

struct k_conv2d test_random_conv(bool big)
{
    for (;;) {
        struct k_conv2d p = {0};
        int kind = test_rand_int(0, 5);   /* 0 depthwise, 1 grouped, 2 direct 1x1, else dense */
        p.groups = kind == 0 ? test_rand_int(1, 7) : kind == 1 ? test_rand_int(2, 4) : 1;
        int cg = kind == 0 ? 1 : test_rand_int(1, big ? 24 : 8);
        int mg = kind == 0 ? test_rand_int(1, 2) : test_rand_int(1, big && test_rand_int(0, 3) == 0 ? 140 : 24);
        /* Dense layers of 16k output channels have a kernel of their own
         * (kcpu_convpix.c): a third of them, 1x1 ones too. */
        if (kind >= 2 && test_rand_int(0, 2) == 0)
            mg = 16 * test_rand_int(1, big ? 6 : 3);
        p.c = cg * p.groups;
        p.oc = mg * p.groups;
        p.n = test_rand_int(1, 4);
        p.h = test_rand_int(1, big ? 30 : 17);
        p.w = test_rand_int(1, big ? 30 : 17);
        p.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        p.kh = p.kw = p.stride_h = p.stride_w = p.dil_h = p.dil_w = 1;
        int pad_b = 0, pad_r = 0;
        if (kind != 2) {
            p.kh = test_rand_int(1, 5);
            p.kw = test_rand_int(1, 5);
            /* Stride 1 half the time: it has paths of its own (implicit GEMM). */
            p.stride_h = test_rand_int(0, 1) ? 1 : test_rand_int(2, 3);
            p.stride_w = test_rand_int(0, 1) ? 1 : test_rand_int(2, 3);
            p.dil_h = test_rand_int(1, 2);
            p.dil_w = test_rand_int(1, 2);
            p.pad_t = test_rand_int(0, p.kh);
            p.pad_l = test_rand_int(0, p.kw);
            pad_b = test_rand_int(0, p.kh);
            pad_r = test_rand_int(0, p.kw);
        }
        p.oh = window_count(p.h, p.pad_t, pad_b, p.kh, p.dil_h, p.stride_h, false);
        p.ow = window_count(p.w, p.pad_l, pad_r, p.kw, p.dil_w, p.stride_w, false);
        if (p.oh >= 1 && p.ow >= 1 && windows_touch_input(p.h, p.pad_t, p.kh, p.dil_h, p.stride_h, p.oh) &&
            windows_touch_input(p.w, p.pad_l, p.kw, p.dil_w, p.stride_w, p.ow))
            return p;
    }
}

struct k_conv2d test_random_depthwise(bool big)
{
    static const int KERNELS[] = {3, 3, 3, 5, 5, 1, 2, 4, 6, 7};
    const int nk = (int)(sizeof(KERNELS) / sizeof(KERNELS[0]));
    for (;;) {
        struct k_conv2d p = {0};
        p.n = test_rand_int(1, 3);
        p.c = p.oc = p.groups = test_rand_int(1, big ? 40 : 12);
        p.h = test_rand_int(1, big ? 70 : 24);
        p.w = test_rand_int(1, big ? 70 : 24);
        p.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        p.kh = KERNELS[test_rand_int(0, nk - 1)];
        p.kw = test_rand_int(0, 3) ? p.kh : KERNELS[test_rand_int(0, nk - 1)];
        /* strides 1 and 2 as in the models, 3 now and then; dilation 3
         * with stride 3 takes the plain expansion (stride + dilation > 5) */
        p.stride_h = test_rand_int(0, 4) ? test_rand_int(1, 2) : 3;
        p.stride_w = test_rand_int(0, 4) ? test_rand_int(1, 2) : 3;
        p.dil_h = test_rand_int(0, 3) ? 1 : test_rand_int(2, 3);
        p.dil_w = test_rand_int(0, 3) ? 1 : test_rand_int(2, 3);
        p.pad_t = test_rand_int(0, p.kh);
        p.pad_l = test_rand_int(0, p.kw);
        int pad_b = test_rand_int(0, p.kh), pad_r = test_rand_int(0, p.kw);
        p.oh = window_count(p.h, p.pad_t, pad_b, p.kh, p.dil_h, p.stride_h, false);
        p.ow = window_count(p.w, p.pad_l, pad_r, p.kw, p.dil_w, p.stride_w, false);
        if (p.oh >= 1 && p.ow >= 1 && windows_touch_input(p.h, p.pad_t, p.kh, p.dil_h, p.stride_h, p.oh) &&
            windows_touch_input(p.w, p.pad_l, p.kw, p.dil_w, p.stride_w, p.ow))
            return p;
    }
}

void test_conv_trailing_pad(const struct k_conv2d *p, int *pad_b, int *pad_r)
{
    int b = (p->oh - 1) * p->stride_h + p->dil_h * (p->kh - 1) + 1 - p->h - p->pad_t;
    int r = (p->ow - 1) * p->stride_w + p->dil_w * (p->kw - 1) + 1 - p->w - p->pad_l;
    *pad_b = b > 0 ? b : 0;
    *pad_r = r > 0 ? r : 0;
}

struct k_pool2d test_random_pool(bool max_pool)
{
    for (;;) {
        struct k_pool2d p = {0};
        p.n = test_rand_int(1, 4);
        p.c = test_rand_int(1, 12);
        p.h = test_rand_int(1, 19);
        /* now and then rows longer than a vector of every type (64 int8) */
        p.w = test_rand_int(0, 5) == 0 ? test_rand_int(20, 150) : test_rand_int(1, 19);
        bool ceil_mode = test_rand_int(0, 2) == 0;
        if (test_rand_int(0, 5) == 0) {   /* LeNet's 2x2 stride 2, odd sizes included */
            p.kh = p.kw = p.stride_h = p.stride_w = 2;
            p.dil_h = p.dil_w = 1;
            ceil_mode = false;
        } else {
            p.kh = test_rand_int(1, 4);
            p.kw = test_rand_int(1, 4);
            p.stride_h = test_rand_int(0, 1) ? 1 : test_rand_int(2, 3);
            p.stride_w = test_rand_int(0, 1) ? 1 : test_rand_int(2, 3);
            p.dil_h = max_pool ? test_rand_int(1, 2) : 1;
            p.dil_w = max_pool ? test_rand_int(1, 2) : 1;
            p.pad_t = test_rand_int(0, p.kh / 2);   /* PyTorch: pad <= kernel / 2 */
            p.pad_l = test_rand_int(0, p.kw / 2);
        }
        p.count_include_pad = !max_pool && test_rand_int(0, 1);
        p.oh = window_count(p.h, p.pad_t, p.pad_t, p.kh, p.dil_h, p.stride_h, ceil_mode);
        p.ow = window_count(p.w, p.pad_l, p.pad_l, p.kw, p.dil_w, p.stride_w, ceil_mode);
        if (p.oh >= 1 && p.ow >= 1 && windows_touch_input(p.h, p.pad_t, p.kh, p.dil_h, p.stride_h, p.oh) &&
            windows_touch_input(p.w, p.pad_l, p.kw, p.dil_w, p.stride_w, p.ow))
            return p;
    }
}

#define CONV(n_, c_, hw, oc_, k, s, pad, ohw)                                                                     \
    {.n = (n_), .c = (c_), .h = (hw), .w = (hw), .oc = (oc_), .oh = (ohw), .ow = (ohw), .kh = (k), .kw = (k),      \
     .stride_h = (s), .stride_w = (s), .pad_t = (pad), .pad_l = (pad), .dil_h = 1, .dil_w = 1, .groups = 1,       \
     .act = K_ACT_RELU}

const struct k_conv2d TEST_MODEL_CONVS[] = {
    CONV(3, 1, 28, 6, 5, 1, 2, 28),    /* LeNet-5 conv1 */
    CONV(2, 6, 14, 16, 5, 1, 0, 10),   /* LeNet-5 conv2 */
    CONV(9, 6, 14, 16, 5, 1, 0, 10),   /* the same from 8 images on (im2col) */
    CONV(2, 1, 28, 16, 3, 1, 1, 28),   /* ResNet-mini stem */
    CONV(2, 16, 28, 16, 3, 1, 1, 28),  /* 16-channel 3x3 */
    CONV(3, 16, 28, 32, 3, 2, 1, 14),  /* stride-2 3x3 */
    CONV(3, 16, 28, 32, 1, 2, 0, 14),  /* 1x1 stride-2 downsample */
    CONV(3, 32, 14, 32, 3, 1, 1, 14),
    CONV(3, 64, 7, 64, 3, 1, 1, 7),
    CONV(3, 64, 7, 64, 1, 1, 0, 7),
    CONV(2, 32, 14, 64, 1, 2, 0, 7),   /* 1x1 stride-2 downsample to 7x7 */
    CONV(2, 96, 14, 96, 3, 2, 1, 7),   /* stride-2 3x3, 6 channel vectors */
    CONV(2, 160, 7, 64, 1, 1, 0, 7),   /* plain 1x1s with long reductions (pixel tiles) */
    CONV(1, 192, 14, 48, 1, 1, 0, 14),
    CONV(1, 80, 7, 128, 3, 1, 1, 7),   /* 7x7 at batch 1: AVX-512 two-row tiles, depth in chunks, */
    CONV(1, 64, 14, 128, 3, 2, 1, 7),  /* a band copied once for its channel blocks; and strided */
};
const int TEST_MODEL_CONV_COUNT = (int)(sizeof(TEST_MODEL_CONVS) / sizeof(TEST_MODEL_CONVS[0]));

int8_t *test_rand_q8(int64_t count)
{
    int8_t *x = malloc((size_t)(count > 0 ? count : 1));
    RT_ASSERT(x);
    for (int64_t i = 0; i < count; i++)
        x[i] = (int8_t)test_rand_int(K_Q8_MIN, K_Q8_MAX);
    return x;
}

float *test_rand_floats(int64_t count, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    RT_ASSERT(x);
    test_rand_fill(x, count, lo, hi);
    return x;
}

struct k_q8_mult test_rand_mult(double typical)
{
    /* m in [2^30, 2^31): M = m * 2^-shift is about 2^(30.5 - shift) */
    struct k_q8_mult q = {(int32_t)((1u << 30) + (uint32_t)(test_rand_u64() % (1u << 30))), 0};
    int centre = typical > 0 ? (int)lround(30.5 - log2(typical)) : 38;
    q.shift = centre + test_rand_int(-2, 2);
    if (typical <= 0)
        q.shift = test_rand_int(28, 45);
    int r = test_rand_int(0, 19);
    if (r == 0)
        q.shift = test_rand_int(1, 10);    /* huge: saturates */
    else if (r == 1)
        q.shift = test_rand_int(55, 62);   /* tiny: rounds to 0 */
    else if (r == 2)
        q.m = 0;
    return q;
}

void test_epilogue_init(struct test_epilogue *t, int oc, int64_t depth, bool out_i32)
{
    t->bias = malloc(sizeof(int32_t) * (size_t)oc);
    t->mult = malloc(sizeof(struct k_q8_mult) * (size_t)oc);
    RT_ASSERT(t->bias && t->mult);
    /* Products of values uniform in [-127, 127] sum to about 127^2 / 3 *
     * sqrt(depth): this multiplier spreads outputs over INT8. */
    double typical = 3.0 / (127.0 * sqrt((double)(depth > 0 ? depth : 1)));
    for (int o = 0; o < oc; o++) {
        t->bias[o] = test_rand_int(-(1 << 18), 1 << 18);
        t->mult[o] = test_rand_mult(typical);
    }
    if (test_rand_int(0, 9) == 0)
        t->bias[0] = test_rand_int(0, 1) ? K_Q8_BIAS_MAX : -K_Q8_BIAS_MAX;
    int clamp = test_rand_int(0, 2);   /* none, ReLU, ReLU6-like */
    t->e = (struct k_q8_epilogue){.bias = t->bias, .mult = t->mult, .res_mult = test_rand_mult(0.7),
                                  .lo = clamp ? 0 : K_Q8_MIN, .hi = clamp == 2 ? test_rand_int(1, 127) : K_Q8_MAX,
                                  .out_i32 = out_i32};
}

void test_epilogue_free(struct test_epilogue *t)
{
    free(t->bias);
    free(t->mult);
    memset(t, 0, sizeof(*t));
}
