/*
 * bench_util.h - what the benchmark programs share: a monotonic clock, the
 * median of a set of times, an integer option, an allocation that exits on
 * failure, seeded uniform inputs, and the load average they print under
 * their tables.
 * Header-only: each benchmark is a program of one file or two
 * (mk/build.mk's bench_% rules).
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's order for doubles, ascending. */
static inline int bench_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0 .. n) and returns its median. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The value after option argv[*i] (moving *i onto it), an integer in
 * [lo, hi]; anything else exits with status 2 and a message naming prog. */
static inline int bench_arg_int(const char *prog, int argc, char **argv, int *i, int lo, int hi)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", prog, argv[*i]);
        exit(2);
    }
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "%s: %s takes %d to %d, not %s\n", prog, argv[*i - 1], lo, hi, argv[*i]);
        exit(2);
    }
    return (int)v;
}

/* bytes (rounded up to 64) aligned to 64; out of memory exits with
 * status 1 and a message naming prog. */
static inline void *bench_alloc(const char *prog, size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 64) / 64 * 64);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, bytes);
        exit(1);
    }
    return p;
}

/* v[0 .. n) uniform in [lo, hi), the same for the same seed (a xorshift
 * generator: fast enough for inputs of hundreds of megabytes). */
static inline void bench_fill_uniform(float *v, size_t n, uint32_t seed, float lo, float hi)
{
    uint32_t s = seed ? seed : 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v[i] = lo + (hi - lo) * (float)(s >> 8) * (1.0f / 16777216.0f);
    }
}

/* /proc/loadavg's line (without its newline) in buf, or "unknown". */
static inline const char *bench_load_average(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/loadavg", "r");
    int ok = f && fgets(buf, (int)cap, f);
    if (f)
        fclose(f);
    if (!ok)
        return "unknown";
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

#endif /* BENCH_UTIL_H */
