/*
 * calib.c - activation statistics and scale selection for INT8
 * calibration (see precision/calib.h).
 *
 * Entropy follows the TensorRT / MXNet recipe on the histogram of |x|: for
 * every candidate threshold of i bins (i >= 128), P is the first i bins with
 * everything beyond folded into bin i - 1; Q merges the first i bins (without
 * the outliers) into 128 levels and spreads each level's mass evenly over
 * its bins that are non-zero in P. The threshold with the smallest
 * KL(P || Q) wins: clipping outliers is worth it while it buys resolution
 * for the bulk of the distribution. As in NVIDIA's pytorch-quantization,
 * the first bin counts as much as the second: after a ReLU half of all
 * values are exact zeros, and that spike would otherwise make every
 * threshold look alike except the tiny ones that resolve it.
 */
#include "runtime/precision/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/graph.h"

static const char *const NAMES[] = {"max", "percentile", "entropy"};

bool rt_calib_method_parse(const char *name, enum rt_calib_method *out)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, NAMES[i]) == 0) {
            *out = (enum rt_calib_method)i;
            return true;
        }
    }
    return false;
}

const char *rt_calib_method_name(enum rt_calib_method m) { return (unsigned)m < 3 ? NAMES[m] : "?"; }

bool rt_calib_init(struct rt_calib *c, int n_tensors)
{
    memset(c, 0, sizeof(*c));
    c->t = calloc((size_t)n_tensors + 1, sizeof(*c->t));
    c->n = n_tensors;
    return c->t != NULL;
}

void rt_calib_free(struct rt_calib *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->t[i].hist);
    free(c->t);
    memset(c, 0, sizeof(*c));
}

void rt_calib_add(struct rt_calib *c, int t, const float *x, int64_t count)
{
    struct rt_calib_tensor *ct = &c->t[t];
    if (c->pass == 0) {
        double m = ct->max_abs;
        for (int64_t i = 0; i < count; i++) {
            double a = fabs((double)x[i]);
            if (a > m && isfinite(a))
                m = a;
        }
        ct->max_abs = m;
        ct->count += (uint64_t)count;
        return;
    }
    if (!ct->hist && !(ct->hist = calloc(RT_CALIB_BINS, sizeof(uint64_t)))) {
        c->failed = true;
        return;
    }
    double per = ct->max_abs > 0 ? RT_CALIB_BINS / ct->max_abs : 0;
    for (int64_t i = 0; i < count; i++) {
        double a = fabs((double)x[i]);
        if (a != a)
            continue;
        int b = (int)(a * per);
        ct->hist[b < RT_CALIB_BINS ? b : RT_CALIB_BINS - 1]++;
    }
}

void rt_calib_next_pass(struct rt_calib *c) { c->pass = 1; }

bool rt_calib_seen(const struct rt_calib *c, int t) { return c->t[t].count > 0; }

int rt_calib_percentile_bins(const uint64_t *hist, int n, double percentile)
{
    double total = 0, cum = 0;
    for (int i = 0; i < n; i++)
        total += (double)hist[i];
    double target = total * percentile / 100.0;
    for (int i = 0; i < n; i++) {
        cum += (double)hist[i];
        if (cum >= target)
            return i + 1;
    }
    return n;
}

/* KL(P || Q) of two unnormalised distributions over n bins; an empty Q
 * bin where P has mass costs as if Q held 1e-10 of the total there. */
static double kl_divergence(const double *p, const double *q, int n)
{
    double sp = 0, sq = 0, kl = 0;
    for (int i = 0; i < n; i++) {
        sp += p[i];
        sq += q[i];
    }
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0)
            continue;
        double pi = p[i] / sp, qi = q[i] / sq;
        kl += pi * log(pi / (qi > 1e-10 ? qi : 1e-10));
    }
    return kl;
}

int rt_calib_entropy_bins(const uint64_t *hist, int n)
{
    if (n <= RT_CALIB_LEVELS)
        return n;
    double *p = malloc(sizeof(double) * (size_t)n), *q = malloc(sizeof(double) * (size_t)n);
    double *beyond = malloc(sizeof(double) * ((size_t)n + 1));   /* mass of bins >= i */
    double *h = malloc(sizeof(double) * (size_t)n);
    if (!p || !q || !beyond || !h) {
        free(p), free(q), free(beyond), free(h);
        return n;
    }
    for (int i = 0; i < n; i++)
        h[i] = (double)hist[i];
    h[0] = h[1];
    beyond[n] = 0;
    for (int i = n - 1; i >= 0; i--)
        beyond[i] = beyond[i + 1] + h[i];
    int best = n;
    double best_kl = INFINITY;
    for (int i = RT_CALIB_LEVELS; i <= n; i++) {
        for (int k = 0; k < i; k++)
            p[k] = h[k];
        p[i - 1] += beyond[i];
        int merged = i / RT_CALIB_LEVELS;
        for (int j = 0; j < RT_CALIB_LEVELS; j++) {
            int start = j * merged, stop = j == RT_CALIB_LEVELS - 1 ? i : start + merged;
            double sum = 0;
            int nonzero = 0;
            for (int k = start; k < stop; k++) {
                sum += h[k];
                nonzero += p[k] != 0;
            }
            for (int k = start; k < stop; k++)
                q[k] = p[k] != 0 ? sum / nonzero : 0;
        }
        double kl = kl_divergence(p, q, i);
        if (kl <= best_kl) {   /* ties: the widest range */
            best_kl = kl;
            best = i;
        }
    }
    free(p), free(q), free(beyond), free(h);
    return best;
}

float rt_calib_scale(const struct rt_calib *c, int t, enum rt_calib_method m, double percentile)
{
    const struct rt_calib_tensor *ct = &c->t[t];
    double threshold = ct->max_abs;
    if (m != RT_CALIB_MAX && ct->hist && ct->max_abs > 0) {
        int bins = m == RT_CALIB_PERCENTILE ? rt_calib_percentile_bins(ct->hist, RT_CALIB_BINS, percentile)
                                            : rt_calib_entropy_bins(ct->hist, RT_CALIB_BINS);
        threshold = ct->max_abs * bins / RT_CALIB_BINS;
    }
    return threshold > 0 ? (float)(threshold / 127.0) : 1.0f / 127.0f;
}

void rt_calib_scales(const struct rt_calib *c, const struct rt_graph *g, enum rt_calib_method m,
                     double percentile, float *scales)
{
    for (int t = 0; t < g->n_tensors; t++)
        scales[t] = t < c->n && rt_calib_seen(c, t) ? rt_calib_scale(c, t, m, percentile) : 0;
    /* in node order, so chains (pool -> flatten) inherit from the start */
    for (int i = 0; i < g->n_nodes; i++) {
        if (rt_op_has(g->nodes[i].op, RT_T_KEEPS_SCALE))
            scales[g->nodes[i].output] = scales[g->nodes[i].inputs[0]];
    }
}
