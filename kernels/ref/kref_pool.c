/*
 * kref_pool.c - reference max, average and global average pooling.
 *
 * PyTorch semantics: padding cells never win a max; an average divides by the
 * window clipped to the padded input (count_include_pad) or by the number of
 * real input cells it covers. The padded input is taken to be
 * [-pad_t, h + pad_t) x [-pad_l, w + pad_l), PyTorch's symmetric padding, so
 * in ceil mode a window running past that edge is clipped to it.
 */
#include <math.h>

#include "kref.h"

void kref_max_pool2d_f32(const struct k_pool2d *p, const float *x, float *y)
{
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const float *xp = x + nc * p->h * p->w;
        for (int oh = 0; oh < p->oh; oh++)
            for (int ow = 0; ow < p->ow; ow++) {
                float best = -INFINITY;
                for (int ki = 0; ki < p->kh; ki++) {
                    int ih = oh * p->stride_h - p->pad_t + ki * p->dil_h;
                    if (ih < 0 || ih >= p->h)
                        continue;
                    for (int kj = 0; kj < p->kw; kj++) {
                        int iw = ow * p->stride_w - p->pad_l + kj * p->dil_w;
                        if (iw >= 0 && iw < p->w && xp[(int64_t)ih * p->w + iw] > best)
                            best = xp[(int64_t)ih * p->w + iw];
                    }
                }
                y[(nc * p->oh + oh) * p->ow + ow] = best;
            }
    }
}

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

void kref_avg_pool2d_f32(const struct k_pool2d *p, const float *x, float *y)
{
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const float *xp = x + nc * p->h * p->w;
        for (int oh = 0; oh < p->oh; oh++)
            for (int ow = 0; ow < p->ow; ow++) {
                int h0 = oh * p->stride_h - p->pad_t, w0 = ow * p->stride_w - p->pad_l;
                int h1 = imin(h0 + p->kh, p->h + p->pad_t);
                int w1 = imin(w0 + p->kw, p->w + p->pad_l);
                int padded_cells = (h1 - h0) * (w1 - w0);
                h0 = imax(h0, 0);
                w0 = imax(w0, 0);
                h1 = imin(h1, p->h);
                w1 = imin(w1, p->w);
                double sum = 0;
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++)
                        sum += xp[(int64_t)ih * p->w + iw];
                int cells = p->count_include_pad ? padded_cells : (h1 - h0) * (w1 - w0);
                y[(nc * p->oh + oh) * p->ow + ow] = cells > 0 ? (float)(sum / cells) : 0.0f;
            }
    }
}

void kref_global_avg_pool_f32(int n, int c, int64_t hw, const float *x, float *y)
{
    for (int64_t nc = 0; nc < (int64_t)n * c; nc++) {
        double sum = 0;
        for (int64_t i = 0; i < hw; i++)
            sum += x[nc * hw + i];
        y[nc] = (float)(sum / (double)hw);
    }
}
