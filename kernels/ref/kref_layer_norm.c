/*
 * kref_layer_norm.c - reference layer normalisation (k_layer_norm): the
 * mean, then the variance about it, in double, each output rounded once.
 */
#include <math.h>

#include "kref.h"

void kref_layer_norm_f32(const struct k_layer_norm *p, const float *x, const float *scale, const float *bias,
                         float *y)
{
    for (int64_t r = 0; r < p->rows; r++) {
        const float *xr = x + r * p->cols;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < p->cols; i++)
            sum += xr[i];
        double mean = sum / (double)p->cols;
        for (int64_t i = 0; i < p->cols; i++)
            sq += (xr[i] - mean) * (xr[i] - mean);
        double inv = 1 / sqrt(sq / (double)p->cols + p->eps);
        if (p->out == K_LN_MEAN) {
            y[r] = (float)mean;
            continue;
        }
        if (p->out == K_LN_INV_STD) {
            y[r] = (float)inv;
            continue;
        }
        for (int64_t i = 0; i < p->cols; i++)
            y[r * p->cols + i] = (float)((xr[i] - mean) * inv * (scale ? scale[i] : 1.0) + (bias ? bias[i] : 0.0));
    }
}
