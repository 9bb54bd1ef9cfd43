/* srv_stats.c - recording per-model statistics and the Triton statistics JSON. */
#include "srv_stats.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const SRV_FAIL_REASON_NAMES[SRV_FAIL_COUNT] = {"REJECTED", "BACKEND", "OTHER"};

const double SRV_LAT_BOUNDS_US[SRV_LAT_BUCKETS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 10000000};
const double SRV_BATCH_BOUNDS[SRV_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256,
                                                     512, 1024, 2048, 4096};

int srv_stats_init(struct srv_model_stats *s, int max_batch)
{
    memset(s, 0, sizeof(*s));
    s->max_batch = max_batch;
    size_t n = (size_t)max_batch + 1;
    s->batch_input = calloc(n, sizeof(struct srv_duration));
    s->batch_infer = calloc(n, sizeof(struct srv_duration));
    s->batch_output = calloc(n, sizeof(struct srv_duration));
    if (!s->batch_input || !s->batch_infer || !s->batch_output ||
        pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->batch_input);
        free(s->batch_infer);
        free(s->batch_output);
        return -1;
    }
    return 0;
}

void srv_stats_destroy(struct srv_model_stats *s)
{
    pthread_mutex_destroy(&s->mu);
    free(s->batch_input);
    free(s->batch_infer);
    free(s->batch_output);
}

