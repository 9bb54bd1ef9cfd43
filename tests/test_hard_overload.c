/*
 * test_hard_overload.c - overload (issue 10): far more concurrent clients
 * than one small queue holds. Refused requests get 503 with Retry-After,
 * the queue never exceeds its bound, and the latency of accepted requests
 * stays bounded: the second half of the run is no slower than the first
 * (a queue that grew without bound would make it so).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "http_harness.h"

enum { CLIENTS = 24, MAX_SAMPLES = 200000 };

struct overload {
    const struct http_daemon *d;
    const char *body;
    double t_start, t_end;
    atomic_int n_ok, n_503, n_503_no_retry, n_other;
    atomic_int n_samples;
    double *when, *latency;     /* [MAX_SAMPLES]: accepted requests */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *client(void *arg)
{
    struct overload *o = arg;
    while (now_s() < o->t_end) {
        struct http_resp r;
        double t0 = now_s();
        bool got = http_post(o->d, "/v2/models/lenet5/infer", "application/json", o->body,
                             strlen(o->body), &r);
        double t1 = now_s();
        if (got && r.status == 200) {
            atomic_fetch_add(&o->n_ok, 1);
            int k = atomic_fetch_add(&o->n_samples, 1);
            if (k < MAX_SAMPLES) {
                o->when[k] = t0 - o->t_start;
                o->latency[k] = t1 - t0;
            }
        } else if (got && r.status == 503) {
            atomic_fetch_add(&o->n_503, 1);
            if (!r.retry_after[0])
                atomic_fetch_add(&o->n_503_no_retry, 1);
        } else {
            atomic_fetch_add(&o->n_other, 1);
        }
        http_resp_free(&r);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p99 latency of the accepted requests sent in [from, to) seconds. */
static double p99(const struct overload *o, int n, double from, double to)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    int k = 0;
    for (int i = 0; v && i < n; i++) {
        if (o->when[i] >= from && o->when[i] < to)
            v[k++] = o->latency[i];
    }
    double r = 0;
    if (k > 0) {
        qsort(v, (size_t)k, sizeof(double), cmp_double);
        r = v[(size_t)((k - 1) * 0.99)];
    }
    free(v);
    return r;
}

static enum test_result overload_run(struct http_daemon *d)
{
    const double seconds = 4;
    float x[784];
    test_rand_fill(x, 784, 0, 1);
    char *body = http_infer_json(x, 1, NULL);
    struct overload o = {.d = d, .body = body};
    o.when = malloc(MAX_SAMPLES * sizeof(double));
    o.latency = malloc(MAX_SAMPLES * sizeof(double));
    RT_ASSERT(o.when && o.latency);
    o.t_start = now_s();
    o.t_end = o.t_start + seconds;
    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        pthread_create(&th[i], NULL, client, &o);
    /* Sample the queue depth while the load runs: it must respect its bound. */
    double max_depth = 0;
    while (now_s() < o.t_end) {
        struct http_resp m;
        if (http_get(d, "/metrics", &m) && m.status == 200) {
            double depth = http_metric(m.body, "inferd_queue_depth{model=\"lenet5\"}");
            if (depth > max_depth)
                max_depth = depth;
        }
        http_resp_free(&m);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);
    int n = atomic_load(&o.n_samples);
    n = n < MAX_SAMPLES ? n : MAX_SAMPLES;
    double first = p99(&o, n, 0.5, seconds / 2), second = p99(&o, n, seconds / 2, seconds);
    printf("  %d accepted, %d refused (503), %d other; queue depth max %.0f (bound 4); "
           "p99 accepted %.1f ms then %.1f ms\n",
           atomic_load(&o.n_ok), atomic_load(&o.n_503), atomic_load(&o.n_other), max_depth,
           first * 1e3, second * 1e3);
    free(o.when);
    free(o.latency);
    free(body);
    ASSERT_GE(atomic_load(&o.n_ok), 10);
    ASSERT_GE(atomic_load(&o.n_503), 1);
    ASSERT_EQ_INT(atomic_load(&o.n_503_no_retry), 0);
    ASSERT_EQ_INT(atomic_load(&o.n_other), 0);
    ASSERT_LE(max_depth, 4);
    /* Bounded, not growing: allow scheduling noise on a shared machine. */
    ASSERT_LE(second, 2 * first + 0.25);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_overload_503_bounded_queue_and_latency)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    spec.max_batch_size = 1;
    spec.max_queue_size = 4;
    spec.max_queue_delay_us = 0;
    spec.n_preferred = 0;
    return http_run(&spec, 1, NULL, overload_run);
}
