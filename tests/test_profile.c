/*
 * test_profile.c - step timing through the runtime's public API
 * (rt_session_profile, rt_model_step_desc, rt_backend_measure_rates) on the
 * CPU backend: the steps of resnet-mini account for the whole run within
 * 10%, every step of every pass is reported once and inside its run,
 * timing off stops the reports, a backend that cannot time refuses (the
 * CPU a run's device time too), and a step's description carries the
 * arithmetic of its layer.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/backend/backend.h"
#include "runtime/rt_model.h"
#include "test.h"

#define RESNET "model_repository/resnet-mini"
#define PROFILE_BATCH 8
#define PROFILE_RUNS 40
#define IMAGE 784      /* resnet-mini's input: 1 x 28 x 28 */
#define CLASSES 10

struct seen {
    int n_steps;
    int64_t first_begin_ns, last_end_ns;   /* this run's steps, over all */
    int64_t sum_ns;                 /* this run's steps */
    int calls, batch_step0;         /* this run's reports; samples over step 0's passes */
    int next_step;                  /* steps of a pass arrive in plan order */
    bool out_of_order, outside_run, non_positive;
};

static void on_step(void *user, const struct rt_step_timing *t)
{
    struct seen *s = user;
    s->calls++;
    s->sum_ns += t->dur_ns;
    if (t->step == 0)
        s->batch_step0 += t->batch;
    s->out_of_order |= t->step != s->next_step;
    s->next_step = (t->step + 1) % s->n_steps;
    s->first_begin_ns = t->begin_ns < s->first_begin_ns ? t->begin_ns : s->first_begin_ns;
    s->last_end_ns = t->begin_ns + t->dur_ns > s->last_end_ns ? t->begin_ns + t->dur_ns : s->last_end_ns;
    s->non_positive |= t->dur_ns <= 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct loaded {
    struct rt_backend *b;
    struct rt_model *m;
    struct rt_session *s;
};

static float images[PROFILE_BATCH * IMAGE], logits[PROFILE_BATCH * CLASSES];

static void unload(struct loaded *l)
{
    rt_session_free(l->s);
    rt_model_free(l->m);
    rt_backend_free(l->b);
}

static bool load_resnet(struct loaded *l)
{
    struct rt_error err = {0};
    struct rt_backend_options bo = {.threads = 2, .device = -1};
    *l = (struct loaded){0};
    if (rt_backend_create(RT_BACKEND_CPU, &bo, &l->b, &err) != RT_OK ||
        rt_model_load(RESNET, l->b, &l->m, &err) != RT_OK || rt_session_create(l->m, &l->s, &err) != RT_OK) {
        printf("  %s\n", err.msg);
        return false;
    }
    const struct rt_model_config *cfg = rt_model_config(l->m);
    test_rand_fill(images, (int64_t)PROFILE_BATCH * IMAGE, 0, 1);
    return cfg->inputs[0].sample_elems == IMAGE && cfg->outputs[0].sample_elems == CLASSES;
}

/* One run of PROFILE_BATCH; *wall_ns its time around the call. */
static bool run_once(struct loaded *l, struct seen *s, int64_t *wall_ns)
{
    struct rt_error err = {0};
    const float *in[1] = {images};
    float *out[1] = {logits};
    s->calls = s->batch_step0 = 0;
    s->sum_ns = s->last_end_ns = 0;
    s->first_begin_ns = INT64_MAX;
    int64_t t0 = rt_clock_ns();
    bool ok = rt_session_run(l->s, PROFILE_BATCH, in, out, &err) == RT_OK;
    int64_t t1 = rt_clock_ns();
    *wall_ns = t1 - t0;
    s->outside_run |= s->calls > 0 && (s->first_begin_ns < t0 || s->last_end_ns > t1);
    return ok;
}

TEST(profile_steps_sum_to_the_run_cpu)
{
    struct loaded l;
    if (!load_resnet(&l)) {
        unload(&l);
        return TEST_FAIL;
    }
    struct seen s = {.n_steps = rt_model_plan_steps(l.m)};
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_session_profile(l.s, on_step, &s, &err), RT_OK);
    double ratio[PROFILE_RUNS], wall[PROFILE_RUNS], steps[PROFILE_RUNS];
    for (int r = -5; r < PROFILE_RUNS; r++) {   /* 5 warm-up runs */
        int64_t wall_ns;
        ASSERT_TRUE(run_once(&l, &s, &wall_ns));
        ASSERT_EQ_INT(s.calls % s.n_steps, 0);
        ASSERT_EQ_INT(s.batch_step0, PROFILE_BATCH);   /* the passes cover the batch once */
        if (r < 0)
            continue;
        wall[r] = (double)wall_ns;
        steps[r] = (double)s.sum_ns;
        ratio[r] = steps[r] / wall[r];
    }
    ASSERT_FALSE(s.out_of_order);
    ASSERT_FALSE(s.non_positive);
    ASSERT_FALSE(s.outside_run);   /* the timed steps lie inside the call that ran them */
    qsort(ratio, PROFILE_RUNS, sizeof(double), cmp_double);
    qsort(wall, PROFILE_RUNS, sizeof(double), cmp_double);
    qsort(steps, PROFILE_RUNS, sizeof(double), cmp_double);
    double med_ratio = ratio[PROFILE_RUNS / 2], med_wall = wall[PROFILE_RUNS / 2], med_steps = steps[PROFILE_RUNS / 2];
    printf("  resnet-mini batch %d: steps %.1f us of a %.1f us run (median ratio %.3f)\n", PROFILE_BATCH,
           med_steps / 1e3, med_wall / 1e3, med_ratio);
    ASSERT_LE(med_ratio, 1.0);
    ASSERT_GE(med_ratio, 0.9);
    ASSERT_NEAR(med_steps, med_wall, 0.1 * med_wall);

    /* off: no more reports */
    ASSERT_EQ_INT(rt_session_profile(l.s, NULL, NULL, &err), RT_OK);
    int64_t wall_ns;
    ASSERT_TRUE(run_once(&l, &s, &wall_ns));
    ASSERT_EQ_INT(s.calls, 0);
    unload(&l);
    return TEST_PASS;
}

