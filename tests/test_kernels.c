/*
 * test_kernels.c - the CPU kernels (kernels/cpu) against the reference
 * kernels (kernels/ref), op by op, on random shapes and random data, under
 * every instruction set this CPU supports and with pools of 1, 2 and 3
 * threads (and none).
 *
 * Every output buffer is poisoned with NaN and followed by guard floats:
 * a kernel must write every element and nothing past the end. Accuracy is
 * test_rel_error's measure, max abs difference over max |reference|, at
 * most 1e-5. The references accumulate in double, the CPU kernels in
 * float. For conv and linear the difference is measured against the
 * largest pre-activation value instead (test_scaled_error says why).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_impl.h"
#include "kernels/ref/kref.h"
#include "kernel_test_util.h"
#include "op_shapes.h"
#include "test.h"

#define TOL 1e-5
#define GUARD 37            /* floats after each output */
#define GUARD_VALUE 1234.5f

/* ---------------------------------------------------------------- helpers */

static float *rand_buf(int64_t count) { return test_rand_floats(count, -1.0f, 1.0f); }

/* Output buffer: count NaNs, then GUARD guard values. */
static float *poisoned(int64_t count)
{
    float *y = malloc((size_t)(count + GUARD) * sizeof(float));
    for (int64_t i = 0; i < count; i++)
        y[i] = NAN;
    for (int i = 0; i < GUARD; i++)
        y[count + i] = GUARD_VALUE;
    return y;
}

static int guard_intact(const float *y, int64_t count)
{
    for (int i = 0; i < GUARD; i++)
        if (y[count + i] != GUARD_VALUE)
            return 0;
    return 1;
}

/* Whether got (count outputs) is fully written, untouched past its end and
 * within TOL of want relative to max |scale|; says why not after `what`. */
static int output_ok(const char *what, const float *got, const float *want, const float *scale,
                     int64_t count)
{
    int64_t bad = test_count_nonfinite(got, count);
    int guard = guard_intact(got, count);
    double err = test_scaled_error(got, want, scale, count);
    if (!bad && guard && err <= TOL)
        return 1;
    printf("  %s: %" PRId64 " of %" PRId64 " outputs unwritten, guard %s, error %.3g (limit %g)\n",
           what, bad, count, guard ? "intact" : "OVERWRITTEN", err, TOL);
    return 0;
}

#define CHECK_OUTPUT(got, want, count, what) \
    TEST_FAIL_IF(!output_ok((what), (got), (want), (want), (count)), "%s mismatch", (what))

static const char *act_name(enum k_act a)
{
    static const char *names[K_ACT_COUNT] = {"none", "relu", "relu6", "sigmoid", "tanh", "gelu", "gelu_tanh", "hardswish", "silu"};
    return (int)a >= 0 && a < K_ACT_COUNT ? names[a] : "?";
}

/* ---------------------------------------------------------------- pool */

struct count_job {
    atomic_int *hits;
    int threads;
    atomic_int bad_thread;
};

static void count_task(void *arg, int64_t task, int thread)
{
    struct count_job *j = arg;
    atomic_fetch_add(&j->hits[task], 1);
    if (thread < 0 || thread >= j->threads)
        atomic_store(&j->bad_thread, 1);
}

TEST(kernels_pool_runs_every_task_once)
{
    enum { MAX_TASKS = 257 };
    atomic_int hits[MAX_TASKS];
    for (int threads = 0; threads <= 3; threads++) {
        struct kcpu_threads *pool = threads ? kcpu_threads_create(threads) : NULL;
        ASSERT_TRUE(threads == 0 || pool != NULL);
        ASSERT_EQ_INT(kcpu_threads_count(pool), threads ? threads : 1);
        /* Many short runs back to back: generations must not mix. */
        for (int run = 0; run < 300; run++) {
            int tasks = run < 3 ? run : test_rand_int(1, MAX_TASKS);
            for (int t = 0; t < MAX_TASKS; t++)
                atomic_init(&hits[t], 0);
            struct count_job j = {.hits = hits, .threads = threads ? threads : 1};
            atomic_init(&j.bad_thread, 0);
            kcpu_threads_run(pool, tasks, count_task, &j);
            for (int t = 0; t < MAX_TASKS; t++)
                ASSERT_EQ_INT(atomic_load(&hits[t]), t < tasks ? 1 : 0);
            ASSERT_EQ_INT(atomic_load(&j.bad_thread), 0);
        }
        kcpu_threads_free(pool);
    }
    ASSERT_TRUE(kcpu_threads_create(0) == NULL);
    /* Workers asleep (past their spin): a small run stays on the caller. */
    struct kcpu_threads *pool = kcpu_threads_create(2);
    ASSERT_TRUE(pool != NULL);
    nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    for (int t = 0; t < MAX_TASKS; t++)
        atomic_init(&hits[t], 0);
    struct count_job j = {.hits = hits, .threads = 1};
    atomic_init(&j.bad_thread, 0);
    kcpu_threads_run(pool, KCPU_THREADS_COLD_TASKS - 1, count_task, &j);
    kcpu_threads_free(pool);
    for (int t = 0; t < KCPU_THREADS_COLD_TASKS - 1; t++)
        ASSERT_EQ_INT(atomic_load(&hits[t]), 1);
    ASSERT_EQ_INT(atomic_load(&j.bad_thread), 0);   /* thread 0 only */
    return TEST_PASS;
}

/* A run of a few long tasks wakes a sleeping worker. The first task (which
 * the caller runs alone, timed) takes 1 ms, longer than a wake-up; each
 * later task on the caller then waits (up to 2 s) until a task has run on
 * a worker, so a pool that kept such a run on the caller (ResNet-50's late
 * layers at batch 1 once were) fails at once instead of only running slower. */
struct long_job {
    atomic_int on_worker;
    double deadline_ms;
};

