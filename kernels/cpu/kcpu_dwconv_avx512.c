/*
 * kcpu_dwconv_avx512.c - the AVX-512 block kernel of the direct depthwise /
 * grouped convolution (kcpu_dwconv.h).
 *
 * Accumulators for mo output channels times 4 vectors (64 positions) stay
 * in registers across all taps: per tap, 4 grid loads and mo weight
 * broadcasts feed 4 * mo multiply-adds (24 independent chains at mo = 6,
 * 24 of the 32 registers; 4 at mo = 1, which the loads bound anyway).
 * The epilogue then drops each output row's extra columns, adds the
 * residual and applies the activation row by row.
 *
 * kcpu_dw3x3_avx512, at the end, is the direct depthwise 3x3 path.
 */
#include <immintrin.h>

#include "kcpu_dwconv.h"
#include "kcpu_math_avx512.h"

/* mo and nv are constants at every call (the switch below), so the loops
 * unroll and acc lives in registers. */
static inline __attribute__((always_inline)) void accumulate(const struct kcpu_dw_block *b, int64_t t,
                                                             const int mo, const int nv)
{
    __m512 acc[KCPU_DW_MAX_MO][4];
#pragma GCC unroll 6
    for (int o = 0; o < mo; o++) {
        __m512 init = _mm512_set1_ps(b->bias ? b->bias[o] : 0.0f);
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[o][v] = init;
    }
    const float *g = b->grid + t;
    for (int64_t k = 0; k < b->ntaps; k++) {
        const float *src = g + b->off[k];
        __m512 x[4];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            x[v] = _mm512_loadu_ps(src + (int64_t)16 * v);
#pragma GCC unroll 6
        for (int o = 0; o < mo; o++) {
            __m512 wk = _mm512_set1_ps(b->w[o * b->ntaps + k]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[o][v] = _mm512_fmadd_ps(wk, x[v], acc[o][v]);
        }
    }
#pragma GCC unroll 6
    for (int o = 0; o < mo; o++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(b->acc + o * b->count + t + (int64_t)16 * v, acc[o][v]);
}

static inline __attribute__((always_inline)) void sweep(const struct kcpu_dw_block *b, const int mo)
{
    int64_t t = 0;
    for (; t + 64 <= b->count; t += 64)
        accumulate(b, t, mo, 4);
    for (; t < b->count; t += 16)
        accumulate(b, t, mo, 1);
}

/* Each output row's ow columns of the accumulators, plus the residual,
 * through the activation, into y. act is a constant at the common calls
 * (the switch below) so that nothing is decided per vector: LeNet-5's
 * conv1 has 6 x 28 rows of 28 columns, and a call per row (or a switch per
 * vector) cost a third of its time. */
static inline __attribute__((always_inline)) void store_rows(const struct kcpu_dw_block *b, const enum k_act act)
{
    int64_t plane = (int64_t)b->oh * b->ow;
    __mmask16 tail = (__mmask16)((1u << (b->ow % 16)) - 1);
    const float *res = b->res;
    for (int o = 0; o < b->mo; o++)
        for (int r = 0; r < b->oh; r++) {
            const float *a = b->acc + o * b->count + r * b->row_len;
            int64_t at = o * plane + (int64_t)r * b->ow;
            int64_t c = 0;
            for (; c + 16 <= b->ow; c += 16) {
                __m512 v = _mm512_loadu_ps(a + c);
                if (res)
                    v = _mm512_add_ps(v, _mm512_loadu_ps(res + at + c));
                _mm512_storeu_ps(b->y + at + c, kv16_act(act, v));
            }
            if (tail) {
                __m512 v = _mm512_maskz_loadu_ps(tail, a + c);
                if (res)
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(tail, res + at + c));
                _mm512_mask_storeu_ps(b->y + at + c, tail, kv16_act(act, v));
            }
        }
}

void kcpu_dw_block_avx512(const struct kcpu_dw_block *b)
{
    switch (b->mo) {
    case 1: sweep(b, 1); break;
    case 2: sweep(b, 2); break;
    case 3: sweep(b, 3); break;
    case 4: sweep(b, 4); break;
    case 5: sweep(b, 5); break;
    default: sweep(b, 6); break;
    }
    switch (b->act) {
    case K_ACT_NONE: store_rows(b, K_ACT_NONE); break;
    case K_ACT_RELU: store_rows(b, K_ACT_RELU); break;
    case K_ACT_RELU6: store_rows(b, K_ACT_RELU6); break;
    default: store_rows(b, b->act); break;
    }
}

/* ---- 3x3 depthwise, stride 1 or 2, straight from the input plane ----
 *
 * No grid: an input row's three tap vectors come from masked loads (lanes
 * outside the image read as zeros, so the padding costs nothing), at
 * stride 2 from two loads split into even and odd columns by permutes.
 * R output rows are computed together so that each input row, loaded
 * once, feeds up to three of them (R * 9 multiply-adds per (R + 2) * 3
 * loads at stride 1), and R independent chains hide the FMA latency. The
 * epilogue (residual, ReLU / ReLU6) runs in registers and each row's 16
 * columns are stored with the row's tail masked. */

static inline __mmask16 span_mask(int64_t start, int64_t w)
{
    int64_t lo = start < 0 ? -start : 0, hi = w - start;
    if (hi > 16)
        hi = 16;
    if (hi <= lo)
        return 0;
    return (__mmask16)((0xFFFFu >> (16 - hi)) & (0xFFFFu << lo));
}

struct taps {
    __m512 v0, v1, v2;         /* columns c * s - pad_l + (0, 1, 2) for the 16 outputs c */
};

/* Load masks for output columns c0 .. c0+15 (their taps start at column
 * s * c0 - pad_l): at stride 1, the three taps' spans; at stride 2, the two
 * 16-float spans after the first tap's column (the middle and last taps'
 * columns interleaved, aligned when pad_l is 1 and the rows are) and,
 * in lane 15 of the span ending there, that column itself. */
struct tap_masks {
    __mmask16 m0, m1, m2;
    int64_t base;
};

static inline __attribute__((always_inline)) struct tap_masks tap_masks(int64_t w, int64_t c0, int pad_l,
                                                                       const int s)
{
    struct tap_masks m;
    m.base = s * c0 - pad_l;
    if (s == 1) {
        m.m0 = span_mask(m.base, w), m.m1 = span_mask(m.base + 1, w), m.m2 = span_mask(m.base + 2, w);
    } else {
        m.m0 = span_mask(m.base - 15, w) & 0x8000, m.m1 = span_mask(m.base + 1, w), m.m2 = span_mask(m.base + 17, w);
    }
    return m;
}

/* The taps of input row ih (zeros when ih is outside the image: all lanes
 * masked off, nothing read). */
static inline __attribute__((always_inline)) struct taps load_taps(const struct k_conv2d *p, const float *x,
                                                                  int64_t ih, const struct tap_masks *m,
                                                                  const int s, const int edge)
{
    __mmask16 in = !edge || (ih >= 0 && ih < p->h) ? 0xFFFF : 0;
    const float *row = x + ih * p->w + m->base;
    struct taps t;
    if (s == 1 && edge == 2) {   /* no masks: every column inside the image */
        t.v0 = _mm512_loadu_ps(row);
        t.v1 = _mm512_loadu_ps(row + 1);
        t.v2 = _mm512_loadu_ps(row + 2);
    } else if (s == 1) {
        t.v0 = _mm512_maskz_loadu_ps(m->m0 & in, row);
        t.v1 = _mm512_maskz_loadu_ps(m->m1 & in, row + 1);
        t.v2 = _mm512_maskz_loadu_ps(m->m2 & in, row + 2);
    } else {
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        __m512 a, b, c;
        if (edge == 2) {
            a = _mm512_loadu_ps(row + 1), b = _mm512_loadu_ps(row + 17), c = _mm512_loadu_ps(row - 15);
        } else {
            a = _mm512_maskz_loadu_ps(m->m1 & in, row + 1);
            b = _mm512_maskz_loadu_ps(m->m2 & in, row + 17);
            c = _mm512_maskz_loadu_ps(m->m0 & in, row - 15);
        }
        t.v1 = _mm512_permutex2var_ps(a, even, b);
        t.v2 = _mm512_permutex2var_ps(a, odd, b);
        t.v0 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(t.v2), _mm512_castps_si512(c), 15));
    }
    return t;
}

