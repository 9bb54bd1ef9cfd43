/*
 * kcpu_q8_ops.c - the CPU INT8 kernels besides conv / linear: pooling, add,
 * concat, activation tables, quantise / dequantise at the model's edges,
 * and FP16 rounding. Element-wise loops over the kernel_quant.h helpers,
 * split over the worker threads; FP16 rounding uses F16C where the CPU has it.
 */
#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "kcpu_q8_impl.h"

/* Elements per task: below this a step stays on the calling thread, since
 * waking the workers would cost more than the work (INT8 steps are short). */
#define CHUNK 65536

/* ------------------------------------------------------------ element-wise */

enum ew_kind { EW_ADD, EW_LUT, EW_QUANTIZE, EW_DEQUANTIZE, EW_ROUND_F16 };

struct ew_job {
    enum ew_kind kind;
    int64_t count;
    const void *a, *b;
    void *y;
    struct k_q8_mult ma, mb;
    const int8_t *lut;
    float scale;
};

static void round_f16_run(int64_t count, const float *x, float *y);

static void ew_task(void *arg, int64_t task, int thread)
{
    const struct ew_job *j = arg;
    int64_t i0 = task * CHUNK, i1 = kcpu_min64(j->count, i0 + CHUNK);
    const int8_t *a8 = j->a, *b8 = j->b;
    int8_t *y8 = j->y;
    switch (j->kind) {
    case EW_ADD:
        for (int64_t i = i0; i < i1; i++)
            y8[i] = k_q8_add(a8[i], j->ma, b8[i], j->mb);
        return;
    case EW_LUT:
        for (int64_t i = i0; i < i1; i++)
            y8[i] = k_q8_lut(j->lut, a8[i]);
        return;
    case EW_QUANTIZE:
        if (kcpu_isa() == KCPU_ISA_AVX512) {
            kq8_quantize_avx512(i1 - i0, (const float *)j->a + i0, j->scale, y8 + i0);
            return;
        }
        if (kcpu_isa() == KCPU_ISA_AVX2) {
            kq8_quantize_avx2(i1 - i0, (const float *)j->a + i0, j->scale, y8 + i0);
            return;
        }
        for (int64_t i = i0; i < i1; i++)
            y8[i] = k_q8_quantize(((const float *)j->a)[i], j->scale);
        return;
    case EW_DEQUANTIZE:
        for (int64_t i = i0; i < i1; i++)
            ((float *)j->y)[i] = k_q8_dequantize(a8[i], j->scale);
        return;
    case EW_ROUND_F16:
        round_f16_run(i1 - i0, (const float *)j->a + i0, (float *)j->y + i0);
        return;
    }
}

static void ew_run(struct kcpu_threads *th, struct ew_job *j)
{
    if (j->count > 0)
        kcpu_threads_run(th, kcpu_ceil_div(j->count, CHUNK), ew_task, j);
}

void kcpu_add_q8(struct kcpu_threads *th, int64_t count, const int8_t *a, struct k_q8_mult ma,
                 const int8_t *b, struct k_q8_mult mb, int8_t *y)
{
    struct ew_job j = {.kind = EW_ADD, .count = count, .a = a, .b = b, .y = y, .ma = ma, .mb = mb};
    ew_run(th, &j);
}

void kcpu_lut_q8(struct kcpu_threads *th, int64_t count, const int8_t *lut, const int8_t *x, int8_t *y)
{
    struct ew_job j = {.kind = EW_LUT, .count = count, .a = x, .y = y, .lut = lut};
    ew_run(th, &j);
}

void kcpu_quantize_q8(struct kcpu_threads *th, int64_t count, const float *x, float inv_scale,
                      int8_t *y)
{
    struct ew_job j = {.kind = EW_QUANTIZE, .count = count, .a = x, .y = y, .scale = inv_scale};
    ew_run(th, &j);
}

void kcpu_dequantize_q8(struct kcpu_threads *th, int64_t count, const int8_t *x, float scale,
                        float *y)
{
    struct ew_job j = {.kind = EW_DEQUANTIZE, .count = count, .a = x, .y = y, .scale = scale};
    ew_run(th, &j);
}

void kcpu_round_f16(struct kcpu_threads *th, int64_t count, const float *x, float *y)
{
    struct ew_job j = {.kind = EW_ROUND_F16, .count = count, .a = x, .y = y};
    ew_run(th, &j);
}

static atomic_int f16c = -1;   /* cached F16C check, -1 until first asked */

static int has_f16c(void)
{
    int v = atomic_load_explicit(&f16c, memory_order_relaxed);
    if (v < 0) {
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;   /* CPUID leaf 1, ECX bit 29 (not every compiler's builtin knows "f16c") */
        v = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
#else
        v = 0;
#endif
        atomic_store_explicit(&f16c, v, memory_order_relaxed);
    }
    return v;
}

