/*
 * test_http_batching.c - the dynamic batcher seen from outside: 64
 * concurrent clients are batched together and each gets its own answer;
 * a lone client never waits for company, whatever the queue delay; a full
 * queue answers 503 with Retry-After; a request whose timeout expires in
 * the queue answers 503; SIGTERM under load answers every accepted request
 * and exits 0. A busy instance (INFERD_FAULT=slow:MS) is what holds
 * requests in the queue.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"
#include "test.h"

struct client {
    const struct http_daemon *d;
    const char *model;
    int requests;
    float x[784];
    float want[10];
    int ok, wrong, rejected, other;
    long last_status;
    char retry_after[32];
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    char *req = http_infer_json(c->x, 1, NULL);
    char path[128];
    snprintf(path, sizeof(path), "/v2/models/%s/infer", c->model);
    for (int i = 0; i < c->requests; i++) {
        struct http_resp r;
        float got[10];
        http_post(c->d, path, "application/json", req, strlen(req), &r);
        c->last_status = r.status;
        if (r.status == 200 && http_parse_logits(r.body, got, 10))
            test_rel_error(got, c->want, 10) <= 1e-5 ? c->ok++ : c->wrong++;
        else if (r.status == 503)
            c->rejected++;
        else
            c->other++;
        snprintf(c->retry_after, sizeof(c->retry_after), "%s", r.retry_after);
        http_resp_free(&r);
    }
    free(req);
    return NULL;
}

/* n clients, each with its own random image and the offline answer for it. */
static struct client *make_clients(const struct http_daemon *d, const char *model, int n,
                                   int requests)
{
    struct client *c = calloc((size_t)n, sizeof(*c));
    float *x = malloc((size_t)n * 784 * sizeof(float)), *y = malloc((size_t)n * 10 * sizeof(float));
    struct http_offline off;
    RT_ASSERT(c && x && y);
    test_rand_fill(x, (int64_t)n * 784, -0.8f, 2.8f);
    bool ok = http_offline_open(&off, HTTP_SOURCE_MODEL) && http_offline_run(&off, n, x, y);
    http_offline_close(&off);
    for (int i = 0; i < n; i++) {
        c[i] = (struct client){.d = d, .model = model, .requests = requests};
        memcpy(c[i].x, x + (size_t)i * 784, sizeof(c[i].x));
        memcpy(c[i].want, y + (size_t)i * 10, sizeof(c[i].want));
    }
    free(x);
    free(y);
    if (!ok) {
        free(c);
        return NULL;
    }
    return c;
}

