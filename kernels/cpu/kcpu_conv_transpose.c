/*
 * kcpu_conv_transpose.c - the transposed convolution on the CPU (k_conv2d
 * read as kernel_types.h says: ONNX ConvTranspose). One task per output
 * plane: the plane starts at the bias, and every (input channel, kernel
 * tap) adds the weight times the input plane into the output pixels the
 * tap reaches, row by row (a stride-1 row is one contiguous run, which the
 * compiler vectorises).
 */
#include "kcpu_impl.h"

struct ct_job {
    const struct k_conv2d *p;
    const float *x, *w, *bias;
    float *y;
};

/* The input indices i in [0, in) whose output i * stride - lead (lead =
 * pad - koff, koff the tap's offset k * dil) lies in [0, out): the first,
 * and how many. */
static void tap_range(int in, int out, int stride, int pad, int koff, int *first, int *count)
{
    int lead = pad - koff;
    int lo = lead <= 0 ? 0 : (lead + stride - 1) / stride;   /* i * stride >= lead */
    int hi = out - 1 + lead < 0 ? -1 : (out - 1 + lead) / stride;   /* i * stride - lead <= out - 1 */
    hi = hi < in - 1 ? hi : in - 1;
    *first = lo;
    *count = hi >= lo ? hi - lo + 1 : 0;
}

static void plane_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct ct_job *j = arg;
    const struct k_conv2d *p = j->p;
    const int cg = p->c / p->groups, og = p->oc / p->groups;
    const int n = (int)(task / p->oc), o = (int)(task % p->oc), g = o / og;
    const int64_t plane = (int64_t)p->oh * p->ow;
    float *y = j->y + task * plane;
    const float b = j->bias ? j->bias[o] : 0;
    for (int64_t i = 0; i < plane; i++)
        y[i] = b;
    for (int ci = 0; ci < cg; ci++) {
        const int64_t c = (int64_t)g * cg + ci;
        const float *xc = j->x + ((int64_t)n * p->c + c) * p->h * p->w;
        const float *wc = j->w + (c * og + o % og) * p->kh * p->kw;
        for (int ky = 0; ky < p->kh; ky++) {
            int iy0, ny;
            tap_range(p->h, p->oh, p->stride_h, p->pad_t, ky * p->dil_h, &iy0, &ny);
            for (int kx = 0; kx < p->kw; kx++) {
                int ix0, nx;
                tap_range(p->w, p->ow, p->stride_w, p->pad_l, kx * p->dil_w, &ix0, &nx);
                const float wv = wc[ky * p->kw + kx];
                if (nx == 0)
                    continue;
                for (int iy = iy0; iy < iy0 + ny; iy++) {
                    const float *xr = xc + (int64_t)iy * p->w + ix0;
                    float *yr = y + (int64_t)(iy * p->stride_h - p->pad_t + ky * p->dil_h) * p->ow +
                                (ix0 * p->stride_w - p->pad_l + kx * p->dil_w);
                    if (p->stride_w == 1) {
                        for (int i = 0; i < nx; i++)
                            yr[i] += wv * xr[i];
                    } else {
                        for (int i = 0; i < nx; i++)
                            yr[(int64_t)i * p->stride_w] += wv * xr[i];
                    }
                }
            }
        }
    }
}

void kcpu_conv_transpose2d_f32(struct kcpu_threads *th, const struct k_conv2d *p, const float *x, const float *w,
                               const float *bias, float *y)
{
    struct ct_job j = {p, x, w, bias, y};
    kcpu_threads_run(th, (int64_t)p->n * p->oc, plane_task, &j);
}