TEST(profile_refused_where_steps_cannot_be_timed)
{
    struct rt_error err = {0};
    struct rt_backend *ref = NULL;
    struct rt_model *m = NULL;
    struct rt_session *s = NULL;
    ASSERT_EQ_INT(rt_backend_ref_create(&ref, &err), RT_OK);
    enum rt_status st = rt_model_load(RESNET, ref, &m, &err);
    if (st == RT_OK)
        st = rt_session_create(m, &s, &err);
    if (st == RT_OK)
        st = rt_session_profile(s, on_step, NULL, &err);
    rt_session_free(s);
    rt_model_free(m);
    rt_backend_free(ref);
    ASSERT_EQ_INT(st, RT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(err.msg, "cannot time steps");
    return TEST_PASS;
}

TEST(profile_device_time_refused_on_the_cpu)
{
    struct rt_error err = {0};
    struct rt_backend *cpu = NULL;
    struct rt_model *m = NULL;
    struct rt_session *s = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &cpu, &err), RT_OK);
    enum rt_status st = rt_model_load(RESNET, cpu, &m, &err);
    if (st == RT_OK)
        st = rt_session_create(m, &s, &err);
    struct rt_device_time t = {-1, -1};
    enum rt_status on = st == RT_OK ? rt_session_time_device(s, true, &err) : st;
    enum rt_status read = st == RT_OK ? rt_session_device_time(s, &t, &err) : st;
    rt_session_free(s);
    rt_model_free(m);
    rt_backend_free(cpu);
    ASSERT_EQ_INT(on, RT_ERR_UNSUPPORTED);
    ASSERT_EQ_INT(read, RT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(err.msg, "no device clock");
    ASSERT_TRUE(t.run_ns == -1 && t.steps_ns == -1);
    return TEST_PASS;
}

