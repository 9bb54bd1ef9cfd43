/* test_runner.c - the runner's own behaviour: the per-test time limit. */
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "client_harness.h"
#include "test.h"

/* The runner is started again on this test alone with a 1 s limit; there
 * (INFERD_TEST_RUNNER_CHILD set) the test sleeps far past it. The run must
 * end at the limit, fail, name the test, and keep the summary line last. */
TEST(runner_timeout_names_the_test)
{
    if (getenv("INFERD_TEST_RUNNER_CHILD")) {
        sleep(30);
        return TEST_PASS;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ASSERT_TRUE(n > 0);
    self[n] = '\0';
    const char *args[] = {"runner_timeout_names_the_test", NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    setenv("INFERD_TEST_RUNNER_CHILD", "1", 1);
    setenv("INFERD_TEST_TIMEOUT", "1", 1);
    struct client_run r;
    bool started = client_run_tool(self, args, &r);
    unsetenv("INFERD_TEST_RUNNER_CHILD");
    unsetenv("INFERD_TEST_TIMEOUT");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT_TRUE(started);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("  child run: status %d after %.1f s\n", r.status, s);
    bool named = strstr(r.out, "\nTIMEOUT runner_timeout_names_the_test after 1 s") != NULL;
    size_t len = strlen(r.out);
    const char *summary = "\n0 passed, 1 failed, 0 skipped\n";
    bool summary_last = len >= strlen(summary) && strcmp(r.out + len - strlen(summary), summary) == 0;
    int status = r.status;
    if (!named || !summary_last)
        printf("  child output:\n%s", r.out);
    client_run_free(&r);
    ASSERT_EQ_INT(status, 1);
    ASSERT_TRUE(named);
    ASSERT_TRUE(summary_last);
    ASSERT_LE(s, 10.0); /* stopped at the limit, not after the 30 s sleep */
    return TEST_PASS;
}
