/*
 * kref_linear.c - reference fully connected layer y = act(x . W^T + b (+ r)).
 */
#include "kref.h"

void kref_linear_f32(const struct k_linear *p, const float *x, const float *w,
                     const float *bias, const float *residual, float *y)
{
    for (int n = 0; n < p->n; n++)
        for (int m = 0; m < p->m; m++) {
            const float *xr = x + (int64_t)n * p->k;
            const float *wr = w + (int64_t)m * p->k;
            double acc = 0;
            for (int k = 0; k < p->k; k++)
                acc += (double)xr[k] * wr[k];
            int64_t yi = (int64_t)n * p->m + m;
            if (bias)
                acc += bias[m];
            if (residual)
                acc += residual[yi];
            y[yi] = kref_act_f32(p->act, (float)acc);
        }
}