static void long_task(void *arg, int64_t task, int thread)
{
    struct long_job *j = arg;
    if (thread != 0) {
        atomic_store(&j->on_worker, 1);
        return;
    }
    double until = task == 0 ? test_now_ms() + 1.0 : j->deadline_ms;
    while ((task == 0 || !atomic_load(&j->on_worker)) && test_now_ms() < until)
        ;
}

TEST(kernels_pool_wakes_workers_for_long_tasks)
{
    struct kcpu_threads *pool = kcpu_threads_create(2);
    ASSERT_TRUE(pool != NULL);
    for (int round = 0; round < 3; round++) {
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);   /* past the workers' spin */
        struct long_job j = {.deadline_ms = test_now_ms() + 2000.0};
        atomic_init(&j.on_worker, 0);
        kcpu_threads_run(pool, 3, long_task, &j);
        ASSERT_EQ_INT(atomic_load(&j.on_worker), 1);
    }
    kcpu_threads_free(pool);
    return TEST_PASS;
}

/* ---------------------------------------------------------------- ISA */

TEST(kernels_isa_names_and_forcing)
{
    enum kcpu_isa hw = kcpu_isa_hardware();
    ASSERT_TRUE(kcpu_isa() <= hw);
    ASSERT_STR_EQ(kcpu_isa_name(KCPU_ISA_SCALAR), "scalar");
    ASSERT_STR_EQ(kcpu_isa_name(KCPU_ISA_AVX2), "avx2");
    ASSERT_STR_EQ(kcpu_isa_name(KCPU_ISA_AVX512), "avx512");
    printf("  cpu supports %s, kernels use %s\n", kcpu_isa_name(hw), kcpu_isa_name(kcpu_isa()));
    enum kcpu_isa before = kcpu_isa();
    int n = 0;
    FOR_EACH_ISA(isa) {
        ASSERT_EQ_INT(kcpu_isa(), isa);
        n++;
    }
    ASSERT_EQ_INT(n, (int)hw + 1);
    ASSERT_EQ_INT(kcpu_isa(), before);
    if (hw < KCPU_ISA_AVX512)
        ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_AVX512), -1);
    return TEST_PASS;
}

/* ---------------------------------------------------------------- conv */

/* Runs one convolution under every ISA and returns TEST_FAIL on mismatch. */
static enum test_result check_conv(const struct pools *ps, const struct k_conv2d *p,
                                   int with_bias, int with_res)
{
    int64_t xn = (int64_t)p->n * p->c * p->h * p->w;
    int64_t wn = (int64_t)p->oc * (p->c / p->groups) * p->kh * p->kw;
    int64_t yn = (int64_t)p->n * p->oc * p->oh * p->ow;
    float *x = rand_buf(xn), *w = rand_buf(wn), *bias = with_bias ? rand_buf(p->oc) : NULL;
    float *res = with_res ? rand_buf(yn) : NULL, *want = malloc((size_t)yn * sizeof(float));
    float *pre = malloc((size_t)yn * sizeof(float));
    ref_conv2d_and_pre(p, x, w, bias, res, want, pre);
    float *packed = aligned_alloc(64, (kcpu_conv2d_packed_floats(p) * sizeof(float) + 63) / 64 * 64);
    kcpu_conv2d_pack(p, w, packed);
    enum test_result r = TEST_PASS;
    FOR_EACH_ISA(isa) {
        struct kcpu_threads *pool = pick_pool(ps);
        /* Sized exactly (so ASan sees any overrun) or, like the runtime
         * does, for a larger batch than this call's. */
        struct k_conv2d sized = *p;
        sized.n += test_rand_int(0, 1) * test_rand_int(1, 3);
        void *scratch = malloc(kcpu_conv2d_scratch_bytes(&sized, kcpu_threads_count(pool)));
        float *y = poisoned(yn);
        kcpu_conv2d_f32(pool, p, x, packed, bias, res, y, scratch);
        char what[256];
        snprintf(what, sizeof(what), "conv n%d c%d %dx%d -> oc%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d g%d %s%s%s isa %s threads %d",
                 p->n, p->c, p->h, p->w, p->oc, p->oh, p->ow, p->kh, p->kw, p->stride_h, p->stride_w,
                 p->pad_t, p->pad_l, p->dil_h, p->dil_w, p->groups, act_name(p->act), bias ? " bias" : "",
                 res ? " residual" : "", kcpu_isa_name((enum kcpu_isa)isa), kcpu_threads_count(pool));
        if (!output_ok(what, y, want, pre, yn))
            r = TEST_FAIL;
        free(y);
        free(scratch);
    }
    free(x);
    free(w);
    free(bias);
    free(res);
    free(want);
    free(pre);
    free(packed);
    return r;
}

TEST(kernels_conv2d_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 600 && r == TEST_PASS; i++) {
        struct k_conv2d p = test_random_conv(i % 8 == 7);
        r = check_conv(&ps, &p, test_rand_int(0, 1), test_rand_int(0, 1));
    }
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "convolution mismatch (case above)");
    return TEST_PASS;
}

/* The layer shapes the shipped models use, at small batches. */
TEST(kernels_conv2d_model_shapes)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < TEST_MODEL_CONV_COUNT && r == TEST_PASS; i++)
        r = check_conv(&ps, &TEST_MODEL_CONVS[i], i < 2, i >= 3);
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "convolution mismatch (case above)");
    return TEST_PASS;
}

/* Scratch sized for a batch serves every smaller one (the runtime sizes it
 * once for its largest pass), though smaller batches may take other paths. */
TEST(kernels_conv2d_scratch_grows_with_batch)
{
    for (int i = 0; i < TEST_MODEL_CONV_COUNT; i++) {
        struct k_conv2d p = TEST_MODEL_CONVS[i];
        size_t last = 0;
        for (p.n = 1; p.n <= 20; p.n++) {
            size_t bytes = kcpu_conv2d_scratch_bytes(&p, 2);
            TEST_FAIL_IF(bytes < last, "model conv %d: %zu scratch bytes at batch %d, %zu at %d", i, bytes,
                         p.n, last, p.n - 1);
            last = bytes;
        }
    }
    return TEST_PASS;
}

