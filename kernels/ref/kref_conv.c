/*
 * kref_conv.c - reference 2-D convolution (NCHW, groups, stride, asymmetric
 * padding, dilation) with the fused bias + residual + activation epilogue.
 */
#include "kref.h"

void kref_conv2d_f32(const struct k_conv2d *p, const float *x, const float *w,
                     const float *bias, const float *residual, float *y)
{
    int cg = p->c / p->groups;   /* input channels per group */
    int og = p->oc / p->groups;  /* output channels per group */
    for (int n = 0; n < p->n; n++)
        for (int o = 0; o < p->oc; o++) {
            int g = o / og;
            for (int oh = 0; oh < p->oh; oh++)
                for (int ow = 0; ow < p->ow; ow++) {
                    double acc = 0;
                    for (int ci = 0; ci < cg; ci++) {
                        const float *xc = x + ((int64_t)n * p->c + (int64_t)g * cg + ci) * p->h * p->w;
                        const float *wc = w + ((int64_t)o * cg + ci) * p->kh * p->kw;
                        for (int ki = 0; ki < p->kh; ki++) {
                            int ih = oh * p->stride_h - p->pad_t + ki * p->dil_h;
                            if (ih < 0 || ih >= p->h)
                                continue;
                            for (int kj = 0; kj < p->kw; kj++) {
                                int iw = ow * p->stride_w - p->pad_l + kj * p->dil_w;
                                if (iw < 0 || iw >= p->w)
                                    continue;
                                acc += (double)xc[(int64_t)ih * p->w + iw] * wc[ki * p->kw + kj];
                            }
                        }
                    }
                    int64_t yi = (((int64_t)n * p->oc + o) * p->oh + oh) * p->ow + ow;
                    if (bias)
                        acc += bias[o];
                    if (residual)
                        acc += residual[yi];
                    y[yi] = kref_act_f32(p->act, (float)acc);
                }
        }
}
