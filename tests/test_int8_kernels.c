/*
 * test_int8_kernels.c - the CPU INT8 and FP16-rounding kernels
 * (kernels/cpu/kcpu_q8.h) against the reference ones (kernels/ref/kref_q8.h)
 * on random shapes and random data, under every instruction set this CPU
 * has (scalar, AVX2, AVX-512 VNNI) and pools of 1 to 3 threads (and none).
 *
 * Integer results must be equal byte for byte. Every output buffer starts
 * poisoned and is followed by guard bytes: a kernel must write every
 * element and nothing past the end.
 */
#include <stdlib.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_impl.h"
#include "kernels/cpu/kcpu_q8.h"
#include "kernels/cpu/kcpu_q8_dwn.h"
#include "kernels/cpu/kcpu_q8_impl.h"
#include "kernels/ref/kref_q8.h"
#include "runtime/rt_status.h"
#include "kernel_test_util.h"
#include "op_shapes.h"
#include "test.h"

#define GUARD 61
#define POISON 0x5a

/* bytes of poison followed by GUARD poison bytes */
static void *poisoned(size_t bytes)
{
    uint8_t *y = malloc(bytes + GUARD);
    RT_ASSERT(y);
    memset(y, POISON, bytes + GUARD);
    return y;
}

/* Both outputs written identically and the guards untouched; if not, a
 * failure reported at the caller's line, and false. */
static bool same_bytes(int line, const void *got, const void *want, size_t bytes, const char *what)
{
    const uint8_t *g = got, *w = want;
    for (size_t i = 0; i < bytes + GUARD; i++)
        if (g[i] != w[i]) {
            test_fail_msg(__FILE__, line, "%s: byte %zu of %zu differs: %d vs %d (isa %s)", what, i, bytes, g[i],
                          w[i], kcpu_isa_name(kcpu_isa()));
            return false;
        }
    return true;
}
#define CHECK_SAME(got, want, bytes, what) same_bytes(__LINE__, (got), (want), (size_t)(bytes), (what))

/* One layer to test: a convolution, or a linear one. */
struct q8_layer {
    bool linear;
    struct k_conv2d conv;
    struct k_linear fc;
};

/* An edge multiplier of the shift >= 33 form: the smallest shift (33,
 * where the rounding term is 1), the largest (62), both ends of m, and
 * m = 2^30, whose outputs tie (x / 2^(shift - 30) exactly half-way) for
 * one accumulator in 2^(shift - 30). */
static struct k_q8_mult edge_mult(int shift_lo, int shift_hi)
{
    static const int32_t M[] = {1 << 30, 0x7fffffff, 3 << 29};
    struct k_q8_mult q = {(int32_t)((1u << 30) + (uint32_t)(test_rand_u64() % (1u << 30))),
                          test_rand_int(shift_lo, shift_hi)};
    int r = test_rand_int(0, 9);
    if (r < 3)
        q.m = M[r];
    else if (r == 3)
        q.shift = shift_lo;
    else if (r == 4)
        q.shift = 62;
    else if (r == 5)
        q.m = 0;
    return q;
}

/* The epilogue of the AVX-512 GEMM's shift >= 33 path (every row's
 * shift at least 33, a residual's at least 8), at its edges: small
 * biases, so that outputs land inside INT8 and ties are rounded rather
 * than clamped, and residual multipliers from saturating (shift 8) to
 * past 32. Small inputs (x_range) keep accumulators small enough to tie. */
static void edge_epilogue(struct test_epilogue *t, int oc)
{
    for (int o = 0; o < oc; o++) {
        t->mult[o] = edge_mult(33, 40);
        int64_t unit = (int64_t)1 << (t->mult[o].shift - 30 < 20 ? t->mult[o].shift - 30 : 20);
        t->bias[o] = (int32_t)(test_rand_int(-100, 100) * unit + test_rand_int(-1, 1) * (unit / 2));
    }
    static const int RES_SHIFTS[] = {8, 9, 29, 30, 31, 32, 33, 40};
    int rs = RES_SHIFTS[test_rand_int(0, 7)];
    t->e.res_mult = edge_mult(rs, rs);
}

/* Runs one conv (or linear) case under every ISA and pool; with edges,
 * an int8 epilogue of edge_epilogue and small inputs half the time. */