/* Which dense convolutions the pixel-tile kernel takes (kcpu_convpix.c):
 * output channels in vectors of 16, strides of 1 or 2 across, at least 64
 * taps (16 for a 1x1), with 48 or more channels maps of up to 28x28
 * outputs, and plain 1x1 layers only with 48 or more output and 128 or
 * more input channels on 14x14 maps or smaller; on AVX-512 only. The GEMM
 * paths keep the rest. */
TEST(kernels_conv2d_pixel_tile_dispatch)
{
    if (kcpu_isa_hardware() < KCPU_ISA_AVX512)
        SKIP("this CPU has no AVX-512: these are the AVX-512 rules (kernels_conv2d_pixel_tile_avx2 has AVX2's)");
#define PIXEL_TILE(p) (strcmp(kcpu_conv2d_method(p), "pixel-tile gemm") == 0)
    enum kcpu_isa before = kcpu_isa();
    struct k_conv2d p = {.n = 1, .c = 64, .h = 7, .w = 7, .oc = 64, .oh = 7, .ow = 7, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                         .groups = 1};
    ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_AVX512), 0);
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.n = 16;   /* the batch does not change the choice */
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.oc = 72;  /* not a multiple of 16 */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.oc = 64;
    p.pad_t = p.pad_l = 0;          /* padded, 28x28 and larger is Winograd's */
    p.h = p.w = 30, p.oh = p.ow = 28;
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.h = p.w = 58, p.oh = p.ow = 56;   /* too large a map for 4 channel vectors */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.oc = 32;                      /* with 2, maps of any size */
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.stride_w = 3;
    p.ow = 19;                      /* a stride no tile has */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.stride_w = 1;
    p.ow = 56;
    p.c = 4;                        /* 36 taps */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.c = 64;
    p.oc = 64;
    p.h = p.w = p.oh = p.ow = 28;
    p.kh = p.kw = 1;
    p.pad_t = p.pad_l = 0;          /* a plain 1x1 is the GEMM's from 28x28 */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.h = p.w = p.oh = p.ow = 7;    /* and with 64 input channels */
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.c = 128;                      /* from 128 on 14x14 and smaller */
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.oc = 32;
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.oc = 64;
    p.c = 64;
    p.h = p.w = 14;
    p.stride_h = p.stride_w = 2;    /* a strided 1x1 is not */
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.c = 16;                       /* from 16 input channels */
    ASSERT_TRUE(PIXEL_TILE(&p));
    p.c = 8;
    ASSERT_FALSE(PIXEL_TILE(&p));
    p.c = 64;
    ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_AVX2), 0);   /* AVX2 has its own tile (kernels_conv2d_pixel_tile_avx2) */
    ASSERT_TRUE(PIXEL_TILE(&p));
    ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_SCALAR), 0);
    ASSERT_FALSE(PIXEL_TILE(&p));
    ASSERT_EQ_INT(kcpu_isa_set(before), 0);
#undef PIXEL_TILE
    return TEST_PASS;
}

/* ---------------------------------------------------------------- linear */

static enum test_result check_linear(const struct pools *ps, const struct k_linear *p,
                                     int with_bias, int with_res)
{
    int64_t yn = (int64_t)p->n * p->m;
    float *x = rand_buf((int64_t)p->n * p->k), *w = rand_buf((int64_t)p->m * p->k);
    float *bias = with_bias ? rand_buf(p->m) : NULL, *res = with_res ? rand_buf(yn) : NULL;
    float *want = malloc((size_t)yn * sizeof(float)), *pre = malloc((size_t)yn * sizeof(float));
    ref_linear_and_pre(p, x, w, bias, res, want, pre);
    float *packed = aligned_alloc(64, (kcpu_linear_packed_floats(p) * sizeof(float) + 63) / 64 * 64);
    kcpu_linear_pack(p, w, packed);
    enum test_result r = TEST_PASS;
    FOR_EACH_ISA(isa) {
        struct kcpu_threads *pool = pick_pool(ps);
        void *scratch = malloc(kcpu_linear_scratch_bytes(p, kcpu_threads_count(pool)));
        float *y = poisoned(yn);
        kcpu_linear_f32(pool, p, x, packed, bias, res, y, scratch);
        char what[160];
        snprintf(what, sizeof(what), "linear n%d k%d m%d %s%s%s isa %s threads %d", p->n, p->k, p->m,
                 act_name(p->act), bias ? " bias" : "", res ? " residual" : "",
                 kcpu_isa_name((enum kcpu_isa)isa), kcpu_threads_count(pool));
        if (!output_ok(what, y, want, pre, yn))
            r = TEST_FAIL;
        free(y);
        free(scratch);
    }
    free(x);
    free(w);
    free(bias);
    free(res);
    free(want);
    free(pre);
    free(packed);
    return r;
}

/* On AVX2 a pixel tile is one block of 16 channels by up to 6 pixels: it
 * takes the same shapes as on AVX-512 with one channel vector (maps of any
 * size), never a plain 1x1 (that needs 3 or more vectors), and no other ISA
 * has it. The random and model-shape convolutions check its results under
 * every ISA. */
TEST(kernels_conv2d_pixel_tile_avx2)
{
    if (kcpu_isa_hardware() < KCPU_ISA_AVX2)
        SKIP("this CPU has no AVX2");
    enum kcpu_isa before = kcpu_isa();
    /* Unpadded: padded, this shape is Winograd's (kernels_conv2d_winograd). */
    struct k_conv2d p = {.n = 1, .c = 64, .h = 58, .w = 58, .oc = 64, .oh = 56, .ow = 56, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 0, .pad_l = 0, .dil_h = 1, .dil_w = 1,
                         .groups = 1};
    ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_AVX2), 0);
