/*
 * kcpu_threads.c - a fixed set of worker threads for data-parallel kernels.
 *
 * A run publishes fn, arg and the task ranges under the mutex and bumps a
 * generation counter. The tasks are dealt out in contiguous ranges, one per
 * thread, each with its own atomic counter: a thread claims the tasks of its own
 * range in order, then steals from the others' counters. Kernels number
 * their tasks along the data, so a thread works on the same part of the
 * tensors in every step of a forward pass (what it wrote, it reads: no
 * cache lines crossing between the cores), and a thread that runs late
 * (descheduled, or a task slower than the others) still has its tasks
 * taken. The caller returns only after every worker has checked in for
 * that generation, so no worker can still be reading the job when the
 * next run overwrites it. Nothing is allocated after kcpu_threads_create.
 *
 * Waking a sleeping thread costs tens of microseconds here (a futex wake,
 * and on a VM an idle vCPU to rouse), more than most steps of a small
 * model take. So, after a run, workers spin on the generation for
 * KCPU_THREADS_SPIN_NS before sleeping on the condition variable (the steps of
 * one forward pass follow each other closely: a spinning worker joins the
 * next within a fraction of a microsecond, yielding the CPU to anyone
 * else runnable), the caller spins briefly for the check-ins of hot
 * workers, and a run that would have to wake sleeping workers is split only
 * when it has at least KCPU_THREADS_COLD_TASKS tasks (kernels size their tasks
 * to be worth a thread: KCPU_MIN_TASK_MACS), or when its first task, run on
 * the caller and timed, took longer than a wake-up costs; other runs go on
 * the caller alone. The CPU is shared with other instances and the HTTP threads, so
 * the spin is short and idle workers end up asleep.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "kcpu_threads.h"

#define KCPU_THREADS_SPIN_NS 50000     /* 50 us: workers, between runs */
#define KCPU_THREADS_WAIT_SPIN_NS 5000 /* 5 us: the caller, for the check-ins */
/* A task that runs longer than this is worth waking a sleeping worker for
 * the rest of its run (a wake-up costs 14-15 us here: bench_threads). */
#define KCPU_THREADS_WAKE_WORTH_NS 20000

/* One thread's share of a run: tasks [next, end), claimed by fetch-add (by
 * its owner, or by a thief); a line of its own, so claims do not contend. */
struct task_range {
    _Alignas(64) atomic_int_fast64_t next;
    int64_t end;
};

struct kcpu_threads {
    int threads;               /* including the caller */
    struct task_range *ranges; /* [threads] */
    pthread_t *workers;        /* threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* a new generation or stop */
    pthread_cond_t done;       /* the last worker checked in */
    atomic_uint_fast64_t generation;
    atomic_int busy;           /* workers not yet checked in this generation */
    atomic_int sleepers;       /* workers waiting on `wake` (under mu) */
    atomic_bool stop;
    atomic_bool running;       /* the caller is inside a split run */
    kcpu_task_fn fn;
    void *arg;
};

struct worker_start {
    struct kcpu_threads *th;
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

/* This thread's range first, then every other thread's, each in order. */
static void run_tasks(struct kcpu_threads *th, kcpu_task_fn fn, void *arg, int thread)
{
    for (int i = 0; i < th->threads; i++) {
        struct task_range *r = &th->ranges[(thread + i) % th->threads];
        for (;;) {
            int64_t t = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
            if (t >= r->end)
                break;
            fn(arg, t, thread);
        }
    }
}

/* Spins until generation moves past seen, stop is set, or the spin time is
 * up; whether it moved. The spin time counts from the end of the caller's
 * run, not from this worker's last task: a worker done early would else
 * fall asleep while the caller finishes a long last task, and the next
 * run would find it asleep. */
static bool spin_for_generation(struct kcpu_threads *th, uint64_t seen)
{
    int64_t until = now_ns() + KCPU_THREADS_SPIN_NS;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&th->generation, memory_order_acquire) != seen ||
            atomic_load_explicit(&th->stop, memory_order_relaxed))
            return true;
        cpu_relax();
        if (i % 64 == 0) {
            int64_t t = now_ns();
            if (atomic_load_explicit(&th->running, memory_order_relaxed))
                until = t + KCPU_THREADS_SPIN_NS;
            else if (t > until)
                return false;
            sched_yield();   /* let other runnable threads (another model's workers, HTTP) have the CPU */
        }
    }
}

static void *worker_main(void *p)
{
    struct worker_start *start = p;
    struct kcpu_threads *th = start->th;
    int index = start->index;
    free(start);

    uint64_t seen = 0;
    for (;;) {
        spin_for_generation(th, seen);
        pthread_mutex_lock(&th->mu);
        while (atomic_load(&th->generation) == seen && !atomic_load(&th->stop)) {
            atomic_fetch_add(&th->sleepers, 1);
            pthread_cond_wait(&th->wake, &th->mu);
            atomic_fetch_sub(&th->sleepers, 1);
        }
        if (atomic_load(&th->stop)) {
            pthread_mutex_unlock(&th->mu);
            break;
        }
        seen = atomic_load(&th->generation);
        kcpu_task_fn fn = th->fn;
        void *arg = th->arg;
        pthread_mutex_unlock(&th->mu);

        run_tasks(th, fn, arg, index);

        if (atomic_fetch_sub(&th->busy, 1) == 1) {
            pthread_mutex_lock(&th->mu);   /* the caller checks busy under mu before it waits */
            pthread_cond_signal(&th->done);
            pthread_mutex_unlock(&th->mu);
        }
    }
    return NULL;
}