static void run_clients(struct client *c, int n)
{
    pthread_t *t = malloc((size_t)n * sizeof(*t));
    RT_ASSERT(t);
    for (int i = 0; i < n; i++)
        RT_ASSERT(pthread_create(&t[i], NULL, client_main, &c[i]) == 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
}

static double model_metric(const struct http_daemon *d, const char *name, const char *model)
{
    struct http_resp r;
    char series[256];
    snprintf(series, sizeof(series), "%s{model=\"%s\",version=\"1\"}", name, model);
    http_get(d, "/metrics", &r);
    double v = r.status == 200 ? http_metric(r.body, series) : -1;
    http_resp_free(&r);
    return v;
}

/* http_run with every batch taking `slow_ms` longer (INFERD_FAULT=slow:MS),
 * so that a busy instance holds requests in the queue. */
static enum test_result run_slow(int slow_ms, const struct http_model_spec *specs, int n, http_test_fn fn)
{
    char fault[32];
    snprintf(fault, sizeof(fault), "slow:%d", slow_ms);
    setenv("INFERD_FAULT", fault, 1);
    enum test_result r = http_run(specs, n, NULL, fn);
    unsetenv("INFERD_FAULT");
    return r;
}

/* ------------------------------------------------------------ 64 clients */

static enum test_result concurrent(struct http_daemon *d)
{
    enum { CLIENTS = 64, REQUESTS = 6 };
    struct client *c = make_clients(d, "lenet5", CLIENTS, REQUESTS);
    ASSERT_TRUE(c);
    run_clients(c, CLIENTS);
    int ok = 0, wrong = 0, other = 0;
    for (int i = 0; i < CLIENTS; i++)
        ok += c[i].ok, wrong += c[i].wrong, other += c[i].other + c[i].rejected;
    free(c);
    ASSERT_EQ_INT(wrong, 0);
    ASSERT_EQ_INT(other, 0);
    ASSERT_EQ_INT(ok, CLIENTS * REQUESTS);
    double rows = model_metric(d, "nv_inference_count", "lenet5");
    double batches = model_metric(d, "nv_inference_exec_count", "lenet5");
    struct http_resp r;
    http_get(d, "/metrics", &r);
    double le1 = http_metric(r.body, "inferd_batch_size_bucket{model=\"lenet5\",version=\"1\",le=\"1\"}");
    double all = http_metric(r.body, "inferd_batch_size_bucket{model=\"lenet5\",version=\"1\",le=\"+Inf\"}");
    http_resp_free(&r);
    printf("  %d requests ran in %.0f batches (%.1f rows per batch; %.0f batches of more than one)\n",
           CLIENTS * REQUESTS, batches, rows / batches, all - le1);
    ASSERT_EQ_INT(rows, CLIENTS * REQUESTS);
    ASSERT_TRUE(batches < rows);
    ASSERT_TRUE(all - le1 > 0);
    return TEST_PASS;
}

TEST(http_batching_64_clients)
{
    /* Every batch 2 ms longer, so the instance is busy while the clients
     * send: a lenet5 batch on an idle instance is cheap enough to run at
     * once on the thread that queued it (srv_batcher.h), and how many
     * requests would arrive meanwhile depends on the machine. */
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_queue_delay_us = 2000;
    return run_slow(2, &spec, 1, concurrent);
}

/* ------------------------------------------------------------ queue full */

/* A request that keeps model `model` busy for one slow batch. */
struct blocker {
    const struct http_daemon *d;
    char path[64];
    long status;
    pthread_t thread;
};

static void *blocker_main(void *arg)
{
    struct blocker *b = arg;
    static const float x[784];
    char *req = http_infer_json(x, 1, NULL);
    b->status = http_status(b->d, "POST", b->path, "application/json", req, strlen(req));
    free(req);
    return NULL;
}

/* Starts a blocker and gives the instance time to take it. */
static void block(struct blocker *b, const struct http_daemon *d, const char *model)
{
    b->d = d;
    snprintf(b->path, sizeof(b->path), "/v2/models/%s/infer", model);
    RT_ASSERT(pthread_create(&b->thread, NULL, blocker_main, b) == 0);
    nanosleep(&(struct timespec){0, 60 * 1000000L}, NULL);
}

static long unblock(struct blocker *b)
{
    pthread_join(b->thread, NULL);
    return b->status;
}

static enum test_result overflow(struct http_daemon *d)
{
    enum { CLIENTS = 6 };
    struct blocker busy;
    block(&busy, d, "lenet5");   /* the instance is busy: what comes next queues */
    struct client *c = make_clients(d, "lenet5", CLIENTS, 1);
    ASSERT_TRUE(c);
    run_clients(c, CLIENTS);
    ASSERT_EQ_INT(unblock(&busy), 200);
    int ok = 0, rejected = 0, bad = 0;
    for (int i = 0; i < CLIENTS; i++) {
        ok += c[i].ok;
        rejected += c[i].rejected;
        bad += c[i].wrong + c[i].other;
        if (c[i].rejected)
            ASSERT_STR_EQ(c[i].retry_after, "1");
    }
    free(c);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_EQ_INT(ok, 2);          /* the queue holds two */
    ASSERT_EQ_INT(rejected, 4);
    struct http_resp r;
    http_get(d, "/metrics", &r);
    double rej = http_metric(r.body, "nv_inference_request_failure{model=\"lenet5\",reason=\"REJECTED\",version=\"1\"}");
    http_resp_free(&r);
    ASSERT_EQ_INT(rej, 4);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_queue_full_503_retry_after)
{
    /* One request per batch, each 300 ms: one runs, the queue takes two. */
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_batch_size = 1;
    spec.max_queue_size = 2;
    spec.n_preferred = 0;
    return run_slow(300, &spec, 1, overflow);
}

/* An idle instance starts at once, whatever queue delay the model sets: a
 * lone client's requests never wait for company (srv_batch_policy.h). */
static enum test_result lone_client(struct http_daemon *d)
{
    static float x[784];
    x[0] = 1;
    char *req = http_infer_json(x, 1, NULL);
    double worst = 0;
    for (int i = 0; i < 20; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long status = http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", req, strlen(req));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        worst = ms > worst ? ms : worst;
        TEST_FAIL_IF(status != 200, "request %d: status %ld", i, status);
    }
    free(req);
    printf("  20 requests one after another, queue delay 1 s: slowest %.1f ms\n", worst);
    ASSERT_LE(worst, 250);   /* a paid delay would be 1000 ms */
    return TEST_PASS;
}

TEST(http_batching_idle_instance_starts_at_once)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_queue_delay_us = 1000000;
    return http_run(&spec, 1, NULL, lone_client);
}

