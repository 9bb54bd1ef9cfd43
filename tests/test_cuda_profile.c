/*
 * test_cuda_profile.c - step timing on the CUDA backend (GPU only; skips
 * with the reason elsewhere): with CUDA graphs on, a timed run launches
 * eagerly and reports every step of every pass once, in plan order, with
 * device durations that fit inside the host's time around the call, and
 * the same outputs as the untimed (replayed) runs before and after it; a
 * run's device time (rt_session_time_device) is taken through the graph,
 * eager, captured and replayed alike, fits inside the host's time around
 * the call and changes no output; the backend's rates are measured. Step
 * names in Nsight Systems (NVTX) need nsys and stay a manual check
 * (docs/performance.md).
 */
#include "runtime/backend/backend.h"
#include "runtime/rt_model.h"
#include "test_cuda_util.h"

#define RESNET "model_repository/resnet-mini"
#define BATCH 8
#define IMAGE 784      /* resnet-mini's input: 1 x 28 x 28 */
#define CLASSES 10

/* resnet-mini on a CUDA backend with graphs on, one session, random
 * inputs, and y_first: the outputs of three untimed runs (eager, captured,
 * replayed) that every later run must repeat bit for bit. */
struct fixture {
    struct rt_backend *b;
    struct rt_model *m;
    struct rt_session *s;
};
static float x[BATCH * IMAGE], y_first[BATCH * CLASSES], y[BATCH * CLASSES];
static const float *in[1] = {x};
static float *out[1] = {y};

