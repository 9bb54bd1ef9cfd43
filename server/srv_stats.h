/*
 * srv_stats.h - per-model counters, durations and histograms.
 *
 * Workers record each batch they run; the HTTP layer records each request
 * when it answers it. Two views read the same numbers: the statistics
 * endpoint (Triton's JSON shape, nanoseconds) and /metrics (Prometheus,
 * microseconds). All fields are guarded by one mutex per model; recording is
 * a handful of additions, so contention stays negligible.
 */
#ifndef SRV_STATS_H
#define SRV_STATS_H

#include <pthread.h>
#include <stdint.h>

#include "srv_buf.h"
#include "srv_step_profile.h"

/* Why a request failed, as Triton's nv_inference_request_failure labels it. */
enum srv_fail_reason { SRV_FAIL_REJECTED = 0, SRV_FAIL_BACKEND, SRV_FAIL_OTHER, SRV_FAIL_COUNT };
extern const char *const SRV_FAIL_REASON_NAMES[SRV_FAIL_COUNT];

/* Latency buckets (upper bounds, µs) and batch-size buckets; +Inf is implied. */
#define SRV_LAT_BUCKETS 18
#define SRV_BATCH_BUCKETS 13
extern const double SRV_LAT_BOUNDS_US[SRV_LAT_BUCKETS];
extern const double SRV_BATCH_BOUNDS[SRV_BATCH_BUCKETS];

struct srv_duration {
    uint64_t count, ns;
};

struct srv_hist {
    uint64_t buckets[SRV_LAT_BUCKETS + 1]; /* per bucket (not cumulative); last is +Inf */
    uint64_t count;
    double sum;
};

struct srv_model_stats {
    pthread_mutex_t mu;
    int max_batch;
    uint64_t last_inference_ms;          /* wall clock, ms since the epoch */
    uint64_t inference_count;            /* samples run */
    uint64_t execution_count;            /* batches run */
    struct srv_duration success, fail, queue, compute_input, compute_infer, compute_output;
    uint64_t fail_by_reason[SRV_FAIL_COUNT];
    /* [max_batch + 1], indexed by batch size: one entry per execution. */
    struct srv_duration *batch_input, *batch_infer, *batch_output;
    struct srv_hist queue_us, compute_us, request_us, batch_size;
    /* With --profile-steps: per-step times (srv_step_profile.h, its own
     * lock), owned by the model; NULL otherwise. */
    struct srv_step_profile *steps;
};

/* One request's timings, measured by the batcher (all ns). */
struct srv_request_times {
    uint64_t queue_ns, input_ns, infer_ns, output_ns;
};

int srv_stats_init(struct srv_model_stats *s, int max_batch);
void srv_stats_destroy(struct srv_model_stats *s);
/* Adds src's counts into dst: a model's statistics carry over when it is
 * reloaded or unloaded and loaded again (per-batch-size entries up to the
 * smaller max_batch). Locks src, then dst. */
void srv_stats_absorb(struct srv_model_stats *dst, struct srv_model_stats *src);

void srv_stats_record_batch(struct srv_model_stats *s, int batch, uint64_t input_ns,
                            uint64_t infer_ns, uint64_t output_ns);
void srv_stats_record_success(struct srv_model_stats *s, const struct srv_request_times *t,
                              uint64_t total_ns);
void srv_stats_record_failure(struct srv_model_stats *s, enum srv_fail_reason why,
                              uint64_t total_ns);

/* Appends one Triton $model_stat object for the model. */
void srv_stats_write_json(struct srv_model_stats *s, const char *name, const char *version,
                          struct srv_buf *out);

/* Copies everything but the per-batch-size arrays (for /metrics). */
void srv_stats_snapshot(struct srv_model_stats *s, struct srv_model_stats *out);

#endif /* SRV_STATS_H */
