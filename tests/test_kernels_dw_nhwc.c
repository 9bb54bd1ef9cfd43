/*
 * test_kernels_dw_nhwc.c - the channels-last INT8 depthwise convolution
 * (kernels/cpu/kcpu_q8_dwn.h) against the reference INT8 convolution
 * (kref_conv2d_q8, NCHW): inputs and residuals transposed to NHWC for the
 * kernel, the reference's output transposed to NHWC and compared byte for
 * byte, under every instruction set this CPU has and pools of 1 to 3
 * threads (and none).
 *
 * Outputs start poisoned and are followed by guard bytes; scratch starts
 * poisoned (the kernel may not rely on zeroed scratch), is sized for a
 * larger batch than the call's, and has guard bytes of its own. Random
 * shapes cover channel counts off the 16-lane groups and the 64-channel
 * chunks, strides, dilations, padding past the kernel's reach, batches,
 * residuals, clamps, int32 outputs, and multipliers of both requantising
 * forms (shift >= 33, and all shifts below 33).
 */
#include <stdlib.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_q8_dwn.h"
#include "kernels/ref/kref_q8.h"
#include "runtime/rt_status.h"
#include "kernel_test_util.h"
#include "op_shapes.h"
#include "test.h"

#define GUARD 61
#define POISON 0x5a

/* How a case's epilogue and data are drawn. */
enum dwn_mode {
    DWN_TYPICAL,   /* test_epilogue_init: shifts mostly >= 33, some extremes */
    DWN_LOW_SHIFT, /* every shift in [24, 32] (the general form), small data so outputs stay unsaturated */
    DWN_TIES,      /* shifts >= 33 with small biases and data: rounding ties */
};

static void *poisoned(size_t bytes)
{
    uint8_t *y = malloc(bytes + GUARD);
    RT_ASSERT(y);
    memset(y, POISON, bytes + GUARD);
    return y;
}

static void draw_epilogue(struct test_epilogue *ep, const struct k_conv2d *p, enum dwn_mode mode, bool out_i32,
                          int8_t *x, int64_t xn, int8_t *w, int64_t wn)
{
    test_epilogue_init(ep, p->oc, (int64_t)p->kh * p->kw, out_i32);
    if (mode == DWN_TYPICAL)
        return;
    int range = mode == DWN_LOW_SHIFT ? 3 : test_rand_int(1, 3);
    for (int64_t i = 0; i < xn; i++)
        x[i] = (int8_t)test_rand_int(-range, range);
    if (mode == DWN_LOW_SHIFT)
        for (int64_t i = 0; i < wn; i++)
            w[i] = (int8_t)test_rand_int(-range, range);
    for (int o = 0; o < p->oc; o++) {
        struct k_q8_mult q = {(int32_t)((1u << 30) + (uint32_t)(test_rand_u64() % (1u << 30))), 0};
        if (mode == DWN_LOW_SHIFT) {
            q.shift = test_rand_int(24, 32);
            ep->bias[o] = test_rand_int(-200, 200);
        } else {
            q.shift = test_rand_int(33, 40);
            if (test_rand_int(0, 2) == 0)
                q.m = 1 << 30;   /* exact halves: ties */
            int64_t unit = (int64_t)1 << (q.shift - 30 < 20 ? q.shift - 30 : 20);
            ep->bias[o] = (int32_t)(test_rand_int(-100, 100) * unit + test_rand_int(-1, 1) * (unit / 2));
        }
        ep->mult[o] = q;
    }
    static const int RES_SHIFTS[] = {4, 8, 9, 29, 31, 32, 33, 40};
    ep->e.res_mult = (struct k_q8_mult){(int32_t)((1u << 30) + (uint32_t)(test_rand_u64() % (1u << 30))),
                                        RES_SHIFTS[test_rand_int(0, 7)]};
}

static void print_case(const struct k_conv2d *p, enum dwn_mode mode, bool out_i32, bool has_res, int threads)
{
    printf("  n%d c%d %dx%d -> %dx%d k%dx%d s%d,%d d%d,%d pad%d,%d mode %d i32 %d res %d, isa %s, %d threads\n",
           p->n, p->c, p->h, p->w, p->oh, p->ow, p->kh, p->kw, p->stride_h, p->stride_w, p->dil_h, p->dil_w,
           p->pad_t, p->pad_l, (int)mode, out_i32, has_res, kcpu_isa_name(kcpu_isa()), threads);
}

/* Runs p under every ISA (pool pool, or a random one when NULL and
 * random_pool) against the reference; *isas counts the ISAs run. */
