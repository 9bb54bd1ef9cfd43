/*
 * test_loadgen.c - inferd-loadgen's parts without a server: histogram
 * percentiles against exact ones, the Poisson schedule's statistics,
 * option parsing, and the JSON and CSV writers. Against a live inferd:
 * test_loadgen_live.c.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "clients/loadgen/lg.h"
#include "test.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

TEST(loadgen_hist_percentiles)
{
    enum { N = 20001 };
    static int64_t v[N];
    static struct lg_hist h, a, b;
    lg_hist_init(&h);
    lg_hist_init(&a);
    lg_hist_init(&b);
    double sum = 0;
    for (int i = 0; i < N; i++) {
        /* log-uniform from 100 ns to 10 s: every bucket scale is exercised */
        v[i] = (int64_t)exp(test_rand_float((float)log(100.0), (float)log(1e10)));
        sum += (double)v[i];
        lg_hist_record(&h, v[i]);
        lg_hist_record(i % 2 ? &a : &b, v[i]);
    }
    qsort(v, N, sizeof(v[0]), cmp_i64);
    static const double P[] = {1, 50, 90, 99, 99.9, 99.99};
    for (int i = 0; i < 6; i++) {
        int64_t exact = v[(size_t)ceil(P[i] / 100 * N) - 1]; /* nearest rank */
        int64_t got = lg_hist_percentile(&h, P[i]);
        ASSERT_LE(fabs((double)(got - exact)), (double)exact / 256 + 1);
    }
    ASSERT_EQ_INT(lg_hist_percentile(&h, 100), v[N - 1]);
    ASSERT_EQ_INT(h.min, v[0]);
    ASSERT_EQ_INT(h.max, v[N - 1]);
    ASSERT_NEAR(h.sum, sum, sum * 1e-12);
    lg_hist_merge(&a, &b);
    ASSERT_EQ_INT(a.count, N);
    ASSERT_EQ_INT(memcmp(a.buckets, h.buckets, sizeof(h.buckets)), 0);
    ASSERT_EQ_INT(lg_hist_percentile(&a, 99), lg_hist_percentile(&h, 99));

    /* small values are exact; an empty histogram reads 0 */
    struct lg_hist s;
    lg_hist_init(&s);
    ASSERT_EQ_INT(lg_hist_percentile(&s, 50), 0);
    for (int i = 1; i <= 100; i++)
        lg_hist_record(&s, i);
    ASSERT_EQ_INT(lg_hist_percentile(&s, 50), 50);
    ASSERT_EQ_INT(lg_hist_percentile(&s, 99.9), 100);
    ASSERT_EQ_INT(lg_hist_percentile(&s, 0.5), 1);
    return TEST_PASS;
}

TEST(loadgen_poisson_schedule)
{
    enum { N = 200000 };
    const double rate = 1000.0; /* mean interval 1 ms */
    uint64_t rng = test_rand_u64() | 1;
    double sum = 0, sum2 = 0;
    int above_mean = 0;
    for (int i = 0; i < N; i++) {
        double t = (double)lg_exp_interval_ns(&rng, rate) / 1e9;
        ASSERT_GE(t, 0);
        sum += t;
        sum2 += t * t;
        above_mean += t > 1.0 / rate;
    }
    double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
    /* exponential: mean 1/rate, standard deviation equal to the mean,
     * P(T > mean) = 1/e; tolerances are > 5 standard errors */
    ASSERT_NEAR(mean * rate, 1.0, 0.012);
    ASSERT_NEAR(sd / mean, 1.0, 0.02);
    ASSERT_NEAR((double)above_mean / N, exp(-1.0), 0.006);
    return TEST_PASS;
}

/* Parses a NULL-ended argument list; returns lg_config_parse's result. */
static int parse(struct lg_config *cfg, const char *const *args)
{
    int n = 0;
    while (args[n])
        n++;
    FILE *null = fopen("/dev/null", "w");
    int rc = lg_config_parse(n, (char **)args, cfg, null, null);
    fclose(null);
    return rc;
}

#define PARSE(cfg, ...) parse((cfg), (const char *const[]){__VA_ARGS__, NULL})

