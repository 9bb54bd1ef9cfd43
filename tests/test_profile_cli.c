/*
 * test_profile_cli.c - build/inferctl profile as a user runs it: a row for
 * every step of the plan, a trace file that parses as Chrome trace JSON
 * (complete "X" events, every step of every run inside its run, the
 * passes of each run covering its batch once), profiles of converted
 * copies at another precision, and usage errors with exit status 2.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "runtime/rt_model.h"
#include "test.h"

#define RESNET "model_repository/resnet-mini"
#define TRACE_RUNS 5
#define TRACE_BATCH 4

static bool profile(const char *const *args, struct client_run *r)
{
    const char *argv[32] = {"profile"};
    int n = 1;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return client_run_tool("inferctl", argv, r);
}

#define PROFILE(r, ...) profile((const char *const[]){__VA_ARGS__, NULL}, (r))

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 22);
    size_t len = buf ? fread(buf, 1, 1 << 22, f) : 0;
    fclose(f);
    cJSON *root = buf ? cJSON_ParseWithLength(buf, len) : NULL;
    free(buf);
    return root;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The step names of resnet-mini's plan, loaded here on the CPU. */
static int plan_names(char names[][RT_NAME_MAX], int cap)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    int n = -1;
    if (rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) == RT_OK && rt_model_load(RESNET, b, &m, &err) == RT_OK) {
        n = rt_model_plan_steps(m) < cap ? rt_model_plan_steps(m) : cap;
        for (int i = 0; i < n; i++) {
            struct rt_step_desc d;
            rt_model_step_desc(m, i, 1, &d, &err);
            snprintf(names[i], RT_NAME_MAX, "%s", d.name);
        }
    }
    rt_model_free(m);
    rt_backend_free(b);
    return n;
}

/* The trace's complete events: runs first by index, then each step event
 * checked against its run. */
static enum test_result check_trace(const cJSON *root, int n_steps)
{
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    ASSERT_TRUE(cJSON_IsArray(events));
    double run_ts[TRACE_RUNS], run_end[TRACE_RUNS];
    int runs = 0, step_events = 0, per_step[64] = {0}, batch_step0[TRACE_RUNS] = {0};
    cJSON_ArrayForEach(e, events) {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph"));
        ASSERT_TRUE(ph && (strcmp(ph, "X") == 0 || strcmp(ph, "M") == 0));
        ASSERT_TRUE(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name")));
        if (strcmp(ph, "X") != 0)
            continue;
        ASSERT_GE(num(e, "ts"), 0);
        ASSERT_GE(num(e, "dur"), 0);
        ASSERT_GE(num(e, "pid"), 0);
        ASSERT_GE(num(e, "tid"), 0);
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "cat")), "run") == 0) {
            ASSERT_TRUE(runs < TRACE_RUNS);
            run_ts[runs] = num(e, "ts");
            run_end[runs] = run_ts[runs] + num(e, "dur");
            runs++;
        }
    }
    ASSERT_EQ_INT(runs, TRACE_RUNS);
    cJSON_ArrayForEach(e, events) {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "cat"));
        if (!cat || strcmp(cat, "run") == 0)
            continue;
        int step = (int)num(args, "step"), run = (int)num(args, "run");
        ASSERT_TRUE(step >= 0 && step < n_steps && run >= 0 && run < TRACE_RUNS);
        /* the host clock timed the step inside the run (1 ns of rounding) */
        ASSERT_GE(num(e, "ts"), run_ts[run] - 1e-3);
        ASSERT_LE(num(e, "ts") + num(e, "dur"), run_end[run] + 1e-3);
        per_step[step]++;
        if (step == 0)
            batch_step0[run] += (int)num(args, "batch");
        step_events++;
    }
    for (int i = 1; i < n_steps; i++)
        ASSERT_EQ_INT(per_step[i], per_step[0]);
    for (int r = 0; r < TRACE_RUNS; r++)
        ASSERT_EQ_INT(batch_step0[r], TRACE_BATCH);
    ASSERT_EQ_INT(step_events, per_step[0] * n_steps);
    return TEST_PASS;
}

TEST(profile_cli_table_and_trace)
{
    char names[64][RT_NAME_MAX];
    int n_steps = plan_names(names, 64);
    ASSERT_TRUE(n_steps > 0 && n_steps < 64);
    char trace[] = "/tmp/profile-trace-XXXXXX";
    int fd = mkstemp(trace);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    struct client_run r;
    char batch[8], runs[8];
    snprintf(batch, sizeof(batch), "%d", TRACE_BATCH);
    snprintf(runs, sizeof(runs), "%d", TRACE_RUNS);
    ASSERT_TRUE(PROFILE(&r, RESNET, "--backend", "cpu", "--batch", batch, "--runs", runs, "--warmup", "1", "--trace",
                        trace));
    cJSON *root = read_json(trace);
    unlink(trace);
    int status = r.status;
    bool rows = true;
    for (int i = 0; i < n_steps; i++)
        rows = rows && strstr(r.out, names[i]);
    bool summary = strstr(r.out, "steps:") && strstr(r.out, "rt_session_run") && strstr(r.out, "median us");
    if (status != 0)
        printf("  %s\n", r.err);
    client_run_free(&r);
    ASSERT_EQ_INT(status, 0);
    ASSERT_TRUE(rows);
    ASSERT_TRUE(summary);
    ASSERT_TRUE(root);
    enum test_result t = check_trace(root, n_steps);
    cJSON_Delete(root);
    return t;
}