/* ------------------------------------------------------------ queue timeout */

static long timed_post(const struct http_daemon *d, const char *path, const char *extra,
                       double *ms)
{
    static float x[784];
    x[0] = 1;
    char *req = http_infer_json(x, 1, extra);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long status = http_status(d, "POST", path, "application/json", req, strlen(req));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    free(req);
    return status;
}

static enum test_result timeouts(struct http_daemon *d)
{
    double ms;
    struct blocker b1, b2, b3;
    /* The instance is busy for 400 ms: a 50 ms timeout expires in the queue
     * and is answered then. */
    block(&b1, d, "lenet5");
    ASSERT_EQ_INT(timed_post(d, "/v2/models/lenet5/infer", ",\"parameters\":{\"timeout\":50000}", &ms), 503);
    ASSERT_GE(ms, 45);
    ASSERT_LE(ms, 200);
    /* A timeout longer than the wait is no obstacle. */
    ASSERT_EQ_INT(timed_post(d, "/v2/models/lenet5/infer", ",\"parameters\":{\"timeout\":5000000}", &ms), 200);
    ASSERT_EQ_INT(unblock(&b1), 200);
    /* The model's default (50 ms) cannot be lengthened by the request. */
    block(&b2, d, "short");
    ASSERT_EQ_INT(timed_post(d, "/v2/models/short/infer", "", &ms), 503);
    ASSERT_LE(ms, 200);   /* answered when it expires, though the instance is busy */
    ASSERT_EQ_INT(timed_post(d, "/v2/models/short/infer", ",\"parameters\":{\"timeout\":10000000}", &ms), 503);
    ASSERT_EQ_INT(unblock(&b2), 200);
    /* Classify takes the timeout as a query argument. */
    static const unsigned char PGM[] = "P5 1 1 255\n\x80";
    block(&b3, d, "lenet5");
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/classify?timeout_us=20000",
                              "image/x-portable-graymap", PGM, sizeof(PGM) - 1), 503);
    ASSERT_EQ_INT(unblock(&b3), 200);
    struct http_resp r;
    http_get(d, "/metrics", &r);
    double rej = http_metric(r.body, "nv_inference_request_failure{model=\"lenet5\",reason=\"REJECTED\",version=\"1\"}");
    http_resp_free(&r);
    ASSERT_EQ_INT(rej, 2);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_queue_timeout_503)
{
    /* One request per batch, each 400 ms, so a busy instance holds the queue;
     * the "short" model's requests time out after 50 ms by default. */
    struct http_model_spec specs[2] = {HTTP_MODEL_SPEC("lenet5"), HTTP_MODEL_SPEC("short")};
    for (int i = 0; i < 2; i++) {
        specs[i].max_batch_size = 1;
        specs[i].n_preferred = 0;
    }
    specs[1].default_timeout_us = 50000;
    return run_slow(400, specs, 2, timeouts);
}

/* ------------------------------------------------------------ SIGTERM under load */

struct loader {
    const struct http_daemon *d;
    atomic_int *stop;
    int ok, rejected, refused, broken;
};

