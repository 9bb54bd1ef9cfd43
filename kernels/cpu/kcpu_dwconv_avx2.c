/*
 * kcpu_dwconv_avx2.c - the AVX2 block kernel of the direct depthwise /
 * grouped convolution (kcpu_dwconv.h).
 *
 * As the AVX-512 kernel, with 8-lane vectors: mo output channels times 2
 * vectors (16 positions) of accumulators, at most 12 of the 16 registers,
 * leaving room for the two loads and the broadcast. LeNet-5's conv1 (6
 * channels) as one block of 6 rather than 4 + 2: the block of 2 had 4
 * chains, too few for the FMA latency (0.92-0.94x the time on Zen 1).
 *
 * kcpu_dw3x3_avx2, at the end, is the direct depthwise 3x3 path.
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kcpu_dwconv.h"
#include "kcpu_math_avx2.h"
#include "kcpu_pad_avx2.h"

/* mo is a constant at every call (the switch below), so the loops unroll
 * and acc lives in registers. */
static inline __attribute__((always_inline)) void accumulate(const struct kcpu_dw_block *b, int64_t t,
                                                             const int mo)
{
    __m256 acc[KCPU_DW_MAX_MO][2];
#pragma GCC unroll 6
    for (int o = 0; o < mo; o++) {
        __m256 init = _mm256_set1_ps(b->bias ? b->bias[o] : 0.0f);
        acc[o][0] = acc[o][1] = init;
    }
    const float *g = b->grid + t;
    for (int64_t k = 0; k < b->ntaps; k++) {
        const float *src = g + b->off[k];
        __m256 x0 = _mm256_loadu_ps(src), x1 = _mm256_loadu_ps(src + 8);
#pragma GCC unroll 6
        for (int o = 0; o < mo; o++) {
            __m256 wk = _mm256_broadcast_ss(b->w + o * b->ntaps + k);
            acc[o][0] = _mm256_fmadd_ps(wk, x0, acc[o][0]);
            acc[o][1] = _mm256_fmadd_ps(wk, x1, acc[o][1]);
        }
    }
#pragma GCC unroll 6
    for (int o = 0; o < mo; o++) {
        _mm256_storeu_ps(b->acc + o * b->count + t, acc[o][0]);
        _mm256_storeu_ps(b->acc + o * b->count + t + 8, acc[o][1]);
    }
}

static inline __attribute__((always_inline)) void sweep(const struct kcpu_dw_block *b, const int mo)
{
    for (int64_t t = 0; t < b->count; t += 16)
        accumulate(b, t, mo);
}

/* Each output row's ow columns of the accumulators, plus the residual,
 * through the activation, into y; act is a constant at the common calls
 * (as in kcpu_dwconv_avx512.c, where a call per row cost a third of
 * LeNet-5's conv1). */