static enum test_result fixture_open(struct fixture *f)
{
    struct rt_error err = {0};
    const struct rt_backend_options opt = {.device = -1, .cuda_graphs = RT_CUDA_GRAPHS_ON};
    *f = (struct fixture){0};
    TEST_FAIL_IF(rt_backend_create(RT_BACKEND_CUDA, &opt, &f->b, &err) != RT_OK, "%s", err.msg);
    TEST_FAIL_IF(rt_model_load(RESNET, f->b, &f->m, &err) != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(rt_session_create(f->m, &f->s, &err), RT_OK);
    const struct rt_model_config *cfg = rt_model_config(f->m);
    ASSERT_EQ_INT(cfg->inputs[0].sample_elems, IMAGE);
    ASSERT_EQ_INT(cfg->outputs[0].sample_elems, CLASSES);
    test_rand_fill(x, (int64_t)BATCH * IMAGE, 0, 1);
    float *out0[1] = {y_first};
    for (int i = 0; i < 3; i++)   /* eager, captured, replayed */
        ASSERT_EQ_INT(rt_session_run(f->s, BATCH, in, out0, &err), RT_OK);
    return TEST_PASS;
}

static void fixture_close(struct fixture *f)
{
    rt_session_free(f->s);
    rt_model_free(f->m);
    rt_backend_free(f->b);
}

struct seen {
    int n_steps, calls, next_step;
    int64_t sum_ns, first_begin_ns, last_end_ns;
    bool out_of_order, non_positive;
};

static void on_step(void *user, const struct rt_step_timing *t)
{
    struct seen *s = user;
    s->calls++;
    s->sum_ns += t->dur_ns;
    s->out_of_order |= t->step != s->next_step || t->batch < 1 || t->batch > BATCH;
    s->next_step = (t->step + 1) % s->n_steps;
    s->non_positive |= t->dur_ns <= 0;
    s->first_begin_ns = t->begin_ns < s->first_begin_ns ? t->begin_ns : s->first_begin_ns;
    s->last_end_ns = t->begin_ns + t->dur_ns > s->last_end_ns ? t->begin_ns + t->dur_ns : s->last_end_ns;
}

TEST(cuda_session_profile)
{
    CUDA_REQUIRE();
    struct fixture f;
    enum test_result r = fixture_open(&f);
    if (r != TEST_PASS)
        return r;
    struct rt_error err = {0};
    struct rt_session *s = f.s;
    struct rt_model *m = f.m;
    struct seen seen = {.n_steps = rt_model_plan_steps(m)};
    ASSERT_EQ_INT(rt_session_profile(s, on_step, &seen, &err), RT_OK);
    for (int i = 0; i < 5; i++) {
        seen.calls = 0;
        seen.sum_ns = seen.last_end_ns = 0;
        seen.first_begin_ns = INT64_MAX;
        int64_t t0 = rt_clock_ns();
        ASSERT_EQ_INT(rt_session_run(s, BATCH, in, out, &err), RT_OK);
        int64_t wall = rt_clock_ns() - t0;
        ASSERT_EQ_INT(seen.calls, seen.n_steps);   /* one pass: CUDA runs the batch at once */
        ASSERT_FALSE(seen.out_of_order);
        ASSERT_FALSE(seen.non_positive);
        ASSERT_LE(seen.sum_ns, wall);
        ASSERT_GE(seen.first_begin_ns, t0);
        printf("  timed run %d: steps %.1f us on the device, %.1f us around the call\n", i,
               (double)seen.sum_ns / 1e3, (double)wall / 1e3);
        ASSERT_TRUE(test_same_bits(y, y_first, sizeof(y)));
    }
    ASSERT_EQ_INT(rt_session_profile(s, NULL, NULL, &err), RT_OK);
    seen.calls = 0;
    ASSERT_EQ_INT(rt_session_run(s, BATCH, in, out, &err), RT_OK);   /* back to the graph */
    ASSERT_EQ_INT(seen.calls, 0);
    ASSERT_TRUE(test_same_bits(y, y_first, sizeof(y)));

    struct rt_step_desc d;
    ASSERT_EQ_INT(rt_model_step_desc(m, 0, BATCH, &d, &err), RT_OK);
    printf("  step 0 (%s): kernel \"%s\"\n", d.name, d.kernel);
    ASSERT_STR_CONTAINS(d.kernel, "gemm");
    fixture_close(&f);
    return TEST_PASS;
}

TEST(cuda_session_device_time)
{
    CUDA_REQUIRE();
    struct fixture f;
    enum test_result r = fixture_open(&f);
    if (r != TEST_PASS)
        return r;
    struct rt_error err = {0};
    struct rt_session *s = f.s;
    struct rt_device_time t = {0};
    ASSERT_EQ_INT(rt_session_device_time(s, &t, &err), RT_ERR_INVALID);   /* off */
    ASSERT_EQ_INT(rt_session_time_device(s, true, &err), RT_OK);
    ASSERT_EQ_INT(rt_session_device_time(s, &t, &err), RT_ERR_INVALID);   /* on, nothing timed yet */
    for (int i = 0; i < 4; i++) {   /* recaptured with the events, then replayed */
        int64_t t0 = rt_clock_ns();
        ASSERT_EQ_INT(rt_session_run(s, BATCH, in, out, &err), RT_OK);
        int64_t wall = rt_clock_ns() - t0;
        TEST_FAIL_IF(rt_session_device_time(s, &t, &err) != RT_OK, "%s", err.msg);
        printf("  timed run %d: %.1f us on the device (steps %.1f us), %.1f us around the call\n", i,
               (double)t.run_ns / 1e3, (double)t.steps_ns / 1e3, (double)wall / 1e3);
        ASSERT_TRUE(t.steps_ns > 0);
        ASSERT_LE(t.steps_ns, t.run_ns);
        ASSERT_LE(t.run_ns, wall);
        ASSERT_TRUE(test_same_bits(y, y_first, sizeof(y)));
    }
    ASSERT_EQ_INT(rt_session_run(s, 0, in, out, &err), RT_ERR_INVALID);    /* a failed run is not timed */
    ASSERT_EQ_INT(rt_session_device_time(s, &t, &err), RT_ERR_INVALID);
    ASSERT_EQ_INT(rt_session_time_device(s, false, &err), RT_OK);
    ASSERT_EQ_INT(rt_session_run(s, BATCH, in, out, &err), RT_OK);   /* recaptured without them */
    ASSERT_EQ_INT(rt_session_device_time(s, &t, &err), RT_ERR_INVALID);
    ASSERT_TRUE(test_same_bits(y, y_first, sizeof(y)));
    ASSERT_EQ_INT(rt_session_time_device(s, true, &err), RT_OK);       /* on again: the same events */
    for (int i = 0; i < 2; i++)
        ASSERT_EQ_INT(rt_session_run(s, BATCH, in, out, &err), RT_OK);
    ASSERT_EQ_INT(rt_session_device_time(s, &t, &err), RT_OK);
    ASSERT_TRUE(t.run_ns > 0);
    fixture_close(&f);
    return TEST_PASS;
}

TEST(cuda_rates)
{
    CUDA_REQUIRE();
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    const struct rt_backend_options opt = {.device = -1};
    TEST_FAIL_IF(rt_backend_create(RT_BACKEND_CUDA, &opt, &b, &err) != RT_OK, "%s", err.msg);
    for (int p = RT_PRECISION_FP32; p <= RT_PRECISION_FP16; p++) {
        struct rt_backend_rates r;
        enum rt_status st = rt_backend_measure_rates(b, (enum rt_precision)p, &r, &err);
        TEST_FAIL_IF(st != RT_OK, "%s", err.msg);
        printf("  %s: %.0f GFLOP/s, %.0f GB/s\n", r.what, r.gemm_gflops, r.stream_gbs);
        ASSERT_TRUE(r.gemm_gflops > 100 && r.stream_gbs > 50);   /* any sm_90 GPU does far better */
    }
    rt_backend_free(b);
    return TEST_PASS;
}