static enum test_result conv_case_with(const struct q8_layer *layer, struct pools *ps, bool edges)
{
    const struct k_conv2d *p = &layer->conv;
    const struct k_linear *lin = layer->linear ? &layer->fc : NULL;
    int64_t xn = lin ? (int64_t)lin->n * lin->k : (int64_t)p->n * p->c * p->h * p->w;
    int64_t wn = lin ? (int64_t)lin->m * lin->k : (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw;
    int64_t yn = lin ? (int64_t)lin->n * lin->m : (int64_t)p->n * p->oc * p->oh * p->ow;
    int oc = lin ? lin->m : p->oc;
    int out_i32 = !edges && test_rand_int(0, 4) == 0;
    int has_res = !out_i32 && test_rand_int(0, 2) == 0;
    int8_t *x = test_rand_q8(xn), *w = test_rand_q8(wn), *res = has_res ? test_rand_q8(yn) : NULL;
    struct test_epilogue ep;
    test_epilogue_init(&ep, oc, lin ? lin->k : (int64_t)(p->c / p->groups) * p->kh * p->kw, out_i32);
    if (!edges && test_rand_int(0, 2) == 0)   /* a ReLU's output: the AVX2 GEMM's unsigned strips */
        for (int64_t i = 0; i < xn; i++)
            x[i] = (int8_t)(x[i] < 0 ? -x[i] : x[i]);
    if (edges) {
        edge_epilogue(&ep, oc);
        int x_range = test_rand_int(0, 1) ? 127 : test_rand_int(1, 3);
        for (int64_t i = 0; i < xn; i++)
            x[i] = (int8_t)test_rand_int(-x_range, x_range);
    }
    size_t esize = out_i32 ? 4 : 1, ybytes = (size_t)yn * esize;
    void *want = poisoned(ybytes), *got = poisoned(ybytes);
    size_t pbytes = lin ? kcpu_linear_q8_packed_bytes(lin) : kcpu_conv2d_q8_packed_bytes(p);
    void *packed = aligned_alloc(64, (pbytes + 63) / 64 * 64);
    size_t sbytes = lin ? kcpu_linear_q8_scratch_bytes(lin, 3) : kcpu_conv2d_q8_scratch_bytes(p, 3);
    void *scratch = malloc(sbytes);
    RT_ASSERT(packed && scratch);
    if (lin) {
        kcpu_linear_q8_pack(lin, w, packed);
        kref_linear_q8(lin, x, w, &ep.e, res, want);
    } else {
        kcpu_conv2d_q8_pack(p, w, packed);
        kref_conv2d_q8(p, x, w, &ep.e, res, want);
    }
    enum test_result r = TEST_PASS;
    FOR_EACH_ISA(isa) {
        struct kcpu_threads *pool = ps->p[test_rand_int(0, 3)];
        memset(got, POISON, ybytes + GUARD);
        if (lin)
            kcpu_linear_q8(pool, lin, x, packed, &ep.e, res, got, scratch);
        else
            kcpu_conv2d_q8(pool, p, x, packed, &ep.e, res, got, scratch);
        if (memcmp(got, want, ybytes + GUARD) != 0) {
            const uint8_t *g = got, *wb = want;
            size_t i = 0;
            while (g[i] == wb[i])
                i++;
            if (lin)
                test_fail_msg(__FILE__, __LINE__, "linear n=%d k=%d m=%d i32=%d res=%d: byte %zu of %zu differs (%d vs %d) under %s",
                              lin->n, lin->k, lin->m, out_i32, has_res, i, ybytes, g[i], wb[i], kcpu_isa_name((enum kcpu_isa)isa));
            else
                test_fail_msg(__FILE__, __LINE__,
                              "conv n=%d c=%d %dx%d oc=%d k=%dx%d s=%d,%d d=%d,%d pad=%d,%d g=%d -> %dx%d i32=%d res=%d: "
                              "byte %zu of %zu differs (%d vs %d) under %s",
                              p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->stride_h, p->stride_w, p->dil_h,
                              p->dil_w, p->pad_t, p->pad_l, p->groups, p->oh, p->ow, out_i32, has_res, i, ybytes,
                              g[i], wb[i], kcpu_isa_name((enum kcpu_isa)isa));
            r = TEST_FAIL;
            break;
        }
    }
    free(x), free(w), free(res), free(want), free(got), free(packed), free(scratch);
    test_epilogue_free(&ep);
    return r;
}

static enum test_result conv_case(const struct q8_layer *layer, struct pools *ps)
{
    return conv_case_with(layer, ps, false);
}

TEST(int8_conv2d_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 60 && r == TEST_PASS; it++) {
        struct k_conv2d p = test_random_conv(false);
        r = conv_case(&(struct q8_layer){.conv = p}, &ps);
    }
    pools_close(&ps);
    return r;
}

/* The shipped models' layers. */
TEST(int8_conv2d_model_shapes)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < TEST_MODEL_CONV_COUNT && r == TEST_PASS; i++)
        r = conv_case(&(struct q8_layer){.conv = TEST_MODEL_CONVS[i]}, &ps);
    pools_close(&ps);
    return r;
}

/* Depthwise layers (channel multiplier 1) take the direct kernel: random
 * shapes, small and large planes (vector tails, several rows per vector). */
