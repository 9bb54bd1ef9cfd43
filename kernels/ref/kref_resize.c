/*
 * kref_resize.c - reference resampling (k_resize): every output element
 * computed from the definitions in kernel_types.h, in double. The oracle
 * for kcpu_resize.c.
 */
#include <math.h>
#include <stdbool.h>

#include "kref.h"

#define TAPS_MAX 4

/* The input coordinate output position o maps to along axis a. */
static double source(const struct k_resize *p, const struct k_resize_axis *a, int64_t o)
{
    switch (p->coord) {
    case K_COORD_HALF_PIXEL: return ((double)o + 0.5) / a->scale - 0.5;
    case K_COORD_PYTORCH_HALF_PIXEL: return a->resized > 1 ? ((double)o + 0.5) / a->scale - 0.5 : 0;
    case K_COORD_ALIGN_CORNERS: return a->resized != 1 ? (double)o * (double)(a->in - 1) / (a->resized - 1) : 0;
    case K_COORD_ASYMMETRIC: return (double)o / a->scale;
    case K_COORD_TF_HALF_PIXEL_FOR_NN: return ((double)o + 0.5) / a->scale;
    }
    return 0;
}

/* Keys' cubic convolution kernel at distance d. */
static double cubic(double a, double d)
{
    d = fabs(d);
    if (d <= 1)
        return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2)
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

/* The input positions along axis a that output position o reads (clamped
 * into the axis) and their weights; returns how many. */
static int taps(const struct k_resize *p, const struct k_resize_axis *a, int64_t o, int64_t *at, double *w)
{
    double c = source(p, a, o), f = floor(c), t = c - f;
    int n = 0;
    int64_t first = (int64_t)f;
    switch (p->mode) {
    case K_RESIZE_NEAREST: {
        bool up = a->round == K_ROUND_CEIL ? t > 0
                : a->round == K_ROUND_FLOOR ? false
                : a->round == K_ROUND_PREFER_CEIL ? t >= 0.5 : t > 0.5;
        at[0] = first + up;
        w[0] = 1;
        n = 1;
        break;
    }
    case K_RESIZE_LINEAR:
        at[0] = first, w[0] = 1 - t;
        at[1] = first + 1, w[1] = t;
        n = 2;
        break;
    case K_RESIZE_CUBIC:
        for (int k = 0; k < 4; k++) {
            at[k] = first - 1 + k;
            w[k] = cubic(p->cubic_a, t - (k - 1));
        }
        n = 4;
        break;
    }
    double sum = 0;
    for (int k = 0; k < n; k++) {
        bool outside = at[k] < 0 || at[k] >= a->in;
        if (outside && p->exclude_outside)
            w[k] = 0;
        at[k] = at[k] < 0 ? 0 : at[k] >= a->in ? a->in - 1 : at[k];
        sum += w[k];
    }
    if (p->exclude_outside && sum != 0)
        for (int k = 0; k < n; k++)
            w[k] /= sum;
    return n;
}

void kref_resize_f32(const struct k_resize *p, const float *x, float *y)
{
    const struct k_resize_axis *rows = &p->axis[0], *cols = &p->axis[1];
    for (int64_t s = 0; s < p->n; s++) {
        const float *plane = x + s * rows->in * cols->in;
        for (int64_t oy = 0; oy < rows->out; oy++) {
            int64_t ay[TAPS_MAX], ax[TAPS_MAX];
            double wy[TAPS_MAX], wx[TAPS_MAX];
            int ny = taps(p, rows, oy, ay, wy);
            for (int64_t ox = 0; ox < cols->out; ox++) {
                int nx = taps(p, cols, ox, ax, wx);
                double v = 0;
                for (int i = 0; i < ny; i++)
                    for (int j = 0; j < nx; j++)
                        v += wy[i] * wx[j] * plane[ay[i] * cols->in + ax[j]];
                *y++ = (float)v;
            }
        }
    }
}
