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

/* Each output element gathers the input pixels that the transposed
 * convolution scatters into it: iy = (oy + pad_t - ky * dil_h) / stride_h
 * where that divides exactly and lies in the input. */
void kref_conv_transpose2d_f32(const struct k_conv2d *p, const float *x, const float *w, const float *bias, float *y)
{
    int cg = p->c / p->groups, og = p->oc / p->groups;
    for (int n = 0; n < p->n; n++)
        for (int o = 0; o < p->oc; o++) {
            int g = o / og, oo = o % og;
            for (int oy = 0; oy < p->oh; oy++)
                for (int ox = 0; ox < p->ow; ox++) {
                    double acc = bias ? bias[o] : 0;
                    for (int ci = 0; ci < cg; ci++) {
                        int64_t c = (int64_t)g * cg + ci;
                        const float *xc = x + ((int64_t)n * p->c + c) * p->h * p->w;
                        const float *wc = w + (c * og + oo) * p->kh * p->kw;
                        for (int ky = 0; ky < p->kh; ky++) {
                            int ty = oy + p->pad_t - ky * p->dil_h;
                            if (ty < 0 || ty % p->stride_h || ty / p->stride_h >= p->h)
                                continue;
                            for (int kx = 0; kx < p->kw; kx++) {
                                int tx = ox + p->pad_l - kx * p->dil_w;
                                if (tx < 0 || tx % p->stride_w || tx / p->stride_w >= p->w)
                                    continue;
                                acc += (double)xc[(int64_t)(ty / p->stride_h) * p->w + tx / p->stride_w] *
                                       wc[ky * p->kw + kx];
                            }
                        }
                    }
                    y[(((int64_t)n * p->oc + o) * p->oh + oy) * p->ow + ox] = (float)acc;
                }
        }
}