static void round_f16_run(int64_t count, const float *x, float *y)
{
    enum kcpu_isa isa = kcpu_isa();
    if (isa == KCPU_ISA_AVX512 && has_f16c()) {
        kcpu_round_f16_avx512(count, x, y);
    } else if (isa >= KCPU_ISA_AVX2 && has_f16c()) {
        kcpu_round_f16_avx2(count, x, y);
    } else {
        for (int64_t i = 0; i < count; i++)
            y[i] = k_f16_round(x[i]);
    }
}

/* ------------------------------------------------------------ per plane */

/* fn over items [0, n) of item_elems elements each, CHUNK elements' worth
 * of items per task. */
struct batch_job {
    kcpu_task_fn fn;
    void *arg;
    int64_t n, per;
};

static void batch_task(void *arg, int64_t task, int thread)
{
    const struct batch_job *b = arg;
    int64_t end = kcpu_min64(b->n, (task + 1) * b->per);
    for (int64_t i = task * b->per; i < end; i++)
        b->fn(b->arg, i, thread);
}

static void run_batched(struct kcpu_threads *th, int64_t n, int64_t item_elems, kcpu_task_fn fn, void *arg)
{
    struct batch_job b = {fn, arg, n, kcpu_max64(1, CHUNK / kcpu_max64(1, item_elems))};
    kcpu_threads_run(th, kcpu_ceil_div(n, b.per), batch_task, &b);
}

struct plane_job {
    const struct k_pool2d *p;
    const struct k_q8_mult *mults;
    const int8_t *x;
    int8_t *y;
    int64_t hw;                /* global average: plane size */
    const int32_t *x32;
    const float *scale;
    float *yf;
    int c;
    int64_t inner;
};

static inline int8_t max8(int8_t a, int8_t b)
{
    if (a > b)
        return a;
    return b;
}

static void max_pool_task(void *arg, int64_t nc, int thread)
{
    const struct plane_job *j = arg;
    const struct k_pool2d *p = j->p;
    const int h = p->h, w = p->w, oh_n = p->oh, ow_n = p->ow;
    const int8_t *xp = j->x + nc * h * w;
    int8_t *yp = j->y + nc * oh_n * ow_n;
    /* LeNet's 2x2 / 2 pooling, every window inside the input: no checks */
    if (p->kh == 2 && p->kw == 2 && p->stride_h == 2 && p->stride_w == 2 && p->pad_t == 0 && p->pad_l == 0 &&
        p->dil_h == 1 && p->dil_w == 1 && 2 * oh_n <= h && 2 * ow_n <= w) {
        if (kcpu_isa() == KCPU_ISA_AVX512) {
            kcpu_max_pool_2x2_avx512(p, 1, xp, yp);
            return;
        }
        for (int oh = 0; oh < oh_n; oh++) {
            const int8_t *r0 = xp + (int64_t)2 * oh * w, *r1 = r0 + w;
            for (ptrdiff_t ow = 0; ow < ow_n; ow++)
                yp[(ptrdiff_t)oh * ow_n + ow] = max8(max8(r0[2 * ow], r0[2 * ow + 1]), max8(r1[2 * ow], r1[2 * ow + 1]));
        }
        return;
    }
    if (kcpu_max_pool_rows_fits(p)) {
        kcpu_max_pool_rows(p, 1, xp, yp);
        return;
    }
    for (int oh = 0; oh < oh_n; oh++)
        for (int ow = 0; ow < ow_n; ow++) {
            int8_t best = K_Q8_MIN;
            for (int ki = 0; ki < p->kh; ki++) {
                int ih = oh * p->stride_h - p->pad_t + ki * p->dil_h;
                if (ih < 0 || ih >= h)
                    continue;
                const int8_t *row = xp + (int64_t)ih * w;
                for (int kj = 0; kj < p->kw; kj++) {
                    int iw = ow * p->stride_w - p->pad_l + kj * p->dil_w;
                    if (iw >= 0 && iw < w && row[iw] > best)
                        best = row[iw];
                }
            }
            yp[oh * ow_n + ow] = best;
        }
}

