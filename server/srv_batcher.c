/* srv_batcher.c - per-model request queue and instance workers (see srv_batcher.h). */
#include "srv_batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_checked.h"
#include "srv_batch_policy.h"
#include "srv_clock.h"
#include "srv_log.h"

/* Fault injection for the tests (CI has no GPU and plenty of memory):
 * INFERD_FAULT=arena-oom fails every batch as if its arena could not be
 * allocated; INFERD_FAULT=device-error fails it as a CUDA error that
 * poisons the context would; INFERD_FAULT=slow (or slow:MS) makes every
 * batch take 50 (MS) ms longer, so tests can keep an instance busy and
 * hold jobs in the queue. Read once per batcher, never on the hot path. */
enum fault { FAULT_NONE = 0, FAULT_ARENA_OOM, FAULT_DEVICE_ERROR, FAULT_SLOW };
enum { FAULT_SLOW_MS = 50 };

static enum fault fault_from_env(long *slow_ms)
{
    const char *f = getenv("INFERD_FAULT");
    *slow_ms = FAULT_SLOW_MS;
    if (!f)
        return FAULT_NONE;
    if (strcmp(f, "arena-oom") == 0)
        return FAULT_ARENA_OOM;
    if (strcmp(f, "device-error") == 0)
        return FAULT_DEVICE_ERROR;
    if (strncmp(f, "slow:", 5) == 0) {
        long ms = strtol(f + 5, NULL, 10);
        *slow_ms = ms > 0 && ms <= 10000 ? ms : FAULT_SLOW_MS;
        return FAULT_SLOW;
    }
    if (strcmp(f, "slow") == 0)
        return FAULT_SLOW;
    return FAULT_NONE;
}

struct worker {
    struct srv_batcher *b;
    pthread_t thread;
    bool started;
    pthread_cond_t cv;          /* wakes this worker: work for it, or stopping */
    bool busy;                  /* under b->mu: a batch runs on this instance (on any thread) */
    struct rt_session *session;
    float *in[RT_MAX_IO];       /* [max_batch * inputs[i].sample_elems] */
    float *out[RT_MAX_IO];      /* [max_batch * outputs[i].sample_elems] */
    struct srv_job **jobs;      /* [max_batch]: the jobs of the batch being formed */
};

struct srv_batcher {
    const struct rt_model_config *cfg;
    struct srv_batcher_options opt;
    struct srv_model_stats *stats;
    pthread_mutex_t mu;
    pthread_cond_t reaper_cv;      /* wakes the reaper: a job with a deadline, or stopping */
    pthread_t reaper;
    bool reaper_started;
    struct srv_job *head, *tail;   /* FIFO of waiting jobs */
    int depth;                     /* jobs waiting */
    int rows_waiting;
    int64_t last_arrival_ns;       /* of the newest job */
    int64_t row_gap_ns;            /* smoothed time between arriving rows (srv_batch_row_gap) */
    int rows_running;              /* in the batches the workers run now */
    int peak_rows;                 /* srv_batch_peak of rows queued or running */
    int64_t row_ns;                /* srv_batch_row_cost: compute time per row; 0: none ran yet */
    int inline_runs;               /* batches running on submitting threads */
    pthread_cond_t inline_cv;      /* srv_batcher_free waits here for them to end */
    bool stopping;
    int n_workers;
    struct worker *workers;
    enum fault fault;
    long slow_ms;                  /* FAULT_SLOW */
};

/* The batcher whose batch or reaper this thread runs (a worker, the
 * reaper, or a submitter while it runs a batch itself). */
static _Thread_local const struct srv_batcher *running_batcher;

/* ------------------------------------------------------------ forming batches */

static void unlink_job(struct srv_batcher *b, struct srv_job *prev, struct srv_job *j)
{
    if (prev)
        prev->next = j->next;
    else
        b->head = j->next;
    if (b->tail == j)
        b->tail = prev;
    j->next = NULL;
    b->depth--;
    b->rows_waiting -= j->rows;
}

