/*
 * kcpu_pool.c - fixed thread pool for data-parallel kernels.
 *
 * Workers sleep on a condition variable between runs (the CPU is shared
 * with other instances and processes, so idle workers must not spin). A run
 * publishes (fn, arg, tasks) under the mutex and bumps a generation counter;
 * every thread, the caller included, then claims task indices from one
 * atomic counter. The caller returns only after every worker has checked in
 * for that generation, so no worker can still be reading the job when the
 * next run overwrites it. Nothing is allocated after kcpu_pool_create.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kcpu_pool.h"

struct kcpu_pool {
    int threads;               /* including the caller */
    pthread_t *workers;        /* threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* a new generation or stop */
    pthread_cond_t done;       /* the last worker checked in */
    uint64_t generation;
    int busy;                  /* workers not yet checked in this generation */
    bool stop;
    kcpu_task_fn fn;
    void *arg;
    int64_t tasks;
    atomic_int_fast64_t next;  /* next unclaimed task index */
};

struct worker_start {
    struct kcpu_pool *pool;
    int index;
};

static void run_tasks(struct kcpu_pool *pool, kcpu_task_fn fn, void *arg, int64_t tasks, int thread)
{
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
        if (t >= tasks)
            return;
        fn(arg, t, thread);
    }
}

static void *worker_main(void *p)
{
    struct worker_start *start = p;
    struct kcpu_pool *pool = start->pool;
    int index = start->index;
    free(start);

    uint64_t seen = 0;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (pool->generation == seen && !pool->stop)
            pthread_cond_wait(&pool->wake, &pool->mu);
        if (pool->stop)
            break;
        seen = pool->generation;
        kcpu_task_fn fn = pool->fn;
        void *arg = pool->arg;
        int64_t tasks = pool->tasks;
        pthread_mutex_unlock(&pool->mu);

        run_tasks(pool, fn, arg, tasks, index);

        pthread_mutex_lock(&pool->mu);
        if (--pool->busy == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

struct kcpu_pool *kcpu_pool_create(int threads)
{
    if (threads < 1)
        return NULL;
    struct kcpu_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->threads = threads;
    atomic_init(&pool->next, 0);
    pool->workers = calloc((size_t)threads, sizeof(pthread_t));
    if (!pool->workers) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    for (int i = 1; i < threads; i++) {
        struct worker_start *start = malloc(sizeof(*start));
        if (start) {
            start->pool = pool;
            start->index = i;
        }
        if (!start || pthread_create(&pool->workers[i - 1], NULL, worker_main, start) != 0) {
            free(start);
            pool->threads = i;  /* kcpu_pool_free joins the i - 1 started workers */
            kcpu_pool_free(pool);
            return NULL;
        }
    }
    return pool;
}

void kcpu_pool_free(struct kcpu_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->threads - 1; i++)
        pthread_join(pool->workers[i], NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mu);
    free(pool->workers);
    free(pool);
}

int kcpu_pool_threads(const struct kcpu_pool *pool)
{
    return pool ? pool->threads : 1;
}

void kcpu_pool_run(struct kcpu_pool *pool, int64_t tasks, kcpu_task_fn fn, void *arg)
{
    if (tasks <= 0)
        return;
    /* One task, or no helpers: waking workers would only add latency. */
    if (!pool || pool->threads == 1 || tasks == 1) {
        for (int64_t t = 0; t < tasks; t++)
            fn(arg, t, 0);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->arg = arg;
    pool->tasks = tasks;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    pool->busy = pool->threads - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);

    run_tasks(pool, fn, arg, tasks, 0);

    pthread_mutex_lock(&pool->mu);
    while (pool->busy > 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
