/* test_main.c - the runner: walks the generated registry, prints a summary.
 *
 *   build/run-tests [--gpu] [--large] [--list] [--help] [NAME_SUBSTRING...]
 *
 * Ends with the line "N passed, N failed, N skipped" and exits non-zero when
 * anything failed. Each test runs under a time limit (USAGE below). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

static const char USAGE[] =
    "usage: run-tests [--gpu] [--large] [--list] [--help] [NAME_SUBSTRING|^NAME_PREFIX...]\n"
    "  NAME_SUBSTRING   run only the tests whose name holds one of them\n"
    "  ^NAME_PREFIX     or whose name starts with it\n"
    "  --gpu            (tests/gpu_check.sh passes it; GPU tests run wherever a\n"
    "                   device is usable and skip with the reason elsewhere)\n"
    "  --large          run the large_ tests (generated models; make test-large)\n"
    "  --list           print the test names and exit\n"
    "environment:\n"
    "  INFERD_TEST_SEED=N     the random seed (printed first; the time by default)\n"
    "  INFERD_TEST_TIMEOUT=S  each test's time limit in seconds (default 120; 0: none).\n"
    "                         A test past it prints \"TIMEOUT NAME after S s\" and the\n"
    "                         run ends there with status 1, counting it as failed.\n";

#define DEFAULT_TIMEOUT_S 120

static uint64_t rng_state;
static bool gpu_requested;
static bool large_requested;

/* The time limit. Tests run in this process, so a hung one cannot be
 * abandoned while the rest go on: a watchdog thread ends the run, naming the
 * test, with the summary line (that test counted as failed) still last. */
static long timeout_s = DEFAULT_TIMEOUT_S;
static struct {
    pthread_mutex_t lock;
    const char *test;            /* the test running; NULL between tests */
    struct timespec deadline;    /* CLOCK_MONOTONIC */
    int passed, failed, skipped;
} run = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool past(const struct timespec *now, const struct timespec *deadline)
{
    return now->tv_sec > deadline->tv_sec ||
           (now->tv_sec == deadline->tv_sec && now->tv_nsec >= deadline->tv_nsec);
}

static void *watchdog(void *arg)
{
    for (;;) {
        struct timespec tick = {.tv_nsec = 100000000}, now; /* 100 ms */
        nanosleep(&tick, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&run.lock);
        if (run.test && past(&now, &run.deadline)) {
            char msg[512];
            int n = snprintf(msg, sizeof(msg),
                             "TIMEOUT %s after %ld s (INFERD_TEST_TIMEOUT); the tests after it did not run\n"
                             "%d passed, %d failed, %d skipped\n",
                             run.test, timeout_s, run.passed, run.failed + 1, run.skipped);
            /* write(2), not stdio: the hung test may hold stdout's lock.
             * Every line before is out already (stdout is line-buffered). */
            ssize_t w = write(STDOUT_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
            (void)w;
            _exit(1);
        }
        pthread_mutex_unlock(&run.lock);
    }
    return NULL;
}

void test_fail_msg(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("  FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

double test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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

double test_scaled_error(const float *got, const float *want, const float *scale, int64_t count)
{
    double max_diff = 0, max_scale = 1e-30;
    for (int64_t i = 0; i < count; i++) {
        if (isnan(got[i]) != isnan(want[i]))
            return INFINITY;
        max_diff = fmax(max_diff, fabs((double)got[i] - (double)want[i]));
        max_scale = fmax(max_scale, fabs((double)scale[i]));
    }
    return max_diff / max_scale;
}

double test_rel_error(const float *a, const float *b, int64_t count) { return test_scaled_error(a, b, b, count); }

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
        const char *at = strstr(name, argv[i][0] == '^' ? argv[i] + 1 : argv[i]);
        if (at && (argv[i][0] != '^' || at == name))
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
    const char *env_timeout = getenv("INFERD_TEST_TIMEOUT");
    if (env_timeout) {
        char *end;
        errno = 0;
        timeout_s = strtol(env_timeout, &end, 10);
        if (errno || end == env_timeout || *end || timeout_s < 0) {
            fprintf(stderr, "run-tests: INFERD_TEST_TIMEOUT=%s is not a number of seconds\n%s", env_timeout, USAGE);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gpu") == 0)
            gpu_requested = true;
        if (strcmp(argv[i], "--large") == 0)
            large_requested = true;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t t = 0; t < sizeof(TESTS) / sizeof(TESTS[0]); t++)
                printf("%s\n", TESTS[t].name);
            return 0;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("test seed %" PRIu64 " (set INFERD_TEST_SEED to repeat)\n", seed);
    pthread_t watcher;
    if (timeout_s > 0 && pthread_create(&watcher, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "run-tests: cannot start the time-limit thread\n");
        return 2;
    }

    for (size_t t = 0; t < sizeof(TESTS) / sizeof(TESTS[0]); t++) {
        if (!selected(TESTS[t].name, argc, argv))
            continue;
        rng_state = (seed ^ (0x9E3779B97F4A7C15ULL * (t + 1))) | 1;
        printf("%s\n", TESTS[t].name);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_mutex_lock(&run.lock);
        run.test = TESTS[t].name;
        run.deadline = (struct timespec){t0.tv_sec + timeout_s, t0.tv_nsec};
        pthread_mutex_unlock(&run.lock);
        enum test_result r = TESTS[t].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        pthread_mutex_lock(&run.lock);
        run.test = NULL;
        run.passed += r == TEST_PASS;
        run.failed += r == TEST_FAIL;
        run.skipped += r == TEST_SKIP;
        pthread_mutex_unlock(&run.lock);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        const char *word = r == TEST_PASS ? "ok" : r == TEST_SKIP ? "skipped" : "FAILED";
        printf("  %s (%.0f ms)\n", word, ms);
    }
    /* (the watchdog reads the counts only while a test runs) */
    printf("%d passed, %d failed, %d skipped\n", run.passed, run.failed, run.skipped);
    return run.failed ? 1 : 0;
}