TEST(int8_conv2d_depthwise_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 80 && r == TEST_PASS; it++) {
        struct k_conv2d p = test_random_depthwise(it % 4 == 3);
        r = conv_case(&(struct q8_layer){.conv = p}, &ps);
    }
    pools_close(&ps);
    return r;
}

#define DW(c_, hw, k, s, ohw) \
    {.n = 1, .c = (c_), .h = (hw), .w = (hw), .oc = (c_), .oh = (ohw), .ow = (ohw), .kh = (k), .kw = (k), \
     .stride_h = (s), .stride_w = (s), .pad_t = (k) / 2, .pad_l = (k) / 2, .dil_h = 1, .dil_w = 1, .groups = (c_), \
     .act = K_ACT_RELU6}

/* MobileNetV2's depthwise layers (3x3, stride 1 and 2, 112x112 to 7x7)
 * and 5x5 ones as in MNASNet / EfficientNet, each twice: the epilogue
 * (residual, I32 output, clamp) is drawn per case. */
TEST(int8_conv2d_depthwise_models)
{
    static const struct k_conv2d SHAPES[] = {
        DW(32, 112, 3, 1, 112), DW(96, 112, 3, 2, 56), DW(144, 56, 3, 1, 56), DW(144, 56, 3, 2, 28),
        DW(192, 28, 3, 1, 28),  DW(192, 28, 3, 2, 14), DW(384, 14, 3, 1, 14), DW(576, 14, 3, 2, 7),
        DW(960, 7, 3, 1, 7),    DW(72, 56, 5, 2, 28),  DW(120, 28, 5, 1, 28), DW(480, 14, 5, 1, 14),
    };
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 2 * (int)(sizeof(SHAPES) / sizeof(SHAPES[0])) && r == TEST_PASS; i++) {
        struct k_conv2d p = SHAPES[i / 2];
        p.n = test_rand_int(1, 2);
        r = conv_case(&(struct q8_layer){.conv = p}, &ps);
    }
    pools_close(&ps);
    return r;
}

#define GEMM_CONV(n_, c_, hw, oc_, k, s, ohw) \
    {.n = (n_), .c = (c_), .h = (hw), .w = (hw), .oc = (oc_), .oh = (ohw), .ow = (ohw), .kh = (k), .kw = (k), \
     .stride_h = (s), .stride_w = (s), .pad_t = (k) / 2, .pad_l = (k) / 2, .dil_h = 1, .dil_w = 1, .groups = 1}

/* The GEMM epilogue's rounding at its edges (edge_epilogue): 1x1 layers
 * whose strips store whole rows of lanes (56x56, 112x112) or end part-way
 * (7x7, 14x14, 28x28; MobileNetV2's depths of 16-96 channels), 3x3 layers
 * with dropped columns, linear ones from 1 sample (matrix-vector) to 70,
 * and row counts that leave a panel's last row alone. */
TEST(int8_gemm_requant_edges)
{
    static const struct k_conv2d SHAPES[] = {
        GEMM_CONV(1, 16, 56, 96, 1, 1, 56), GEMM_CONV(1, 24, 28, 144, 1, 1, 28), GEMM_CONV(2, 96, 14, 24, 1, 1, 14),
        GEMM_CONV(1, 40, 7, 17, 1, 1, 7),   GEMM_CONV(1, 3, 112, 9, 1, 1, 112),  GEMM_CONV(2, 8, 5, 1, 1, 1, 5),
        GEMM_CONV(1, 8, 7, 24, 3, 1, 7),    GEMM_CONV(2, 5, 9, 11, 3, 2, 5),
    };
    const int nshapes = (int)(sizeof(SHAPES) / sizeof(SHAPES[0]));
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 3 * nshapes && r == TEST_PASS; it++)
        r = conv_case_with(&(struct q8_layer){.conv = SHAPES[it % nshapes]}, &ps, true);
    for (int it = 0; it < 16 && r == TEST_PASS; it++) {
        struct k_linear l = {.n = it < 4 ? it + 1 : test_rand_int(5, 70), .k = test_rand_int(1, 200),
                             .m = test_rand_int(1, 40)};
        r = conv_case_with(&(struct q8_layer){.linear = true, .fc = l}, &ps, true);
    }
    pools_close(&ps);
    return r;
}

/* Layers of one image with few strips and many rows (7x7 and 14x14 maps):
 * with two or three threads the GEMM splits each strip's rows between
 * them, every share storing at its own rows (int8 and int32 outputs, with
 * and without a residual); 72 and 44 rows end part-way through a share
 * and a panel. Eight rounds each, so every pool comes up. */
