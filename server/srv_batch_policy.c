/* srv_batch_policy.c - the batcher's rule (see srv_batch_policy.h). */
#include "srv_batch_policy.h"

int srv_batch_limit(const struct srv_batch_view *v, int64_t *wait_ns)
{
    *wait_ns = 0;
    if (!v->batching)
        return 1;
    if (v->rows_waiting >= v->max_batch || v->stopping || v->delay_ns <= 0)
        return v->max_batch;
    int reached = 0, next = v->max_batch;   /* largest preferred size reached, smallest not yet */
    for (int i = 0; i < v->n_preferred; i++) {
        int p = v->preferred[i];
        if (p > v->max_batch)
            continue;
        if (p <= v->rows_waiting && p > reached)
            reached = p;
        if (p > v->rows_waiting && p < next)
            next = p;
    }
    if (reached)
        return reached;
    int64_t left = v->delay_ns - v->oldest_age_ns;
    int64_t missing = next - v->rows_waiting;
    if (left <= 0 || next > v->peak_rows || v->row_gap_ns <= 0 || missing * v->row_gap_ns > left)
        return v->max_batch;   /* the delay is spent, or the next size is out of reach */
    *wait_ns = left;
    return 0;
}

int64_t srv_batch_row_gap(int64_t smoothed_ns, int64_t gap_ns, int rows)
{
    int64_t per_row = gap_ns / (rows > 0 ? rows : 1);
    return smoothed_ns <= 0 ? per_row : smoothed_ns + (per_row - smoothed_ns) / 8;
}

int srv_batch_peak(int peak, int rows_now)
{
    /* up at once, down by one row per arrival: a burst of N rows is
     * remembered for about N arrivals */
    return rows_now >= peak ? rows_now : peak - 1;
}

int64_t srv_batch_row_cost(int64_t smoothed_ns, int64_t infer_ns, int rows)
{
    return srv_batch_row_gap(smoothed_ns, infer_ns, rows);
}

int srv_batch_inline_rows(int64_t budget_ns, int64_t row_ns, int first_rows, int peak_rows)
{
    if (budget_ns <= 0 || row_ns <= 0)
        return 0;
    int64_t rows = budget_ns / row_ns;
    if (rows < first_rows || rows < peak_rows)
        return 0;
    return rows > 1 << 30 ? 1 << 30 : (int)rows;
}
