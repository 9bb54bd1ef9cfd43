/*
 * bench_threads.c - what splitting a kernel over the CPU pool costs (issue
 * "CPU speed", item 1): the time of one kcpu_threads_run whose tasks do
 * nothing, with 2 threads, when the worker is hot (runs back to back, as
 * the steps of a forward pass) and when it is cold (200 us idle first, past
 * its spin), for runs just under and at KCPU_THREADS_COLD_TASKS tasks; and, as
 * the yardstick, one round trip between two threads through a condition
 * variable (what waking a sleeping worker costs at least).
 *
 *   build/bench_threads [--runs N]
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "kernels/cpu/kcpu_threads.h"

static double now_us(void) { return bench_now_s() * 1e6; }

static void nothing(void *arg, int64_t task, int thread) { (void)arg, (void)task, (void)thread; }

/* Median microseconds of one run of `tasks` tasks, idle_us apart. */
static double time_runs(struct kcpu_threads *pool, int tasks, int idle_us, int runs, double *samples)
{
    for (int i = 0; i < runs; i++) {
        if (idle_us)
            usleep((useconds_t)idle_us);
        double t0 = now_us();
        kcpu_threads_run(pool, tasks, nothing, NULL);
        samples[i] = now_us() - t0;
    }
    return bench_median(samples, runs);
}

/* The yardstick: ping-pong through one mutex and two condition variables. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv[2];
    int turn, rounds;
} pp = {PTHREAD_MUTEX_INITIALIZER, {PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER}, 0, 0};

static void *pong(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pp.mu);
    for (int i = 0; i < pp.rounds; i++) {
        while (pp.turn != 1)
            pthread_cond_wait(&pp.cv[1], &pp.mu);
        pp.turn = 0;
        pthread_cond_signal(&pp.cv[0]);
    }
    pthread_mutex_unlock(&pp.mu);
    return NULL;
}

static double condvar_round_trip_us(int rounds)
{
    pp.rounds = rounds;
    pthread_t t;
    if (pthread_create(&t, NULL, pong, NULL) != 0)
        return -1;
    double t0 = now_us();
    pthread_mutex_lock(&pp.mu);
    for (int i = 0; i < rounds; i++) {
        pp.turn = 1;
        pthread_cond_signal(&pp.cv[1]);
        while (pp.turn != 0)
            pthread_cond_wait(&pp.cv[0], &pp.mu);
    }
    pthread_mutex_unlock(&pp.mu);
    double us = (now_us() - t0) / rounds;
    pthread_join(t, NULL);
    return us;
}

int main(int argc, char **argv)
{
    int runs = 2001;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = (int)strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--runs N]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || runs > 1000000)
        return 2;
    double *samples = malloc(sizeof(double) * (size_t)runs);
    struct kcpu_threads *pool = samples ? kcpu_threads_create(2) : NULL;
    if (!pool) {
        free(samples);
        return 1;
    }
    printf("kcpu_threads_run of empty tasks, 2 threads, median of %d runs (us)\n\n", runs);
    printf("| tasks | hot (back to back) | cold (200 us idle) |\n| ---: | ---: | ---: |\n");
    static const int TASKS[] = {2, KCPU_THREADS_COLD_TASKS - 1, KCPU_THREADS_COLD_TASKS, 64};
    for (int i = 0; i < 4; i++) {
        double hot = time_runs(pool, TASKS[i], 0, runs, samples);
        double cold = time_runs(pool, TASKS[i], 200, runs < 2000 ? runs : 2000, samples);
        printf("| %d | %.2f | %.2f |\n", TASKS[i], hot, cold);
    }
    printf("\ncondition-variable round trip between two threads (the least a wake costs): %.2f us\n",
           condvar_round_trip_us(runs));
    kcpu_threads_free(pool);
    free(samples);
    return 0;
}