static void avg_pool_task(void *arg, int64_t nc, int thread)
{
    const struct plane_job *j = arg;
    const struct k_pool2d *p = j->p;
    const int8_t *xp = j->x + nc * p->h * p->w;
    int8_t *yp = j->y + nc * p->oh * p->ow;
    for (int oh = 0; oh < p->oh; oh++)
        for (int ow = 0; ow < p->ow; ow++) {
            int h0 = oh * p->stride_h - p->pad_t, w0 = ow * p->stride_w - p->pad_l;
            int h1 = h0 + p->kh < p->h + p->pad_t ? h0 + p->kh : p->h + p->pad_t;
            int w1 = w0 + p->kw < p->w + p->pad_l ? w0 + p->kw : p->w + p->pad_l;
            int padded = (h1 - h0) * (w1 - w0);
            h0 = h0 < 0 ? 0 : h0;
            w0 = w0 < 0 ? 0 : w0;
            h1 = h1 > p->h ? p->h : h1;
            w1 = w1 > p->w ? p->w : w1;
            int32_t sum = 0;
            for (int ih = h0; ih < h1; ih++)
                for (int iw = w0; iw < w1; iw++)
                    sum += xp[(int64_t)ih * p->w + iw];
            int cells = p->count_include_pad ? padded : (h1 - h0) * (w1 - w0);
            int8_t v = 0;
            if (cells > 0)
                v = k_q8_clamp(k_q8_apply(sum, j->mults[cells]), K_Q8_MIN, K_Q8_MAX);
            yp[(ptrdiff_t)oh * p->ow + ow] = v;
        }
}

static void global_avg_task(void *arg, int64_t nc, int thread)
{
    const struct plane_job *j = arg;
    int32_t sum = 0;
    for (int64_t i = 0; i < j->hw; i++)
        sum += j->x[nc * j->hw + i];
    j->y[nc] = k_q8_clamp(k_q8_apply(sum, j->mults[0]), K_Q8_MIN, K_Q8_MAX);
}

static void dequant_i32_task(void *arg, int64_t nc, int thread)
{
    const struct plane_job *j = arg;
    float s = j->scale[nc % j->c];
    for (int64_t i = 0; i < j->inner; i++)
        j->yf[nc * j->inner + i] = k_q8_dequantize(j->x32[nc * j->inner + i], s);
}

void kcpu_max_pool2d_q8(struct kcpu_threads *th, const struct k_pool2d *p, const int8_t *x, int8_t *y)
{
    struct plane_job j = {.p = p, .x = x, .y = y};
    run_batched(th, (int64_t)p->n * p->c, (int64_t)p->h * p->w, max_pool_task, &j);
}

void kcpu_avg_pool2d_q8(struct kcpu_threads *th, const struct k_pool2d *p,
                        const struct k_q8_mult *count_mult, const int8_t *x, int8_t *y)
{
    struct plane_job j = {.p = p, .mults = count_mult, .x = x, .y = y};
    run_batched(th, (int64_t)p->n * p->c, (int64_t)p->h * p->w, avg_pool_task, &j);
}

void kcpu_global_avg_pool_q8(struct kcpu_threads *th, int n, int c, int64_t hw,
                             struct k_q8_mult mult, const int8_t *x, int8_t *y)
{
    struct plane_job j = {.mults = &mult, .x = x, .y = y, .hw = hw};
    run_batched(th, (int64_t)n * c, hw, global_avg_task, &j);
}

void kcpu_dequantize_i32(struct kcpu_threads *th, int n, int c, int64_t inner, const int32_t *x,
                         const float *scale, float *y)
{
    struct plane_job j = {.x32 = x, .scale = scale, .yf = y, .c = c, .inner = inner};
    run_batched(th, (int64_t)n * c, inner, dequant_i32_task, &j);
}

/* ------------------------------------------------------------ concat */

struct concat_job {
    const struct k_concat *p;
    const int8_t *const *inputs;
    const int64_t *lens;
    const struct k_q8_mult *mults;
    int8_t *y;
    int64_t total;
};

static void concat_task(void *arg, int64_t o, int thread)
{
    const struct concat_job *j = arg;
    int64_t at = 0;
    for (int i = 0; i < j->p->count; i++) {
        int64_t run = j->lens[i] * j->p->inner;
        const int8_t *src = j->inputs[i] + o * run;
        int8_t *dst = j->y + (o * j->total + at) * j->p->inner;
        for (int64_t e = 0; e < run; e++)
            dst[e] = k_q8_clamp(k_q8_apply(src[e], j->mults[i]), K_Q8_MIN, K_Q8_MAX);
        at += j->lens[i];
    }
}

void kcpu_concat_q8(struct kcpu_threads *th, const struct k_concat *p, const int8_t *const *inputs,
                    const int64_t *lens, const struct k_q8_mult *mults, int8_t *y)
{
    struct concat_job j = {.p = p, .inputs = inputs, .lens = lens, .mults = mults, .y = y};
    for (int i = 0; i < p->count; i++)
        j.total += lens[i];
    run_batched(th, p->outer, j.total * p->inner, concat_task, &j);
}