/* A step by its node's name; -1 when absent. */
static int step_named(const struct rt_model *m, int batch, const char *name, struct rt_step_desc *d)
{
    struct rt_error err = {0};
    for (int i = 0; i < rt_model_plan_steps(m); i++) {
        if (rt_model_step_desc(m, i, batch, d, &err) == RT_OK && strcmp(d->name, name) == 0)
            return i;
    }
    return -1;
}

TEST(profile_step_desc_resnet_mini)
{
    struct loaded l;
    if (!load_resnet(&l)) {
        unload(&l);
        return TEST_FAIL;
    }
    struct rt_step_desc d = {0};
    struct rt_error err = {0};
    const int b = 3;
    /* conv1: 1 -> 16 channels, 3x3, 28x28 out; batch norm and relu fused */
    ASSERT_GE(step_named(l.m, b, "conv1", &d), 0);
    ASSERT_STR_EQ(d.op, "conv2d");
    ASSERT_STR_EQ(d.epilogue, "bias+relu");
    ASSERT_NEAR(d.flops, 2.0 * b * 16 * 28 * 28 * 1 * 3 * 3, 0);
    ASSERT_EQ_INT(d.in[0].dims[0], b);
    ASSERT_EQ_INT(d.out.rank, 4);
    ASSERT_EQ_INT(d.out.dims[0], b);
    ASSERT_EQ_INT(d.out.dims[1], 16);
    /* input, output (FP32) and 16*1*3*3 weights + 16 biases */
    ASSERT_NEAR(d.bytes, 4.0 * (b * 784 + b * 16 * 784 + 16 * 9 + 16), 0);
    ASSERT_STR_CONTAINS(d.kernel, "direct");   /* one input channel: the direct kernel */
    /* a residual block's second convolution adds the shortcut before relu */
    ASSERT_GE(step_named(l.m, b, "layer1.0.conv2", &d), 0);
    ASSERT_STR_EQ(d.epilogue, "bias+add+relu");
    ASSERT_STR_CONTAINS(d.kernel, "gemm");
    ASSERT_GE(step_named(l.m, b, "fc", &d), 0);
    ASSERT_NEAR(d.flops, 2.0 * b * 64 * 10, 0);
    ASSERT_EQ_INT(rt_model_step_desc(l.m, rt_model_plan_steps(l.m), 1, &d, &err), RT_ERR_INVALID);
    ASSERT_EQ_INT(rt_model_step_desc(l.m, 0, 0, &d, &err), RT_ERR_INVALID);
    ASSERT_EQ_INT(rt_model_step_desc(l.m, 0, rt_model_config(l.m)->max_batch_size + 1, &d, &err), RT_ERR_INVALID);
    unload(&l);
    return TEST_PASS;
}

TEST(profile_backend_rates_cpu)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_backend_options bo = {.threads = 1, .device = -1};
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &bo, &b, &err), RT_OK);
    struct rt_backend_rates r;
    enum rt_status st = rt_backend_measure_rates(b, RT_PRECISION_FP32, &r, &err);
    rt_backend_free(b);
    ASSERT_EQ_INT(st, RT_OK);
    printf("  %s: %.1f GFLOP/s, %.1f GB/s\n", r.what, r.gemm_gflops, r.stream_gbs);
    /* any CPU that runs the suite does better than these, and none this well */
    ASSERT_TRUE(r.gemm_gflops > 0.05 && r.gemm_gflops < 1e5);
    ASSERT_TRUE(r.stream_gbs > 0.05 && r.stream_gbs < 1e4);
    ASSERT_STR_CONTAINS(r.what, "GEMM");
    /* The FMA loop's peak bounds every kernel: a GEMM above it (beyond
     * timing noise) would mean one of the two is measured wrong. */
    printf("  FP32 peak (FMA loop): %.1f GFLOP/s; the GEMM reaches %.0f%% of it\n", r.peak_gflops,
           100.0 * r.gemm_gflops / r.peak_gflops);
    ASSERT_TRUE(r.peak_gflops > 0.05 && r.peak_gflops < 1e5);
    ASSERT_TRUE(r.gemm_gflops < 1.15 * r.peak_gflops);
    return TEST_PASS;
}
