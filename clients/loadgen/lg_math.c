/*
 * lg_math.c - the load generator's numbers: the log-linear latency
 * histogram and its percentiles, and the random inter-arrival times of the
 * open loop's Poisson schedule.
 */
#include <math.h>
#include <string.h>

#include "lg.h"

void lg_hist_init(struct lg_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = INT64_MAX;
}

static int bucket_of(int64_t v)
{
    if (v < 0)
        v = 0;
    if (v < (int64_t)2 * LG_HIST_SUB)
        return (int)v;
    int msb = 63 - __builtin_clzll((unsigned long long)v);
    int e = msb - 7; /* v >> e lies in [LG_HIST_SUB, 2 * LG_HIST_SUB) */
    if (e > LG_HIST_MAX_EXP)
        return LG_HIST_BUCKETS - 1;
    return 2 * LG_HIST_SUB + (e - 1) * LG_HIST_SUB + (int)((v >> e) - LG_HIST_SUB);
}

/* The middle of bucket i's value range. */
static int64_t bucket_mid(int i)
{
    if (i < 2 * LG_HIST_SUB)
        return i;
    int k = i - 2 * LG_HIST_SUB, e = k / LG_HIST_SUB + 1;
    int64_t lo = (int64_t)(k % LG_HIST_SUB + LG_HIST_SUB) << e;
    return lo + ((int64_t)1 << e) / 2;
}

void lg_hist_record(struct lg_hist *h, int64_t ns)
{
    h->buckets[bucket_of(ns)]++;
    h->count++;
    h->sum += (double)ns;
    if (ns < h->min)
        h->min = ns;
    if (ns > h->max)
        h->max = ns;
}

void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from)
{
    for (int i = 0; i < LG_HIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

int64_t lg_hist_percentile(const struct lg_hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (p >= 100)
        return h->max;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < LG_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            int64_t v = bucket_mid(i);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

uint64_t lg_rand_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int64_t lg_exp_interval_ns(uint64_t *state, double rate)
{
    /* U in [0, 1) from 53 random bits; 1 - U is never 0, so the log is finite */
    double u = (double)(lg_rand_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return (int64_t)(-log1p(-u) / rate * 1e9);
}
