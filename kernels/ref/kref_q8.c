/*
 * kref_q8.c - reference INT8 kernels (see kref_q8.h). Direct loops, int32
 * accumulation, every rounding through kernel_quant.h.
 */
#include "kref_q8.h"

/* Stores one conv / linear output through the epilogue. */
static void store(const struct k_q8_epilogue *e, int oc, int32_t acc, const int8_t *residual,
                  int64_t yi, void *y)
{
    if (e->out_i32) {
        ((int32_t *)y)[yi] = acc + e->bias[oc];
        return;
    }
    if (residual)
        ((int8_t *)y)[yi] = k_q8_requant_res(acc, e->bias[oc], e->mult[oc], residual[yi], e->res_mult, e->lo, e->hi);
    else
        ((int8_t *)y)[yi] = k_q8_requant(acc, e->bias[oc], e->mult[oc], e->lo, e->hi);
}

void kref_conv2d_q8(const struct k_conv2d *p, const int8_t *x, const int8_t *w,
                    const struct k_q8_epilogue *e, const int8_t *residual, void *y)
{
    int cg = p->c / p->groups, og = p->oc / p->groups;
    for (int n = 0; n < p->n; n++)
        for (int o = 0; o < p->oc; o++) {
            int g = o / og;
            for (int oh = 0; oh < p->oh; oh++)
                for (int ow = 0; ow < p->ow; ow++) {
                    int32_t acc = 0;
                    for (int ci = 0; ci < cg; ci++) {
                        const int8_t *xc = x + ((int64_t)n * p->c + (int64_t)g * cg + ci) * p->h * p->w;
                        const int8_t *wc = w + ((int64_t)o * cg + ci) * p->kh * p->kw;
                        for (int ki = 0; ki < p->kh; ki++) {
                            int ih = oh * p->stride_h - p->pad_t + ki * p->dil_h;
                            if (ih < 0 || ih >= p->h)
                                continue;
                            for (int kj = 0; kj < p->kw; kj++) {
                                int iw = ow * p->stride_w - p->pad_l + kj * p->dil_w;
                                if (iw >= 0 && iw < p->w)
                                    acc += (int32_t)xc[(int64_t)ih * p->w + iw] * wc[ki * p->kw + kj];
                            }
                        }
                    }
                    store(e, o, acc, residual, (((int64_t)n * p->oc + o) * p->oh + oh) * p->ow + ow, y);
                }
        }
}

void kref_linear_q8(const struct k_linear *p, const int8_t *x, const int8_t *w,
                    const struct k_q8_epilogue *e, const int8_t *residual, void *y)
{
    for (int n = 0; n < p->n; n++)
        for (int m = 0; m < p->m; m++) {
            int32_t acc = 0;
            for (int k = 0; k < p->k; k++)
                acc += (int32_t)x[(int64_t)n * p->k + k] * w[(int64_t)m * p->k + k];
            store(e, m, acc, residual, (int64_t)n * p->m + m, y);
        }
}

void kref_max_pool2d_q8(const struct k_pool2d *p, const int8_t *x, int8_t *y)
{
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const int8_t *xp = x + nc * p->h * p->w;
        for (int oh = 0; oh < p->oh; oh++)
            for (int ow = 0; ow < p->ow; ow++) {
                int8_t best = K_Q8_MIN;
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

void kref_avg_pool2d_q8(const struct k_pool2d *p, const struct k_q8_mult *count_mult,
                        const int8_t *x, int8_t *y)
{
    for (int64_t nc = 0; nc < (int64_t)p->n * p->c; nc++) {
        const int8_t *xp = x + nc * p->h * p->w;
        for (int oh = 0; oh < p->oh; oh++)
            for (int ow = 0; ow < p->ow; ow++) {
                int h0 = oh * p->stride_h - p->pad_t, w0 = ow * p->stride_w - p->pad_l;
                int h1 = imin(h0 + p->kh, p->h + p->pad_t), w1 = imin(w0 + p->kw, p->w + p->pad_l);
                int padded_cells = (h1 - h0) * (w1 - w0);
                h0 = imax(h0, 0);
                w0 = imax(w0, 0);
                h1 = imin(h1, p->h);
                w1 = imin(w1, p->w);
                int32_t sum = 0;
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++)
                        sum += xp[(int64_t)ih * p->w + iw];
                int cells = p->count_include_pad ? padded_cells : (h1 - h0) * (w1 - w0);
                int8_t v = 0;
                if (cells > 0)
                    v = k_q8_clamp(k_q8_apply(sum, count_mult[cells]), K_Q8_MIN, K_Q8_MAX);
                y[(nc * p->oh + oh) * p->ow + ow] = v;
            }
    }
}

void kref_global_avg_pool_q8(int n, int c, int64_t hw, struct k_q8_mult mult, const int8_t *x,
                             int8_t *y)
{
    for (int64_t nc = 0; nc < (int64_t)n * c; nc++) {
        int32_t sum = 0;
        for (int64_t i = 0; i < hw; i++)
            sum += x[nc * hw + i];
        y[nc] = k_q8_clamp(k_q8_apply(sum, mult), K_Q8_MIN, K_Q8_MAX);
    }
}

void kref_add_q8(int64_t count, const int8_t *a, struct k_q8_mult ma, const int8_t *b,
                 struct k_q8_mult mb, int8_t *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = k_q8_add(a[i], ma, b[i], mb);
}

void kref_concat_q8(const struct k_concat *p, const int8_t *const *inputs, const int64_t *lens,
                    const struct k_q8_mult *mults, int8_t *y)
{
    int64_t total = 0;
    for (int i = 0; i < p->count; i++)
        total += lens[i];
    for (int64_t o = 0; o < p->outer; o++) {
        int64_t at = 0;
        for (int i = 0; i < p->count; i++) {
            int64_t run = lens[i] * p->inner;
            const int8_t *src = inputs[i] + o * run;
            int8_t *dst = y + (o * total + at) * p->inner;
            for (int64_t e = 0; e < run; e++)
                dst[e] = k_q8_clamp(k_q8_apply(src[e], mults[i]), K_Q8_MIN, K_Q8_MAX);
            at += lens[i];
        }
    }
}

void kref_lut_q8(int64_t count, const int8_t *lut, const int8_t *x, int8_t *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = k_q8_lut(lut, x[i]);
}

void kref_quantize_q8(int64_t count, const float *x, float inv_scale, int8_t *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = k_q8_quantize(x[i], inv_scale);
}

void kref_dequantize_q8(int64_t count, const int8_t *x, float scale, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = k_q8_dequantize(x[i], scale);
}

void kref_dequantize_i32(int n, int c, int64_t inner, const int32_t *x, const float *scale,
                         float *y)
{
    for (int64_t nc = 0; nc < (int64_t)n * c; nc++)
        for (int64_t i = 0; i < inner; i++)
            y[nc * inner + i] = k_q8_dequantize(x[nc * inner + i], scale[nc % c]);
}

void kref_round_f16(int64_t count, const float *x, float *y)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = k_f16_round(x[i]);
}