TEST(int8_conv2d_rows_split_over_threads)
{
    static const struct k_conv2d SHAPES[] = {
        GEMM_CONV(1, 64, 7, 64, 3, 1, 7), GEMM_CONV(1, 256, 14, 72, 3, 1, 14), GEMM_CONV(1, 32, 14, 44, 1, 1, 14),
        GEMM_CONV(1, 40, 14, 96, 3, 2, 7),
    };
    const int nshapes = (int)(sizeof(SHAPES) / sizeof(SHAPES[0]));
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 8 * nshapes && r == TEST_PASS; it++)
        r = conv_case(&(struct q8_layer){.conv = SHAPES[it % nshapes]}, &ps);
    pools_close(&ps);
    return r;
}

/* One case of the channels-last convolution (groups 1 or depthwise): x read NHWC or,
 * half the time, NCHW; y (and the residual) NHWC, compared with the
 * reference's NCHW result turned round, under every ISA and pool; x, a
 * third of the time, without negative bytes (a ReLU's output: AVX2's
 * unsigned tile); with edges, edge_epilogue's rounding. */
static enum test_result nhwc_case(const struct k_conv2d *p, struct pools *ps, bool edges)
{
    const int64_t xn = (int64_t)p->n * p->c * p->h * p->w, yn = (int64_t)p->n * p->oc * p->oh * p->ow;
    const int64_t wn = (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw, ohw = (int64_t)p->oh * p->ow;
    const int out_i32 = !edges && test_rand_int(0, 4) == 0, has_res = !out_i32 && test_rand_int(0, 1);
    const int x_nchw = test_rand_int(0, 1), x_nonneg = test_rand_int(0, 2) == 0;
    int8_t *x = test_rand_q8(xn), *w = test_rand_q8(wn), *res = has_res ? test_rand_q8(yn) : NULL;
    for (int64_t i = 0; x_nonneg && i < xn; i++)
        x[i] = (int8_t)abs(x[i]);
    struct test_epilogue ep;
    test_epilogue_init(&ep, p->oc, (int64_t)(p->c / p->groups) * p->kh * p->kw, out_i32);
    if (edges)
        edge_epilogue(&ep, p->oc);
    const size_t esize = out_i32 ? 4 : 1, ybytes = (size_t)yn * esize;
    int8_t *xt = malloc((size_t)xn + 1), *rt = malloc((size_t)yn + 1);
    void *want = poisoned(ybytes), *got = poisoned(ybytes), *back = poisoned(ybytes);
    void *packed = aligned_alloc(64, (kcpu_conv2d_q8_nhwc_packed_bytes(p) + 63) / 64 * 64);
    void *scratch = malloc(kcpu_conv2d_q8_nhwc_scratch_bytes(p, 3));
    RT_ASSERT(xt && rt && packed && scratch);
    test_to_nhwc(x, xt, p->n, p->c, (int64_t)p->h * p->w, 1);
    if (res)
        test_to_nhwc(res, rt, p->n, p->oc, ohw, 1);
    kcpu_conv2d_q8_nhwc_pack(p, w, packed);
    kref_conv2d_q8(p, x, w, &ep.e, res, want);
    enum test_result r = TEST_PASS;
    /* AVX-512 twice where the CPU has AMX: on its tiles, then held to VNNI */
    FOR_EACH_ISA(isa)
    for (int amx = isa == KCPU_ISA_AVX512 && kcpu_q8_amx_usable(); amx >= 0 && r == TEST_PASS; amx--) {
        memset(got, POISON, ybytes + GUARD);
        kcpu_q8_amx_allow(amx);
        kcpu_conv2d_q8_nhwc(ps->p[test_rand_int(0, 3)], p, x_nchw ? x : xt, x_nchw, packed, &ep.e, res ? rt : NULL,
                            got, scratch);
        kcpu_q8_amx_allow(1);
        test_to_nhwc(got, back, p->n, ohw, p->oc, esize);   /* back to NCHW */
        memcpy((char *)back + ybytes, (char *)got + ybytes, GUARD);
        if (!same_bytes(__LINE__, back, want, ybytes, "nhwc conv")) {
            test_fail_msg(__FILE__, __LINE__,
                          "conv n=%d c=%d %dx%d oc=%d k=%dx%d s=%d,%d d=%d,%d pad=%d,%d -> %dx%d i32=%d res=%d x_nchw=%d"
                          " x_nonneg=%d isa=%s amx=%d",
                          p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->stride_h, p->stride_w, p->dil_h, p->dil_w,
                          p->pad_t, p->pad_l, p->oh, p->ow, out_i32, has_res, x_nchw, x_nonneg,
                          kcpu_isa_name((enum kcpu_isa)isa), amx);
            r = TEST_FAIL;
        }
    }
    free(x), free(w), free(res), free(xt), free(rt), free(want), free(got), free(back), free(packed), free(scratch);
    test_epilogue_free(&ep);
    return r;
}

/* The channels-last convolution: random shapes (dense and depthwise), the
 * models' layers and the GEMM's edge shapes with edge rounding. */
TEST(int8_conv2d_nhwc)
{
    static const struct k_conv2d EDGES[] = {
        GEMM_CONV(1, 16, 56, 96, 1, 1, 56), GEMM_CONV(2, 96, 14, 24, 1, 1, 14), GEMM_CONV(1, 40, 7, 17, 1, 1, 7),
        GEMM_CONV(1, 3, 30, 9, 1, 1, 30),   GEMM_CONV(1, 64, 7, 64, 3, 1, 7),   GEMM_CONV(2, 5, 9, 11, 3, 2, 5),
        GEMM_CONV(1, 32, 14, 72, 3, 1, 14),
    };
    const int nedges = (int)(sizeof(EDGES) / sizeof(EDGES[0]));
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 60 && r == TEST_PASS; it++) {
        struct k_conv2d p = test_random_conv(false);
        p.groups = 1;
        r = nhwc_case(&p, &ps, false);
    }
    for (int it = 0; it < 20 && r == TEST_PASS; it++) {
        struct k_conv2d p = test_random_depthwise(it % 4 == 3);
        r = nhwc_case(&p, &ps, false);
    }
    for (int i = 0; i < TEST_MODEL_CONV_COUNT && r == TEST_PASS; i++)
        if (TEST_MODEL_CONVS[i].groups == 1 || TEST_MODEL_CONVS[i].groups == TEST_MODEL_CONVS[i].c)
            r = nhwc_case(&TEST_MODEL_CONVS[i], &ps, false);
    for (int it = 0; it < 2 * nedges && r == TEST_PASS; it++)
        r = nhwc_case(&EDGES[it % nedges], &ps, true);
    pools_close(&ps);
    return r;
}

