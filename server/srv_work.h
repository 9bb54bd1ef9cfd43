/*
 * srv_work.h - a small pool of threads for work that must not run on an
 * HTTP thread: image decoding and preprocessing, parsing a large infer
 * request, model load and unload.
 *
 *     struct srv_work_pool *p;
 *     srv_work_pool_create(2, 256, &p, &err);
 *     w->run = decode;                   // struct srv_work embedded in the caller's state
 *     if (!srv_work_submit(p, w)) ...    // queue full or stopping: 503
 *     srv_work_pool_free(p);             // runs what is queued, then joins
 *
 * A handler defers its request, submits the work and returns; the work
 * calls srv_request_resume when it (or what it handed on, a batcher job)
 * is done. The queue is bounded, so a flood is refused, not buffered.
 */
#ifndef SRV_WORK_H
#define SRV_WORK_H

#include <stdbool.h>

#include "runtime/rt_status.h"

struct srv_work_pool;

struct srv_work {
    void (*run)(struct srv_work *w);   /* on a pool thread; owns w until it returns */
    struct srv_work *next;             /* private */
};

/* threads >= 1 workers, at most max_queued items waiting. */
enum rt_status srv_work_pool_create(int threads, int max_queued, struct srv_work_pool **out,
                                    struct rt_error *err);
/* Queues w; false (w untouched) when the queue is full or the pool stopping. */
bool srv_work_submit(struct srv_work_pool *p, struct srv_work *w);
/* Runs every queued item, joins the threads and frees the pool (NULL: no-op). */
void srv_work_pool_free(struct srv_work_pool *p);

#endif /* SRV_WORK_H */