#define PIXEL_TILE(p) (strcmp(kcpu_conv2d_method(p), "pixel-tile gemm") == 0)
    bool on_56 = PIXEL_TILE(&p);
    p.oc = 72;
    bool on_72 = PIXEL_TILE(&p);
    p.oc = 32, p.c = 3, p.h = p.w = 224, p.oh = p.ow = 112, p.stride_h = p.stride_w = 2, p.pad_t = p.pad_l = 1;
    bool on_stem = PIXEL_TILE(&p);   /* MobileNetV2's: 27 taps */
    p.stride_h = p.stride_w = 1;
    p.oc = 512, p.c = 512, p.kh = p.kw = 1, p.pad_t = p.pad_l = 0, p.h = p.w = p.oh = p.ow = 7;
    bool on_1x1 = PIXEL_TILE(&p);
    p.kh = p.kw = 3, p.pad_t = p.pad_l = 1;
    ASSERT_EQ_INT(kcpu_isa_set(KCPU_ISA_SCALAR), 0);
    bool on_scalar = PIXEL_TILE(&p);
#undef PIXEL_TILE
    kcpu_isa_set(before);
    ASSERT_TRUE(on_56);
    ASSERT_FALSE(on_72);
    ASSERT_TRUE(on_stem);
    ASSERT_FALSE(on_1x1);
    ASSERT_FALSE(on_scalar);
    return TEST_PASS;
}

/* Winograd F(2x2, 3x3) (kernels/cpu/kcpu_wino.c) takes padded 3x3
 * stride-1 convolutions with 64 or more channels on maps of 12 or more
 * columns (or 256 or more input channels), whatever the batch and ISA; its
 * results are held to the same bound as every other path's, under every
 * ISA, on shapes that end tile rows and blocks anywhere. */
/* Which dilated convolutions go to the reading-taps kernel (any ISA): at
 * most half of the tap-pixels reading the input; the backend_ops cases
 * "conv2d ... at rate(s)" check its outputs. */
TEST(kernels_conv2d_reading_taps_dispatch)
{
#define TAPS(p) (strcmp(kcpu_conv2d_method(p), "reading taps gemm") == 0)
    struct k_conv2d p = {.n = 1, .c = 960, .h = 14, .w = 14, .oc = 256, .oh = 14, .ow = 14, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 12, .pad_l = 12, .dil_h = 12, .dil_w = 12,
                         .groups = 1};
    ASSERT_TRUE(TAPS(&p));   /* DeepLab's ASPP at rate 12: 18 % read the input */
    p.n = 64;
    ASSERT_TRUE(TAPS(&p));
    p.pad_t = p.pad_l = p.dil_h = p.dil_w = 6;   /* rate 6: (14 + 8 + 8) / 42 per axis, 51 % */
    ASSERT_FALSE(TAPS(&p));
    p.h = p.w = p.oh = p.ow = 9;   /* on 9x9: (9 + 3 + 3) / 27 per axis, 31 % */
    ASSERT_TRUE(TAPS(&p));
    p.groups = 2;
    ASSERT_FALSE(TAPS(&p));
    p.groups = 1;
    p.pad_t = p.pad_l = p.dil_h = p.dil_w = 1;   /* undilated: never (3x3 on 2x2 would qualify) */
    p.h = p.w = p.oh = p.ow = 2;
    ASSERT_FALSE(TAPS(&p));
    /* the backend_ops cases' shapes */
    p = (struct k_conv2d){.n = 1, .c = 40, .h = 7, .w = 11, .oc = 20, .oh = 7, .ow = 11, .kh = 3, .kw = 3,
                          .stride_h = 1, .stride_w = 1, .pad_t = 5, .pad_l = 8, .dil_h = 5, .dil_w = 8, .groups = 1};
    ASSERT_TRUE(TAPS(&p));
    p = (struct k_conv2d){.n = 1, .c = 3, .h = 5, .w = 6, .oc = 20, .oh = 5, .ow = 6, .kh = 3, .kw = 5,
                          .stride_h = 1, .stride_w = 1, .pad_t = 4, .pad_l = 6, .dil_h = 4, .dil_w = 3, .groups = 1};
    ASSERT_TRUE(TAPS(&p));
#undef TAPS
    return TEST_PASS;
}

TEST(kernels_conv2d_winograd)
{
#define WINOGRAD(p) (strcmp(kcpu_conv2d_method(p), "winograd gemm") == 0)
    enum kcpu_isa before = kcpu_isa();
    struct k_conv2d p = {.n = 1, .c = 64, .h = 56, .w = 56, .oc = 64, .oh = 56, .ow = 56, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1,
                         .groups = 1};
    FOR_EACH_ISA(isa) {
        p.n = isa + 1;
        ASSERT_TRUE(WINOGRAD(&p));   /* ResNet-50's first stage */
    }
    ASSERT_EQ_INT(kcpu_isa(), before);
    struct k_conv2d q = p;
    q.c = q.oc = 512, q.h = q.w = q.oh = q.ow = 7;   /* its last, 256 channels or more: Winograd's */
    FOR_EACH_ISA(isa) {                               /* unless the hardware has AVX-512's two-row tiles */
        ASSERT_EQ_INT(WINOGRAD(&q), kcpu_isa_hardware() != KCPU_ISA_AVX512);
    }
    q.oc = 80;                                        /* 5 channel vectors: one-row tiles */
    ASSERT_TRUE(WINOGRAD(&q));
    q.c = 128, q.oc = 512;                            /* a narrow map with fewer */
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.c = q.oc = 32;                           /* resnet-mini's second stage */
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.oc = 48;
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.stride_h = q.stride_w = 2, q.oh = q.ow = 28;
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.pad_t = q.pad_l = 0, q.oh = q.ow = 54;
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.dil_h = q.dil_w = 2, q.pad_t = q.pad_l = 2;
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.groups = 2;
    ASSERT_FALSE(WINOGRAD(&q));
    q = p, q.kh = q.kw = 5, q.pad_t = q.pad_l = 2;
    ASSERT_FALSE(WINOGRAD(&q));

    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 16 && r == TEST_PASS; i++) {
        q = p;
        q.n = test_rand_int(1, 3);
        q.c = test_rand_int(64, 90);
        q.oc = test_rand_int(64, 90);   /* panels cut short too */
        q.h = q.oh = test_rand_int(12, 25);
        q.w = q.ow = test_rand_int(12, 25);
        if (i % 4 == 3) {   /* narrow maps with many input channels */
            q.c = test_rand_int(256, 300);
            q.w = q.ow = test_rand_int(4, 11);
            q.h = q.oh = test_rand_int(4, 9);
            if (q.w == 7 && q.oc % 32 == 0)   /* the pixel tile's two-row case on AVX-512: checked above */
                q.oc += 16;
        }
        q.act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1);
        ASSERT_TRUE(WINOGRAD(&q));
        r = check_conv(&ps, &q, test_rand_int(0, 1), test_rand_int(0, 1));
    }
    pools_close(&ps);