/* The AMX tiles' own cases (kernels/cpu/q8_nhwc_avx512.c), each against
 * the reference under AMX and under VNNI (nhwc_case): quads a multiple of
 * 16 (pixel tiles in pairs, across rows where a row is one tile, an odd
 * tile left alone), whole steps and a partial one, only a partial one,
 * rows wider than a tile (the last tile overlapping), 1 to 4 blocks and a
 * last block cut short, strides and dilation; then random shapes of 16
 * channels and more. Skipped where the CPU has no AMX-INT8. */
TEST(int8_conv2d_nhwc_amx)
{
    if (kcpu_isa_hardware() < KCPU_ISA_AVX512 || !kcpu_q8_amx_usable())
        SKIP("this CPU (or its OS) offers no AMX-INT8: the AMX tiles are checked by make test-emulated-avx512");
    static const struct k_conv2d SHAPES[] = {
        GEMM_CONV(1, 64, 7, 64, 3, 1, 7),      GEMM_CONV(2, 128, 5, 40, 3, 1, 5),  GEMM_CONV(1, 64, 20, 32, 1, 1, 20),
        GEMM_CONV(1, 192, 9, 16, 3, 2, 5),     GEMM_CONV(1, 144, 17, 80, 1, 1, 17), GEMM_CONV(1, 16, 33, 64, 3, 1, 33),
        GEMM_CONV(2, 24, 14, 200, 1, 1, 14),   GEMM_CONV(1, 100, 16, 48, 3, 1, 16), GEMM_CONV(1, 256, 3, 512, 1, 1, 3),
    };
    const int nshapes = (int)(sizeof(SHAPES) / sizeof(SHAPES[0]));
    for (int i = 0; i < nshapes; i++)   /* the cases below do run on AMX */
        ASSERT_TRUE(kcpu_conv2d_q8_nhwc_on_amx(&SHAPES[i]));
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 2 * nshapes && r == TEST_PASS; it++)
        r = nhwc_case(&SHAPES[it % nshapes], &ps, it >= nshapes);
    for (int it = 0; it < 30 && r == TEST_PASS; it++) {
        struct k_conv2d p = test_random_conv(false);
        p.groups = 1;
        if (p.c < 16)
            continue;
        r = nhwc_case(&p, &ps, false);
    }
    struct k_conv2d dilated = GEMM_CONV(1, 64, 12, 32, 3, 1, 12);
    dilated.dil_h = dilated.dil_w = 2;
    dilated.oh = dilated.ow = conv_out(12, 1, 1, 3, 2, 1);
    for (int it = 0; it < 2 && r == TEST_PASS; it++)
        r = nhwc_case(&dilated, &ps, it == 1);
    pools_close(&ps);
    return r;
}

/* Which layers the channels-last convolution takes, per ISA: on AVX-512
 * VNNI every dense one but a stem of 1-3 channels on a map over 28 x 28,
 * and the depthwise ones on maps up to 14 x 14; on AVX2 those whose input map is at most 28 x 28
 * (where it beat the NCHW GEMM); none on the scalar ISA; never a grouped
 * one. */
