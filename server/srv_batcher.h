/*
 * srv_batcher.h - the dynamic batcher of one model.
 *
 * Requests (jobs) enter one bounded FIFO per model. Each of the model's
 * instances is a worker thread that owns an rt_session and its batch
 * buffers; an idle worker takes what is queued at once (the rule, with the
 * one case where it waits for a fuller batch, is srv_batch_policy.h),
 * copies the jobs' rows into one contiguous batch, runs it, and copies each
 * job's rows of the outputs back.
 *
 * A job is never split: its rows run in one batch. Jobs whose deadline
 * passes in the queue fail with RT_ERR_UNAVAILABLE then, on the batcher's
 * reaper thread, even while every worker is busy. done() is called exactly
 * once per accepted job, on a worker (or the reaper); after it returns the
 * batcher never touches the job again.
 */
#ifndef SRV_BATCHER_H
#define SRV_BATCHER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_model.h"
#include "srv_stats.h"

struct srv_batcher;
struct srv_job;

typedef void (*srv_job_done_fn)(struct srv_job *job);

struct srv_job {
    /* Set by the submitter. */
    int rows;                           /* 1 .. max_batch_size */
    const float *inputs[RT_MAX_IO];     /* rows * cfg->inputs[i].sample_elems */
    float *outputs[RT_MAX_IO];          /* rows * cfg->outputs[i].sample_elems */
    int64_t deadline_ns;                /* monotonic clock; 0: none */
    srv_job_done_fn done;
    void *user;
    /* Set by the batcher before done(). */
    struct rt_error err;                /* status RT_OK when the outputs are valid */
    struct srv_request_times times;
    int batch_size;                     /* rows in the batch the job ran in */
    /* Private. */
    int64_t enqueue_ns;
    struct srv_job *next;
};

struct srv_batcher_options {
    bool batching;       /* false: one job per batch */
    /* --profile-steps: models get a step profile (stats->steps) that every
     * worker's session reports its step times to. */
    bool profile_steps;
    /* Called on a worker thread when the device fails in a way that poisons
     * every later run (RT_ERR_DEVICE); NULL to ignore. */
    void (*on_device_error)(const struct rt_error *err);
};

/* Creates cfg->instance_count sessions and worker threads. Statistics go to
 * stats, which must outlive the batcher. */
enum rt_status srv_batcher_create(const struct rt_model *model, const struct srv_batcher_options *opt,
                                  struct srv_model_stats *stats, struct srv_batcher **out,
                                  struct rt_error *err);

/* Enqueues job. RT_OK: done() will be called. RT_ERR_UNAVAILABLE: the queue
 * is full or the batcher stopping; done() will not be called. The job's
 * deadline is set here from the request's timeout (timeout_us > 0) and the
 * model's default_timeout_us, whichever is shorter. */
enum rt_status srv_batcher_submit(struct srv_batcher *b, struct srv_job *job, int64_t timeout_us,
                                  struct rt_error *err);

/* Jobs waiting (not yet running). */
int srv_batcher_queue_depth(struct srv_batcher *b);

/* Whether the caller runs on one of b's threads (a worker or the reaper of
 * expired jobs: inside a job's done()). */
bool srv_batcher_is_worker_thread(const struct srv_batcher *b);

/* Lets the workers finish every queued job, then joins them and frees all.
 * Not from one of b's own workers: a thread cannot join itself. */
void srv_batcher_free(struct srv_batcher *b);

#endif /* SRV_BATCHER_H */
