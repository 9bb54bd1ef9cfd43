/*
 * q8_dwn_avx512.c - the channels-last INT8 depthwise convolution on
 * AVX-512 VNNI (kcpu_q8_dwn.h has the slice layout and why).
 *
 * Per chunk of up to KQ8_DWN_CHUNK channels, the task's input rows are
 * widened into the zero-padded int32 slice; then, per 16 channels, output
 * pixels go KQ8_DWN_PX at a time, each its own accumulator chain (vpdpwssd
 * has a latency of several cycles), a tap's weights loaded once for all
 * of them. 3x3 layers keep their nine weight vectors in registers for the
 * whole group.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx512.h"
#include "kcpu_q8_dwn.h"

_Static_assert(sizeof(struct kq8_lanes16) <= KQ8_DWN_LANES_BYTES, "KQ8_DWN_LANES_BYTES holds a kq8_lanes16");
_Static_assert(KQ8_DWN_LANES_BYTES % 64 == 0, "lanes stay 64-byte aligned");

#define KQ8_DWN_PX 4   /* output pixels in flight */

void kq8_dwn_lanes_avx512(const struct k_conv2d *p, const struct k_q8_epilogue *e, void *lanes)
{
    /* with out_i32 only init (the bias) is used; mult may mean nothing */
    const struct k_q8_mult none[16] = {{0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33},
                                       {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}};
    for (int64_t g = 0; g * 16 < p->c; g++)
        kq8_lanes16_of(e->bias + g * 16, NULL, e->out_i32 ? none : e->mult + g * 16,
                       (int)kcpu_min64(16, p->c - g * 16),
                       (struct kq8_lanes16 *)((uint8_t *)lanes + g * KQ8_DWN_LANES_BYTES));
}

/* 16 int8 as int16 in the low half of each dword, zero above: vpdpwssd
 * against a sign-extended int32 weight then yields x * w exactly. */
static inline __m512i widen16(__m128i v)
{
    return _mm512_and_si512(_mm512_cvtepi8_epi32(v), _mm512_set1_epi32(0xffff));
}

/* Input rows [ih0, ih0 + rows) of image x (channels [c0, c0 + cn)) into
 * the slice: rows of wp columns from column -pad_l, cbp dwords per column
 * (widen16), zero outside the image and past cn. */
static void widen(const struct k_conv2d *p, const int8_t *x, int64_t ih0, int64_t rows, int64_t wp, int64_t c0,
                  int64_t cn, int32_t *slice)
{
    const int64_t ng = kcpu_ceil_div(cn, 16), cbp = ng * 16;
    const __mmask16 tail = (__mmask16)(0xffffu >> (cbp - cn));
    /* the image's columns in the slice: [j0, j1) */
    const int64_t j0 = kcpu_min64(p->pad_l, wp), j1 = kcpu_max64(j0, kcpu_min64((int64_t)p->pad_l + p->w, wp));
    for (int64_t r = 0; r < rows; r++) {
        const int64_t ih = ih0 + r;
        int32_t *row = slice + r * wp * cbp;
        if (ih < 0 || ih >= p->h) {
            memset(row, 0, (size_t)(wp * cbp) * 4);
            continue;
        }
        memset(row, 0, (size_t)(j0 * cbp) * 4);
        memset(row + j1 * cbp, 0, (size_t)((wp - j1) * cbp) * 4);
        const int8_t *src = x + (ih * p->w + (j0 - p->pad_l)) * p->c + c0;
        for (int64_t jc = j0; jc < j1; jc++, src += p->c) {
            int32_t *d = row + jc * cbp;
            for (int64_t g = 0; g < ng - 1; g++)
                _mm512_storeu_si512(d + g * 16, widen16(_mm_loadu_si128((const __m128i *)(src + g * 16))));
            _mm512_storeu_si512(d + (ng - 1) * 16, widen16(_mm_maskz_loadu_epi8(tail, src + (ng - 1) * 16)));
        }
    }
}

/* Where one group's output rows go, and its constants. */
struct dwn_group {
    const struct kq8_lanes16 *lanes;
    const struct kq8_lane_epi *ep;
    const int32_t *w;           /* [ntaps][16] */
    __mmask16 mask;             /* the group's channels */
    int out_i32;
    int64_t pstep, rstep, cstep; /* int32 between output pixels, kernel rows, kernel columns in the slice */
};

/* The epilogue of np pixels' sums acc, pixel i's 16 channels at
 * element yi + i * c of y (and the residual). */
static inline __attribute__((always_inline)) void store_px(const struct dwn_group *gr, const __m512i *acc, int np,
                                                           const int8_t *res, void *y, int64_t yi, int64_t c)
{
#pragma GCC unroll 8
    for (int i = 0; i < np; i++) {
        const int64_t at = yi + i * c;
        if (gr->out_i32) {
            _mm512_mask_storeu_epi32((int32_t *)y + at, gr->mask, acc[i]);
            continue;
        }
        __m512i r = res ? _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(gr->mask, res + at)) : _mm512_setzero_si512();
        _mm_mask_storeu_epi8((int8_t *)y + at, gr->mask,
                             _mm512_cvtepi32_epi8(kq8_lanes_requant(acc[i], gr->lanes, gr->ep, r)));
    }
}

/* np pixels' sums from the slice at xs (the first pixel's first tap):
 * weights from wv (kh * kw vectors in registers) or, without, memory. */