static inline __attribute__((always_inline)) __m512 tap3(__m512 a, const __m512 *w3, struct taps t)
{
    a = _mm512_fmadd_ps(w3[0], t.v0, a);
    a = _mm512_fmadd_ps(w3[1], t.v1, a);
    return _mm512_fmadd_ps(w3[2], t.v2, a);
}

static inline __attribute__((always_inline)) __m512 epilogue(__m512 a, const float *res, int64_t at,
                                                             __mmask16 store, int act)
{
    if (res)
        a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(store, res + at));
    if (act == K_ACT_RELU || act == K_ACT_RELU6)
        a = _mm512_max_ps(a, _mm512_setzero_ps());
    if (act == K_ACT_RELU6)
        a = _mm512_min_ps(a, _mm512_set1_ps(6.0f));
    return a;
}

/* Input row i of the block feeds output row o = (i - ki) / s with kernel
 * row ki, where that divides and 0 <= o < R. */
#define DW_FEED(i)                                                                                        \
    if ((i) < (R - 1) * s + 3) {                                                                          \
        struct taps t = load_taps(p, x, r0 * s - p->pad_t + (i), &m, s, edge);                                 \
        for (ptrdiff_t ki = 0; ki < 3; ki++) {                                                            \
            ptrdiff_t d = (i) - ki;                                                                       \
            if (d < 0 || d % s || d / s >= R)                                                             \
                continue;                                                                                 \
            switch (d / s) {                                                                              \
            case 0: a0 = tap3(a0, wv + 3 * ki, t); break;                                                 \
            case 1: a1 = tap3(a1, wv + 3 * ki, t); break;                                                 \
            case 2: a2 = tap3(a2, wv + 3 * ki, t); break;                                                 \
            case 3: a3 = tap3(a3, wv + 3 * ki, t); break;                                                 \
            case 4: a4 = tap3(a4, wv + 3 * ki, t); break;                                                 \
            case 5: a5 = tap3(a5, wv + 3 * ki, t); break;                                                 \
            default: a6 = tap3(a6, wv + 3 * ki, t); break;                                                \
            }                                                                                             \
        }                                                                                                 \
    }

