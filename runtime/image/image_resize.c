/*
 * image/image_resize.c - bilinear resampling of 8-bit images, bit for bit as
 * PIL's Image.resize(..., BILINEAR) computes it (libImaging/Resample.c),
 * because that is what torchvision's Resize does to a PIL image, and models
 * are trained on its output.
 *
 * Output pixel x samples the input around centre (x + 0.5) * in / out with a
 * triangle filter. Upscaling, the filter spans one input pixel each side;
 * downscaling, PIL widens it by the scale factor, which averages every input
 * pixel instead of skipping most of them (antialiasing). The weights are
 * computed in double, normalised, then turned into 22-bit fixed point; each
 * pass accumulates in 32-bit integers from a rounding bias of one half and
 * clamps its result to 0..255: horizontal first, into 8-bit rows, then
 * vertical. Rounding between the passes is PIL's, so it is kept.
 *
 * Only the window of the result that the centre crop keeps is computed; each
 * output pixel depends on its own taps alone, so that changes nothing.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "runtime/rt_checked.h"
#include "runtime/image/image_impl.h"

#define PRECISION_BITS (32 - 8 - 2)   /* PIL's: 8-bit pixels times weights fit an int32 */

/* Filter taps of n consecutive output positions along one axis. */
struct resize_axis {
    int ksize;               /* taps stored per position */
    int *start;              /* [n] first input index */
    int *count;              /* [n] taps used; 0 outside the resized image */
    int32_t *k;              /* [n * ksize] fixed-point weights */
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
    free(a->k);
}

/* Taps for output positions first .. first + n - 1 of a resize from in_size
 * to out_size (precompute_coeffs and normalize_coeffs_8bpc in PIL, same
 * expressions in the same order); positions outside 0 .. out_size - 1 get
 * no taps. Returns false when out of memory, with nothing left allocated. */
static bool axis_init(struct resize_axis *a, int in_size, int out_size, int first, int n)
{
    double scale = (double)in_size / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale;   /* the triangle's support, widened */
    double ss = 1.0 / filterscale;
    a->ksize = (int)ceil(support) * 2 + 1;
    size_t taps;
    a->start = calloc((size_t)n, sizeof(int));
    a->count = calloc((size_t)n, sizeof(int));
    a->k = NULL;
    double *w = calloc((size_t)a->ksize, sizeof(double));
    if (rt_mul_size((size_t)n, (size_t)a->ksize, &taps))
        a->k = calloc(taps, sizeof(int32_t));
    if (!a->start || !a->count || !a->k || !w) {
        free(w);
        axis_free(a);
        return false;
    }
    for (int i = 0; i < n; i++) {
        int pos = first + i;
        if (pos < 0 || pos >= out_size)
            continue;
        double center = (pos + 0.5) * scale, total = 0.0;
        /* (int) truncates toward zero, as PIL's C does. */
        int lo = (int)(center - support + 0.5);
        int hi = (int)(center + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = hi > in_size ? in_size : hi;
        for (int t = 0; t < hi - lo; t++) {
            w[t] = triangle((t + lo - center + 0.5) * ss);
            total += w[t];
        }
        int32_t *k = a->k + (size_t)i * (size_t)a->ksize;
        for (int t = 0; t < hi - lo; t++) {
            double v = total != 0.0 ? w[t] / total : w[t];
            k[t] = (int32_t)(0.5 + v * (1 << PRECISION_BITS));   /* weights are >= 0 */
        }
        a->start[i] = lo;
        a->count[i] = hi - lo;
    }
    free(w);
    return true;
}

/* PIL's clip8: the fixed-point sum back to a byte, clamped. */
static uint8_t clip8(int32_t v)
{
    if (v >= (1 << PRECISION_BITS << 8))
        return 255;
    if (v <= 0)
        return 0;
    return (uint8_t)(v >> PRECISION_BITS);
}

enum rt_status rt_image_resize(const uint8_t *in, int in_w, int in_h, int ch, int out_w, int out_h,
                               int crop_x, int crop_y, int crop_w, int crop_h, uint8_t *out,
                               struct rt_error *err)
{
    struct resize_axis ax, ay;
    if (!axis_init(&ax, in_w, out_w, crop_x, crop_w))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for resize coefficients");
    if (!axis_init(&ay, in_h, out_h, crop_y, crop_h)) {
        axis_free(&ax);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for resize coefficients");
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
    uint8_t *tmp = NULL;     /* [y1 - y0][crop_w][ch]: the horizontal pass */
    if (y1 > y0 && !(tmp = malloc((size_t)(y1 - y0) * row))) {
        axis_free(&ax);
        axis_free(&ay);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for resize");
    }

    for (int y = y0; y < y1; y++) {
        const uint8_t *src = in + (size_t)y * (size_t)in_w * (size_t)ch;
        uint8_t *dst = tmp + (size_t)(y - y0) * row;
        for (int x = 0; x < crop_w; x++) {
            const int32_t *k = ax.k + (size_t)x * (size_t)ax.ksize;
            const uint8_t *s = src + (size_t)ax.start[x] * (size_t)ch;
            for (int c = 0; c < ch; c++) {
                int32_t acc = 1 << (PRECISION_BITS - 1);
                for (int t = 0; t < ax.count[x]; t++)
                    acc += s[(size_t)t * (size_t)ch + (size_t)c] * k[t];
                dst[(size_t)x * (size_t)ch + (size_t)c] = ax.count[x] ? clip8(acc) : 0;
            }
        }
    }
    for (int y = 0; y < crop_h; y++) {
        const int32_t *k = ay.k + (size_t)y * (size_t)ay.ksize;
        uint8_t *dst = out + (size_t)y * row;
        for (size_t i = 0; i < row; i++) {
            int32_t acc = 1 << (PRECISION_BITS - 1);
            /* Taps lie in rows [y0, y1), so tmp is allocated and filled there. */
            for (int t = 0; t < ay.count[y]; t++)
                // NOLINTNEXTLINE(clang-analyzer-core.NullDereference,clang-analyzer-core.UndefinedBinaryOperatorResult)
                acc += tmp[(size_t)(ay.start[y] + t - y0) * row + i] * k[t];
            dst[i] = ay.count[y] ? clip8(acc) : 0;
        }
    }
    free(tmp);
    axis_free(&ax);
    axis_free(&ay);
    return RT_OK;
}
