/*
 * test_tune.c - inferctl tune: the choice rules on made-up points (levels,
 * frontier, ranking), a short real sweep whose recommendation meets its
 * latency budget again when a fresh inferd with that configuration is
 * measured here with inferd-loadgen's engine, a running server measured
 * as it is configured (--url), a budget nothing can meet (exit 1), and
 * usage errors (exit 2).
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "clients/inferctl/tune.h"
#include "clients/loadgen/lg.h"
#include "http_harness.h"
#include "test.h"

TEST(tune_levels_double_up_to_b)
{
    int v[TUNE_MAX_LEVELS];
    ASSERT_EQ_INT(tune_levels(1, 16, v, TUNE_MAX_LEVELS), 5);
    ASSERT_EQ_INT(v[0], 1);
    ASSERT_EQ_INT(v[3], 8);
    ASSERT_EQ_INT(v[4], 16);
    ASSERT_EQ_INT(tune_levels(3, 20, v, TUNE_MAX_LEVELS), 4);
    ASSERT_EQ_INT(v[2], 12);
    ASSERT_EQ_INT(v[3], 20);
    ASSERT_EQ_INT(tune_levels(5, 5, v, TUNE_MAX_LEVELS), 1);
    ASSERT_EQ_INT(v[0], 5);
    ASSERT_EQ_INT(tune_levels(1, 1024, v, 4), 4);   /* capped, and still ends at b */
    ASSERT_EQ_INT(v[3], 1024);
    return TEST_PASS;
}

static struct tune_point pt(int max_batch, int instances, int conc, double rps, double p99, uint64_t errors)
{
    return (struct tune_point){.cfg = {max_batch, instances, 0}, .concurrency = conc, .throughput = rps,
                               .p50_ms = p99 / 2, .p99_ms = p99, .errors = errors};
}

TEST(tune_frontier_and_rank)
{
    const struct tune_point p[] = {
        pt(1, 1, 1, 1000, 1.0, 0),   /* 0: frontier (lowest latency) */
        pt(1, 1, 2, 1500, 2.0, 0),   /* 1: dominated by 3 */
        pt(4, 1, 4, 3000, 4.0, 0),   /* 2: frontier, the best within 5 ms */
        pt(4, 1, 2, 1800, 1.5, 0),   /* 3: frontier */
        pt(8, 2, 8, 5000, 9.0, 0),   /* 4: frontier, over 5 ms */
        pt(8, 2, 16, 9000, 0.5, 3),  /* 5: errors: never counts */
        pt(16, 1, 4, 3000, 4.0, 0),  /* 6: ties 2; larger batch ranks after it; both frontier */
        pt(2, 1, 1, 0, 0.2, 0),      /* 7: answered nothing */
    };
    const int n = (int)(sizeof(p) / sizeof(p[0]));
    bool f[8];
    tune_frontier(p, n, f);
    const bool want[8] = {true, false, true, true, true, false, true, false};
    for (int i = 0; i < n; i++)
        ASSERT_EQ_INT(f[i], want[i]);
    int order[8];
    ASSERT_EQ_INT(tune_rank(p, n, 5.0, order), 5);
    ASSERT_EQ_INT(order[0], 2);
    ASSERT_EQ_INT(order[1], 6);
    ASSERT_EQ_INT(order[2], 3);
    ASSERT_EQ_INT(order[3], 1);
    ASSERT_EQ_INT(order[4], 0);
    ASSERT_EQ_INT(tune_rank(p, n, 0.9, order), 0);
    ASSERT_EQ_INT(tune_rank(p, n, 100, order), 6);
    ASSERT_EQ_INT(order[0], 4);
    return TEST_PASS;
}

/* ---- live */

#define TUNE_MODEL "model_repository/lenet5"

static bool tune(const char *const *args, struct client_run *r)
{
    char inferd[4096];
    http_inferd_path(inferd, sizeof(inferd));
    const char *argv[40] = {"tune", TUNE_MODEL, "--inferd", inferd, "--backend", "cpu", "--no-progress"};
    int n = 7;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return client_run_tool("inferctl", argv, r);
}

#define TUNE(r, ...) tune((const char *const[]){__VA_ARGS__, NULL}, (r))

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    char buf[1 << 16];
    size_t len = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
        fclose(f);
    return cJSON_ParseWithLength(buf, len);
}

static void remove_outputs(const char *prefix)
{
    static const char *const EXT[] = {"json", "csv", "png", "gp"};
    char path[256];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s.%s", prefix, EXT[i]);
        unlink(path);
    }
}