TEST(int8_conv2d_nhwc_takes)
{
    const struct k_conv2d big = GEMM_CONV(1, 24, 56, 144, 1, 1, 56), edge = GEMM_CONV(1, 32, 28, 192, 1, 1, 28);
    const struct k_conv2d small = GEMM_CONV(1, 64, 14, 384, 3, 1, 14), stem = GEMM_CONV(1, 3, 30, 16, 3, 1, 30);
    const struct k_conv2d small_stem = GEMM_CONV(1, 1, 28, 16, 3, 1, 28);
    struct k_conv2d dw_big = test_random_depthwise(false), dw_small, grouped = edge;
    dw_big.h = dw_big.w = 56, dw_big.oh = dw_big.ow = 56, dw_big.kh = dw_big.kw = 3;
    dw_big.stride_h = dw_big.stride_w = 1, dw_big.pad_t = dw_big.pad_l = 1, dw_big.dil_h = dw_big.dil_w = 1;
    dw_small = dw_big;
    dw_small.h = dw_small.w = dw_small.oh = dw_small.ow = 14;
    grouped.groups = 2;
    ASSERT_TRUE(kq8_dwn_applies(&dw_big));
    int seen = 0;
    FOR_EACH_ISA(isa) {
        const int vnni = isa == KCPU_ISA_AVX512 && kq8_has_vnni(), avx2 = isa >= KCPU_ISA_AVX2;
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&big), vnni);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&dw_big), 0);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&edge), avx2);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&small), avx2);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&dw_small), avx2);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&stem), 0);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&small_stem), avx2);
        ASSERT_EQ_INT(kcpu_conv2d_q8_nhwc_takes(&grouped), 0);
        seen++;
    }
    ASSERT_EQ_INT(seen, (int)kcpu_isa_hardware() + 1);
    return TEST_PASS;
}

TEST(int8_linear_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 40 && r == TEST_PASS; it++) {
        struct k_linear l = {.n = test_rand_int(1, 70), .k = test_rand_int(1, 300), .m = test_rand_int(1, 50)};
        if (it == 0)
            l = (struct k_linear){.n = 64, .k = 400, .m = 120};
        r = conv_case(&(struct q8_layer){.linear = true, .fc = l}, &ps);
    }
    pools_close(&ps);
    return r;
}

/* Batch 1 to 4, where the linear runs the matrix-vector kernels
 * (kq8_gemv_avx512 with VNNI, kq8_gemv_avx2 without): rows across the
 * 8- and 16-row panels, depths that end inside a quad, with and without
 * a residual, int32 outputs, and the epilogue's edges half the time. */
TEST(int8_linear_small_batch)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int it = 0; it < 120 && r == TEST_PASS; it++) {
        struct k_linear l = {.n = test_rand_int(1, KQ8_GEMV_MAX_N), .k = test_rand_int(1, 300), .m = test_rand_int(1, 40)};
        r = conv_case_with(&(struct q8_layer){.linear = true, .fc = l}, &ps, it % 2 == 1);
    }
    pools_close(&ps);
    return r;
}

TEST(int8_pools_random)
{
    struct pools ps;
    pools_open(&ps);
    bool ok = true;
    for (int it = 0; it < 40 && ok; it++) {
        struct k_pool2d p = test_random_pool(false);   /* one window for max and average */
        int64_t xn = (int64_t)p.n * p.c * p.h * p.w, yn = (int64_t)p.n * p.c * p.oh * p.ow, gn = (int64_t)p.n * p.c;
        struct k_q8_mult counts[17];
        for (int c = 0; c <= p.kh * p.kw; c++)
            counts[c] = test_rand_mult(0);
        struct k_q8_mult gm = test_rand_mult(0);
        int8_t *x = test_rand_q8(xn);
        int8_t *w_max = poisoned((size_t)yn), *w_avg = poisoned((size_t)yn), *w_gl = poisoned((size_t)gn);
        int8_t *g = poisoned((size_t)(yn + gn)), *back = poisoned((size_t)yn), *xt = malloc((size_t)xn + 1);
        RT_ASSERT(xt);
        test_to_nhwc(x, xt, p.n, p.c, (int64_t)p.h * p.w, 1);
        kref_max_pool2d_q8(&p, x, w_max);
        kref_avg_pool2d_q8(&p, counts, x, w_avg);
        kref_global_avg_pool_q8(p.n, p.c, (int64_t)p.h * p.w, gm, x, w_gl);
        FOR_EACH_ISA(isa) {
            struct kcpu_threads *pool = ps.p[test_rand_int(0, 3)];
            memset(g, POISON, (size_t)(yn + gn) + GUARD);
            kcpu_max_pool2d_q8(pool, &p, x, g);
            ok = ok && CHECK_SAME(g, w_max, yn, "max pool");
            memset(g, POISON, (size_t)yn + GUARD);
            kcpu_avg_pool2d_q8(pool, &p, counts, x, g);
            ok = ok && CHECK_SAME(g, w_avg, yn, "avg pool");
            memset(g, POISON, (size_t)gn + GUARD);
            kcpu_global_avg_pool_q8(pool, p.n, p.c, (int64_t)p.h * p.w, gm, x, g);
            ok = ok && CHECK_SAME(g, w_gl, gn, "global avg pool");
            /* channels last: max pooling NHWC to NHWC, global average to [n, c] */
            memset(g, POISON, (size_t)yn + GUARD);
            kcpu_max_pool2d_q8_nhwc(pool, &p, xt, g);
            test_to_nhwc(g, back, p.n, (int64_t)p.oh * p.ow, p.c, 1);   /* back to NCHW */
            memcpy(back + yn, g + yn, GUARD);
            ok = ok && CHECK_SAME(back, w_max, yn, "max pool nhwc");
            memset(g, POISON, (size_t)gn + GUARD);
            kcpu_global_avg_pool_q8_nhwc(pool, p.n, p.c, (int64_t)p.h * p.w, gm, xt, g);
            ok = ok && CHECK_SAME(g, w_gl, gn, "global avg pool nhwc");
        }
        free(x), free(xt), free(back), free(w_max), free(w_avg), free(w_gl), free(g);
    }
    pools_close(&ps);
    return ok ? TEST_PASS : TEST_FAIL;
}