#undef WINOGRAD
    TEST_FAIL_IF(r != TEST_PASS, "winograd convolution mismatch (case above)");
    return TEST_PASS;
}

TEST(kernels_linear_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 400 && r == TEST_PASS; i++) {
        struct k_linear p = {.n = test_rand_int(1, 21), .k = test_rand_int(1, 300),
                             .m = test_rand_int(1, 150),
                             .act = (enum k_act)test_rand_int(0, K_ACT_COUNT - 1)};
        r = check_linear(&ps, &p, test_rand_int(0, 1), test_rand_int(0, 1));
    }
    /* LeNet-5's classifier at batch 64 and batch 1. */
    const struct k_linear lenet[] = {{64, 400, 120, K_ACT_RELU}, {64, 120, 84, K_ACT_RELU},
                                     {64, 84, 10, K_ACT_NONE}, {1, 400, 120, K_ACT_RELU}};
    for (size_t i = 0; i < sizeof(lenet) / sizeof(lenet[0]) && r == TEST_PASS; i++)
        r = check_linear(&ps, &lenet[i], 1, 0);
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "linear mismatch (case above)");
    return TEST_PASS;
}

/* GEMM strips of KCPU_NR columns whose last columns end inside a vector
 * (a 7x7 map's 49 leave 17 in the second strip, a 14x14 map's 196 leave
 * 4): the AVX2 kernel copies those columns into whole vectors, for the
 * whole depth at once up to a depth of 2048, a pass at a time past it.
 * Every B the GEMM reads (a 1x1 layer's input as it is, the implicit
 * path's grid, im2col strips, linear's weights) at depths of one pass,
 * several, and past 2048. */
TEST(kernels_gemm_strip_tails)
{
    static const int DEPTHS[] = {37, 500, 2100};
    static const int MAPS[][2] = {{7, 7}, {14, 14}, {1, 3}};
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (size_t d = 0; d < sizeof(DEPTHS) / sizeof(DEPTHS[0]) && r == TEST_PASS; d++)
        for (size_t m = 0; m < sizeof(MAPS) / sizeof(MAPS[0]) && r == TEST_PASS; m++) {
            const int h = MAPS[m][0], w = MAPS[m][1];
            struct k_conv2d pw = {.n = 1, .c = DEPTHS[d], .h = h, .w = w, .oc = 20, .oh = h, .ow = w,
                                  .kh = 1, .kw = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                                  .groups = 1, .act = K_ACT_RELU6};
            r = check_conv(&ps, &pw, 1, m == 1);
            struct k_conv2d k3 = pw;   /* 3x3, padded: implicit or im2col */
            k3.c = DEPTHS[d] / 9 + 1;
            k3.oc = 12;
            k3.kh = k3.kw = 3;
            k3.pad_t = k3.pad_l = 1;
            for (k3.n = 1; k3.n <= 9 && r == TEST_PASS; k3.n += 8)
                r = check_conv(&ps, &k3, 1, 0);
            struct k_linear fc = {.n = 3, .k = DEPTHS[d], .m = h * w, .act = K_ACT_NONE};
            if (r == TEST_PASS)
                r = check_linear(&ps, &fc, 1, 1);
        }
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "mismatch (case above)");
    return TEST_PASS;
}

/* A 1x1 layer and the depthwise 3x3 after it as one kernel
 * (kcpu_expand_dw.c): against the reference layers apart, and, where the
 * 1x1 alone takes a GEMM path too, bit for bit the optimised layers apart. Shapes with partial panels and strips,
 * both strides, padded or not, bands of one panel (large maps) and many
 * (small ones), batches of several images. */
