/*
 * calib.h - activation statistics for INT8 calibration and the three
 * ways to turn them into a scale (internal; used by inferctl quantize).
 *
 *     struct rt_calib c;
 *     rt_calib_init(&c, n_tensors);
 *     // pass 1: feed every tensor of every calibration batch
 *     rt_calib_add(&c, t, data, count);   ...
 *     rt_calib_next_pass(&c);             // not needed for RT_CALIB_MAX
 *     // pass 2: the same data again, now binned in [0, max |x|]
 *     rt_calib_add(&c, t, data, count);   ...
 *     float s = rt_calib_scale(&c, t, RT_CALIB_ENTROPY, 0);
 *     rt_calib_free(&c);
 *
 * Scales are thresholds over 127: max |x|; the given percentile of |x|;
 * or the threshold minimising the KL divergence between the clipped
 * distribution of |x| and its 128-level quantisation (TensorRT's entropy
 * calibration). Histograms have RT_CALIB_BINS bins over [0, max |x|].
 */
#ifndef RT_CALIB_H
#define RT_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#define RT_CALIB_BINS 2048
#define RT_CALIB_LEVELS 128   /* 0 .. 127: the non-negative INT8 levels */

enum rt_calib_method { RT_CALIB_MAX = 0, RT_CALIB_PERCENTILE, RT_CALIB_ENTROPY };

bool rt_calib_method_parse(const char *name, enum rt_calib_method *out);
const char *rt_calib_method_name(enum rt_calib_method m);

struct rt_calib_tensor {
    double max_abs;
    uint64_t count;
    uint64_t *hist;                /* RT_CALIB_BINS, allocated in the second pass */
};

struct rt_calib {
    int n;
    int pass;                      /* 0: maxima, 1: histograms */
    bool failed;                   /* out of memory in a histogram pass */
    struct rt_calib_tensor *t;
};

bool rt_calib_init(struct rt_calib *c, int n_tensors);
void rt_calib_free(struct rt_calib *c);
/* Adds count values of tensor t (NaNs ignored). */
void rt_calib_add(struct rt_calib *c, int t, const float *x, int64_t count);
void rt_calib_next_pass(struct rt_calib *c);
/* Whether tensor t received any data. */
bool rt_calib_seen(const struct rt_calib *c, int t);
/* The scale of tensor t; percentile in (0, 100] for RT_CALIB_PERCENTILE.
 * A tensor that was always 0 gets 1 / 127. */
float rt_calib_scale(const struct rt_calib *c, int t, enum rt_calib_method m, double percentile);

/* Scales for every tensor of graph g the statistics cover (0 for the
 * others), with max pooling, flatten and reshape outputs given their
 * input's scale, as the INT8 plan requires. */
struct rt_graph;
void rt_calib_scales(const struct rt_calib *c, const struct rt_graph *g, enum rt_calib_method m,
                     double percentile, float *scales);

/* Thresholds in bins (the threshold is bins * bin_width), exposed for
 * tests: the bin count whose upper edge reaches the percentile, and the
 * KL-optimal bin count in [RT_CALIB_LEVELS, n]. */
int rt_calib_percentile_bins(const uint64_t *hist, int n, double percentile);
int rt_calib_entropy_bins(const uint64_t *hist, int n);

#endif /* RT_CALIB_H */
