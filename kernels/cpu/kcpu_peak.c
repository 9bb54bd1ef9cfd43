/*
 * kcpu_peak.c - this machine's FP32 peak, measured: every thread of a pool
 * runs an FMA loop with no memory traffic at once, under the instruction
 * set the kernels use. Profiles state each layer's rate against it.
 *
 * Each loop is timed by its thread's CPU clock, so a busy machine (another
 * process sharing the core) does not lower the figure: it is what the
 * cores can do, not what they did while shared.
 */
#include <time.h>

#include "kcpu_impl.h"

#define PEAK_ITERS ((int64_t)1 << 19)   /* 12 FMAs a step: about 2 ms on one AVX-512 core */
#define PEAK_REPEATS 5

/* Plain C: twelve multiply-add chains (no FMA instruction is assumed). */
static float peak_fma_scalar(int64_t iters)
{
    float c[12];
    for (int i = 0; i < 12; i++)
        c[i] = (float)i;
    for (int64_t n = 0; n < iters; n++)
        for (int i = 0; i < 12; i++)
            c[i] = 0.999f * c[i] + 1e-3f;
    float s = 0.0f;
    for (int i = 0; i < 12; i++)
        s += c[i];
    return s;
}

#define PEAK_MAX_TASKS 256

struct peak_job {
    enum kcpu_isa isa;
    double seconds[PEAK_MAX_TASKS];   /* CPU seconds of each task's loop */
    volatile float sink;              /* so no loop is dropped */
};

static double thread_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void peak_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    struct peak_job *j = arg;
    double t0 = thread_seconds();
    float r = j->isa == KCPU_ISA_AVX512 ? kcpu_peak_fma_avx512(PEAK_ITERS)
              : j->isa == KCPU_ISA_AVX2 ? kcpu_peak_fma_avx2(PEAK_ITERS)
                                        : peak_fma_scalar(PEAK_ITERS);
    j->seconds[task] = thread_seconds() - t0;
    j->sink = r;
}

double kcpu_peak_gflops(struct kcpu_threads *th)
{
    struct peak_job j = {.isa = kcpu_isa()};   /* 2 KB: callers may measure at once */
    int threads = (int)kcpu_min64(kcpu_threads_count(th), PEAK_MAX_TASKS);
    int lanes = j.isa == KCPU_ISA_AVX512 ? 16 : j.isa == KCPU_ISA_AVX2 ? 8 : 1;
    double flops = 2.0 * 12.0 * lanes * (double)PEAK_ITERS, best = 0.0;
    for (int r = 0; r <= PEAK_REPEATS; r++) {   /* the first wakes the threads and the clocks */
        kcpu_threads_run(th, threads, peak_task, &j);
        double rate = 0.0;   /* the threads' rates add up */
        for (int t = 0; t < threads; t++)
            rate += flops / (j.seconds[t] > 0.0 ? j.seconds[t] : 1e-9);
        if (r > 0 && rate > best)
            best = rate;
    }
    return best * 1e-9;
}
