/*
 * kcpu_pool.h - a small fixed thread pool for data-parallel kernels.
 *
 * Usage:
 *     struct kcpu_pool *pool = kcpu_pool_create(4);   // 4 workers incl. caller
 *     kcpu_pool_run(pool, tasks, fn, arg);             // fn(arg, i, thread) for i < tasks
 *     kcpu_pool_free(pool);
 *
 * kcpu_pool_run blocks until every task is done; the calling thread takes part.
 * A pool is used by one caller at a time (each model instance owns one).
 * kcpu_pool_run(NULL, ...) runs every task on the calling thread.
 *
 * Workers spin for 50 us after a run before they sleep, so the steps of a
 * forward pass reach them at once; a run of fewer than KCPU_POOL_COLD_TASKS
 * tasks never wakes a sleeping worker (waking one costs more than such a
 * run is worth) and goes on the caller alone.
 */
#ifndef KCPU_POOL_H
#define KCPU_POOL_H

#include <stdint.h>

#define KCPU_POOL_COLD_TASKS 8   /* a run with sleeping workers is split from this many tasks on */

struct kcpu_pool;

typedef void (*kcpu_task_fn)(void *arg, int64_t task, int thread);

/* threads >= 1; returns NULL when threads could not be started. */
struct kcpu_pool *kcpu_pool_create(int threads);
void kcpu_pool_free(struct kcpu_pool *pool);
/* Number of threads, including the caller (1 for NULL). */
int kcpu_pool_threads(const struct kcpu_pool *pool);
void kcpu_pool_run(struct kcpu_pool *pool, int64_t tasks, kcpu_task_fn fn, void *arg);

#endif /* KCPU_POOL_H */