TEST(int8_elementwise_random)
{
    struct pools ps;
    pools_open(&ps);
    bool ok = true;
    for (int it = 0; it < 12 && ok; it++) {
        int64_t n = it == 0 ? 1 : test_rand_int(1, 70000);
        int8_t *a = test_rand_q8(n), *b = test_rand_q8(n), lut[256];
        float *f = malloc(sizeof(float) * (size_t)n);
        RT_ASSERT(f);
        for (int i = 0; i < 256; i++)
            lut[i] = (int8_t)test_rand_int(-127, 127);
        float scale = test_rand_float(1e-3f, 0.5f), inv = 1.0f / scale;
        for (int64_t i = 0; i < n; i++)
            f[i] = test_rand_float(-200 * scale, 200 * scale);
        f[0] = NAN;
        if (n > 2) {
            f[1] = INFINITY;
            f[2] = 2.5f * scale;
        }
        struct k_q8_mult ma = test_rand_mult(0), mb = test_rand_mult(0);
        int8_t *w_add = poisoned((size_t)n), *w_lut = poisoned((size_t)n), *w_q = poisoned((size_t)n);
        float *w_dq = poisoned(sizeof(float) * (size_t)n), *g_dq = poisoned(sizeof(float) * (size_t)n);
        int8_t *g = poisoned((size_t)n);
        kref_add_q8(n, a, ma, b, mb, w_add);
        kref_lut_q8(n, lut, a, w_lut);
        kref_quantize_q8(n, f, inv, w_q);
        kref_dequantize_q8(n, a, scale, w_dq);
        FOR_EACH_ISA(isa) {
            struct kcpu_threads *pool = ps.p[test_rand_int(0, 3)];
            memset(g, POISON, (size_t)n + GUARD);
            kcpu_add_q8(pool, n, a, ma, b, mb, g);
            ok = ok && CHECK_SAME(g, w_add, n, "add");
            memset(g, POISON, (size_t)n + GUARD);
            kcpu_lut_q8(pool, n, lut, a, g);
            ok = ok && CHECK_SAME(g, w_lut, n, "lut");
            memset(g, POISON, (size_t)n + GUARD);
            kcpu_quantize_q8(pool, n, f, inv, g);
            ok = ok && CHECK_SAME(g, w_q, n, "quantize");
            memset(g_dq, POISON, sizeof(float) * (size_t)n + GUARD);
            kcpu_dequantize_q8(pool, n, a, scale, g_dq);
            ok = ok && CHECK_SAME(g_dq, w_dq, sizeof(float) * (size_t)n, "dequantize");
        }
        free(a), free(b), free(f), free(w_add), free(w_lut), free(w_q), free(w_dq), free(g_dq), free(g);
    }
    pools_close(&ps);
    return ok ? TEST_PASS : TEST_FAIL;
}