static void hist_merge(struct srv_hist *dst, const struct srv_hist *src)
{
    for (int i = 0; i <= SRV_LAT_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
}

static void dur_merge(struct srv_duration *dst, const struct srv_duration *src)
{
    dst->count += src->count;
    dst->ns += src->ns;
}

void srv_stats_absorb(struct srv_model_stats *dst, struct srv_model_stats *src)
{
    pthread_mutex_lock(&src->mu);
    pthread_mutex_lock(&dst->mu);
    if (src->last_inference_ms > dst->last_inference_ms)
        dst->last_inference_ms = src->last_inference_ms;
    dst->inference_count += src->inference_count;
    dst->execution_count += src->execution_count;
    dur_merge(&dst->success, &src->success);
    dur_merge(&dst->fail, &src->fail);
    dur_merge(&dst->queue, &src->queue);
    dur_merge(&dst->compute_input, &src->compute_input);
    dur_merge(&dst->compute_infer, &src->compute_infer);
    dur_merge(&dst->compute_output, &src->compute_output);
    for (int i = 0; i < SRV_FAIL_COUNT; i++)
        dst->fail_by_reason[i] += src->fail_by_reason[i];
    /* batch sizes the new configuration still allows */
    int sizes = src->max_batch < dst->max_batch ? src->max_batch : dst->max_batch;
    for (int b = 0; b <= sizes; b++) {
        dur_merge(&dst->batch_input[b], &src->batch_input[b]);
        dur_merge(&dst->batch_infer[b], &src->batch_infer[b]);
        dur_merge(&dst->batch_output[b], &src->batch_output[b]);
    }
    hist_merge(&dst->queue_us, &src->queue_us);
    hist_merge(&dst->compute_us, &src->compute_us);
    hist_merge(&dst->request_us, &src->request_us);
    hist_merge(&dst->batch_size, &src->batch_size);
    pthread_mutex_unlock(&dst->mu);
    pthread_mutex_unlock(&src->mu);
}

static void hist_add(struct srv_hist *h, const double *bounds, int n_bounds, double v)
{
    int i = 0;
    while (i < n_bounds && v > bounds[i])
        i++;
    h->buckets[i]++;
    h->count++;
    h->sum += v;
}

static void dur_add(struct srv_duration *d, uint64_t ns)
{
    d->count++;
    d->ns += ns;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void srv_stats_record_batch(struct srv_model_stats *s, int batch, uint64_t input_ns,
                            uint64_t infer_ns, uint64_t output_ns)
{
    uint64_t now = wall_ms();
    pthread_mutex_lock(&s->mu);
    s->last_inference_ms = now;
    s->inference_count += (uint64_t)batch;
    s->execution_count++;
    if (batch >= 1 && batch <= s->max_batch) {
        dur_add(&s->batch_input[batch], input_ns);
        dur_add(&s->batch_infer[batch], infer_ns);
        dur_add(&s->batch_output[batch], output_ns);
    }
    hist_add(&s->compute_us, SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS,
             (double)(input_ns + infer_ns + output_ns) / 1e3);
    hist_add(&s->batch_size, SRV_BATCH_BOUNDS, SRV_BATCH_BUCKETS, batch);
    pthread_mutex_unlock(&s->mu);
}

void srv_stats_record_success(struct srv_model_stats *s, const struct srv_request_times *t,
                              uint64_t total_ns)
{
    pthread_mutex_lock(&s->mu);
    dur_add(&s->success, total_ns);
    dur_add(&s->queue, t->queue_ns);
    dur_add(&s->compute_input, t->input_ns);
    dur_add(&s->compute_infer, t->infer_ns);
    dur_add(&s->compute_output, t->output_ns);
    hist_add(&s->queue_us, SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS, (double)t->queue_ns / 1e3);
    hist_add(&s->request_us, SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS, (double)total_ns / 1e3);
    pthread_mutex_unlock(&s->mu);
}

void srv_stats_record_failure(struct srv_model_stats *s, enum srv_fail_reason why,
                              uint64_t total_ns)
{
    pthread_mutex_lock(&s->mu);
    dur_add(&s->fail, total_ns);
    s->fail_by_reason[why]++;
    hist_add(&s->request_us, SRV_LAT_BOUNDS_US, SRV_LAT_BUCKETS, (double)total_ns / 1e3);
    pthread_mutex_unlock(&s->mu);
}

static void write_dur(struct srv_buf *out, const char *key, const struct srv_duration *d)
{
    srv_buf_printf(out, "\"%s\":{\"count\":%llu,\"ns\":%llu}", key, (unsigned long long)d->count,
                   (unsigned long long)d->ns);
}

void srv_stats_write_json(struct srv_model_stats *s, const char *name, const char *version,
                          struct srv_buf *out)
{
    static const struct srv_duration ZERO;
    pthread_mutex_lock(&s->mu);
    srv_buf_puts(out, "{\"name\":");
    srv_buf_json_str(out, name);
    srv_buf_puts(out, ",\"version\":");
    srv_buf_json_str(out, version);
    srv_buf_printf(out, ",\"last_inference\":%llu,\"inference_count\":%llu,"
                        "\"execution_count\":%llu,\"inference_stats\":{",
                   (unsigned long long)s->last_inference_ms,
                   (unsigned long long)s->inference_count,
                   (unsigned long long)s->execution_count);
    write_dur(out, "success", &s->success);
    srv_buf_putc(out, ',');
    write_dur(out, "fail", &s->fail);
    srv_buf_putc(out, ',');
    write_dur(out, "queue", &s->queue);
    srv_buf_putc(out, ',');
    write_dur(out, "compute_input", &s->compute_input);
    srv_buf_putc(out, ',');
    write_dur(out, "compute_infer", &s->compute_infer);
    srv_buf_putc(out, ',');
    write_dur(out, "compute_output", &s->compute_output);
    srv_buf_putc(out, ',');
    write_dur(out, "cache_hit", &ZERO);
    srv_buf_putc(out, ',');
    write_dur(out, "cache_miss", &ZERO);
    srv_buf_puts(out, "},\"batch_stats\":[");
    bool first = true;
    for (int b = 1; b <= s->max_batch; b++) {
        if (s->batch_infer[b].count == 0)
            continue;
        srv_buf_printf(out, "%s{\"batch_size\":%d,", first ? "" : ",", b);
        write_dur(out, "compute_input", &s->batch_input[b]);
        srv_buf_putc(out, ',');
        write_dur(out, "compute_infer", &s->batch_infer[b]);
        srv_buf_putc(out, ',');
        write_dur(out, "compute_output", &s->batch_output[b]);
        srv_buf_putc(out, '}');
        first = false;
    }
    srv_buf_puts(out, "]}");
    pthread_mutex_unlock(&s->mu);
}

void srv_stats_snapshot(struct srv_model_stats *s, struct srv_model_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = *s;
    pthread_mutex_unlock(&s->mu);
    out->batch_input = out->batch_infer = out->batch_output = NULL;
    memset(&out->mu, 0, sizeof(out->mu));
}