TEST(loadgen_options)
{
    struct lg_config c;
    ASSERT_EQ_INT(parse(&c, (const char *const[]){NULL}), 0);
    ASSERT_EQ_INT(c.mode, LG_MODE_CLOSED);
    ASSERT_EQ_INT(c.kind, LG_KIND_CLASSIFY);
    ASSERT_EQ_INT(c.n_levels, 1);
    ASSERT_NEAR(c.levels[0], 8, 0);
    ASSERT_STR_EQ(c.url, "http://127.0.0.1:8000");
    ASSERT_TRUE(c.progress);
    ASSERT_EQ_INT(PARSE(&c, "--rate", "250.5", "--kind=infer-binary", "--no-progress"), 0);
    ASSERT_EQ_INT(c.mode, LG_MODE_OPEN);
    ASSERT_EQ_INT(c.kind, LG_KIND_INFER_BINARY);
    ASSERT_NEAR(c.levels[0], 250.5, 0);
    ASSERT_FALSE(c.progress);
    ASSERT_EQ_INT(PARSE(&c, "--sweep", "1,2,4,16", "--duration", "0.5", "--requests", "100"), 0);
    ASSERT_EQ_INT(c.n_levels, 4);
    ASSERT_NEAR(c.levels[3], 16, 0);
    ASSERT_NEAR(c.duration_s, 0.5, 0);
    ASSERT_EQ_INT(c.requests, 100);
    ASSERT_EQ_INT(PARSE(&c, "--mode", "open", "--sweep", "100,200.5"), 0);
    ASSERT_EQ_INT(c.mode, LG_MODE_OPEN);
    ASSERT_EQ_INT(PARSE(&c, "--help"), -1);
    static const char *const BAD[][4] = {
        {"--mode", "open"},                      /* open without a rate */
        {"--mode", "open", "--concurrency", "4"},
        {"--rate", "100", "--mode", "closed"},
        {"--sweep", "1,,2"},
        {"--sweep", "1.5"},                      /* a concurrency must be whole */
        {"--concurrency", "0"},
        {"--kind", "stream"},
        {"--duration"},                          /* no value */
        {"--kind", "live", "--batch", "2"},
        {"--bogus", "1"},
    };
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
        int rc = parse(&c, BAD[i]);
        TEST_FAIL_IF(rc != 2, "case %zu (%s %s ...) parsed with %d", i, BAD[i][0],
                     BAD[i][1] ? BAD[i][1] : "", rc);
    }
    return TEST_PASS;
}

/* Two levels of made-up measurements. */
static void fake_levels(struct lg_level_report r[2])
{
    memset(r, 0, 2 * sizeof(*r));
    for (int l = 0; l < 2; l++) {
        struct lg_stats *s = &r[l].stats;
        r[l].level = l ? 8 : 1;
        lg_hist_init(&s->hist);
        for (int i = 0; i < 1000; i++)
            lg_hist_record(&s->hist, 1000000 + 1000 * i);
        s->sent = s->completed = 1003;
        s->ok = 1000;
        s->status[200] = 1000;
        s->status[503] = 3;
        s->warm_completed = s->warm_sent = s->warm_ok = 50;
        s->first_ns = 1000000000;
        s->last_ns = 3000000000; /* 2 s */
    }
}

TEST(loadgen_reports)
{
    struct lg_config cfg;
    ASSERT_EQ_INT(PARSE(&cfg, "--sweep", "1,8", "--model", "lenet5"), 0);
    struct lg_workload w = {.description = "classify lenet5, 1 image per request"};
    struct lg_level_report r[2];
    fake_levels(r);
    char *text;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    ASSERT_TRUE(lg_report_json(f, &cfg, &w, r, 2));
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ASSERT_TRUE(root);
    const cJSON *levels = cJSON_GetObjectItem(root, "levels");
    ASSERT_EQ_INT(cJSON_GetArraySize(levels), 2);
    const cJSON *l1 = cJSON_GetArrayItem(levels, 1);
    ASSERT_NEAR(cJSON_GetObjectItem(l1, "concurrency")->valuedouble, 8, 0);
    ASSERT_NEAR(cJSON_GetObjectItem(l1, "throughput_rps")->valuedouble, 501.5, 1e-9);
    ASSERT_NEAR(cJSON_GetObjectItem(l1, "errors")->valuedouble, 3, 0);
    ASSERT_NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(l1, "errors_by_status"), "503")
                    ->valuedouble, 3, 0);
    const cJSON *lat = cJSON_GetObjectItem(l1, "latency_ms");
    ASSERT_NEAR(cJSON_GetObjectItem(lat, "p50")->valuedouble, 1.4995, 0.01);
    ASSERT_NEAR(cJSON_GetObjectItem(lat, "max")->valuedouble, 1.999, 1e-9);
    ASSERT_TRUE(cJSON_GetObjectItem(lat, "p99.9"));
    ASSERT_NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(l1, "warmup"), "completed")->valuedouble,
                50, 0);
    cJSON_Delete(root);

    f = open_memstream(&text, &len);
    ASSERT_TRUE(lg_report_csv(f, &cfg, r, 2));
    fclose(f);
    int lines = 0, commas = 0;
    for (char *p = text; *p; p++) {
        lines += *p == '\n';
        commas += *p == ',' && lines == 0;
    }
    ASSERT_EQ_INT(lines, 3);
    ASSERT_EQ_INT(commas, 14);
    ASSERT_STR_CONTAINS(text, "closed,8,2.000,1003,1003,1000,3,501.50,500.00,");
    free(text);
    return TEST_PASS;
}