struct kcpu_threads *kcpu_threads_create(int threads)
{
    if (threads < 1)
        return NULL;
    struct kcpu_threads *th = calloc(1, sizeof(*th));
    if (!th)
        return NULL;
    th->threads = threads;
    th->ranges = aligned_alloc(64, sizeof(struct task_range) * (size_t)threads);
    if (!th->ranges) {
        free(th);
        return NULL;
    }
    for (int i = 0; i < threads; i++) {
        atomic_init(&th->ranges[i].next, 0);
        th->ranges[i].end = 0;
    }
    atomic_init(&th->generation, 0);
    atomic_init(&th->busy, 0);
    atomic_init(&th->sleepers, 0);
    atomic_init(&th->stop, false);
    atomic_init(&th->running, false);
    th->workers = calloc((size_t)threads, sizeof(pthread_t));
    if (!th->workers) {
        free(th->ranges);
        free(th);
        return NULL;
    }
    pthread_mutex_init(&th->mu, NULL);
    pthread_cond_init(&th->wake, NULL);
    pthread_cond_init(&th->done, NULL);
    for (int i = 1; i < threads; i++) {
        struct worker_start *start = malloc(sizeof(*start));
        if (start) {
            start->th = th;
            start->index = i;
        }
        if (!start || pthread_create(&th->workers[i - 1], NULL, worker_main, start) != 0) {
            free(start);
            th->threads = i;  /* kcpu_threads_free joins the i - 1 started workers */
            kcpu_threads_free(th);
            return NULL;
        }
    }
    return th;
}

void kcpu_threads_free(struct kcpu_threads *th)
{
    if (!th)
        return;
    pthread_mutex_lock(&th->mu);
    atomic_store(&th->stop, true);
    pthread_cond_broadcast(&th->wake);
    pthread_mutex_unlock(&th->mu);
    for (int i = 0; i < th->threads - 1; i++)
        pthread_join(th->workers[i], NULL);
    pthread_cond_destroy(&th->done);
    pthread_cond_destroy(&th->wake);
    pthread_mutex_destroy(&th->mu);
    free(th->workers);
    free(th->ranges);
    free(th);
}

int kcpu_threads_count(const struct kcpu_threads *th)
{
    return th ? th->threads : 1;
}

void kcpu_threads_run(struct kcpu_threads *th, int64_t tasks, kcpu_task_fn fn, void *arg)
{
    if (tasks <= 0)
        return;
    if (!th || th->threads == 1 || tasks == 1) {
        for (int64_t t = 0; t < tasks; t++)
            fn(arg, t, 0);
        return;
    }
    /* Helpers asleep and few tasks: the caller times the first task, and
     * wakes them for the rest only when a task outlasts a wake-up. (Counting
     * tasks alone kept a layer of a few long tasks, as ResNet-50's at batch
     * 1, on one thread; and its worker, idle past its spin, stayed asleep.) */
    int64_t first = 0;
    if (tasks < KCPU_THREADS_COLD_TASKS && atomic_load_explicit(&th->sleepers, memory_order_relaxed) > 0) {
        int64_t t0 = now_ns();
        fn(arg, 0, 0);
        first = 1;
        if (now_ns() - t0 < KCPU_THREADS_WAKE_WORTH_NS) {
            for (int64_t t = 1; t < tasks; t++)
                fn(arg, t, 0);
            return;
        }
    }
    pthread_mutex_lock(&th->mu);
    th->fn = fn;
    th->arg = arg;
    for (int i = 0; i < th->threads; i++) {   /* published by the generation's release */
        atomic_store_explicit(&th->ranges[i].next, first + (tasks - first) * i / th->threads, memory_order_relaxed);
        th->ranges[i].end = first + (tasks - first) * (i + 1) / th->threads;
    }
    atomic_store_explicit(&th->running, true, memory_order_relaxed);
    atomic_store(&th->busy, th->threads - 1);
    atomic_fetch_add_explicit(&th->generation, 1, memory_order_release);
    if (atomic_load(&th->sleepers) > 0)
        pthread_cond_broadcast(&th->wake);
    pthread_mutex_unlock(&th->mu);

    run_tasks(th, fn, arg, 0);

    /* Hot workers finish their last tasks within microseconds: spin for
     * them, then sleep. (Sleeping at once after waking a worker lets the
     * scheduler run it on this CPU, where it then competes with this thread
     * for milliseconds: measured slower, bench_threads.) */
    int64_t until = now_ns() + KCPU_THREADS_WAIT_SPIN_NS;
    for (unsigned i = 1; atomic_load_explicit(&th->busy, memory_order_acquire) > 0; i++) {
        cpu_relax();
        if (i % 64 == 0 && now_ns() > until)
            break;
    }
    if (atomic_load(&th->busy) > 0) {
        pthread_mutex_lock(&th->mu);
        while (atomic_load(&th->busy) > 0)
            pthread_cond_wait(&th->done, &th->mu);
        pthread_mutex_unlock(&th->mu);
    }
    atomic_store_explicit(&th->running, false, memory_order_relaxed);
}