static enum test_result check_expand_dw(const struct pools *ps, const struct k_conv2d *pw,
                                        const struct k_conv2d *dw)
{
    int64_t xn = (int64_t)pw->n * pw->c * pw->h * pw->w, mn = (int64_t)pw->n * pw->oc * pw->oh * pw->ow;
    int64_t yn = (int64_t)dw->n * dw->oc * dw->oh * dw->ow;
    float *x = rand_buf(xn), *w1 = rand_buf((int64_t)pw->oc * pw->c), *b1 = rand_buf(pw->oc);
    float *w2 = rand_buf((int64_t)dw->oc * 9), *b2 = test_rand_int(0, 1) ? rand_buf(dw->oc) : NULL;
    float *mid = malloc((size_t)mn * sizeof(float)), *want = malloc((size_t)yn * sizeof(float));
    float *apart = malloc((size_t)yn * sizeof(float));
    kref_conv2d_f32(pw, x, w1, b1, NULL, mid);
    kref_conv2d_f32(dw, mid, w2, b2, NULL, want);
    float *packed = aligned_alloc(64, (kcpu_expand_dw_packed_floats(pw) * sizeof(float) + 63) / 64 * 64);
    float *pw_packed = aligned_alloc(64, (kcpu_conv2d_packed_floats(pw) * sizeof(float) + 63) / 64 * 64);
    float *dw_packed = aligned_alloc(64, (kcpu_conv2d_packed_floats(dw) * sizeof(float) + 63) / 64 * 64);
    kcpu_expand_dw_pack(pw, w1, packed);
    kcpu_conv2d_pack(pw, w1, pw_packed);
    kcpu_conv2d_pack(dw, w2, dw_packed);
    enum test_result r = TEST_PASS;
    FOR_EACH_ISA(isa) {
        struct kcpu_threads *pool = pick_pool(ps);
        int threads = kcpu_threads_count(pool);
        void *scratch = malloc(kcpu_expand_dw_scratch_bytes(pw, threads));
        float *y = poisoned(yn);
        kcpu_expand_dw_f32(pool, pw, dw, x, packed, b1, w2, b2, y, scratch);
        char what[256];
        snprintf(what, sizeof(what), "1x1 + depthwise n%d c%d -> %d %dx%d s%d p%d acts %s, %s%s isa %s threads %d",
                 pw->n, pw->c, pw->oc, pw->h, pw->w, dw->stride_h, dw->pad_t, act_name(pw->act),
                 act_name(dw->act), b2 ? " dw bias" : "", kcpu_isa_name((enum kcpu_isa)isa), threads);
        if (!output_ok(what, y, want, want, yn))
            r = TEST_FAIL;
        const char *alone = kcpu_conv2d_method(pw);
        if (r == TEST_PASS && (!strcmp(alone, "direct gemm") || !strcmp(alone, "implicit gemm") ||
                               !strcmp(alone, "im2col gemm"))) {
            size_t a = kcpu_conv2d_scratch_bytes(pw, threads), b = kcpu_conv2d_scratch_bytes(dw, threads);
            void *apart_scratch = malloc(a > b ? a : b);
            kcpu_conv2d_f32(pool, pw, x, pw_packed, b1, NULL, mid, apart_scratch);
            kcpu_conv2d_f32(pool, dw, mid, dw_packed, b2, NULL, apart, apart_scratch);
            if (memcmp(y, apart, (size_t)yn * sizeof(float)) != 0) {
                printf("  %s: not bit-identical to the two layers apart\n", what);
                r = TEST_FAIL;
            }
            free(apart_scratch);
        }
        free(y);
        free(scratch);
    }
    free(x), free(w1), free(b1), free(w2), free(b2), free(mid), free(want), free(apart);
    free(packed), free(pw_packed), free(dw_packed);
    return r;
}

TEST(kernels_expand_dw)
{
    static const enum k_act ACTS[] = {K_ACT_NONE, K_ACT_RELU, K_ACT_RELU6};
    struct pools ps;
    pools_open(&ps);
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 60 && r == TEST_PASS; i++) {
        int hw = i < 2 ? 112 - 56 * i : test_rand_int(1, 30), s = test_rand_int(1, 2), pad = test_rand_int(0, 2);
        if (hw + 2 * pad < 3)
            hw = 3;
        int oh = (hw + 2 * pad - 3) / s + 1;
        struct k_conv2d pw = {.n = test_rand_int(1, 3), .c = test_rand_int(1, 40), .h = hw, .w = hw,
                              .oc = test_rand_int(1, 70), .oh = hw, .ow = hw, .kh = 1, .kw = 1,
                              .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .groups = 1,
                              .act = ACTS[test_rand_int(0, 2)]};
        struct k_conv2d dw = {.n = pw.n, .c = pw.oc, .h = hw, .w = hw, .oc = pw.oc, .oh = oh, .ow = oh,
                              .kh = 3, .kw = 3, .stride_h = s, .stride_w = s, .pad_t = pad, .pad_l = pad,
                              .dil_h = 1, .dil_w = 1, .groups = pw.oc, .act = ACTS[test_rand_int(0, 2)]};
        ASSERT_TRUE(kcpu_expand_dw_applies(&pw, &dw));
        r = check_expand_dw(&ps, &pw, &dw);
    }
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "mismatch (case above)");
    return TEST_PASS;
}

/* What kcpu_expand_dw_applies takes: a plain 1x1 that the pixel tile
 * would not take alone, a 3x3 depthwise of its output at stride 1 or 2,
 * clamps for activations. */
TEST(kernels_expand_dw_applies)
{
    const struct k_conv2d pw = {.n = 2, .c = 16, .h = 56, .w = 56, .oc = 96, .oh = 56, .ow = 56, .kh = 1, .kw = 1,
                                .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1, .groups = 1,
                                .act = K_ACT_RELU6};
    const struct k_conv2d dw = {.n = 2, .c = 96, .h = 56, .w = 56, .oc = 96, .oh = 28, .ow = 28, .kh = 3,
                                .kw = 3, .stride_h = 2, .stride_w = 2, .pad_t = 1, .pad_l = 1, .dil_h = 1,
                                .dil_w = 1, .groups = 96, .act = K_ACT_RELU6};
    ASSERT_TRUE(kcpu_expand_dw_applies(&pw, &dw));
    struct k_conv2d a = pw, b = dw;
    a.act = K_ACT_SIGMOID;                  /* not a clamp */
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    a = pw, b.act = K_ACT_GELU;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, a.kh = a.kw = 3, a.pad_t = a.pad_l = 1;   /* not a 1x1 */
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    a = pw, a.groups = 2;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    a = pw, b.groups = 48;                  /* grouped, not depthwise */
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, b.kh = b.kw = 5;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, b.stride_h = b.stride_w = 3;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, b.stride_w = 1;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, b.dil_h = b.dil_w = 2;
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    b = dw, b.c = b.oc = b.groups = 64;     /* not the 1x1's output */
    ASSERT_FALSE(kcpu_expand_dw_applies(&a, &b));
    /* MobileNetV2's 160 -> 960 on 7x7 maps: the 1x1 alone takes the pixel
     * tile on AVX-512, so no chain there */
    a = pw, a.c = 160, a.oc = 960, a.h = a.w = a.oh = a.ow = 7;
    b = dw, b.c = b.oc = b.groups = 960, b.h = b.w = b.oh = b.ow = 7, b.stride_h = b.stride_w = 1;
    FOR_EACH_ISA(isa) {
        ASSERT_EQ_INT(kcpu_expand_dw_applies(&a, &b), isa != KCPU_ISA_AVX512);
    }
    return TEST_PASS;
}

