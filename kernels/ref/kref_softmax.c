/*
 * kref_softmax.c - reference softmax (and log-softmax) along one axis,
 * max-subtracted, in double.
 */
#include <math.h>

#include "kref.h"

void kref_softmax_f32(const struct k_softmax *p, const float *x, float *y)
{
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t in = 0; in < p->inner; in++) {
            const float *xs = x + o * p->axis_len * p->inner + in;
            float *ys = y + o * p->axis_len * p->inner + in;
            double mx = -INFINITY, sum = 0;
            for (int64_t a = 0; a < p->axis_len; a++)
                mx = fmax(mx, xs[a * p->inner]);
            for (int64_t a = 0; a < p->axis_len; a++)
                sum += exp((double)xs[a * p->inner] - mx);
            for (int64_t a = 0; a < p->axis_len; a++) {
                double d = (double)xs[a * p->inner] - mx;
                ys[a * p->inner] = (float)(p->log ? d - log(sum) : exp(d) / sum);
            }
        }
}