/* The recommendation, measured again on a fresh daemon. */
struct remeasure {
    int concurrency;
    double budget_ms;
    double p99_ms, throughput;
    uint64_t errors;
};
static struct remeasure remeasured;

static enum test_result measure_again(struct http_daemon *d)
{
    char url[64];
    struct lg_config cfg;
    struct lg_workload w;
    ASSERT_EQ_INT(lg_config_parse(0, NULL, &cfg, stdout, stderr), 0);
    cfg.url = client_url(d->port, url, sizeof(url));
    cfg.model = "lenet5";
    cfg.kind = LG_KIND_INFER_BINARY;
    cfg.pool = 64;
    cfg.warmup_s = 0.3;
    cfg.duration_s = 1.5;
    ASSERT_EQ_INT(lg_workload_build(&cfg, &w), 0);
    struct lg_stats *s = malloc(sizeof(*s));
    bool ran = s && lg_run_level(&cfg, &w, remeasured.concurrency, NULL, s);
    if (ran) {
        remeasured.p99_ms = (double)lg_hist_percentile(&s->hist, 99) / 1e6;
        remeasured.throughput = (double)s->ok / lg_stats_elapsed_s(s);
        remeasured.errors = lg_stats_errors(s);
    }
    free(s);
    lg_workload_free(&w);
    ASSERT_TRUE(ran);
    return TEST_PASS;
}

TEST(tune_recommendation_holds_when_remeasured)
{
    if (!http_source_model_present())
        SKIP("no %s", HTTP_SOURCE_MODEL);
    char prefix[] = "/tmp/tune-test-XXXXXX";
    int fd = mkstemp(prefix);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(prefix);
    struct client_run r;
    ASSERT_TRUE(TUNE(&r, "--latency-p99", "20", "--budget", "6", "--concurrency", "1:4", "--max-batch", "1,8",
                     "--instances", "1", "--queue-delay", "0", "--out", prefix));
    int status = r.status;
    bool lines = strstr(r.out, "\"max_batch_size\":") && strstr(r.out, "\"instances\":");
    if (status != 0)
        printf("  inferctl tune exited %d:\n%s\n%s\n", status, r.out, r.err);
    client_run_free(&r);
    char path[256];
    snprintf(path, sizeof(path), "%s.json", prefix);
    cJSON *rep = read_json(path);
    snprintf(path, sizeof(path), "%s.png", prefix);
    bool plotted = access(path, R_OK) == 0;
    remove_outputs(prefix);
    ASSERT_EQ_INT(status, 0);
    ASSERT_TRUE(lines);
    ASSERT_TRUE(plotted);
    ASSERT_TRUE(rep);
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(rep, "recommendation");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(rep, "points");
    ASSERT_TRUE(cJSON_IsObject(rec));
    ASSERT_GE(cJSON_GetArraySize(points), 2);
    ASSERT_LE(num(rep, "elapsed_s"), 6.0 + 2.0);   /* the budget, plus stopping and writing */
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_batch_size = (int)num(rec, "max_batch_size");
    spec.instances = (int)num(rec, "instances");
    spec.max_queue_delay_us = (int64_t)num(rec, "max_queue_delay_us");
    spec.n_preferred = 0;
    remeasured = (struct remeasure){.concurrency = (int)num(rec, "concurrency"), .budget_ms = 20};
    double rec_p99 = num(rec, "p99_ms");
    bool on_frontier = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, points) {
        if (num(p, "max_batch_size") == spec.max_batch_size && num(p, "concurrency") == remeasured.concurrency &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "frontier")))
            on_frontier = true;
    }
    cJSON_Delete(rep);
    printf("  recommended: max_batch_size %d, %d instance(s), delay %lld us, concurrency %d (p99 %.3f ms)\n",
           spec.max_batch_size, spec.instances, (long long)spec.max_queue_delay_us, remeasured.concurrency, rec_p99);
    ASSERT_TRUE(on_frontier);
    ASSERT_TRUE(spec.max_batch_size == 1 || spec.max_batch_size == 8);
    ASSERT_EQ_INT(spec.instances, 1);
    ASSERT_TRUE(remeasured.concurrency >= 1 && remeasured.concurrency <= 4);
    ASSERT_LE(rec_p99, 20);
    enum test_result t = http_run(&spec, 1, NULL, measure_again);
    if (t != TEST_PASS)
        return t;
    printf("  re-measured here: %.0f req/s, p99 %.3f ms\n", remeasured.throughput, remeasured.p99_ms);
    ASSERT_EQ_INT(remeasured.errors, 0);
    ASSERT_TRUE(remeasured.throughput > 0);
    ASSERT_LE(remeasured.p99_ms, remeasured.budget_ms);
    return TEST_PASS;
}