/* ---------------------------------------------------------------- pooling */

static enum test_result check_pool(const struct pools *ps, int max_pool)
{
    enum test_result r = TEST_PASS;
    for (int i = 0; i < 400 && r == TEST_PASS; i++) {
        struct k_pool2d p = test_random_pool(max_pool);
        int64_t xn = (int64_t)p.n * p.c * p.h * p.w, yn = (int64_t)p.n * p.c * p.oh * p.ow;
        float *x = rand_buf(xn), *want = malloc((size_t)yn * sizeof(float));
        (max_pool ? kref_max_pool2d_f32 : kref_avg_pool2d_f32)(&p, x, want);
        if (test_count_nonfinite(want, yn)) {
            /* A dilated window can miss every real cell (-inf in PyTorch
             * too); such shapes say nothing about the kernel. */
            free(x);
            free(want);
            i--;
            continue;
        }
        FOR_EACH_ISA(isa) {
            struct kcpu_threads *pool = pick_pool(ps);
            float *y = poisoned(yn);
            (max_pool ? kcpu_max_pool2d_f32 : kcpu_avg_pool2d_f32)(pool, &p, x, y);
            char what[200];
            snprintf(what, sizeof(what), "%s pool n%d c%d %dx%d -> %dx%d k%dx%d s%d,%d p%d,%d d%d,%d incl %d isa %s threads %d",
                     max_pool ? "max" : "avg", p.n, p.c, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.stride_h,
                     p.stride_w, p.pad_t, p.pad_l, p.dil_h, p.dil_w, p.count_include_pad,
                     kcpu_isa_name((enum kcpu_isa)isa), kcpu_threads_count(pool));
            if (!output_ok(what, y, want, want, yn))
                r = TEST_FAIL;
            free(y);
        }
        free(x);
        free(want);
    }
    return r;
}

TEST(kernels_max_pool2d_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = check_pool(&ps, 1);
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "max pool mismatch (case above)");
    return TEST_PASS;
}

TEST(kernels_avg_pool2d_random)
{
    struct pools ps;
    pools_open(&ps);
    enum test_result r = check_pool(&ps, 0);
    pools_close(&ps);
    TEST_FAIL_IF(r != TEST_PASS, "average pool mismatch (case above)");
    return TEST_PASS;
}

/* avg_pool2d(arange(16).view(1,1,4,4), 3, stride=2, padding=1,
 * ceil_mode=True) as PyTorch 1.13 prints it: the last window runs past the
 * padded edge and is clipped to it. */
TEST(kernels_avg_pool2d_ceil_mode_matches_pytorch)
{
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    struct k_pool2d p = {.n = 1, .c = 1, .h = 4, .w = 4, .oh = 3, .ow = 3, .kh = 3, .kw = 3,
                         .stride_h = 2, .stride_w = 2, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1};
    const float incl[9] = {1.11111116f, 2.66666675f, 1.66666663f, 5.66666651f, 10.0f, 5.5f,
                           4.16666651f, 7.0f, 3.75f};
    const float excl[9] = {2.5f, 4.0f, 5.0f, 8.5f, 10.0f, 11.0f, 12.5f, 14.0f, 15.0f};
    float y[9], yc[9];
    for (int incl_pad = 0; incl_pad <= 1; incl_pad++) {
        p.count_include_pad = incl_pad;
        kref_avg_pool2d_f32(&p, x, y);
        kcpu_avg_pool2d_f32(NULL, &p, x, yc);
        for (int i = 0; i < 9; i++) {
            ASSERT_NEAR(y[i], incl_pad ? incl[i] : excl[i], 1e-5);
            ASSERT_NEAR(yc[i], y[i], 1e-5);
        }
    }
    return TEST_PASS;
}

TEST(kernels_global_avg_pool_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 60; i++) {
        int n = test_rand_int(1, 5), c = test_rand_int(1, 70);
        int64_t hw = test_rand_int(1, 3) == 1 ? test_rand_int(1, 3000) : test_rand_int(1, 64);
        float *x = rand_buf((int64_t)n * c * hw), *want = malloc((size_t)n * c * sizeof(float));
        kref_global_avg_pool_f32(n, c, hw, x, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned((int64_t)n * c);
            kcpu_global_avg_pool_f32(pick_pool(&ps), n, c, hw, x, y);
            CHECK_OUTPUT(y, want, (int64_t)n * c, "global average pool");
            free(y);
        }
        free(x);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}

/* ---------------------------------------------------------------- element-wise */

TEST(kernels_activations_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 70; i++) {
        enum k_act act = (enum k_act)(i % K_ACT_COUNT);
        int64_t count = test_rand_int(0, 2) ? test_rand_int(1, 100) : test_rand_int(1, 70000);
        float *x = malloc((size_t)count * sizeof(float)), *want = malloc((size_t)count * sizeof(float));
        /* Saturated sigmoid/tanh tails and GELU's negative side, short of
         * where float rounding of x^2 alone costs 1e-5 of a tiny output. */
        test_rand_fill(x, count, -8.0f, 8.0f);
        kref_act_f32_n(act, count, x, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned(count);
            kcpu_act_f32(pick_pool(&ps), act, count, x, y);
            CHECK_OUTPUT(y, want, count, act_name(act));
            /* In place. */
            for (int64_t e = 0; e < count; e++)
                y[e] = x[e];
            kcpu_act_f32(pick_pool(&ps), act, count, y, y);
            CHECK_OUTPUT(y, want, count, act_name(act));
            free(y);
        }
        free(x);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}

/* Near zero the vector tanh/erf must hold relative, not only absolute,
 * accuracy: small activations feed the next layer. */