/* Moves every job whose deadline has passed onto *expired. */
static void take_expired(struct srv_batcher *b, int64_t now, struct srv_job **expired)
{
    struct srv_job *prev = NULL, *j = b->head;
    while (j) {
        struct srv_job *next = j->next;
        if (j->deadline_ns && j->deadline_ns <= now) {
            unlink_job(b, prev, j);
            j->next = *expired;
            *expired = j;
        } else {
            prev = j;
        }
        j = next;
    }
}

/* How many rows the next batch may hold now, or 0 to keep waiting until
 * *wake (an arrival wakes the worker sooner). */
static int batch_limit(const struct srv_batcher *b, int64_t now, int64_t *wake)
{
    const struct rt_model_config *cfg = b->cfg;
    const struct srv_batch_view v = {
        .batching = b->opt.batching,
        .stopping = b->stopping,
        .max_batch = cfg->max_batch_size,
        .preferred = cfg->batching.preferred,
        .n_preferred = cfg->batching.n_preferred,
        .delay_ns = cfg->batching.max_queue_delay_us * 1000,
        .rows_waiting = b->rows_waiting,
        .oldest_age_ns = now - b->head->enqueue_ns,
        .row_gap_ns = b->row_gap_ns,
        .peak_rows = b->peak_rows,
    };
    int64_t wait_ns;
    int limit = srv_batch_limit(&v, &wait_ns);
    *wake = now + wait_ns;   /* (deadlines are the reaper's) */
    return limit;
}

/* Pops jobs in FIFO order while they fit in limit rows (the first always
 * fits: a job never has more rows than max_batch_size). */
static int pop_batch(struct srv_batcher *b, int limit, struct srv_job **jobs, int *rows)
{
    int n = 0;
    *rows = 0;
    while (b->head && *rows + b->head->rows <= (n == 0 ? b->cfg->max_batch_size : limit)) {
        struct srv_job *j = b->head;
        unlink_job(b, NULL, j);
        *rows += j->rows;
        jobs[n++] = j;
        if (!b->opt.batching)
            break;
    }
    return n;
}

/* ------------------------------------------------------------ running batches */

/* Runs the jobs as one batch and answers each; returns the batch's compute
 * time, or -1 when it failed. */
static int64_t run_batch(struct worker *w, struct srv_job **jobs, int n_jobs, int rows)
{
    struct srv_batcher *b = w->b;
    const struct rt_model_config *cfg = b->cfg;
    const float *in[RT_MAX_IO];
    float *out[RT_MAX_IO];
    int64_t t0 = srv_now_ns();
    if (n_jobs == 1) {
        /* A lone job runs straight from and into its own buffers. */
        for (int i = 0; i < cfg->n_inputs; i++)
            in[i] = jobs[0]->inputs[i];
        for (int i = 0; i < cfg->n_outputs; i++)
            out[i] = jobs[0]->outputs[i];
    } else {
        for (int i = 0; i < cfg->n_inputs; i++) {
            size_t elems = (size_t)cfg->inputs[i].sample_elems, off = 0;
            for (int k = 0; k < n_jobs; k++) {
                memcpy(w->in[i] + off, jobs[k]->inputs[i], (size_t)jobs[k]->rows * elems * 4);
                off += (size_t)jobs[k]->rows * elems;
            }
            in[i] = w->in[i];
        }
        for (int i = 0; i < cfg->n_outputs; i++)
            out[i] = w->out[i];
    }
    int64_t t1 = srv_now_ns();
    struct rt_error err = {RT_OK, ""};
    enum rt_status st;
    if (b->fault == FAULT_ARENA_OOM)
        st = rt_error_set(&err, RT_ERR_NO_MEMORY, "out of memory for the batch arena (injected)");
    else if (b->fault == FAULT_DEVICE_ERROR)
        st = rt_error_set(&err, RT_ERR_DEVICE, "CUDA error: an illegal memory access (injected)");
    else
        st = rt_session_run(w->session, rows, in, out, &err);
    if (b->fault == FAULT_SLOW)
        nanosleep(&(struct timespec){b->slow_ms / 1000, b->slow_ms % 1000 * 1000000L}, NULL);
    int64_t t2 = srv_now_ns();
    if (st == RT_OK && n_jobs > 1) {
        for (int i = 0; i < cfg->n_outputs; i++) {
            size_t elems = (size_t)cfg->outputs[i].sample_elems, off = 0;
            for (int k = 0; k < n_jobs; k++) {
                memcpy(jobs[k]->outputs[i], w->out[i] + off, (size_t)jobs[k]->rows * elems * 4);
                off += (size_t)jobs[k]->rows * elems;
            }
        }
    }
    int64_t t3 = srv_now_ns();
    if (st == RT_OK)
        srv_stats_record_batch(b->stats, rows, (uint64_t)(t1 - t0), (uint64_t)(t2 - t1),
                               (uint64_t)(t3 - t2));
    else
        srv_log_error("model %s: batch of %d failed: %s", cfg->name, rows, err.msg);
    if (st == RT_ERR_DEVICE && b->opt.on_device_error)
        b->opt.on_device_error(&err);
    for (int k = 0; k < n_jobs; k++) {
        struct srv_job *j = jobs[k];
        j->err = err;
        j->batch_size = rows;
        j->times.queue_ns = (uint64_t)(t0 - j->enqueue_ns);
        j->times.input_ns = (uint64_t)(t1 - t0);
        j->times.infer_ns = (uint64_t)(t2 - t1);
        j->times.output_ns = (uint64_t)(t3 - t2);
        j->done(j);
    }
    return st == RT_OK ? t2 - t1 : -1;
}

