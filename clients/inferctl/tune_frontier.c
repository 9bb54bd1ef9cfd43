/*
 * tune_frontier.c - how `inferctl tune` chooses: the concurrency levels to
 * measure, the throughput/latency frontier of what it measured, and the
 * points that meet the latency budget, best first. No I/O: the unit tests
 * (tests/test_tune.c) call these directly.
 */
#include "tune.h"

int tune_levels(int a, int b, int *out, int cap)
{
    int n = 0;
    for (long c = a; c < b && n < cap - 1; c *= 2)
        out[n++] = (int)c;
    if (n < cap)
        out[n++] = b;
    return n;
}

static bool counts(const struct tune_point *p) { return p->errors == 0 && p->throughput > 0; }

/* Whether a is at least as good as b in both and better in one. */
static bool dominates(const struct tune_point *a, const struct tune_point *b)
{
    return a->throughput >= b->throughput && a->p99_ms <= b->p99_ms &&
           (a->throughput > b->throughput || a->p99_ms < b->p99_ms);
}

void tune_frontier(const struct tune_point *p, int n, bool *frontier)
{
    for (int i = 0; i < n; i++) {
        frontier[i] = counts(&p[i]);
        for (int j = 0; j < n && frontier[i]; j++)
            frontier[i] = !(j != i && counts(&p[j]) && dominates(&p[j], &p[i]));
    }
}

/* -1 when a ranks first: the comparison of tune_rank's order. */
static int better(const struct tune_point *a, const struct tune_point *b)
{
    if (a->throughput != b->throughput)
        return a->throughput > b->throughput ? -1 : 1;
    if (a->p99_ms != b->p99_ms)
        return a->p99_ms < b->p99_ms ? -1 : 1;
    if (a->cfg.instances != b->cfg.instances)
        return a->cfg.instances < b->cfg.instances ? -1 : 1;
    if (a->cfg.max_batch != b->cfg.max_batch)
        return a->cfg.max_batch < b->cfg.max_batch ? -1 : 1;
    if (a->cfg.delay_us != b->cfg.delay_us)
        return a->cfg.delay_us < b->cfg.delay_us ? -1 : 1;
    return 0;
}

int tune_rank(const struct tune_point *p, int n, double budget_ms, int *order)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (counts(&p[i]) && p[i].p99_ms <= budget_ms)
            order[m++] = i;
    }
    /* insertion sort: a few hundred points at most */
    for (int i = 1; i < m; i++) {
        int v = order[i], j = i;
        for (; j > 0 && better(&p[v], &p[order[j - 1]]) < 0; j--)
            order[j] = order[j - 1];
        order[j] = v;
    }
    return m;
}