/* Feeds text to a fresh parser in pieces of `step` bytes. */
static int feed(struct lg_http *p, const char *text, size_t step)
{
    lg_http_reset(p);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += step)
        if (!lg_http_feed(p, text + i, n - i < step ? n - i : step))
            return -1;
    return lg_http_done(p) ? 1 : 0;
}

TEST(loadgen_http_parser)
{
    static struct lg_http p;
    const char *plain = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "content-length: 11\r\n\r\n{\"live\":1}\n";
    const char *chunked = "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n"
                          "Connection: close\r\n\r\n4\r\nabcd\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                          "0\r\nX-Trailer: 1\r\n\r\n";
    /* every split of the bytes parses the same */
    for (size_t step = 1; step <= strlen(chunked); step++) {
        TEST_FAIL_IF(feed(&p, plain, step) != 1 || p.status != 200 || p.close,
                     "plain response, pieces of %zu", step);
        TEST_FAIL_IF(feed(&p, chunked, step) != 1 || p.status != 503 || !p.close,
                     "chunked response, pieces of %zu", step);
    }
    ASSERT_EQ_INT(feed(&p, "HTTP/1.1 204 No Content\r\n\r\n", 5), 1);
    ASSERT_EQ_INT(feed(&p, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 7), 1);
    ASSERT_TRUE(p.close); /* HTTP/1.0 closes unless told otherwise */
    ASSERT_EQ_INT(feed(&p, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 64), 0);
    ASSERT_EQ_INT(feed(&p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc", 64), -1);
    ASSERT_EQ_INT(feed(&p, "SSH-2.0-OpenSSH\r\n\r\n", 64), -1);
    ASSERT_EQ_INT(feed(&p, "HTTP/1.1 200 OK\r\nX: y\r\n\r\n", 64), -1); /* no length */
    ASSERT_EQ_INT(feed(&p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 64), -1);
    return TEST_PASS;
}

TEST(loadgen_http_requests)
{
    struct lg_target t;
    char why[256];
    ASSERT_TRUE(lg_target_resolve("127.0.0.1:8123/base", "/v2/health/live", &t, why, sizeof(why)));
    ASSERT_STR_EQ(t.host, "127.0.0.1:8123");
    ASSERT_STR_EQ(t.path, "/base/v2/health/live");
    ASSERT_EQ_INT(t.addr.ss_family, AF_INET);
    ASSERT_TRUE(lg_target_resolve("http://[::1]:9/", "/x", &t, why, sizeof(why)));
    ASSERT_EQ_INT(t.addr.ss_family, AF_INET6);
    ASSERT_STR_EQ(t.path, "/x");
    ASSERT_FALSE(lg_target_resolve("https://127.0.0.1", "/", &t, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "http://");
    ASSERT_TRUE(lg_target_resolve("http://127.0.0.1:8000", "/v2/models/m/infer", &t, why,
                                  sizeof(why)));
    struct lg_request q;
    ASSERT_TRUE(lg_request_build(&t, "{}BIN", 5, "application/octet-stream", 2, &q));
    char text[512];
    snprintf(text, sizeof(text), "%.*s", (int)q.len, (char *)q.bytes);
    free(q.bytes);
    ASSERT_STR_CONTAINS(text, "POST /v2/models/m/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n");
    ASSERT_STR_CONTAINS(text, "Content-Length: 5\r\nInference-Header-Content-Length: 2\r\n\r\n"
                              "{}BIN");
    ASSERT_TRUE(lg_request_build(&t, NULL, 0, NULL, -1, &q));
    snprintf(text, sizeof(text), "%.*s", (int)q.len, (char *)q.bytes);
    free(q.bytes);
    ASSERT_TRUE(strncmp(text, "GET /v2/models/m/infer HTTP/1.1\r\n", 33) == 0);
    ASSERT_TRUE(strstr(text, "\r\n\r\n") == text + strlen(text) - 4);
    return TEST_PASS;
}