static inline __attribute__((always_inline)) void store_rows(const struct kcpu_dw_block *b, const enum k_act act)
{
    int64_t plane = (int64_t)b->oh * b->ow;
    __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(b->ow % 8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const float *res = b->res;
    for (int o = 0; o < b->mo; o++)
        for (int r = 0; r < b->oh; r++) {
            const float *a = b->acc + o * b->count + r * b->row_len;
            int64_t at = o * plane + (int64_t)r * b->ow;
            int64_t c = 0;
            for (; c + 8 <= b->ow; c += 8) {
                __m256 v = _mm256_loadu_ps(a + c);
                if (res)
                    v = _mm256_add_ps(v, _mm256_loadu_ps(res + at + c));
                _mm256_storeu_ps(b->y + at + c, kv8_act(act, v));
            }
            if (c < b->ow) {
                __m256 v = _mm256_maskload_ps(a + c, tail);
                if (res)
                    v = _mm256_add_ps(v, _mm256_maskload_ps(res + at + c, tail));
                _mm256_maskstore_ps(b->y + at + c, tail, kv8_act(act, v));
            }
        }
}

void kcpu_dw_block_avx2(const struct kcpu_dw_block *b)
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

/* ---- 3x3 depthwise, stride 1 or 2: straight from the plane ----
 *
 * No padded copy, any padding: output row r's 8 columns from c0 take
 * input row ih's columns s * (c0 + l) - pad_l + j for lane l and tap
 * j = 0, 1, 2. At stride 1 those are three unaligned loads of the plane
 * itself; at stride 2 the even and odd columns of two pairs of loads, one
 * column apart. Masks clear the lanes whose tap falls outside the row
 * (lanes past a row read the next row; outputs past the row are never
 * kept); rows above and below the plane are skipped. With a padding of
 * at most 1 (MobileNet's) only the left and right taps need them, and
 * the centre's mask is made only for rows that take the slow path: the
 * plane's first and last rows, whose loads would leave it and take the
 * lane-moving path of kcpu_pad_avx2.h, and chunks with a centre tap in a
 * wider padding. An input row is loaded once a band of up to 7 output
 * rows (a 7x7 map in one band, 14x14 in two) and feeds the rows that
 * read it.
 *
 * This replaced a path that first copied each plane into a zero-padded
 * one: on Zen 1, one thread, MobileNetV2's layers (padding 1) took
 * 0.56-0.67x its time on 7x7 and 14x14 maps, 0.59-0.85x on the larger
 * ones; paddings 0 and 2, 0.55-1.08x (docs/performance.md). Bands of 4 rows
 * took 1.02-1.29x the time of bands of 7 (the weights spill to the stack
 * in both).
 *
 * Stores are never masked (vmaskmovps stores are microcoded on AMD): a
 * row's last chunk starts at ow - 8, overlapping the one before it and
 * storing the same values; rows narrower than 8 store whole vectors whose
 * spare lanes fall on the next row, stored after them, and only a store
 * that would leave the plane goes through a copy. */

/* The even (odd: 0xDD) floats of a then b, in order. */
static inline __m256 kv8_deinterleave(__m256 a, __m256 b, const int imm)
{
    __m256 v = imm == 0x88 ? _mm256_shuffle_ps(a, b, 0x88) : _mm256_shuffle_ps(a, b, 0xDD);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

/* One channel: its input plane, its output and how that is finished. */
struct dw_geo {
    const float *x;            /* [h][w] */
    int64_t h, w, pad_t, pad_l;
    int64_t ow, plane_out;
    const float *res;          /* the channel's residual [oh][ow], or NULL */
    float *y;
    __m256 lo, hi;             /* act(v) = min(max(v, lo), hi): ReLU, ReLU6 or none */
};

/* Output row r, 8 columns from c0 (at = r * ow + c0): the residual, the
 * clamp, then the store (see the top of this section for the stores that
 * would leave the plane). */
static inline __attribute__((always_inline)) void finish(const struct dw_geo *g, __m256 a, int64_t at)
{
    int whole = at + 8 <= g->plane_out;
    if (g->res)
        a = _mm256_add_ps(a, whole ? _mm256_loadu_ps(g->res + at) : _mm256_maskload_ps(g->res + at, kv8_cols_in(0, g->ow)));
    a = _mm256_min_ps(_mm256_max_ps(a, g->lo), g->hi);
    if (whole) {
        _mm256_storeu_ps(g->y + at, a);
    } else {
        float lanes[8];
        _mm256_storeu_ps(lanes, a);
        memcpy(g->y + at, lanes, (size_t)g->ow * sizeof(float));
    }
}

#define DW_DIRECT_ROWS 7

/* The 8 floats at plane offset at, zeros outside [0, plane): a plain load
 * where inside is known (in), else only the plane's floats are read. */
static inline __attribute__((always_inline)) __m256 load_at(const float *x, int64_t plane, int64_t at, const int in)
{
    return in ? _mm256_loadu_ps(x + at) : kv8_load_cols(x, at, plane);
}

/* Lanes whose input column first + s * l lies in [0, w). */
static inline __m256 cols_in_row(int64_t first, int64_t w, const int s)
{
    return _mm256_castsi256_ps(kv8_cols_in_step(first, s, w));
}

/* An input row's three taps for 8 outputs whose first one's centre tap is
 * plane offset at, column centre of its row; lmask and rmask clear the
 * lanes whose left or right tap falls outside the row. in: all the loads
 * are inside the plane and every kept output's centre tap inside its row
 * (the centre needs no mask; building it on this path, kept in a register,
 * cost 5-15 % of the time at stride 1). */
static inline __attribute__((always_inline)) void taps_direct(const float *x, int64_t plane, int64_t at,
                                                              int64_t centre, int64_t w, __m256 lmask,
                                                              __m256 rmask, const int s, const int in,
                                                              __m256 *l, __m256 *c, __m256 *r)
{
    if (s == 1) {
        *l = load_at(x, plane, at - 1, in);
        *c = load_at(x, plane, at, in);
        *r = load_at(x, plane, at + 1, in);
    } else {
        const __m256 a = load_at(x, plane, at, in), b = load_at(x, plane, at + 8, in);
        *l = kv8_deinterleave(load_at(x, plane, at - 1, in), load_at(x, plane, at + 7, in), 0x88);
        *c = kv8_deinterleave(a, b, 0x88);
        *r = kv8_deinterleave(a, b, 0xDD);
    }
    *l = _mm256_and_ps(*l, lmask);
    if (!in)
        *c = _mm256_and_ps(*c, cols_in_row(centre, w, s));
    *r = _mm256_and_ps(*r, rmask);
}

/* Output rows r0 .. r0+R-1 (R <= DW_DIRECT_ROWS) of one channel at
 * stride s, every column chunk. */
static inline __attribute__((always_inline)) void band_direct(const struct dw_geo *g, const float *w9, float bias,
                                                              int64_t r0, const int s, const int R)
{
    const __m256 w00 = _mm256_set1_ps(w9[0]), w01 = _mm256_set1_ps(w9[1]), w02 = _mm256_set1_ps(w9[2]);
    const __m256 w10 = _mm256_set1_ps(w9[3]), w11 = _mm256_set1_ps(w9[4]), w12 = _mm256_set1_ps(w9[5]);
    const __m256 w20 = _mm256_set1_ps(w9[6]), w21 = _mm256_set1_ps(w9[7]), w22 = _mm256_set1_ps(w9[8]);
    const float *x = g->x;
    const int64_t h = g->h, w = g->w, plane = h * w, ow = g->ow;
    for (int64_t c0 = 0;; c0 += 8) {
        if (c0 + 8 > ow)
            c0 = kcpu_max64(0, ow - 8);
        /* lane l: output column c0 + l, its left tap input column s * (c0 + l) - pad_l, the right one that + 2;
         * the centre taps of the kept lanes inside the row unless the padding is wider than 1 */
        const int64_t centre = s * c0 - g->pad_l + 1;
        const int centre_in = centre >= 0 && s * kcpu_min64(c0 + 7, ow - 1) - g->pad_l + 1 < w;
        const __m256 lmask = cols_in_row(centre - 1, w, s), rmask = cols_in_row(centre + 1, w, s);
        __m256 acc[DW_DIRECT_ROWS];
#pragma GCC unroll 8
        for (int i = 0; i < R; i++)
            acc[i] = _mm256_set1_ps(bias);
        /* input row s * r0 - pad_t + k is tap row t of output row r0 + j where k = s * j + t */
#pragma GCC unroll 16
        for (int k = 0; k <= s * (R - 1) + 2; k++) {
            const int64_t ih = s * r0 - g->pad_t + k;
            if (ih < 0 || ih >= h)
                continue;
            const int64_t at = ih * w + s * c0 - g->pad_l + 1;   /* lane 0's centre tap */
            __m256 tl, tc, tr;
            if (centre_in && at >= 1 && at + (s == 1 ? 9 : 16) <= plane)
                taps_direct(x, plane, at, centre, w, lmask, rmask, s, 1, &tl, &tc, &tr);
            else
                taps_direct(x, plane, at, centre, w, lmask, rmask, s, 0, &tl, &tc, &tr);
            if (k % s == 0 && k / s < R) {   /* the top row of output row k / s */
                acc[k / s] = _mm256_fmadd_ps(w00, tl, acc[k / s]);
                acc[k / s] = _mm256_fmadd_ps(w01, tc, acc[k / s]);
                acc[k / s] = _mm256_fmadd_ps(w02, tr, acc[k / s]);
            }
            if (k >= 1 && (k - 1) % s == 0 && (k - 1) / s < R) {
                acc[(k - 1) / s] = _mm256_fmadd_ps(w10, tl, acc[(k - 1) / s]);
                acc[(k - 1) / s] = _mm256_fmadd_ps(w11, tc, acc[(k - 1) / s]);
                acc[(k - 1) / s] = _mm256_fmadd_ps(w12, tr, acc[(k - 1) / s]);
            }
            if (k >= 2 && (k - 2) % s == 0) {   /* the bottom row of output row (k - 2) / s */
                acc[(k - 2) / s] = _mm256_fmadd_ps(w20, tl, acc[(k - 2) / s]);
                acc[(k - 2) / s] = _mm256_fmadd_ps(w21, tc, acc[(k - 2) / s]);
                acc[(k - 2) / s] = _mm256_fmadd_ps(w22, tr, acc[(k - 2) / s]);
            }
        }
#pragma GCC unroll 8
        for (int i = 0; i < R; i++)
            finish(g, acc[i], (r0 + i) * ow + c0);
        if (c0 + 8 >= ow)
            break;
    }
}

/* One function per stride and band height. */
#define DW_DIRECT(S, R)                                                                                   \
    static __attribute__((noinline)) void direct_s##S##_r##R(const struct dw_geo *g, const float *w9,     \
                                                             float bias, int64_t r0)                      \
    {                                                                                                     \
        band_direct(g, w9, bias, r0, S, R);                                                               \
    }
DW_DIRECT(1, 1) DW_DIRECT(1, 2) DW_DIRECT(1, 3) DW_DIRECT(1, 4) DW_DIRECT(1, 5) DW_DIRECT(1, 6) DW_DIRECT(1, 7)
DW_DIRECT(2, 1) DW_DIRECT(2, 2) DW_DIRECT(2, 3) DW_DIRECT(2, 4) DW_DIRECT(2, 5) DW_DIRECT(2, 6) DW_DIRECT(2, 7)
#undef DW_DIRECT

typedef void (*dw_direct_fn)(const struct dw_geo *, const float *, float, int64_t);

/* n rows in bands of at most most rows, as even as the plane allows (14
 * rows in sevens are 7 + 7, 15 are 5 + 5 + 5, not 7 + 7 + 1): band b's height. */
static int64_t band_rows(int64_t n, int64_t most, int64_t b)
{
    int64_t nb = kcpu_ceil_div(n, most);
    return n / nb + (b < n % nb);
}

void kcpu_dw3x3_avx2(const struct k_conv2d *p, const float *x, const float *w9, float bias, const float *res,
                     float *y)
{
    static const dw_direct_fn DIRECT[2][DW_DIRECT_ROWS] = {
        {direct_s1_r1, direct_s1_r2, direct_s1_r3, direct_s1_r4, direct_s1_r5, direct_s1_r6, direct_s1_r7},
        {direct_s2_r1, direct_s2_r2, direct_s2_r3, direct_s2_r4, direct_s2_r5, direct_s2_r6, direct_s2_r7},
    };
    int clamp = p->act == K_ACT_RELU || p->act == K_ACT_RELU6;
    struct dw_geo g = {
        .x = x, .h = p->h, .w = p->w, .pad_t = p->pad_t, .pad_l = p->pad_l,
        .ow = p->ow, .plane_out = (int64_t)p->oh * p->ow, .res = res, .y = y,
        .lo = _mm256_set1_ps(clamp ? 0.0f : -INFINITY),
        .hi = _mm256_set1_ps(p->act == K_ACT_RELU6 ? 6.0f : INFINITY),
    };
    for (int64_t b = 0, r0 = 0, rows; r0 < p->oh; b++, r0 += rows) {
        rows = band_rows(p->oh, DW_DIRECT_ROWS, b);
        DIRECT[p->stride_h - 1][rows - 1](&g, w9, bias, r0);
    }
    if (!clamp && p->act != K_ACT_NONE)
        kcpu_act_avx2(p->act, g.plane_out, y, y);
}