TEST(profile_cli_other_precisions)
{
    struct client_run r;
    ASSERT_TRUE(PROFILE(&r, RESNET, "--backend", "cpu", "--precision", "fp16", "--runs", "2", "--warmup", "0"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "a fp16 copy");
    ASSERT_STR_CONTAINS(r.out, "resnet-mini: fp16");
    client_run_free(&r);
    ASSERT_TRUE(PROFILE(&r, "model_repository/lenet5", "--backend", "cpu", "--precision", "int8", "--runs", "2",
                        "--warmup", "0"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "lenet5: int8");
    ASSERT_STR_CONTAINS(r.out, "int8 gemm");
    client_run_free(&r);
    /* the model's own precision: no copy */
    ASSERT_TRUE(PROFILE(&r, RESNET, "--backend", "cpu", "--precision", "fp32", "--runs", "1", "--warmup", "0"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_TRUE(strstr(r.out, "copy") == NULL);
    client_run_free(&r);
    return TEST_PASS;
}

/* --floors runs nothing: lenet5's arithmetic and least traffic per step,
 * and their time at the given peaks. conv1 is 6x28x28 outputs of 25
 * multiply-adds; at batch 2, 1 TFLOP/s and 1 TB/s, its compute floor is
 * 2 * 2 * 6 * 28 * 28 * 25 FLOP / 1e12 = 0.4704 us. */
TEST(profile_cli_floors)
{
    struct client_run r;
    ASSERT_TRUE(PROFILE(&r, "model_repository/lenet5", "--backend", "cpu", "--batch", "2", "--floors", "1,1"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "lenet5: fp32, 7 steps, batch 2; floors at 1 TFLOP/s and 1 TB/s");
    const char *conv1 = strstr(r.out, "  0  conv1");
    ASSERT_TRUE(conv1 != NULL);
    double mflop = 0, mb = 0, compute = 0;
    char op[32] = "", out[32] = "";
    ASSERT_EQ_INT(sscanf(conv1, " 0 conv1 %31s %31s %lf %lf %lf", op, out, &mflop, &mb, &compute), 5); // NOLINT(cert-err34-c): a bad number fails the checks below
    ASSERT_STR_EQ(op, "conv2d");
    ASSERT_STR_EQ(out, "2x6x28x28");
    TEST_FAIL_IF(mflop != 0.47 || compute != 0.470, "conv1: %g MFLOP, %g us", mflop, compute);
    ASSERT_STR_CONTAINS(r.out, "total: ");
    ASSERT_TRUE(strstr(r.out, "median us") == NULL);   /* nothing was timed */
    client_run_free(&r);
    return TEST_PASS;
}

TEST(profile_cli_bad_arguments)
{
    static const char *const USAGE[][4] = {
        {"--batch", "0", NULL, NULL},
        {"--batch", "65", NULL, NULL},          /* resnet-mini's max_batch_size is 64 */
        {"--runs", "0", NULL, NULL},
        {"--runs", "many", NULL, NULL},
        {"--precision", "bf16", NULL, NULL},
        {"--backend", "tpu", NULL, NULL},
        {"--frobnicate", NULL, NULL, NULL},
        {"--floors", "989", NULL, NULL},
        {"--floors", "989,0", NULL, NULL},
        {"--floors", "x,3.35", NULL, NULL},
    };
    struct client_run r;
    for (size_t i = 0; i < sizeof(USAGE) / sizeof(USAGE[0]); i++) {
        ASSERT_TRUE(PROFILE(&r, RESNET, USAGE[i][0], USAGE[i][1], USAGE[i][2]));
        int status = r.status;
        if (status != 2)
            printf("  %s %s: exit %d: %s\n", USAGE[i][0], USAGE[i][1] ? USAGE[i][1] : "", status, r.err);
        client_run_free(&r);
        ASSERT_EQ_INT(status, 2);
    }
    ASSERT_TRUE(PROFILE(&r, "--runs", "1"));   /* no model folder */
    ASSERT_EQ_INT(r.status, 2);
    client_run_free(&r);
    ASSERT_TRUE(PROFILE(&r, "model_repository/no-such-model", "--runs", "1"));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "no-such-model");
    client_run_free(&r);
    return TEST_PASS;
}
