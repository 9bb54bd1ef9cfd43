/*
 * rt_image_resize.c - bilinear resampling with half-pixel centres, computed
 * as PIL's Image.resize(..., BILINEAR) computes its coefficients.
 *
 * Output pixel x samples the input around centre (x + 0.5) * in / out with a
 * triangle filter. Upscaling, the filter spans one input pixel each side, so
 * the result equals torch's interpolate(mode="bilinear", align_corners=False)
 * (edge pixels clamp); downscaling, PIL widens the filter by the scale
 * factor, which averages every input pixel instead of skipping most of them
 * (torchvision's antialias=True does the same). Unlike PIL on 8-bit images,
 * nothing is rounded: the result stays float for normalisation.
 *
 * Separable: a horizontal pass over the input rows the vertical pass needs,
 * into a float buffer only as wide as the output window, then a vertical pass.
 */
#include <math.h>
#include <stdlib.h>

#include "rt_checked.h"
#include "rt_image_impl.h"

/* Filter taps of n consecutive output positions along one axis. */
struct resize_axis {
    int ksize;               /* taps stored per position */
    int *start;              /* [n] first input index */
    int *count;              /* [n] taps used; 0 outside the resized image */
    double *w;               /* [n * ksize] normalised weights */
};

static double triangle(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static void axis_free(struct resize_axis *a)
{
    free(a->start);
    free(a->count);
    free(a->w);
}

/* Taps for output positions first .. first + n - 1 of a resize from in_size
 * to out_size; positions outside 0 .. out_size - 1 get no taps. */
static enum rt_status axis_init(struct resize_axis *a, int in_size, int out_size, int first, int n,
                                struct rt_error *err)
{
    double scale = (double)in_size / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = filterscale;     /* the triangle's support, 1, widened */
    a->ksize = (int)ceil(support) * 2 + 1;
    size_t taps;
    a->start = calloc((size_t)n, sizeof(int));
    a->count = calloc((size_t)n, sizeof(int));
    a->w = NULL;
    if (rt_mul_size((size_t)n, (size_t)a->ksize, &taps))
        a->w = calloc(taps, sizeof(double));
    if (!a->start || !a->count || !a->w) {
        axis_free(a);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for resize coefficients");
    }
    for (int i = 0; i < n; i++) {
        int pos = first + i;
        if (pos < 0 || pos >= out_size)
            continue;
        double center = (pos + 0.5) * scale;
        /* (int) truncates toward zero, as PIL's C does. */
        int lo = (int)(center - support + 0.5);
        int hi = (int)(center + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = hi > in_size ? in_size : hi;
        double *w = a->w + (size_t)i * (size_t)a->ksize, total = 0.0;
        for (int k = 0; k < hi - lo; k++) {
            w[k] = triangle((k + lo - center + 0.5) / filterscale);
            total += w[k];
        }
        for (int k = 0; k < hi - lo; k++)
            w[k] = total != 0.0 ? w[k] / total : 0.0;
        a->start[i] = lo;
        a->count[i] = hi - lo;
    }
    return RT_OK;
}

enum rt_status rt_image_resize(const uint8_t *in, int in_w, int in_h, int ch, int out_w, int out_h,
                               int crop_x, int crop_y, int crop_w, int crop_h, float *out,
                               struct rt_error *err)
{
    struct resize_axis ax, ay;
    enum rt_status st = axis_init(&ax, in_w, out_w, crop_x, crop_w, err);
    if (st != RT_OK)
        return st;
    if ((st = axis_init(&ay, in_h, out_h, crop_y, crop_h, err)) != RT_OK) {
        axis_free(&ax);
        return st;
    }
    /* Input rows [y0, y1) feed the window's output rows. */
    int y0 = in_h, y1 = 0;
    for (int i = 0; i < crop_h; i++) {
        if (ay.count[i] == 0)
            continue;
        y0 = ay.start[i] < y0 ? ay.start[i] : y0;
        y1 = ay.start[i] + ay.count[i] > y1 ? ay.start[i] + ay.count[i] : y1;
    }
    size_t row = (size_t)crop_w * (size_t)ch;
    float *tmp = NULL;       /* [y1 - y0][crop_w][ch] */
    if (y1 > y0 && !(tmp = malloc((size_t)(y1 - y0) * row * sizeof(float)))) {
        axis_free(&ax);
        axis_free(&ay);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for resize");
    }

    for (int y = y0; y < y1; y++) {
        const uint8_t *src = in + (size_t)y * (size_t)in_w * (size_t)ch;
        float *dst = tmp + (size_t)(y - y0) * row;
        for (int x = 0; x < crop_w; x++) {
            const double *w = ax.w + (size_t)x * (size_t)ax.ksize;
            for (int c = 0; c < ch; c++) {
                double acc = 0.0;
                for (int k = 0; k < ax.count[x]; k++)
                    acc += w[k] * (double)src[(size_t)(ax.start[x] + k) * (size_t)ch + (size_t)c];
                dst[(size_t)x * (size_t)ch + (size_t)c] = (float)acc;
            }
        }
    }
    for (int y = 0; y < crop_h; y++) {
        const double *w = ay.w + (size_t)y * (size_t)ay.ksize;
        float *dst = out + (size_t)y * row;
        for (size_t i = 0; i < row; i++) {
            double acc = 0.0;
            for (int k = 0; k < ay.count[y]; k++)
                acc += w[k] * (double)tmp[(size_t)(ay.start[y] + k - y0) * row + i];
            dst[i] = (float)acc;
        }
    }
    free(tmp);
    axis_free(&ax);
    axis_free(&ay);
    return RT_OK;
}
