/* test_main.c - the runner: walks the generated registry, prints a summary.
 *
 *   build/run-tests [--gpu] [--large] [--list] [NAME_SUBSTRING...]
 *
 * Ends with the line "N passed, N failed, N skipped" and exits non-zero when
 * anything failed. */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

#define X(name) enum test_result test_##name(void);
#include "test_list.h"
#undef X

struct test_entry {
    const char *name;
    enum test_result (*fn)(void);
};

static const struct test_entry TESTS[] = {
#define X(name) {#name, test_##name},
#include "test_list.h"
#undef X
};

static uint64_t rng_state;
static bool gpu_requested;
static bool large_requested;

void test_fail_msg(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("  FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

uint64_t test_rand_u64(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

int test_rand_int(int lo, int hi)
{
    return lo + (int)(test_rand_u64() % (uint64_t)(hi - lo + 1));
}

float test_rand_float(float lo, float hi)
{
    double u = (double)(test_rand_u64() >> 11) / (double)(1ULL << 53);
    return (float)(lo + (hi - lo) * u);
}

void test_rand_fill(float *x, int64_t count, float lo, float hi)
{
    for (int64_t i = 0; i < count; i++)
        x[i] = test_rand_float(lo, hi);
    if (count > 0 && x[0] == 0.0f)
        x[0] = hi;
}

double test_rel_error(const float *a, const float *b, int64_t count)
{
    double max_diff = 0, max_ref = 1e-30;
    for (int64_t i = 0; i < count; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(a[i]) != isnan(b[i]))
            return INFINITY;
        if (d > max_diff)
            max_diff = d;
        if (fabs((double)b[i]) > max_ref)
            max_ref = fabs((double)b[i]);
    }
    return max_diff / max_ref;
}

int64_t test_count_nonfinite(const float *x, int64_t count)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < count; i++)
        bad += !isfinite(x[i]);
    return bad;
}

bool test_gpu_requested(void) { return gpu_requested; }

bool test_large_requested(void) { return large_requested; }

const char *test_root(void) { return "."; }

static bool selected(const char *name, int argc, char **argv)
{
    bool any_filter = false;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        any_filter = true;
        if (strstr(name, argv[i]))
            return true;
    }
    return !any_filter;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    const char *env_seed = getenv("INFERD_TEST_SEED");
    if (env_seed)
        seed = strtoull(env_seed, NULL, 10);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gpu") == 0)
            gpu_requested = true;
        if (strcmp(argv[i], "--large") == 0)
            large_requested = true;
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t t = 0; t < sizeof(TESTS) / sizeof(TESTS[0]); t++)
                printf("%s\n", TESTS[t].name);
            return 0;
        }
    }
    printf("test seed %" PRIu64 " (set INFERD_TEST_SEED to repeat)\n", seed);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int passed = 0, failed = 0, skipped = 0;
    for (size_t t = 0; t < sizeof(TESTS) / sizeof(TESTS[0]); t++) {
        if (!selected(TESTS[t].name, argc, argv))
            continue;
        rng_state = (seed ^ (0x9E3779B97F4A7C15ULL * (t + 1))) | 1;
        printf("%s\n", TESTS[t].name);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        enum test_result r = TESTS[t].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        const char *word = r == TEST_PASS ? "ok" : r == TEST_SKIP ? "skipped" : "FAILED";
        printf("  %s (%.0f ms)\n", word, ms);
        passed += r == TEST_PASS;
        failed += r == TEST_FAIL;
        skipped += r == TEST_SKIP;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