static enum test_result check_case(const struct k_conv2d *p, const struct pools *ps, int pool_index,
                                   enum dwn_mode mode, bool out_i32, bool has_res, int *isas)
{
    const int64_t hw = (int64_t)p->h * p->w, ohw = (int64_t)p->oh * p->ow;
    const int64_t xn = (int64_t)p->n * p->c * hw, wn = (int64_t)p->c * p->kh * p->kw, yn = (int64_t)p->n * p->c * ohw;
    int8_t *x = test_rand_q8(xn), *w = test_rand_q8(wn), *res = has_res ? test_rand_q8(yn) : NULL;
    struct test_epilogue ep;
    draw_epilogue(&ep, p, mode, out_i32, x, xn, w, wn);
    const size_t esize = out_i32 ? 4 : 1, ybytes = (size_t)yn * esize;
    void *ref = poisoned(ybytes), *want = poisoned(ybytes), *got = poisoned(ybytes);
    kref_conv2d_q8(p, x, w, &ep.e, res, ref);
    test_to_nhwc(ref, want, p->n, p->c, ohw, esize);
    int8_t *xt = malloc((size_t)xn), *rt = has_res ? malloc((size_t)yn) : NULL;
    RT_ASSERT(xt && (rt || !has_res));
    test_to_nhwc(x, xt, p->n, p->c, hw, 1);
    if (has_res)
        test_to_nhwc(res, rt, p->n, p->c, ohw, 1);

    const size_t pbytes = kq8_dwn_packed_bytes(p);
    void *packed = aligned_alloc(64, (pbytes + 63) / 64 * 64);
    /* the runtime sizes scratch for its largest batch and thread count */
    struct k_conv2d sized = *p;
    sized.n += test_rand_int(0, 2);
    const size_t sbytes = kq8_dwn_scratch_bytes(&sized, 3);
    uint8_t *scratch = aligned_alloc(64, (sbytes + GUARD + 63) / 64 * 64);
    RT_ASSERT(packed && scratch);
    kq8_dwn_pack(p, w, packed);

    enum test_result r = TEST_PASS;
    *isas = 0;
    FOR_EACH_ISA(isa) {
        struct kcpu_threads *pool = ps->p[pool_index >= 0 ? pool_index : test_rand_int(0, 3)];
        memset(got, POISON, ybytes + GUARD);
        memset(scratch, POISON, sbytes + GUARD);
        kq8_dwn_conv(pool, p, xt, packed, &ep.e, rt, got, scratch);
        (*isas)++;
        bool guard_ok = true;
        for (size_t i = sbytes; i < sbytes + GUARD; i++)
            guard_ok = guard_ok && scratch[i] == POISON;
        if (memcmp(got, want, ybytes + GUARD) != 0 || !guard_ok) {
            const uint8_t *g = got, *wb = want;
            size_t i = 0;
            while (i < ybytes + GUARD && g[i] == wb[i])
                i++;
            print_case(p, mode, out_i32, has_res, kcpu_threads_count(pool));
            if (!guard_ok)
                test_fail_msg(__FILE__, __LINE__, "scratch written past its %zu bytes", sbytes);
            else
                test_fail_msg(__FILE__, __LINE__, "byte %zu of %zu differs (%d vs %d), pixel %zu channel %zu",
                              i, ybytes, g[i], wb[i], i / esize / (size_t)p->c, i / esize % (size_t)p->c);
            r = TEST_FAIL;
            break;
        }
    }
    free(x), free(w), free(res), free(ref), free(want), free(got), free(xt), free(rt), free(packed), free(scratch);
    test_epilogue_free(&ep);
    return r;
}

/* A random depthwise layer: channels 1..200 (multiples of 16 and 64 now
 * and then), maps 1..20 (now and then wide, for bands), kernel 1..5,
 * stride 1..3, dilation 1..2, padding 0..2 on each side. */
static struct k_conv2d random_dw(void)
{
    struct k_conv2d p = {.n = test_rand_int(1, 3), .dil_h = 1, .dil_w = 1};
    int kind = test_rand_int(0, 9);
    p.c = kind == 0 ? 16 * test_rand_int(1, 8) : kind == 1 ? 64 * test_rand_int(1, 3) : test_rand_int(1, 200);
    p.groups = p.oc = p.c;
    bool wide = test_rand_int(0, 7) == 0;
    do {
        p.h = wide ? test_rand_int(20, 90) : test_rand_int(1, 20);
        p.w = wide ? test_rand_int(20, 120) : test_rand_int(1, 20);
        p.kh = test_rand_int(1, 5);
        p.kw = test_rand_int(0, 2) ? p.kh : test_rand_int(1, 5);
        p.stride_h = test_rand_int(1, 3);
        p.stride_w = test_rand_int(0, 2) ? p.stride_h : test_rand_int(1, 3);
        p.dil_h = test_rand_int(1, 2);
        p.dil_w = test_rand_int(1, 2);
        p.pad_t = test_rand_int(0, 2);
        p.pad_l = test_rand_int(0, 2);
        p.oh = conv_out(p.h, p.pad_t, test_rand_int(0, 2), p.kh, p.dil_h, p.stride_h);
        p.ow = conv_out(p.w, p.pad_l, test_rand_int(0, 2), p.kw, p.dil_w, p.stride_w);
    } while (p.oh < 1 || p.ow < 1);
    if (wide)
        p.c = test_rand_int(1, 40);
    p.groups = p.oc = p.c;
    return p;
}