/* Output rows r0 .. r0+R-1 (R <= 7, (R - 1) * s + 3 <= 9), columns c0 .. c0+15 (stored under store). */
static inline __attribute__((always_inline)) void rows3x3(const struct k_conv2d *p, const float *x,
                                                          const __m512 wv[9], __m512 bias, const float *res,
                                                          float *y, int64_t r0, int64_t c0, __mmask16 store,
                                                          int act, const int s, const int R, const int edge)
{
    struct tap_masks m = tap_masks(p->w, c0, p->pad_l, s);
    __m512 a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias;
    DW_FEED(0) DW_FEED(1) DW_FEED(2) DW_FEED(3) DW_FEED(4) DW_FEED(5) DW_FEED(6) DW_FEED(7) DW_FEED(8)
    int64_t ow = p->ow, at = r0 * ow + c0;
    _mm512_mask_storeu_ps(y + at, store, epilogue(a0, res, at, store, act));
    if (R > 1)
        _mm512_mask_storeu_ps(y + at + ow, store, epilogue(a1, res, at + ow, store, act));
    if (R > 2)
        _mm512_mask_storeu_ps(y + at + 2 * ow, store, epilogue(a2, res, at + 2 * ow, store, act));
    if (R > 3)
        _mm512_mask_storeu_ps(y + at + 3 * ow, store, epilogue(a3, res, at + 3 * ow, store, act));
    if (R > 4)
        _mm512_mask_storeu_ps(y + at + 4 * ow, store, epilogue(a4, res, at + 4 * ow, store, act));
    if (R > 5)
        _mm512_mask_storeu_ps(y + at + 5 * ow, store, epilogue(a5, res, at + 5 * ow, store, act));
    if (R > 6)
        _mm512_mask_storeu_ps(y + at + 6 * ow, store, epilogue(a6, res, at + 6 * ow, store, act));
}
#undef DW_FEED
/* Every column chunk of output rows r0 .. r0+R-1. */
static inline __attribute__((always_inline)) void band3x3(const struct k_conv2d *p, const float *x,
                                                          const __m512 wv[9], __m512 bias, const float *res,
                                                          float *y, int64_t r0, int act, const int s,
                                                          const int R)
{
    /* Bands whose input rows all lie inside the image skip the row checks;
     * their chunks whose columns do too load unmasked (edge 2: masked loads
     * measured slower on 56x56 and 112x112 planes, where they cross cache
     * lines). */
    int64_t first = r0 * s - p->pad_t, last = first + (int64_t)(R - 1) * s + 2;
    if (first >= 0 && last < p->h)
        for (int64_t c0 = 0; c0 < p->ow; c0 += 16) {
            int64_t base = s * c0 - p->pad_l;
            if (c0 + 16 <= p->ow && (s == 1 ? base >= 0 && base + 18 <= p->w : base >= 15 && base + 33 <= p->w))
                rows3x3(p, x, wv, bias, res, y, r0, c0, 0xFFFF, act, s, R, 2);
            else
                rows3x3(p, x, wv, bias, res, y, r0, c0, span_mask(c0, p->ow), act, s, R, 0);
        }
    else
        for (int64_t c0 = 0; c0 < p->ow; c0 += 16)
            rows3x3(p, x, wv, bias, res, y, r0, c0, span_mask(c0, p->ow), act, s, R, 1);
}