/* Hammers the fast model on fresh connections until told to stop or the
 * daemon refuses connections. */
static void *loader_main(void *arg)
{
    struct loader *l = arg;
    static float x[784];
    char *req = http_infer_json(x, 1, NULL);
    while (!atomic_load(l->stop)) {
        struct http_resp r;
        float got[10];
        http_post(l->d, "/v2/models/lenet5/infer", "application/json", req, strlen(req), &r);
        if (r.status == 200 && http_parse_logits(r.body, got, 10))
            l->ok++;
        else if (r.status == 503)
            l->rejected++;
        else if (r.status == 0 && (r.curl_code == CURLE_COULDNT_CONNECT ||
                                   r.curl_code == CURLE_GOT_NOTHING ||
                                   r.curl_code == CURLE_RECV_ERROR || r.curl_code == CURLE_SEND_ERROR))
            l->refused++;   /* never accepted: refused, or reset in the listen backlog */
        else
            l->broken++;
        http_resp_free(&r);
        if (r.status == 0)
            break;
    }
    free(req);
    return NULL;
}

TEST(http_sigterm_drains_under_load)
{
    if (!http_source_model_present())
        SKIP("%s is missing (make models)", HTTP_SOURCE_MODEL);
    /* "slow" runs one request per 200 ms batch (INFERD_FAULT=slow:200): one
     * runs, QUEUED wait in its queue */
    enum { QUEUED = 16, CLIENTS = QUEUED + 1, LOADERS = 4 };
    struct http_model_spec specs[2] = {HTTP_MODEL_SPEC("lenet5"), HTTP_MODEL_SPEC("slow")};
    specs[1].max_batch_size = 1;
    specs[1].n_preferred = 0;
    struct http_daemon d;
    setenv("INFERD_FAULT", "slow:200", 1);
    bool started = http_daemon_start(&d, specs, 2, NULL);
    unsetenv("INFERD_FAULT");
    ASSERT_TRUE(started);
    struct client *c = make_clients(&d, "slow", CLIENTS, 1);
    atomic_int stop = 0;
    struct loader l[LOADERS];
    pthread_t lt[LOADERS], ct[CLIENTS];
    for (int i = 0; i < LOADERS; i++) {
        l[i] = (struct loader){.d = &d, .stop = &stop};
        pthread_create(&lt[i], NULL, loader_main, &l[i]);
    }
    for (int i = 0; c && i < CLIENTS; i++)
        pthread_create(&ct[i], NULL, client_main, &c[i]);
    /* Wait until every slow request sits in the queue, then SIGTERM. */
    double pending = 0;
    for (int waited = 0; waited < 2000 && pending < QUEUED; waited += 5) {
        pending = model_metric(&d, "nv_inference_pending_request_count", "slow");
        usleep(5000);
    }
    http_daemon_signal(&d);
    usleep(50 * 1000);
    struct http_resp after;
    http_get(&d, "/v2/health/live", &after);  /* a new connection during the drain */
    http_resp_free(&after);
    int status = http_daemon_wait(&d, 20000);
    atomic_store(&stop, 1);
    for (int i = 0; c && i < CLIENTS; i++)
        pthread_join(ct[i], NULL);
    for (int i = 0; i < LOADERS; i++)
        pthread_join(lt[i], NULL);
    int answered = 0, load_ok = 0, broken = 0;
    for (int i = 0; c && i < CLIENTS; i++)
        answered += c[i].ok;
    for (int i = 0; i < LOADERS; i++)
        load_ok += l[i].ok, broken += l[i].broken;
    free(c);
    http_daemon_stop(&d);
    printf("  %d requests (%d of them queued) answered after SIGTERM; the load got %d answers before the drain\n",
           answered, QUEUED, load_ok);
    ASSERT_EQ_INT(pending, QUEUED);
    ASSERT_TRUE(after.status == 0 || after.status == 503);
    ASSERT_EQ_INT(answered, CLIENTS);
    ASSERT_EQ_INT(broken, 0);
    ASSERT_TRUE(load_ok > 0);
    ASSERT_EQ_INT(status, 0);
    return TEST_PASS;
}