static enum test_result random_cases(int count, enum dwn_mode mode)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < count && r == TEST_PASS; i++) {
        struct k_conv2d p = random_dw();
        bool out_i32 = mode == DWN_TYPICAL && test_rand_int(0, 4) == 0;
        bool has_res = !out_i32 && test_rand_int(0, 1);
        int isas;
        r = check_case(&p, &ps, -1, mode, out_i32, has_res, &isas);
    }
    pools_close(&ps);
    return r;
}

TEST(kernels_dw_nhwc_random)
{
    return random_cases(300, DWN_TYPICAL);
}

TEST(kernels_dw_nhwc_low_shifts)
{
    return random_cases(120, DWN_LOW_SHIFT);
}

TEST(kernels_dw_nhwc_rounding_ties)
{
    return random_cases(120, DWN_TIES);
}

/* MobileNetV2's depthwise layers (3x3, pad 1) at batch 1 and 2, on one
 * and two threads, every ISA of the CPU giving the reference's bits. */
TEST(kernels_dw_nhwc_mobilenet_v2_shapes)
{
    static const struct { int c, h, stride; } LAYERS[] = {
        {32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1}, {192, 28, 2},
        {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1},
    };
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (size_t i = 0; i < sizeof(LAYERS) / sizeof(LAYERS[0]) && r == TEST_PASS; i++)
        for (int n = 1; n <= 2 && r == TEST_PASS; n++) {
            const int c = LAYERS[i].c, h = LAYERS[i].h, s = LAYERS[i].stride, oh = (h + 2 - 3) / s + 1;
            struct k_conv2d p = {.n = n, .c = c, .h = h, .w = h, .oc = c, .oh = oh, .ow = oh, .kh = 3, .kw = 3,
                                 .stride_h = s, .stride_w = s, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                                 .groups = c};
            int isas;
            bool has_res = s == 1 && test_rand_int(0, 1);
            r = check_case(&p, &ps, n, DWN_TYPICAL, false, has_res, &isas);
        }
    pools_close(&ps);
    return r;
}

/* Every ISA kcpu_isa_set allows gives the same bits (scalar and AVX-512
 * VNNI on this machine at least), on random layers and MobileNetV2's
 * 960-channel 7x7 one. */
TEST(kernels_dw_nhwc_every_isa_same_bits)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 40 && r == TEST_PASS; i++) {
        struct k_conv2d p = random_dw();
        if (i == 0)
            p = (struct k_conv2d){.n = 2, .c = 960, .h = 7, .w = 7, .oc = 960, .oh = 7, .ow = 7, .kh = 3, .kw = 3,
                                  .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                                  .groups = 960};
        int isas = 0;
        r = check_case(&p, &ps, test_rand_int(1, 2), (enum dwn_mode)(i % 3), false, i % 2 == 1, &isas);
        if (r == TEST_PASS)
            ASSERT_EQ_INT(isas, (int)kcpu_isa_hardware() + 1);
    }
    pools_close(&ps);
    return r;
}

/* What the runtime relies on: which layers apply, and scratch that never
 * shrinks as the batch grows (it is sized once for the largest). */
TEST(kernels_dw_nhwc_sizes)
{
    struct k_conv2d p = {.n = 1, .c = 40, .h = 30, .w = 30, .oc = 40, .oh = 30, .ow = 30, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 40};
    ASSERT_TRUE(kq8_dwn_applies(&p));
    struct k_conv2d q = p;
    q.oc = 80;
    ASSERT_FALSE(kq8_dwn_applies(&q));
    q = p;
    q.groups = 20;
    ASSERT_FALSE(kq8_dwn_applies(&q));
    size_t prev = 0;
    for (int n = 1; n <= 64; n *= 2) {
        p.n = n;
        size_t s = kq8_dwn_scratch_bytes(&p, 2);
        ASSERT_TRUE(s >= prev);
        ASSERT_TRUE(kq8_dwn_scratch_bytes(&p, 3) >= s);
        prev = s;
    }
    ASSERT_EQ_INT(kq8_dwn_packed_bytes(&p), 3 * 9 * 16 * 4);
    return TEST_PASS;
}
