/*
 * test_loadgen_live.c - build/inferd-loadgen against a real inferd: the
 * requests its report counts are exactly the ones the server's /metrics
 * counted; every request kind and the open loop run clean; a sweep writes
 * its JSON, CSV and PNG plot; failures give the documented exit codes.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "clients/lib/icl.h"
#include "http_harness.h"
#include "test.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

/* Runs the load generator against d with args; the parsed PREFIX.json. */
static cJSON *loadgen(const struct http_daemon *d, const char *prefix, const char *const *args)
{
    char url[64];
    const char *argv[40] = {"--url", client_url(d->port, url, sizeof(url)), "--out", prefix,
                            "--no-progress"};
    int n = 5;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    struct client_run r;
    bool ran = client_run_tool("inferd-loadgen", argv, &r);
    int status = r.status;
    if (ran && status != 0)
        printf("  inferd-loadgen exited %d: %s\n", status, r.err);
    client_run_free(&r);
    if (!ran || status != 0)
        return NULL;
    char path[256];
    snprintf(path, sizeof(path), "%s.json", prefix);
    FILE *f = fopen(path, "rb");
    char buf[1 << 16];
    size_t len = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
        fclose(f);
    return cJSON_ParseWithLength(buf, len);
}

#define LOADGEN(d, prefix, ...) loadgen((d), (prefix), (const char *const[]){__VA_ARGS__, NULL})

/* o[group][key] (or o[key] when group is NULL) as a number; -1 if absent. */
static double num(const cJSON *o, const char *group, const char *key)
{
    if (group)
        o = cJSON_GetObjectItemCaseSensitive(o, group);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static double successes(const struct http_daemon *d)
{
    char url[64], *text = NULL;
    struct icl_client *c = NULL;
    double v = -1;
    if (icl_client_create(client_url(d->port, url, sizeof(url)), NULL, &c, NULL) == ICL_OK &&
        icl_metrics(c, &text, NULL) == ICL_OK &&
        !icl_metrics_value(text, "nv_inference_request_success", "lenet5", &v))
        v = -1;
    free(text);
    icl_client_free(c);
    return v;
}

/* The server's count once it reaches want (or after half a second): it
 * counts a request just after queueing its answer, so the last few may
 * land a moment after the client has seen them. */
static double settled_successes(const struct http_daemon *d, double want)
{
    double v = successes(d);
    for (int i = 0; i < 25 && v < want; i++) {
        usleep(20000);
        v = successes(d);
    }
    return v;
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

static enum test_result counts_match(struct http_daemon *d)
{
    char prefix[] = "/tmp/loadgen-count-XXXXXX";
    int fd = mkstemp(prefix);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(prefix);
    double before = successes(d);
    ASSERT_GE(before, 0);
    cJSON *rep = LOADGEN(d, prefix, "--model", "lenet5", "--duration", "3", "--warmup", "0.5",
                         "--concurrency", "4");
    remove_outputs(prefix);
    ASSERT_TRUE(rep);
    const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "levels"), 0);
    double completed = num(l, NULL, "completed"), warm = num(l, "warmup", "completed");
    double after = settled_successes(d, before + completed + warm);
    double ok = num(l, NULL, "ok"), sent = num(l, NULL, "sent"), p50 = num(l, "latency_ms", "p50");
    double p999 = num(l, "latency_ms", "p99.9"), rps = num(l, NULL, "throughput_rps");
    double elapsed = num(l, NULL, "elapsed_s");
    cJSON_Delete(rep);
    printf("  loadgen: %.0f + %.0f warm-up requests, %.0f req/s, p50 %.3f ms; server counted "
           "%.0f\n", completed, warm, rps, p50, after - before);
    ASSERT_GE(completed, 100);
    ASSERT_NEAR(sent, completed, 0);
    ASSERT_NEAR(ok, completed, 0);
    ASSERT_NEAR(completed + warm, after - before, 0);
    ASSERT_GE(elapsed, 3.0);
    ASSERT_NEAR(rps, completed / elapsed, 1e-6 * rps);
    ASSERT_TRUE(p50 > 0 && p999 >= p50);
    return TEST_PASS;
}

TEST(loadgen_live_counts_match_metrics) { return http_run(&LENET, 1, NULL, counts_match); }

static enum test_result kinds_and_open_loop(struct http_daemon *d)
{
    char prefix[] = "/tmp/loadgen-kinds-XXXXXX";
    int fd = mkstemp(prefix);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(prefix);
    /* the open loop: about rate x duration arrivals (Poisson: sd ~ 14 here) */
    double before = successes(d);
    cJSON *rep = LOADGEN(d, prefix, "--kind", "infer-binary", "--batch", "2", "--rate", "200",
                         "--duration", "1", "--warmup", "0.2");
    ASSERT_TRUE(rep);
    const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "levels"), 0);
    double after = settled_successes(d, before + num(l, NULL, "ok") + num(l, "warmup", "ok"));
    ASSERT_STR_EQ(cJSON_GetObjectItem(rep, "mode")->valuestring, "open");
    ASSERT_NEAR(num(l, NULL, "rate"), 200, 0);
    ASSERT_NEAR(num(l, NULL, "sent"), 200, 80);
    ASSERT_NEAR(num(l, NULL, "ok"), num(l, NULL, "sent"), 0);
    ASSERT_NEAR(num(l, NULL, "ok") + num(l, "warmup", "ok"), after - before, 0);
    cJSON_Delete(rep);
    /* JSON tensors, bounded by count rather than time */
    rep = LOADGEN(d, prefix, "--kind", "infer-json", "--requests", "150", "--duration", "60",
                  "--warmup", "0", "--concurrency", "3");
    ASSERT_TRUE(rep);
    l = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "levels"), 0);
    ASSERT_NEAR(num(l, NULL, "sent"), 150, 0);
    ASSERT_NEAR(num(l, NULL, "ok"), 150, 0);
    ASSERT_LE(num(l, NULL, "elapsed_s"), 30);
    cJSON_Delete(rep);
    /* multipart classify of several images per request */
    rep = LOADGEN(d, prefix, "--batch", "3", "--requests", "30", "--warmup", "0");
    ASSERT_TRUE(rep);
    ASSERT_NEAR(num(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "levels"), 0), NULL, "ok"), 30, 0);
    cJSON_Delete(rep);
    remove_outputs(prefix);
    return TEST_PASS;
}