TEST(kernels_activations_small_inputs)
{
    enum { N = 4096 };
    float x[N], want[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = test_rand_float(-1e-3f, 1e-3f);
    for (int act = K_ACT_SIGMOID; act < K_ACT_COUNT; act++) {
        kref_act_f32_n((enum k_act)act, N, x, want);
        FOR_EACH_ISA(isa) {
            kcpu_act_f32(NULL, (enum k_act)act, N, x, y);
            for (int i = 0; i < N; i++)
                ASSERT_NEAR(y[i], want[i], 2e-6 * fabs(want[i]) + 1e-9);
        }
    }
    return TEST_PASS;
}

TEST(kernels_add_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 40; i++) {
        int64_t count = test_rand_int(0, 1) ? test_rand_int(1, 100) : test_rand_int(1, 70000);
        float *a = rand_buf(count), *b = rand_buf(count), *want = malloc((size_t)count * sizeof(float));
        kref_add_f32(count, a, b, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned(count);
            kcpu_add_f32(pick_pool(&ps), count, a, b, y);
            CHECK_OUTPUT(y, want, count, "add");
            /* y aliasing a, then b. */
            memcpy(y, a, (size_t)count * sizeof(float));
            kcpu_add_f32(pick_pool(&ps), count, y, b, y);
            CHECK_OUTPUT(y, want, count, "add into a");
            memcpy(y, b, (size_t)count * sizeof(float));
            kcpu_add_f32(pick_pool(&ps), count, a, y, y);
            CHECK_OUTPUT(y, want, count, "add into b");
            free(y);
        }
        free(a);
        free(b);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}

TEST(kernels_channel_affine_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 50; i++) {
        struct k_channel_affine p = {.n = test_rand_int(1, 5), .c = test_rand_int(1, 40),
                                     .inner = test_rand_int(0, 3) ? test_rand_int(1, 200) : test_rand_int(1, 5000)};
        int64_t count = (int64_t)p.n * p.c * p.inner;
        float *x = rand_buf(count), *s = rand_buf(p.c), *t = rand_buf(p.c);
        float *want = malloc((size_t)count * sizeof(float));
        kref_channel_affine_f32(&p, x, s, t, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned(count);
            kcpu_channel_affine_f32(pick_pool(&ps), &p, x, s, t, y);
            CHECK_OUTPUT(y, want, count, "channel affine");
            free(y);
        }
        free(x);
        free(s);
        free(t);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}

TEST(kernels_softmax_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 60; i++) {
        struct k_softmax p = {.outer = test_rand_int(1, 70), .axis_len = test_rand_int(1, 300),
                              .inner = test_rand_int(0, 2) ? 1 : test_rand_int(1, 9)};
        int64_t count = p.outer * p.axis_len * p.inner;
        float *x = malloc((size_t)count * sizeof(float)), *want = malloc((size_t)count * sizeof(float));
        /* Large logits: without the max subtraction exp would overflow. */
        test_rand_fill(x, count, -60.0f, 120.0f);
        kref_softmax_f32(&p, x, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned(count);
            kcpu_softmax_f32(pick_pool(&ps), &p, x, y);
            CHECK_OUTPUT(y, want, count, "softmax");
            free(y);
        }
        free(x);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}

/* Sizes around the split (one task, several, a short last one) and odd
 * offsets; the bytes either side of the copy stay as they were. */
TEST(kernels_copy_split)
{
    struct pools ps;
    pools_open(&ps);
    const size_t mib = 1u << 20;
    const size_t split = KCPU_COPY_SPLIT_BYTES;
    const size_t sizes[] = {0, 1, 4097, split - 1, split, split + mib + 37, 2 * split + mib + 3};
    bool same = true;
    char why[96] = "";
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && same; i++) {
        size_t n = sizes[i], off = (size_t)test_rand_int(0, 63);
        unsigned char *src = malloc(n + 64), *dst = malloc(n + 128);
        same = src && dst;
        for (size_t k = 0; same && k < n + 64; k++)
            src[k] = (unsigned char)(k * 131 + i);
        for (int t = 0; same && t < 4; t++) {
            memset(dst, 0xA5, n + 128);
            kcpu_copy(ps.p[t], dst + 64, src + off, n);
            same = memcmp(dst + 64, src + off, n) == 0;
            for (size_t k = 0; k < 64; k++)
                same = same && dst[k] == 0xA5 && dst[64 + n + k] == 0xA5;
            if (!same)
                snprintf(why, sizeof(why), "%zu bytes from offset %zu on pool %d", n, off, t);
        }
        free(src);
        free(dst);
    }
    pools_close(&ps);
    TEST_FAIL_IF(!same, "copy differs or wrote outside: %s", why);
    return TEST_PASS;
}

TEST(kernels_concat_random)
{
    struct pools ps;
    pools_open(&ps);
    for (int i = 0; i < 50; i++) {
        struct k_concat p = {.outer = test_rand_int(1, 9), .inner = test_rand_int(1, 300),
                             .count = test_rand_int(1, 4)};
        int64_t lens[4], total = 0;
        float *in[4];
        for (int k = 0; k < p.count; k++) {
            lens[k] = test_rand_int(1, 7);
            total += lens[k];
            in[k] = rand_buf(p.outer * lens[k] * p.inner);
        }
        int64_t count = p.outer * total * p.inner;
        float *want = poisoned(count);
        kref_concat_f32(&p, (const float *const *)in, lens, want);
        FOR_EACH_ISA(isa) {
            float *y = poisoned(count);
            kcpu_concat_f32(pick_pool(&ps), &p, (const float *const *)in, lens, y);
            CHECK_OUTPUT(y, want, count, "concat");
            ASSERT_TRUE(memcmp(y, want, (size_t)count * sizeof(float)) == 0);
            free(y);
        }
        for (int k = 0; k < p.count; k++)
            free(in[k]);
        free(want);
    }
    pools_close(&ps);
    return TEST_PASS;
}
