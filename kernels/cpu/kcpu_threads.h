/*
 * kcpu_threads.h - a small fixed set of worker threads for data-parallel kernels.
 *
 * Usage:
 *     struct kcpu_threads *th = kcpu_threads_create(4);   // 4 workers incl. caller
 *     kcpu_threads_run(th, tasks, fn, arg);             // fn(arg, i, thread) for i < tasks
 *     kcpu_threads_free(th);
 *
 * kcpu_threads_run blocks until every task is done; the calling thread takes part.
 * A thread set is used by one caller at a time (each model instance owns one).
 * kcpu_threads_run(NULL, ...) runs every task on the calling thread.
 *
 * Workers spin for 50 us after a run before they sleep, so the steps of a
 * forward pass reach them at once; a run of fewer than KCPU_THREADS_COLD_TASKS
 * tasks wakes a sleeping worker only when its first task, timed on the
 * caller, took longer than waking one costs (20 us); else it stays on the
 * caller alone.
 */
#ifndef KCPU_THREADS_H
#define KCPU_THREADS_H

#include <stdint.h>

#define KCPU_THREADS_COLD_TASKS 8   /* a run with sleeping workers is split from this many tasks on */

struct kcpu_threads;

typedef void (*kcpu_task_fn)(void *arg, int64_t task, int thread);

/* threads >= 1; returns NULL when threads could not be started. */
struct kcpu_threads *kcpu_threads_create(int threads);
void kcpu_threads_free(struct kcpu_threads *th);
/* Number of threads, including the caller (1 for NULL). */
int kcpu_threads_count(const struct kcpu_threads *th);
void kcpu_threads_run(struct kcpu_threads *th, int64_t tasks, kcpu_task_fn fn, void *arg);

#endif /* KCPU_THREADS_H */