TEST(loadgen_live_kinds_open_loop) { return http_run(&LENET, 1, NULL, kinds_and_open_loop); }

static enum test_result sweep_plot(struct http_daemon *d)
{
    char prefix[] = "/tmp/loadgen-sweep-XXXXXX";
    int fd = mkstemp(prefix);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(prefix);
    cJSON *rep = LOADGEN(d, prefix, "--sweep", "1,2,4", "--duration", "0.4", "--warmup", "0.1");
    ASSERT_TRUE(rep);
    ASSERT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "levels")), 3);
    cJSON_Delete(rep);
    char path[256], head[8] = {0};
    snprintf(path, sizeof(path), "%s.csv", prefix);
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f);
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    ASSERT_EQ_INT(lines, 4);
    snprintf(path, sizeof(path), "%s.png", prefix);
    f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, 8, f) : 0;
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    if (f)
        fclose(f);
    remove_outputs(prefix);
    ASSERT_EQ_INT(got, 8);
    ASSERT_TRUE(memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0);
    ASSERT_GE(size, 10000); /* a drawn chart, not an empty canvas */
    return TEST_PASS;
}

TEST(loadgen_live_sweep_plot) { return http_run(&LENET, 1, NULL, sweep_plot); }

static enum test_result failures(struct http_daemon *d)
{
    char url[64];
    struct client_run r;
    const char *const ghost[] = {"--url", client_url(d->port, url, sizeof(url)), "--model",
                                 "ghost", "--duration", "1", NULL};
    ASSERT_TRUE(client_run_tool("inferd-loadgen", ghost, &r));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "ghost");
    client_run_free(&r);
    char down[64];
    const char *const nobody[] = {"--url", client_url(client_closed_port(), down, sizeof(down)),
                                  NULL};
    ASSERT_TRUE(client_run_tool("inferd-loadgen", nobody, &r));
    ASSERT_EQ_INT(r.status, 3);
    client_run_free(&r);
    const char *const usage[] = {"--rate", "-5", NULL};
    ASSERT_TRUE(client_run_tool("inferd-loadgen", usage, &r));
    ASSERT_EQ_INT(r.status, 2);
    client_run_free(&r);
    return TEST_PASS;
}

TEST(loadgen_live_failures) { return http_run(&LENET, 1, NULL, failures); }

/* The default of FLAG in a --help text ("  --flag N   ... [DEFAULT]"), or -1. */
static long help_default(const char *help, const char *flag)
{
    char want[64];
    snprintf(want, sizeof(want), "\n  %s ", flag);
    const char *line = strstr(help, want);
    if (!line)
        return -1;
    const char *end = strchr(line + 1, '\n');
    const char *open = NULL;
    for (const char *p = line + 1; p < (end ? end : line + strlen(line)); p++)
        if (*p == '[')
            open = p;
    return open ? strtol(open + 1, NULL, 10) : -1;
}

/* Issue 23 item 1: the load generator's defaults never trip inferd's: its
 * open loop's connections and its closed loop's stay within the server's
 * --max-connections, and no per-address limit is on by default (a load
 * balancer, or one load generator, is one address). */
TEST(loadgen_live_defaults_within_server_limits)
{
    static char server_help[32768];
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--help", NULL}, server_help, sizeof(server_help)), 0);
    struct client_run r;
    ASSERT_TRUE(client_run_tool("inferd-loadgen", (const char *const[]){"--help", NULL}, &r));
    ASSERT_EQ_INT(r.status, 0);
    const char *lg_help = r.out[0] ? r.out : r.err;
    long max_conn = help_default(server_help, "--max-connections");
    long per_ip = help_default(server_help, "--max-connections-per-ip");
    long inflight = help_default(lg_help, "--max-inflight");
    long concurrency = help_default(lg_help, "--concurrency");
    printf("  inferd --max-connections %ld, --max-connections-per-ip %ld; inferd-loadgen --max-inflight %ld, "
           "--concurrency %ld\n", max_conn, per_ip, inflight, concurrency);
    ASSERT_TRUE(max_conn > 0 && inflight > 0 && concurrency > 0);
    ASSERT_TRUE(inflight <= max_conn);
    ASSERT_TRUE(concurrency <= max_conn);
    ASSERT_EQ_INT(per_ip, 0);
    client_run_free(&r);
    return TEST_PASS;
}