/* --url: the server's own configuration (max_batch_size 6, 2 instances,
 * delay 300 us here), measured and reported as it is. */
static enum test_result tune_url(struct http_daemon *d)
{
    char url[64], prefix[] = "/tmp/tune-url-XXXXXX";
    int fd = mkstemp(prefix);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(prefix);
    struct client_run r;
    ASSERT_TRUE(TUNE(&r, "--url", client_url(d->port, url, sizeof(url)), "--latency-p99", "20", "--budget", "3",
                     "--concurrency", "1:2", "--out", prefix));
    int status = r.status;
    bool said = strstr(r.out, "as it is configured") != NULL;
    if (status != 0)
        printf("  inferctl tune --url exited %d:\n%s\n%s\n", status, r.out, r.err);
    client_run_free(&r);
    char path[256];
    snprintf(path, sizeof(path), "%s.json", prefix);
    cJSON *rep = read_json(path);
    remove_outputs(prefix);
    ASSERT_EQ_INT(status, 0);
    ASSERT_TRUE(said);
    ASSERT_TRUE(rep);
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(rep, "recommendation"), *p;
    double batch = num(rec, "max_batch_size"), inst = num(rec, "instances"), delay = num(rec, "max_queue_delay_us");
    bool all_same = true;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rep, "points")) {
        all_same = all_same && num(p, "max_batch_size") == 6 && num(p, "instances") == 2 &&
                   num(p, "max_queue_delay_us") == 300;
    }
    cJSON_Delete(rep);
    ASSERT_NEAR(batch, 6, 0);
    ASSERT_NEAR(inst, 2, 0);
    ASSERT_NEAR(delay, 300, 0);
    ASSERT_TRUE(all_same);
    return TEST_PASS;
}

TEST(tune_url_measures_the_server_as_it_is)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_batch_size = 6;
    spec.instances = 2;
    spec.max_queue_delay_us = 300;
    spec.n_preferred = 0;
    return http_run(&spec, 1, NULL, tune_url);
}

TEST(tune_impossible_budget_and_usage)
{
    if (!http_source_model_present())
        SKIP("no %s", HTTP_SOURCE_MODEL);
    struct client_run r;
    /* nothing answers in a microsecond */
    ASSERT_TRUE(TUNE(&r, "--latency-p99", "0.001", "--budget", "3", "--concurrency", "1:2", "--max-batch", "1",
                     "--instances", "1", "--queue-delay", "0"));
    int status = r.status;
    bool said = strstr(r.err, "no configuration met p99 <= 0.001 ms") != NULL;
    client_run_free(&r);
    ASSERT_EQ_INT(status, 1);
    ASSERT_TRUE(said);
    static const char *const USAGE[][3] = {
        {"--budget", "5", NULL},                       /* no --latency-p99 */
        {"--latency-p99", "0", NULL},
        {"--latency-p99", "5", "--budget"},            /* a missing value */
        {"--latency-p99", "5", "--concurrency=4:2"},
        {"--latency-p99", "5", "--concurrency=0:2"},
        {"--latency-p99", "5", "--max-batch=8,4"},     /* not ascending */
        {"--latency-p99", "5", "--max-batch=1,"},
        {"--latency-p99", "5", "--instances=0"},
        {"--latency-p99", "5", "--queue-delay=-1"},
        {"--latency-p99", "5", "--kind=live"},
        {"--latency-p99", "5", "--budget=1"},
        {"--latency-p99", "5", "--backend=tpu"},
    };
    for (size_t i = 0; i < sizeof(USAGE) / sizeof(USAGE[0]); i++) {
        ASSERT_TRUE(TUNE(&r, USAGE[i][0], USAGE[i][1], USAGE[i][2]));
        status = r.status;
        if (status != 2)
            printf("  %s %s %s: exit %d: %s\n", USAGE[i][0], USAGE[i][1], USAGE[i][2] ? USAGE[i][2] : "", status,
                   r.err);
        client_run_free(&r);
        ASSERT_EQ_INT(status, 2);
    }
    return TEST_PASS;
}