/* R rows per band: 6 at stride 1 (8 input rows; 7 measured slower on
 * 14x14 to 56x56), 4 at stride 2 (9); the last band takes what is left,
 * at stride 1 seven rows rather than six and a lone one. */
static inline __attribute__((always_inline)) void plane3x3(const struct k_conv2d *p, const float *x,
                                                           const float *w9, float bias, const float *res,
                                                           float *y, const int s)
{
    const int R = s == 1 ? 6 : 4;
    __m512 wv[9];
    for (int k = 0; k < 9; k++)
        wv[k] = _mm512_set1_ps(w9[k]);
    __m512 bv = _mm512_set1_ps(bias);
    int act = p->act;
    int64_t r0 = 0;
    for (; r0 + R <= p->oh; r0 += R) {
        if (s == 1 && p->oh - r0 == 7) {
            band3x3(p, x, wv, bv, res, y, r0, act, s, 7);
            r0 += 7;
            break;
        }
        band3x3(p, x, wv, bv, res, y, r0, act, s, R);
    }
    switch (p->oh - r0) {
    case 0: break;
    case 1: band3x3(p, x, wv, bv, res, y, r0, act, s, 1); break;
    case 2: band3x3(p, x, wv, bv, res, y, r0, act, s, 2); break;
    case 3: band3x3(p, x, wv, bv, res, y, r0, act, s, 3); break;
    case 4: band3x3(p, x, wv, bv, res, y, r0, act, s, 4); break;
    case 5: band3x3(p, x, wv, bv, res, y, r0, act, s, 5); break;
    default: band3x3(p, x, wv, bv, res, y, r0, act, s, 6); break;
    }
    if (act != K_ACT_NONE && act != K_ACT_RELU && act != K_ACT_RELU6)
        kcpu_act_avx512(p->act, (int64_t)p->oh * p->ow, y, y);
}

/* One function per stride: their code laid out apart, each measured alone. */
static __attribute__((noinline)) void plane3x3_s1(const struct k_conv2d *p, const float *x, const float *w9,
                                                  float bias, const float *res, float *y)
{
    plane3x3(p, x, w9, bias, res, y, 1);
}

static __attribute__((noinline)) void plane3x3_s2(const struct k_conv2d *p, const float *x, const float *w9,
                                                  float bias, const float *res, float *y)
{
    plane3x3(p, x, w9, bias, res, y, 2);
}

void kcpu_dw3x3_avx512(const struct k_conv2d *p, const float *x, const float *w9, float bias,
                       const float *res, float *y)
{
    if (p->stride_h == 1)
        plane3x3_s1(p, x, w9, bias, res, y);
    else
        plane3x3_s2(p, x, w9, bias, res, y);
}