TEST(int8_concat_and_dequant_i32_random)
{
    struct pools ps;
    pools_open(&ps);
    bool ok = true;
    for (int it = 0; it < 20 && ok; it++) {
        struct k_concat p = {.outer = test_rand_int(1, 6), .inner = test_rand_int(1, 40), .count = test_rand_int(1, 4)};
        int64_t lens[4], total = 0;
        int8_t *in[4];
        struct k_q8_mult mults[4];
        for (int i = 0; i < p.count; i++) {
            lens[i] = test_rand_int(1, 5);
            total += lens[i];
            in[i] = test_rand_q8(p.outer * lens[i] * p.inner);
            mults[i] = test_rand_mult(0);
        }
        mults[0] = (struct k_q8_mult){1 << 30, 30};   /* the identity */
        int64_t yn = p.outer * total * p.inner;
        int8_t *want = poisoned((size_t)yn), *got = poisoned((size_t)yn);
        kref_concat_q8(&p, (const int8_t *const *)in, lens, mults, want);
        int n = test_rand_int(1, 4), c = test_rand_int(1, 20);
        int64_t inner = test_rand_int(1, 30), cnt = (int64_t)n * c * inner;
        int32_t *x32 = malloc(sizeof(int32_t) * (size_t)cnt);
        float *sc = malloc(sizeof(float) * (size_t)c);
        RT_ASSERT(x32 && sc);
        for (int64_t i = 0; i < cnt; i++)
            x32[i] = (int32_t)(test_rand_u64() >> 33) - (1 << 30);
        for (int i = 0; i < c; i++)
            sc[i] = test_rand_float(1e-6f, 1e-2f);
        float *wf = poisoned(sizeof(float) * (size_t)cnt), *gf = poisoned(sizeof(float) * (size_t)cnt);
        kref_dequantize_i32(n, c, inner, x32, sc, wf);
        FOR_EACH_ISA(isa) {
            struct kcpu_threads *pool = ps.p[test_rand_int(0, 3)];
            memset(got, POISON, (size_t)yn + GUARD);
            kcpu_concat_q8(pool, &p, (const int8_t *const *)in, lens, mults, got);
            ok = ok && CHECK_SAME(got, want, yn, "concat");
            memset(gf, POISON, sizeof(float) * (size_t)cnt + GUARD);
            kcpu_dequantize_i32(pool, n, c, inner, x32, sc, gf);
            ok = ok && CHECK_SAME(gf, wf, sizeof(float) * (size_t)cnt, "dequantize i32");
        }
        for (int i = 0; i < p.count; i++)
            free(in[i]);
        free(want), free(got), free(x32), free(sc), free(wf), free(gf);
    }
    pools_close(&ps);
    return ok ? TEST_PASS : TEST_FAIL;
}

/* F16C against the scalar conversion of kernel_quant.h over a stride of all
 * 2^32 bit patterns (every sign, exponent and rounding case), plus ties. */
TEST(fp16_rounding_matches_f16c)
{
    enum { N = 1 << 16 };
    float *x = malloc(sizeof(float) * N), *want = malloc(sizeof(float) * N);
    float *got = poisoned(sizeof(float) * N);
    RT_ASSERT(x && want);
    struct kcpu_threads *pool = kcpu_threads_create(2);
    uint32_t bits = (uint32_t)test_rand_u64();
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < N; i++, bits += 65521u * 997u + 13u)
            x[i] = k_f32_from_bits(bits);
        if (round == 0) {   /* exact ties at both exponent ends, overflow edge, subnormals */
            static const uint32_t special[] = {0x3f801000u, 0x3f803000u, 0x477fefffu, 0x477ff000u, 0x33000000u,
                                               0x33000001u, 0x387fc000u, 0x38800000u, 0x7fc00001u, 0xff800000u,
                                               0x80000000u, 0x00000001u, 0x477fe000u, 0x3a001000u};
            for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
                x[i] = k_f32_from_bits(special[i]);
        }
        kref_round_f16(N, x, want);
        FOR_EACH_ISA(isa) {
            int64_t n = N - test_rand_int(0, 17);
            memset(got, POISON, sizeof(float) * N + GUARD);
            kcpu_round_f16(test_rand_int(0, 1) ? pool : NULL, n, x, got);
            for (int64_t i = 0; i < n; i++)
                TEST_FAIL_IF(k_f32_bits(got[i]) != k_f32_bits(want[i]), "%s: 0x%08x -> 0x%08x, scalar 0x%08x",
                             kcpu_isa_name((enum kcpu_isa)isa), k_f32_bits(x[i]), k_f32_bits(got[i]),
                             k_f32_bits(want[i]));
            TEST_FAIL_IF(((const uint8_t *)got)[n * 4] != POISON, "wrote past the end");
        }
    }
    /* A few values by hand: 1 + 2^-11 is a tie that rounds to even (1). */
    ASSERT_EQ_INT(k_f32_bits(k_f16_round(1.0f + 1.0f / 2048)), k_f32_bits(1.0f));
    ASSERT_EQ_INT(k_f32_bits(k_f16_round(65520.0f)), k_f32_bits(INFINITY));
    ASSERT_EQ_INT(k_f32_bits(k_f16_round(65519.0f)), k_f32_bits(65504.0f));
    ASSERT_EQ_INT(k_f32_bits(k_f16_round(5.9604645e-08f)), k_f32_bits(5.9604645e-08f));
    kcpu_threads_free(pool);
    free(x), free(want), free(got);
    return TEST_PASS;
}
