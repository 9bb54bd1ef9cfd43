/*
 * kcpu_copy.c - one large memcpy split over the threads (kcpu.h).
 *
 * One core copies beyond its caches at 6-16 GB/s: the CUDA backend's copy of
 * a batch of 256 ImageNet images (154 MB) into pinned staging is most of the
 * 27 ms that the first GPU runs measured between host-to-host and device
 * time (docs/performance.md). A split run wakes every worker and waits for
 * each to check in: there, a batch of 8 such images (4.8 MB) took 0.6-1.8 ms
 * longer split than on the caller alone, so copies under
 * KCPU_COPY_SPLIT_BYTES (kcpu.h) stay on the caller.
 */
#include <string.h>

#include "kcpu_impl.h"

#define KCPU_COPY_TASK (1u << 20)    /* bytes a task copies at least */

struct copy_job {
    char *dst;
    const char *src;
    size_t bytes, per_task;
};

static void copy_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct copy_job *j = arg;
    size_t at = (size_t)task * j->per_task;
    size_t n = j->bytes - at < j->per_task ? j->bytes - at : j->per_task;
    memcpy(j->dst + at, j->src + at, n);
}

void kcpu_copy(struct kcpu_threads *th, void *dst, const void *src, size_t bytes)
{
    int threads = kcpu_threads_count(th);
    if (threads < 2 || bytes < KCPU_COPY_SPLIT_BYTES) {
        memcpy(dst, src, bytes);
        return;
    }
    /* four tasks a thread, whole cache lines each, so a slow core evens out */
    size_t per_task = (bytes / ((size_t)threads * 4) + 63) / 64 * 64;
    if (per_task < KCPU_COPY_TASK)
        per_task = KCPU_COPY_TASK;
    struct copy_job j = {.dst = dst, .src = src, .bytes = bytes, .per_task = per_task};
    kcpu_threads_run(th, (int64_t)((bytes + per_task - 1) / per_task), copy_task, &j);
}
