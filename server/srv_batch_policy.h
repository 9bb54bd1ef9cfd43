/*
 * srv_batch_policy.h - when an idle model instance starts a batch, and how
 * large: the batcher's rule, as a pure function (tests/test_batch_policy.c).
 *
 * Work-conserving: an idle instance takes what is queued at once, up to
 * max_batch_size. Requests that arrive while every instance is busy queue
 * up and so form the next batch. A queue delay is spent only when the
 * model sets one (max_queue_delay_us > 0; the default is 0, as Triton's),
 * only by an idle instance, only until the oldest request has waited that
 * long, and only while the next preferred batch size is within reach: as
 * many rows have lately been in the server at once (queued or running),
 * and the rows still missing, at the recent arrival rate, would come before
 * the delay runs out. A lone client, or a few that each wait for their
 * answer before sending again, never make the batcher wait for rows that
 * cannot come.
 *
 * Who runs the batch: an instance's batch normally runs on its own worker
 * thread. When an instance is idle and the batch is cheap (its rows, at the
 * recent compute time per row, fit in the inline budget), the thread that
 * submits the request runs it itself: waking the worker and waking the
 * submitter's connection again would cost about as much as the batch.
 */
#ifndef SRV_BATCH_POLICY_H
#define SRV_BATCH_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* What the rule looks at, read under the batcher's lock. */
struct srv_batch_view {
    bool batching;              /* false: one request per batch */
    bool stopping;              /* draining: take everything */
    int max_batch;              /* max_batch_size */
    const int *preferred;       /* preferred_batch_sizes, any order */
    int n_preferred;
    int64_t delay_ns;           /* max_queue_delay_us * 1000 */
    int rows_waiting;           /* >= 1: rows of the queued requests */
    int64_t oldest_age_ns;      /* how long the oldest queued request has waited */
    int64_t row_gap_ns;         /* smoothed time between arriving rows; 0: not known yet */
    int peak_rows;              /* most rows lately in the server at once (srv_batch_peak) */
};

/* Rows the next batch may hold now (>= 1), or 0 to wait: then *wait_ns is
 * the longest wait before the rule must be asked again (an arrival asks it
 * sooner). */
int srv_batch_limit(const struct srv_batch_view *v, int64_t *wait_ns);

/* The smoothed gap between arriving rows after `rows` arrived `gap_ns`
 * after the previous request (exponential average, weight 1/8). */
int64_t srv_batch_row_gap(int64_t smoothed_ns, int64_t gap_ns, int rows);

/* The peak of rows in the server at once after an arrival that left
 * `rows_now` rows queued or running: up at once, down one row per arrival. */
int srv_batch_peak(int peak, int rows_now);

/* The smoothed compute time per row after a batch of `rows` rows took
 * `infer_ns` (the same exponential average as srv_batch_row_gap). */
int64_t srv_batch_row_cost(int64_t smoothed_ns, int64_t infer_ns, int rows);

/* How many rows the submitting thread may run itself when an instance is
 * idle: as many as fit in budget_ns at row_ns each, or 0 (hand the batch to
 * the instance's worker) when the budget is 0, the cost per row is not
 * known yet (row_ns <= 0), the first queued request's first_rows do not
 * fit, or more rows than fit were lately in the server at once (peak_rows,
 * srv_batch_peak): under that load the worker's larger batches cost less
 * per row than the hand-offs they take. */
int srv_batch_inline_rows(int64_t budget_ns, int64_t row_ns, int first_rows, int peak_rows);

#endif /* SRV_BATCH_POLICY_H */
