/* test_srv_topk.c - top-k of the classification extension and the classify
 * endpoint (server/srv_topk.h) against a plain selection: random rows with
 * ties and NaNs, every k, and a row of 100 000 classes (the old selection
 * was cubic there). */
#include <stdlib.h>

#include "runtime/rt_status.h"
#include "server/srv_topk.h"
#include "test.h"

/* The reference: repeated selection of the best unused index. */
static void naive_top_k(const float *x, int n, int k, int *idx, char *used)
{
    for (int i = 0; i < n; i++)
        used[i] = 0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            if (used[i])
                continue;
            bool nan_i = x[i] != x[i], nan_b = best >= 0 && x[best] != x[best];
            if (best < 0 || (nan_b && !nan_i) || (!nan_i && !nan_b && x[i] > x[best]))
                best = i;
        }
        used[best] = 1;
        idx[j] = best;
    }
}

TEST(srv_topk_matches_selection)
{
    enum { MAX_N = 300 };
    float x[MAX_N];
    int got[MAX_N], want[MAX_N];
    char used[MAX_N];
    for (int round = 0; round < 400; round++) {
        int n = test_rand_int(1, MAX_N), k = test_rand_int(1, n);
        for (int i = 0; i < n; i++)
            x[i] = (float)test_rand_int(-20, 20) / 4.0f;   /* many ties */
        if (round % 3 == 0)
            x[test_rand_int(0, n - 1)] = NAN;
        srv_top_k(x, n, k, got);
        naive_top_k(x, n, k, want, used);
        for (int j = 0; j < k; j++)
            TEST_FAIL_IF(got[j] != want[j], "n %d k %d: place %d is index %d, want %d", n, k, j, got[j], want[j]);
    }
    return TEST_PASS;
}

TEST(srv_topk_many_classes)
{
    enum { N = 100000, K = 5000 };
    float *x = malloc(sizeof(float) * N);
    int *idx = malloc(sizeof(int) * K);
    RT_ASSERT(x && idx);
    for (int i = 0; i < N; i++)
        x[i] = (float)i;   /* ascending: every new one enters the heap */
    srv_top_k(x, N, K, idx);
    enum test_result r = TEST_PASS;
    for (int j = 0; j < K && r == TEST_PASS; j++) {
        if (idx[j] != N - 1 - j) {
            test_fail_msg(__FILE__, __LINE__, "place %d is %d, want %d", j, idx[j], N - 1 - j);
            r = TEST_FAIL;
        }
    }
    free(x);
    free(idx);
    return r;
}
