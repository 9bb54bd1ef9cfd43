/*
 * srv_metrics.c - GET /metrics in the Prometheus text format (version 0.0.4).
 *
 * Triton's metric names where Triton has the metric (so its dashboards
 * work: request counts and durations, queue depth, GPU memory and
 * utilisation on a GPU backend), inferd_ for the rest: latency and
 * batch-size histograms, in-flight requests, model load time, HTTP
 * responses by code.
 */
#include <stddef.h>
#include <stdlib.h>

#include "srv_handlers.h"

struct model_view {
    const char *name, *version;
    struct srv_model_stats s;     /* a consistent copy */
    int queue_depth;
    double load_seconds;
};

static void family(struct srv_buf *b, const char *name, const char *type, const char *help)
{
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void labels(struct srv_buf *b, const char *metric, const struct model_view *v)
{
    srv_buf_printf(b, "%s{model=", metric);
    srv_buf_json_str(b, v->name);  /* model names are [A-Za-z0-9._-]: no escaping needed */
    srv_buf_puts(b, ",version=");
    srv_buf_json_str(b, v->version);   /* digits */
    srv_buf_putc(b, '}');
}

static void per_model_counter(struct srv_buf *b, const char *name, const char *type,
                              const char *help, const struct model_view *v, int n,
                              uint64_t (*get)(const struct srv_model_stats *s))
{
    family(b, name, type, help);
    for (int i = 0; i < n; i++) {
        labels(b, name, &v[i]);
        srv_buf_printf(b, " %llu\n", (unsigned long long)get(&v[i].s));
    }
}

static uint64_t get_success(const struct srv_model_stats *s) { return s->success.count; }
static uint64_t get_inferences(const struct srv_model_stats *s) { return s->inference_count; }
static uint64_t get_executions(const struct srv_model_stats *s) { return s->execution_count; }
static uint64_t get_request_us(const struct srv_model_stats *s)
{
    return (s->success.ns + s->fail.ns) / 1000;
}
static uint64_t get_queue_us(const struct srv_model_stats *s) { return s->queue.ns / 1000; }
static uint64_t get_input_us(const struct srv_model_stats *s) { return s->compute_input.ns / 1000; }
static uint64_t get_infer_us(const struct srv_model_stats *s) { return s->compute_infer.ns / 1000; }
static uint64_t get_output_us(const struct srv_model_stats *s)
{
    return s->compute_output.ns / 1000;
}

static void histogram(struct srv_buf *b, const char *name, const char *help,
                      const struct model_view *v, int n, size_t offset, const double *bounds,
                      int n_bounds)
{
    family(b, name, "histogram", help);
    for (int i = 0; i < n; i++) {
        const struct srv_hist *h = (const struct srv_hist *)((const char *)&v[i].s + offset);
        uint64_t cum = 0;
        for (int k = 0; k <= n_bounds; k++) {
            cum += h->buckets[k];
            srv_buf_printf(b, "%s_bucket{model=\"%s\",version=\"%s\",le=", name, v[i].name, v[i].version);
            if (k < n_bounds)
                srv_buf_printf(b, "\"%g\"} %llu\n", bounds[k], (unsigned long long)cum);
            else
                srv_buf_printf(b, "\"+Inf\"} %llu\n", (unsigned long long)cum);
        }
        srv_buf_printf(b, "%s_sum{model=\"%s\",version=\"%s\"} %.3f\n", name, v[i].name, v[i].version, h->sum);
        srv_buf_printf(b, "%s_count{model=\"%s\",version=\"%s\"} %llu\n", name, v[i].name, v[i].version,
                       (unsigned long long)h->count);
    }
}

/* Triton's GPU gauges, for the devices the backend runs on. */
static void write_gpu(struct srv_buf *b, struct srv_server *srv)
{
    enum { MOST = 16 };
    int n = rt_backend_device_kind(srv->backend) == RT_DEVICE_GPU ? rt_backend_device_count(srv->backend) : 0;
    if (n > MOST)
        n = MOST;
    struct rt_device_info dev[MOST];
    bool known[MOST];
    for (int d = 0; d < n; d++)
        known[d] = rt_backend_device_info(srv->backend, d, &dev[d]);
    if (n <= 0)
        return;
    family(b, "nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes");
    for (int d = 0; d < n; d++) {
        if (known[d])
            srv_buf_printf(b, "nv_gpu_memory_used_bytes{gpu=\"%d\"} %llu\n", dev[d].id,
                           (unsigned long long)dev[d].used_bytes);
    }
    family(b, "nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes");
    for (int d = 0; d < n; d++) {
        if (known[d])
            srv_buf_printf(b, "nv_gpu_memory_total_bytes{gpu=\"%d\"} %llu\n", dev[d].id,
                           (unsigned long long)dev[d].total_bytes);
    }
    family(b, "nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)");
    for (int d = 0; d < n; d++) {
        if (known[d] && dev[d].util_percent >= 0)
            srv_buf_printf(b, "nv_gpu_utilization{gpu=\"%d\"} %.3f\n", dev[d].id, dev[d].util_percent / 100.0);
    }
}

static void write_metrics(struct srv_buf *b, struct srv_server *srv, const struct model_view *v,
                          int n)
{
    per_model_counter(b, "nv_inference_request_success", "counter",
                      "Number of successful inference requests, all batch sizes", v, n,
                      get_success);
    family(b, "nv_inference_request_failure", "counter",
           "Number of failed inference requests, all batch sizes");
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < SRV_FAIL_COUNT; r++)
            srv_buf_printf(b, "nv_inference_request_failure{model=\"%s\",reason=\"%s\",version=\"%s\"} %llu\n",
                           v[i].name, SRV_FAIL_REASON_NAMES[r], v[i].version,
                           (unsigned long long)v[i].s.fail_by_reason[r]);
    }
    per_model_counter(b, "nv_inference_count", "counter",
                      "Number of inferences performed (a batch of n counts n)", v, n,
                      get_inferences);
    per_model_counter(b, "nv_inference_exec_count", "counter",
                      "Number of model executions performed (batches)", v, n, get_executions);
    per_model_counter(b, "nv_inference_request_duration_us", "counter",
                      "Cumulative inference request duration in microseconds", v, n,
                      get_request_us);
    per_model_counter(b, "nv_inference_queue_duration_us", "counter",
                      "Cumulative inference queuing duration in microseconds", v, n,
                      get_queue_us);
    per_model_counter(b, "nv_inference_compute_input_duration_us", "counter",
                      "Cumulative compute input duration in microseconds", v, n, get_input_us);
    per_model_counter(b, "nv_inference_compute_infer_duration_us", "counter",
                      "Cumulative compute inference duration in microseconds", v, n,
                      get_infer_us);
    per_model_counter(b, "nv_inference_compute_output_duration_us", "counter",
                      "Cumulative inference compute output duration in microseconds", v, n,
                      get_output_us);
    family(b, "nv_inference_pending_request_count", "gauge",
           "Instantaneous number of pending requests awaiting execution per-model");
    for (int i = 0; i < n; i++) {
        labels(b, "nv_inference_pending_request_count", &v[i]);
        srv_buf_printf(b, " %d\n", v[i].queue_depth);
    }
    histogram(b, "inferd_queue_duration_us", "Time requests waited in the batch queue", v, n,
              offsetof(struct srv_model_stats, queue_us), SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS);
    histogram(b, "inferd_compute_duration_us", "Time each batch took to run (input, infer, output)",
              v, n, offsetof(struct srv_model_stats, compute_us), SRV_LAT_BOUNDS_US,
              SRV_LAT_BUCKETS);
    histogram(b, "inferd_request_duration_us", "End-to-end time of inference requests", v, n,
              offsetof(struct srv_model_stats, request_us), SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS);
    histogram(b, "inferd_batch_size", "Rows in each batch run", v, n,
              offsetof(struct srv_model_stats, batch_size), SRV_BATCH_BOUNDS, SRV_BATCH_BUCKETS);
    family(b, "inferd_model_load_duration_seconds", "gauge", "Time the model took to load");
    for (int i = 0; i < n; i++) {
        labels(b, "inferd_model_load_duration_seconds", &v[i]);
        srv_buf_printf(b, " %.6f\n", v[i].load_seconds);
    }
    write_gpu(b, srv);
    family(b, "inferd_open_connections", "gauge", "Client connections open right now");
    srv_buf_printf(b, "inferd_open_connections %d\n", atomic_load(&srv->open_connections));
    family(b, "inferd_connections_refused_total", "counter",
           "Requests answered 503 because their connection was over a connection limit");
    srv_buf_printf(b, "inferd_connections_refused_total{limit=\"global\"} %llu\n",
                   (unsigned long long)atomic_load(&srv->refused_connections[0]));
    srv_buf_printf(b, "inferd_connections_refused_total{limit=\"per_address\"} %llu\n",
                   (unsigned long long)atomic_load(&srv->refused_connections[1]));
    family(b, "inferd_connections_without_request_total", "counter",
           "Connections closed before a request head reached inferd: idle or slow clients timed out, "
           "or libmicrohttpd answered a malformed or oversized head itself");
    srv_buf_printf(b, "inferd_connections_without_request_total %llu\n",
                   (unsigned long long)atomic_load(&srv->connections_without_request));
    family(b, "inferd_requests_cut_total", "counter", "Requests whose connection closed before their answer");
    static const char *const CUT[3] = {"timeout", "client", "error"};
    for (int i = 0; i < 3; i++)
        srv_buf_printf(b, "inferd_requests_cut_total{reason=\"%s\"} %llu\n", CUT[i],
                       (unsigned long long)atomic_load(&srv->requests_cut[i]));
    family(b, "inferd_buffered_request_bytes", "gauge",
           "Bytes of request bodies held right now (bounded by --max-buffered-bytes)");
    srv_buf_printf(b, "inferd_buffered_request_bytes %lld\n",
                   (long long)atomic_load(&srv->buffered_bytes));
    family(b, "inferd_inflight_requests", "gauge", "HTTP requests being handled right now");
    srv_buf_printf(b, "inferd_inflight_requests %d\n", atomic_load(&srv->inflight));
    family(b, "inferd_http_responses_total", "counter", "HTTP responses sent, by status code");
    for (int code = 100; code < 600; code++) {
        uint64_t c = atomic_load(&srv->responses[code]);
        if (c)
            srv_buf_printf(b, "inferd_http_responses_total{code=\"%d\"} %llu\n", code,
                           (unsigned long long)c);
    }
}

void srv_handle_metrics(struct srv_request *r)
{
    struct srv_model **models = NULL;
    int n = srv_repo_ready_models(r->srv->repo, &models);
    struct model_view *v = calloc((size_t)(n ? n : 1), sizeof(*v));
    if (!models || !v) {
        free(v);
        for (int i = 0; models && i < n; i++)
            srv_model_unref(models[i]);
        free(models);
        srv_reply_error(r, 503, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        v[i].name = models[i]->name;
        v[i].version = models[i]->version;
        srv_stats_snapshot(&models[i]->stats, &v[i].s);
        v[i].queue_depth = srv_batcher_queue_depth(models[i]->batcher);
        v[i].load_seconds = models[i]->load_seconds;
    }
    struct srv_buf b = {0};
    write_metrics(&b, r->srv, v, n);
    for (int i = 0; i < n; i++)
        srv_model_unref(models[i]);
    free(models);
    free(v);
    srv_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}
