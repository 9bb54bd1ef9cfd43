/*
 * kcpu_pool.c - fixed thread pool for data-parallel kernels.
 *
 * A run publishes (fn, arg, tasks) under the mutex and bumps a generation
 * counter; every thread, the caller included, then claims task indices
 * from one atomic counter. The caller returns only after every worker has
 * checked in for that generation, so no worker can still be reading the job
 * when the next run overwrites it. Nothing is allocated after
 * kcpu_pool_create.
 *
 * Waking a sleeping thread costs tens of microseconds here (a futex wake,
 * and on a VM an idle vCPU to rouse), more than most steps of a small
 * model take. So, after a run, workers spin on the generation for
 * KCPU_POOL_SPIN_NS before sleeping on the condition variable (the steps of
 * one forward pass follow each other closely: a spinning worker joins the
 * next within a fraction of a microsecond, yielding the CPU to anyone
 * else runnable), the caller spins briefly for the check-ins of hot
 * workers, and a run that would have to wake sleeping workers is split only
 * when it has at least KCPU_POOL_COLD_TASKS tasks (kernels size their tasks
 * to be worth a thread: KCPU_MIN_TASK_MACS); smaller runs go on the caller
 * alone. The CPU is shared with other instances and the HTTP threads, so
 * the spin is short and idle workers end up asleep.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "kcpu_pool.h"

#define KCPU_POOL_SPIN_NS 50000     /* 50 us: workers, between runs */
#define KCPU_POOL_WAIT_SPIN_NS 5000 /* 5 us: the caller, for the check-ins */

struct kcpu_pool {
    int threads;               /* including the caller */
    pthread_t *workers;        /* threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* a new generation or stop */
    pthread_cond_t done;       /* the last worker checked in */
    atomic_uint_fast64_t generation;
    atomic_int busy;           /* workers not yet checked in this generation */
    atomic_int sleepers;       /* workers waiting on `wake` (under mu) */
    atomic_bool stop;
    kcpu_task_fn fn;
    void *arg;
    int64_t tasks;
    atomic_int_fast64_t next;  /* next unclaimed task index */
};

struct worker_start {
    struct kcpu_pool *pool;
    int index;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void run_tasks(struct kcpu_pool *pool, kcpu_task_fn fn, void *arg, int64_t tasks, int thread)
{
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
        if (t >= tasks)
            return;
        fn(arg, t, thread);
    }
}

/* Spins until generation moves past seen, stop is set, or the spin time is
 * up; whether it moved. */
static bool spin_for_generation(struct kcpu_pool *pool, uint64_t seen)
{
    int64_t until = now_ns() + KCPU_POOL_SPIN_NS;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&pool->generation, memory_order_acquire) != seen ||
            atomic_load_explicit(&pool->stop, memory_order_relaxed))
            return true;
        cpu_relax();
        if (i % 64 == 0) {
            if (now_ns() > until)
                return false;
            sched_yield();   /* let other runnable threads (another model's pool, HTTP) have the CPU */
        }
    }
}

static void *worker_main(void *p)
{
    struct worker_start *start = p;
    struct kcpu_pool *pool = start->pool;
    int index = start->index;
    free(start);

    uint64_t seen = 0;
    for (;;) {
        spin_for_generation(pool, seen);
        pthread_mutex_lock(&pool->mu);
        while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop)) {
            atomic_fetch_add(&pool->sleepers, 1);
            pthread_cond_wait(&pool->wake, &pool->mu);
            atomic_fetch_sub(&pool->sleepers, 1);
        }
        if (atomic_load(&pool->stop)) {
            pthread_mutex_unlock(&pool->mu);
            break;
        }
        seen = atomic_load(&pool->generation);
        kcpu_task_fn fn = pool->fn;
        void *arg = pool->arg;
        int64_t tasks = pool->tasks;
        pthread_mutex_unlock(&pool->mu);

        run_tasks(pool, fn, arg, tasks, index);

        if (atomic_fetch_sub(&pool->busy, 1) == 1) {
            pthread_mutex_lock(&pool->mu);   /* the caller checks busy under mu before it waits */
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mu);
        }
    }
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
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->busy, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->stop, false);
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
    atomic_store(&pool->stop, true);
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
    /* One task, no helpers, or helpers asleep and too little to wake them for. */
    if (!pool || pool->threads == 1 || tasks == 1 ||
        (tasks < KCPU_POOL_COLD_TASKS && atomic_load_explicit(&pool->sleepers, memory_order_relaxed) > 0)) {
        for (int64_t t = 0; t < tasks; t++)
            fn(arg, t, 0);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->arg = arg;
    pool->tasks = tasks;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    atomic_store(&pool->busy, pool->threads - 1);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    if (atomic_load(&pool->sleepers) > 0)
        pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);

    run_tasks(pool, fn, arg, tasks, 0);

    /* Hot workers finish their last tasks within microseconds: spin for
     * them, then sleep. (Sleeping at once after waking a worker lets the
     * scheduler run it on this CPU, where it then competes with this thread
     * for milliseconds: measured slower, bench_pool.) */
    int64_t until = now_ns() + KCPU_POOL_WAIT_SPIN_NS;
    for (unsigned i = 1; atomic_load_explicit(&pool->busy, memory_order_acquire) > 0; i++) {
        cpu_relax();
        if (i % 64 == 0 && now_ns() > until)
            break;
    }
    if (atomic_load(&pool->busy) > 0) {
        pthread_mutex_lock(&pool->mu);
        while (atomic_load(&pool->busy) > 0)
            pthread_cond_wait(&pool->done, &pool->mu);
        pthread_mutex_unlock(&pool->mu);
    }
}
