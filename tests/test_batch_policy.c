/* test_batch_policy.c - the batcher's rule (server/srv_batch_policy.h):
 * an idle instance starts at once unless the model set a queue delay and
 * the next preferred size is within reach (seen in the server lately, and
 * coming in time at the recent rate); the delay is never exceeded;
 * preferred sizes, max_batch_size, draining and batching off as before;
 * a batch runs on the submitting thread only when it is cheap and the
 * recent load fits in it. */
#include "server/srv_batch_policy.h"
#include "test.h"

static const int PREFERRED[] = {64, 16};   /* any order */

static struct srv_batch_view view(int rows, int64_t delay_us, int64_t age_us, int64_t gap_us)
{
    return (struct srv_batch_view){.batching = true, .max_batch = 64, .preferred = PREFERRED, .n_preferred = 2,
                                   .delay_ns = delay_us * 1000, .rows_waiting = rows,
                                   .oldest_age_ns = age_us * 1000, .row_gap_ns = gap_us * 1000,
                                   .peak_rows = 64};
}

static int limit_of(struct srv_batch_view v, int64_t *wait_us)
{
    int64_t wait_ns = -1;
    int limit = srv_batch_limit(&v, &wait_ns);
    *wait_us = wait_ns / 1000;
    return limit;
}

TEST(batch_policy_idle_instance_starts_at_once)
{
    int64_t wait;
    /* no delay set (the default): whatever is queued, now, up to max */
    ASSERT_EQ_INT(limit_of(view(1, 0, 0, 1), &wait), 64);
    ASSERT_EQ_INT(limit_of(view(5, 0, 0, 1), &wait), 64);
    ASSERT_EQ_INT(wait, 0);
    /* a delay set, but a lone client: the next preferred size (16) is 15
     * rows away at one row per 100 us, past the 500 us delay */
    ASSERT_EQ_INT(limit_of(view(1, 500, 0, 100), &wait), 64);
    /* a delay set, and no arrival rate known yet: no reason to wait */
    ASSERT_EQ_INT(limit_of(view(1, 500, 0, 0), &wait), 64);
    return TEST_PASS;
}

TEST(batch_policy_waits_only_within_reach)
{
    int64_t wait;
    /* 10 queued, 6 more to reach 16 at 20 us a row: 120 us, within 500 */
    ASSERT_EQ_INT(limit_of(view(10, 500, 100, 20), &wait), 0);
    ASSERT_EQ_INT(wait, 400);   /* at most until the oldest has waited 500 us */
    /* the same, once the delay is spent: go */
    ASSERT_EQ_INT(limit_of(view(10, 500, 500, 20), &wait), 64);
    ASSERT_EQ_INT(limit_of(view(10, 500, 900, 20), &wait), 64);
    /* within reach only if the missing rows come before the delay ends */
    ASSERT_EQ_INT(limit_of(view(10, 500, 390, 20), &wait), 64);   /* 120 us needed, 110 left */
    ASSERT_EQ_INT(limit_of(view(10, 500, 380, 20), &wait), 0);    /* 120 us needed, 120 left */
    /* out of reach when fewer rows than the target were lately in the server
     * at once: four clients that wait for their answers never make 16 */
    struct srv_batch_view few = view(4, 500, 0, 1);
    few.peak_rows = 4;
    ASSERT_EQ_INT(limit_of(few, &wait), 64);
    few.peak_rows = 16;
    ASSERT_EQ_INT(limit_of(few, &wait), 0);
    /* past the last preferred size the target is max_batch_size */
    ASSERT_EQ_INT(limit_of(view(20, 500, 0, 5), &wait), 16);      /* 16 reached: take it */
    struct srv_batch_view v = view(20, 500, 0, 5);
    v.n_preferred = 0;
    ASSERT_EQ_INT(limit_of(v, &wait), 0);                          /* 44 rows * 5 us = 220 us <= 500 */
    return TEST_PASS;
}

TEST(batch_policy_limits_unchanged)
{
    int64_t wait;
    ASSERT_EQ_INT(limit_of(view(64, 500, 0, 1), &wait), 64);   /* full */
    ASSERT_EQ_INT(limit_of(view(70, 500, 0, 1), &wait), 64);
    struct srv_batch_view v = view(3, 500, 0, 1);
    v.stopping = true;                                         /* draining: everything, now */
    ASSERT_EQ_INT(limit_of(v, &wait), 64);
    v = view(3, 500, 0, 1);
    v.batching = false;                                        /* one request per batch */
    ASSERT_EQ_INT(limit_of(v, &wait), 1);
    v = view(3, 500, 0, 1);
    v.max_batch = 8;                                           /* preferred sizes over max are ignored */
    ASSERT_EQ_INT(limit_of(v, &wait), 0);                      /* 5 rows to 8 at 1 us: wait */
    v.rows_waiting = 8;
    ASSERT_EQ_INT(limit_of(v, &wait), 8);
    return TEST_PASS;
}

TEST(batch_policy_peak)
{
    ASSERT_EQ_INT(srv_batch_peak(0, 5), 5);        /* up at once */
    ASSERT_EQ_INT(srv_batch_peak(64, 70), 70);
    ASSERT_EQ_INT(srv_batch_peak(64, 1), 63);      /* down slowly */
    ASSERT_EQ_INT(srv_batch_peak(2, 1), 1);
    int p = 64, n = 0;
    while (p > 4 && n < 10000)
        p = srv_batch_peak(p, 4), n++;
    ASSERT_EQ_INT(p, 4);                           /* reaches the new level */
    ASSERT_EQ_INT(n, 60);                          /* one row per arrival */
    return TEST_PASS;
}

TEST(batch_policy_row_gap)
{
    ASSERT_EQ_INT(srv_batch_row_gap(0, 800, 1), 800);          /* the first gap is taken as is */
    ASSERT_EQ_INT(srv_batch_row_gap(0, 800, 4), 200);          /* per row */
    ASSERT_EQ_INT(srv_batch_row_gap(800, 0, 1), 700);          /* a burst pulls it down by 1/8 */
    int64_t g = 100000;
    for (int i = 0; i < 64; i++)
        g = srv_batch_row_gap(g, 1000, 1);
    ASSERT_LE(g, 1100);                                        /* and converges */
    ASSERT_GE(g, 1000);
    return TEST_PASS;
}

TEST(batch_policy_inline_rows)
{
    /* 200 us at 15 us a row: 13 rows, when the load lately fits them */
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 15000, 1, 1), 13);
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 15000, 4, 13), 13);
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 15000, 1, 14), 0);    /* more rows lately: the worker */
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 15000, 14, 14), 0);   /* the first request alone is too long */
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 300000, 1, 1), 0);    /* a model slower than the budget */
    ASSERT_EQ_INT(srv_batch_inline_rows(200000, 0, 1, 1), 0);         /* cost not known yet */
    ASSERT_EQ_INT(srv_batch_inline_rows(0, 15000, 1, 1), 0);          /* switched off */
    ASSERT_EQ_INT(srv_batch_row_cost(0, 64000, 4), 16000);            /* the first batch, per row */
    ASSERT_EQ_INT(srv_batch_row_cost(16000, 8000, 1), 15000);         /* then smoothed by 1/8 */
    return TEST_PASS;
}
