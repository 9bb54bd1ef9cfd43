/*
 * srv_batcher.h - the dynamic batcher of one model.
 *
 * Requests (jobs) enter one bounded FIFO per model. Each of the model's
 * instances owns an rt_session and its batch buffers, and has a worker
 * thread; an idle instance takes what is queued at once (the rule, with the
 * one case where it waits for a fuller batch, is srv_batch_policy.h),
 * copies the jobs' rows into one contiguous batch, runs it, and copies each
 * job's rows of the outputs back. A cheap batch (inline_budget_ns) runs on
 * the thread that submits the job that finds an instance idle, inside
 * srv_batcher_submit, instead of on the instance's worker thread.
 *
 * A job is never split: its rows run in one batch. Jobs whose deadline
 * passes in the queue fail with RT_ERR_UNAVAILABLE then, on the batcher's
 * reaper thread, even while every worker is busy. done() is called exactly
 * once per accepted job, on the thread that ran its batch (a worker, a
 * submitter, possibly before srv_batcher_submit returns to the job's own
 * submitter) or on the reaper; after it returns the batcher never touches
 * the job again.
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
    /* A batch whose rows, at the recent compute time per row, take at most
     * this long runs on the submitting thread when an instance is idle; 0:
     * always on the instance's worker thread. */
    int64_t inline_budget_ns;
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

/* Enqueues job. RT_OK: done() will be called (maybe already was, on this
 * thread: see inline_budget_ns). RT_ERR_UNAVAILABLE: the queue is full or
 * the batcher stopping; done() will not be called. The job's deadline is
 * set here from the request's timeout (timeout_us > 0) and the model's
 * default_timeout_us, whichever is shorter. b must not be freed before
 * this call begins; a job's done() run in it may drop the caller's hold
 * (srv_batcher_free then waits for the run to end). */
enum rt_status srv_batcher_submit(struct srv_batcher *b, struct srv_job *job, int64_t timeout_us,
                                  struct rt_error *err);

/* Jobs waiting (not yet running). */
int srv_batcher_queue_depth(struct srv_batcher *b);

/* Whether the caller runs one of b's batches or its reaper now (a worker
 * thread, the reaper of expired jobs, or a submitter running a batch: inside
 * a job's done()); srv_batcher_free must not be called from there. */
bool srv_batcher_is_worker_thread(const struct srv_batcher *b);

/* Lets the workers finish every queued job and waits for batches running
 * on submitters' threads, then joins the workers and frees all. Not where
 * srv_batcher_is_worker_thread: a thread cannot wait for itself. */
void srv_batcher_free(struct srv_batcher *b);

#endif /* SRV_BATCHER_H */