static inline __attribute__((always_inline)) void sums_px(const struct dwn_group *gr, const int32_t *xs, int kh,
                                                          int kw, int64_t pstep, int64_t cstep, const __m512i *wv,
                                                          int np, __m512i *acc)
{
#pragma GCC unroll 8
    for (int i = 0; i < np; i++)
        acc[i] = gr->lanes->init;
#pragma GCC unroll 3
    for (int ki = 0; ki < kh; ki++)
#pragma GCC unroll 3
        for (int kj = 0; kj < kw; kj++) {
            const __m512i w = wv ? wv[ki * kw + kj] : _mm512_loadu_si512(gr->w + ((int64_t)ki * kw + kj) * 16);
            const int32_t *xt = xs + ki * gr->rstep + kj * cstep;
#pragma GCC unroll 8
            for (int i = 0; i < np; i++)
                acc[i] = _mm512_dpwssd_epi32(acc[i], w, _mm512_loadu_si512(xt + i * pstep));
        }
}

/* One output row of one group: ow pixels from the slice row xs. */
static inline __attribute__((always_inline)) void row_px(const struct dwn_group *gr, const int32_t *xs, int64_t ow,
                                                         int kh, int kw, int64_t pstep, int64_t cstep,
                                                         const __m512i *wv, const int8_t *res, void *y, int64_t yi,
                                                         int64_t c)
{
    __m512i acc[KQ8_DWN_PX];
    int64_t oj = 0;
    for (; oj + KQ8_DWN_PX <= ow; oj += KQ8_DWN_PX) {
        sums_px(gr, xs + oj * pstep, kh, kw, pstep, cstep, wv, KQ8_DWN_PX, acc);
        store_px(gr, acc, KQ8_DWN_PX, res, y, yi + oj * c, c);
    }
    for (; oj < ow; oj++) {
        sums_px(gr, xs + oj * pstep, kh, kw, pstep, cstep, wv, 1, acc);
        store_px(gr, acc, 1, res, y, yi + oj * c, c);
    }
}

/* 3x3 layers; pstep and cstep constants where the caller can make them
 * so (x's addresses are then one register and a displacement per tap). */
static inline __attribute__((always_inline)) void rows_3x3(const struct dwn_group *gr, const int32_t *xs,
                                                           int64_t rows, int64_t row_step, int64_t ow, int64_t pstep,
                                                           int64_t cstep, const int8_t *res, void *y, int64_t yi,
                                                           int64_t y_row, int64_t c)
{
    __m512i wv[9];
#pragma GCC unroll 9
    for (int t = 0; t < 9; t++)
        wv[t] = _mm512_loadu_si512(gr->w + (int64_t)t * 16);
    for (int64_t r = 0; r < rows; r++)
        row_px(gr, xs + r * row_step, ow, 3, 3, pstep, cstep, wv, res, y, yi + r * y_row, c);
}

static void rows_any(const struct dwn_group *gr, const int32_t *xs, int64_t rows, int64_t row_step, int64_t ow,
                     int kh, int kw, const int8_t *res, void *y, int64_t yi, int64_t y_row, int64_t c)
{
    for (int64_t r = 0; r < rows; r++)
        row_px(gr, xs + r * row_step, ow, kh, kw, gr->pstep, gr->cstep, NULL, res, y, yi + r * y_row, c);
}

void kq8_dwn_rows_avx512(const struct kq8_dwn_job *j, int64_t img, int64_t r0, int64_t nr, void *slice)
{
    const struct k_conv2d *p = j->p;
    const int64_t c = p->c, ntaps = (int64_t)p->kh * p->kw, wp = j->wp;
    const int64_t rows = (nr - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
    const struct kq8_lane_epi ep = kq8_lane_epi_of(j->e, j->res != NULL);
    const int8_t *x = j->x + img * p->h * p->w * c;
    int32_t *s = slice;
    for (int64_t c0 = 0; c0 < c; c0 += KQ8_DWN_CHUNK) {
        const int64_t cn = kcpu_min64(KQ8_DWN_CHUNK, c - c0), cbp = kcpu_ceil_div(cn, 16) * 16;
        widen(p, x, r0 * p->stride_h - p->pad_t, rows, wp, c0, cn, s);
        for (int64_t g0 = 0; g0 < cn; g0 += 16) {
            const int64_t g = (c0 + g0) / 16;
            const struct dwn_group gr = {
                .lanes = (const struct kq8_lanes16 *)((const uint8_t *)j->lanes + g * KQ8_DWN_LANES_BYTES),
                .ep = &ep, .w = j->w + g * ntaps * 16,
                .mask = (__mmask16)(0xffffu >> (16 - kcpu_min64(16, cn - g0))), .out_i32 = j->e->out_i32,
                .pstep = p->stride_w * cbp, .rstep = p->dil_h * wp * cbp, .cstep = p->dil_w * cbp,
            };
            const int32_t *xs = s + g0;
            const int64_t yi = ((img * p->oh + r0) * p->ow) * c + c0 + g0, y_row = p->ow * c;
            const int64_t row_step = p->stride_h * wp * cbp;
            /* MobileNet's: full chunks, stride 1 or 2, no column dilation */
            if (p->kh == 3 && p->kw == 3 && cbp == 64 && p->dil_w == 1 && p->stride_w == 1)
                rows_3x3(&gr, xs, nr, row_step, p->ow, 64, 64, j->res, j->y, yi, y_row, c);
            else if (p->kh == 3 && p->kw == 3 && cbp == 64 && p->dil_w == 1 && p->stride_w == 2)
                rows_3x3(&gr, xs, nr, row_step, p->ow, 128, 64, j->res, j->y, yi, y_row, c);
            else if (p->kh == 3 && p->kw == 3)
                rows_3x3(&gr, xs, nr, row_step, p->ow, gr.pstep, gr.cstep, j->res, j->y, yi, y_row, c);
            else
                rows_any(&gr, xs, nr, row_step, p->ow, p->kh, p->kw, j->res, j->y, yi, y_row, c);
        }
    }
}
