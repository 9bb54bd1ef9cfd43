/* srv_work.c - the worker pool for long work off the HTTP threads (see srv_work.h). */
#include "srv_work.h"

#include <pthread.h>
#include <stdlib.h>

struct srv_work_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_work *head, *tail;
    int queued, max_queued, n_threads;
    bool stopping;
    pthread_t threads[];
};

static void *worker(void *arg)
{
    struct srv_work_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        struct srv_work *w = p->head;
        if (!w)
            break;  /* stopping and drained */
        p->head = w->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);
        w->run(w);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_stop(struct srv_work_pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        RT_ASSERT(pthread_join(p->threads[i], NULL) == 0);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

enum rt_status srv_work_pool_create(int threads, int max_queued, struct srv_work_pool **out,
                                    struct rt_error *err)
{
    RT_ASSERT(threads >= 1 && max_queued >= 1);
    struct srv_work_pool *p = calloc(1, sizeof(*p) + (size_t)threads * sizeof(pthread_t));
    if (!p)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->max_queued = max_queued;
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            pool_stop(p, i);
            return rt_error_set(err, RT_ERR_NO_MEMORY, "cannot start a worker thread");
        }
    }
    p->n_threads = threads;
    *out = p;
    return RT_OK;
}

bool srv_work_submit(struct srv_work_pool *p, struct srv_work *w)
{
    pthread_mutex_lock(&p->mu);
    bool ok = !p->stopping && p->queued < p->max_queued;
    if (ok) {
        w->next = NULL;
        if (p->tail)
            p->tail->next = w;
        else
            p->head = w;
        p->tail = w;
        p->queued++;
        pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void srv_work_pool_free(struct srv_work_pool *p)
{
    if (p)
        pool_stop(p, p->n_threads);
}