static void fail_expired(struct srv_job *expired)
{
    while (expired) {
        struct srv_job *j = expired;
        expired = j->next;
        j->next = NULL;
        rt_error_set(&j->err, RT_ERR_UNAVAILABLE, "request timed out in the queue");
        j->done(j);
    }
}

/* The first idle instance, or NULL (under b->mu). */
static struct worker *idle_worker(struct srv_batcher *b)
{
    for (int i = 0; i < b->n_workers; i++) {
        if (!b->workers[i].busy)
            return &b->workers[i];
    }
    return NULL;
}

/* Wakes an idle instance's worker when jobs wait (under b->mu). */
static void wake_idle_worker(struct srv_batcher *b)
{
    struct worker *w = b->head ? idle_worker(b) : NULL;
    if (w)
        pthread_cond_signal(&w->cv);
}

/* Runs a batch taken from the queue on w's idle instance, on the calling
 * thread: called and returns under b->mu, which it drops meanwhile. */
static void run_on(struct worker *w, struct srv_job *expired, int n_jobs, int rows)
{
    struct srv_batcher *b = w->b;
    w->busy = true;
    b->rows_running += rows;
    wake_idle_worker(b);   /* another idle instance may take the rest */
    pthread_mutex_unlock(&b->mu);
    fail_expired(expired);
    int64_t infer_ns = n_jobs > 0 ? run_batch(w, w->jobs, n_jobs, rows) : -1;
    pthread_mutex_lock(&b->mu);
    b->rows_running -= rows;
    if (infer_ns >= 0)
        b->row_ns = srv_batch_row_cost(b->row_ns, infer_ns, rows);
    w->busy = false;
    wake_idle_worker(b);   /* what arrived meanwhile, if this was not w's own thread */
}

static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t when_ns)
{
    struct timespec ts = {(time_t)(when_ns / 1000000000), (long)(when_ns % 1000000000)};
    pthread_cond_timedwait(cv, mu, &ts);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct srv_batcher *b = w->b;
    running_batcher = b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        if (!b->head || w->busy) {   /* busy: a submitter runs a batch on this instance */
            if (b->stopping && !b->head)
                break;
            pthread_cond_wait(&w->cv, &b->mu);
            continue;
        }
        int64_t now = srv_now_ns();
        struct srv_job *expired = NULL;
        take_expired(b, now, &expired);
        int n_jobs = 0, rows = 0;
        if (b->head) {
            int64_t wake = 0;
            int limit = batch_limit(b, now, &wake);
            if (limit > 0)
                n_jobs = pop_batch(b, limit, w->jobs, &rows);
            else if (!expired) {
                wait_until(&w->cv, &b->mu, wake);
                continue;
            }
        }
        run_on(w, expired, n_jobs, rows);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* The submitting thread runs the next batch itself when an instance is
 * idle, the rule lets a batch go now and it is cheap (srv_batch_policy.h).
 * Under b->mu; false when it did not. */
static bool run_inline(struct srv_batcher *b, int64_t now)
{
    struct worker *w = idle_worker(b);
    if (!w || !b->head)
        return false;
    int cheap = srv_batch_inline_rows(b->opt.inline_budget_ns, b->row_ns, b->head->rows, b->peak_rows);
    int64_t wake;
    int limit = cheap > 0 ? batch_limit(b, now, &wake) : 0;
    if (limit == 0)
        return false;
    struct srv_job *expired = NULL;
    take_expired(b, now, &expired);
    int n_jobs = 0, rows = 0;
    if (b->head)
        n_jobs = pop_batch(b, limit < cheap ? limit : cheap, w->jobs, &rows);
    const struct srv_batcher *outer = running_batcher;
    running_batcher = b;
    b->inline_runs++;
    run_on(w, expired, n_jobs, rows);
    b->inline_runs--;
    running_batcher = outer;
    if (b->stopping && b->inline_runs == 0)
        pthread_cond_broadcast(&b->inline_cv);
    return true;
}

/* Answers jobs whose deadline passes in the queue at that moment, also
 * while every instance is busy (a worker only looks when it is free). */
static void *reaper_main(void *arg)
{
    struct srv_batcher *b = arg;
    running_batcher = b;
    pthread_mutex_lock(&b->mu);
    while (!b->stopping) {
        int64_t next = 0;
        for (const struct srv_job *j = b->head; j; j = j->next) {
            if (j->deadline_ns && (!next || j->deadline_ns < next))
                next = j->deadline_ns;
        }
        int64_t now = srv_now_ns();
        if (next && next <= now) {
            struct srv_job *expired = NULL;
            take_expired(b, now, &expired);
            pthread_mutex_unlock(&b->mu);
            fail_expired(expired);
            pthread_mutex_lock(&b->mu);
        } else if (next) {
            wait_until(&b->reaper_cv, &b->mu, next);
        } else {
            pthread_cond_wait(&b->reaper_cv, &b->mu);
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static enum rt_status worker_init(struct worker *w, const struct rt_model *model,
                                  struct rt_error *err)
{
    const struct rt_model_config *cfg = w->b->cfg;
    size_t max = (size_t)cfg->max_batch_size;
    if (rt_session_create(model, &w->session, err) != RT_OK)
        return err->status;
    if (w->b->stats->steps &&
        rt_session_profile(w->session, srv_step_profile_record, w->b->stats->steps, err) != RT_OK)
        return err->status;
    w->jobs = calloc(max, sizeof(struct srv_job *));
    if (!w->jobs)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the batch");
    size_t bytes;
    for (int i = 0; i < cfg->n_inputs; i++) {
        if (!rt_mul_size(max * sizeof(float), (size_t)cfg->inputs[i].sample_elems, &bytes) ||
            !(w->in[i] = malloc(bytes)))
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the batch");
    }
    for (int i = 0; i < cfg->n_outputs; i++) {
        if (!rt_mul_size(max * sizeof(float), (size_t)cfg->outputs[i].sample_elems, &bytes) ||
            !(w->out[i] = malloc(bytes)))
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the batch");
    }
    return RT_OK;
}

static void worker_release(struct worker *w)
{
    if (w->session)
        rt_session_free(w->session);
    for (int i = 0; i < RT_MAX_IO; i++) {
        free(w->in[i]);
        free(w->out[i]);
    }
    free(w->jobs);
}

enum rt_status srv_batcher_create(const struct rt_model *model, const struct srv_batcher_options *opt,
                                  struct srv_model_stats *stats, struct srv_batcher **out,
                                  struct rt_error *err)
{
    const struct rt_model_config *cfg = rt_model_config(model);
    struct srv_batcher *b = calloc(1, sizeof(*b));
    if (!b)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    b->cfg = cfg;
    b->opt = *opt;
    b->stats = stats;
    b->fault = fault_from_env(&b->slow_ms);
    b->n_workers = cfg->instance_count > 0 ? cfg->instance_count : 1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->reaper_cv, &ca);
    pthread_cond_init(&b->inline_cv, NULL);
    b->workers = calloc((size_t)b->n_workers, sizeof(*b->workers));
    for (int i = 0; b->workers && i < b->n_workers; i++)
        pthread_cond_init(&b->workers[i].cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!b->workers) {
        srv_batcher_free(b);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < b->n_workers; i++) {
        struct worker *w = &b->workers[i];
        w->b = b;
        if (worker_init(w, model, err) != RT_OK) {
            srv_batcher_free(b);
            return err->status;
        }
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            srv_batcher_free(b);
            return rt_error_set(err, RT_ERR_NO_MEMORY, "cannot start a worker thread");
        }
        w->started = true;
        char name[16];
        snprintf(name, sizeof(name), "w:%s", cfg->name);
        pthread_setname_np(w->thread, name);
    }
    if (pthread_create(&b->reaper, NULL, reaper_main, b) != 0) {
        srv_batcher_free(b);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "cannot start a thread");
    }
    b->reaper_started = true;
    *out = b;
    return RT_OK;
}

enum rt_status srv_batcher_submit(struct srv_batcher *b, struct srv_job *job, int64_t timeout_us,
                                  struct rt_error *err)
{
    int64_t now = srv_now_ns();
    int64_t limit_us = b->cfg->batching.default_timeout_us;
    if (timeout_us > 0 && (limit_us <= 0 || timeout_us < limit_us))
        limit_us = timeout_us;
    job->enqueue_ns = now;
    job->deadline_ns = limit_us > 0 ? now + limit_us * 1000 : 0;
    job->next = NULL;
    job->err.status = RT_OK;
    pthread_mutex_lock(&b->mu);
    int max_queue = b->cfg->batching.max_queue_size;
    if (b->stopping || (max_queue > 0 && b->depth >= max_queue)) {
        pthread_mutex_unlock(&b->mu);
        return rt_error_set(err, RT_ERR_UNAVAILABLE, "the queue of model %s is full",
                            b->cfg->name);
    }
    if (b->tail)
        b->tail->next = job;
    else
        b->head = job;
    b->tail = job;
    b->depth++;
    b->rows_waiting += job->rows;
    /* The arrival rate counts only requests that join a non-empty queue: a
     * lone client's next request waits for this answer, so its pace says
     * nothing about who else would come while a batch waits. */
    int64_t gap = now - b->last_arrival_ns;
    if (b->depth > 1 && b->last_arrival_ns)
        b->row_gap_ns = srv_batch_row_gap(b->row_gap_ns, gap, job->rows);
    else if (gap > b->cfg->batching.max_queue_delay_us * 1000)
        b->row_gap_ns = 0;   /* quiet for longer than the delay: the old pace is stale */
    b->last_arrival_ns = now;
    b->peak_rows = srv_batch_peak(b->peak_rows, b->rows_waiting + b->rows_running);
    if (job->deadline_ns)
        pthread_cond_signal(&b->reaper_cv);
    if (!run_inline(b, now))
        wake_idle_worker(b);
    pthread_mutex_unlock(&b->mu);
    return RT_OK;
}

int srv_batcher_queue_depth(struct srv_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    int d = b->depth;
    pthread_mutex_unlock(&b->mu);
    return d;
}

bool srv_batcher_is_worker_thread(const struct srv_batcher *b)
{
    return running_batcher == b;
}

void srv_batcher_free(struct srv_batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    for (int i = 0; b->workers && i < b->n_workers; i++)
        pthread_cond_broadcast(&b->workers[i].cv);
    pthread_cond_broadcast(&b->reaper_cv);
    while (b->inline_runs > 0)
        pthread_cond_wait(&b->inline_cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    if (b->reaper_started)
        pthread_join(b->reaper, NULL);
    for (int i = 0; b->workers && i < b->n_workers; i++) {
        if (b->workers[i].started) {
            int rc = pthread_join(b->workers[i].thread, NULL);
            RT_ASSERT(rc == 0); /* EDEADLK: called from this worker (see srv_model_unref) */
        }
        worker_release(&b->workers[i]);
        pthread_cond_destroy(&b->workers[i].cv);
    }
    free(b->workers);
    pthread_cond_destroy(&b->inline_cv);
    pthread_cond_destroy(&b->reaper_cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}
