/*
 * q8_dwn_avx2.c - the channels-last INT8 depthwise convolution on AVX2
 * (kcpu_q8_dwn.h has the slice layout and why), for CPUs without AVX-512
 * VNNI.
 *
 * As the AVX-512 path, with 8 channels a vector: per chunk of up to
 * KQ8_DWN_CHUNK channels the task's input rows are widened into the
 * zero-padded int32 slice (x as int16 in the low half of each dword, zero
 * above; a column is KQ8_DWN_CHUNK dwords even for fewer channels, so the
 * taps' offsets are constants); a tap is then one vpmaddwd against the
 * tap's int32 weights (x * w + 0 * sign half, exact) and one vpaddd. Per 8
 * channels, output pixels go KQ8_DWN_PX at a time, each its own
 * accumulator chain, the weights read from memory (kept in registers,
 * they made GCC spill the taps' addresses).
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx2.h"
#include "kcpu_q8_dwn.h"

_Static_assert(2 * sizeof(struct kq8_lanes8) <= KQ8_DWN_LANES_BYTES, "KQ8_DWN_LANES_BYTES holds two kq8_lanes8");

#define KQ8_DWN_PX 4   /* output pixels in flight */

/* Channels 8k .. 8k + 7's constants: the second half of 16 channels' room. */
static const struct kq8_lanes8 *lanes_of(const void *lanes, int64_t k)
{
    return (const struct kq8_lanes8 *)((const uint8_t *)lanes + k / 2 * KQ8_DWN_LANES_BYTES) + k % 2;
}

void kq8_dwn_lanes_avx2(const struct k_conv2d *p, const struct k_q8_epilogue *e, void *lanes)
{
    /* with out_i32 only init (the bias) is used; mult may mean nothing */
    const struct k_q8_mult none[8] = {{0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}, {0, 33}};
    for (int64_t k = 0; k * 8 < p->c; k++)
        kq8_lanes8_of(e->bias + k * 8, e->out_i32 ? none : e->mult + k * 8, (int)kcpu_min64(8, p->c - k * 8),
                      (struct kq8_lanes8 *)lanes_of(lanes, k));
}

/* n (<= 8) int8 as int16 in the low half of each dword, zero above and past n. */
static inline __m256i widen8(const int8_t *src, int n)
{
    return _mm256_and_si256(kq8_load8_epi8(src, n), _mm256_set1_epi32(0xffff));
}

/* Input rows [ih0, ih0 + rows) of image x (channels [c0, c0 + cn)) into
 * the slice: rows of wp columns from column -pad_l, KQ8_DWN_CHUNK dwords
 * per column (whatever cn is, so that every tap's offset is a constant),
 * zero outside the image; the 8-channel groups past cn are not read. */
static void widen(const struct k_conv2d *p, const int8_t *x, int64_t ih0, int64_t rows, int64_t wp, int64_t c0,
                  int64_t cn, int32_t *slice)
{
    const int64_t cbp = KQ8_DWN_CHUNK;
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
            int64_t g = 0;
            for (; g + 8 <= cn; g += 8)
                _mm256_storeu_si256((__m256i *)(d + g), widen8(src + g, 8));
            if (g < cn)
                _mm256_storeu_si256((__m256i *)(d + g), widen8(src + g, (int)(cn - g)));
        }
    }
}

/* Where one group's output rows go, and its constants. */
struct dwn_group {
    const struct kq8_lanes8 *lanes;
    const struct kq8_lane_epi8 *ep;
    const int32_t *w;           /* [ntaps][16], this group's 8 of the 16 */
    int n;                      /* the group's channels (8, or fewer in the last) */
    int out_i32;
    int64_t pstep, rstep, cstep; /* int32 between output pixels, kernel rows, kernel columns in the slice */
};

/* The epilogue of np pixels' sums acc, pixel i's channels at element
 * yi + i * c of y (and the residual). */
static inline __attribute__((always_inline)) void store_px(const struct dwn_group *gr, const __m256i *acc, int np,
                                                           const int8_t *res, void *y, int64_t yi, int64_t c)
{
#pragma GCC unroll 8
    for (int i = 0; i < np; i++) {
        const int64_t at = yi + i * c;
        if (gr->out_i32) {
            kq8_store8_epi32((int32_t *)y + at, acc[i], gr->n);
            continue;
        }
        const __m256i r = res ? kq8_load8_epi8(res + at, gr->n) : _mm256_setzero_si256();
        const __m256i q = kq8_lanes8_requant(acc[i], gr->lanes, gr->ep, r);
        kq8_store_bytes((int8_t *)y + at, kq8_pack16_epi8(q, q), gr->n);
    }
}

/* np pixels' sums from the slice at xs (the first pixel's first tap):
 * weights from wv (kh * kw vectors in registers) or, without, memory. */
static inline __attribute__((always_inline)) void sums_px(const struct dwn_group *gr, const int32_t *xs, int kh,
                                                          int kw, int64_t pstep, int64_t cstep, const __m256i *wv,
                                                          int np, __m256i *acc)
{
#pragma GCC unroll 8
    for (int i = 0; i < np; i++)
        acc[i] = gr->lanes->init;
#pragma GCC unroll 3
    for (int ki = 0; ki < kh; ki++)
#pragma GCC unroll 3
        for (int kj = 0; kj < kw; kj++) {
            const __m256i w = wv ? wv[ki * kw + kj]
                                 : _mm256_loadu_si256((const __m256i *)(gr->w + ((int64_t)ki * kw + kj) * 16));
            const int32_t *xt = xs + ki * gr->rstep + kj * cstep;
#pragma GCC unroll 8
            for (int i = 0; i < np; i++)
                acc[i] = _mm256_add_epi32(acc[i],
                                          _mm256_madd_epi16(w, _mm256_loadu_si256((const __m256i *)(xt + i * pstep))));
        }
}

/* One output row of one group: ow pixels from the slice row xs. */
static inline __attribute__((always_inline)) void row_px(const struct dwn_group *gr, const int32_t *xs, int64_t ow,
                                                         int kh, int kw, int64_t pstep, int64_t cstep,
                                                         const __m256i *wv, const int8_t *res, void *y, int64_t yi,
                                                         int64_t c)
{
    __m256i acc[KQ8_DWN_PX];
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
    for (int64_t r = 0; r < rows; r++)
        row_px(gr, xs + r * row_step, ow, 3, 3, pstep, cstep, NULL, res, y, yi + r * y_row, c);
}

static void rows_any(const struct dwn_group *gr, const int32_t *xs, int64_t rows, int64_t row_step, int64_t ow,
                     int kh, int kw, const int8_t *res, void *y, int64_t yi, int64_t y_row, int64_t c)
{
    for (int64_t r = 0; r < rows; r++)
        row_px(gr, xs + r * row_step, ow, kh, kw, gr->pstep, gr->cstep, NULL, res, y, yi + r * y_row, c);
}

void kq8_dwn_rows_avx2(const struct kq8_dwn_job *j, int64_t img, int64_t r0, int64_t nr, void *slice)
{
    const struct k_conv2d *p = j->p;
    const int64_t c = p->c, ntaps = (int64_t)p->kh * p->kw, wp = j->wp;
    const int64_t rows = (nr - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1;
    const struct kq8_lane_epi8 ep = kq8_lane_epi8_of(j->e, j->res != NULL);
    const int8_t *x = j->x + img * p->h * p->w * c;
    int32_t *s = slice;
    for (int64_t c0 = 0; c0 < c; c0 += KQ8_DWN_CHUNK) {
        const int64_t cn = kcpu_min64(KQ8_DWN_CHUNK, c - c0), cbp = KQ8_DWN_CHUNK;
        widen(p, x, r0 * p->stride_h - p->pad_t, rows, wp, c0, cn, s);
        for (int64_t g0 = 0; g0 < cn; g0 += 8) {
            const int64_t k = (c0 + g0) / 8;
            const struct dwn_group gr = {
                .lanes = lanes_of(j->lanes, k), .ep = &ep, .w = j->w + k / 2 * ntaps * 16 + k % 2 * 8,
                .n = (int)kcpu_min64(8, cn - g0), .out_i32 = j->e->out_i32,
                .pstep = p->stride_w * cbp, .rstep = p->dil_h * wp * cbp, .cstep = p->dil_w * cbp,
            };
            const int32_t *xs = s + g0;
            const int64_t yi = ((img * p->oh + r0) * p->ow) * c + c0 + g0, y_row = p->ow * c;
            const int64_t row_step = p->stride_h * wp * cbp;
            /* MobileNet's: stride 1 or 2, no column dilation */
            if (p->kh == 3 && p->kw == 3 && p->dil_w == 1 && p->stride_w == 1)
                rows_3x3(&gr, xs, nr, row_step, p->ow, KQ8_DWN_CHUNK, KQ8_DWN_CHUNK, j->res, j->y, yi, y_row, c);
            else if (p->kh == 3 && p->kw == 3 && p->dil_w == 1 && p->stride_w == 2)
                rows_3x3(&gr, xs, nr, row_step, p->ow, (int64_t)2 * KQ8_DWN_CHUNK, KQ8_DWN_CHUNK, j->res, j->y, yi, y_row, c);
            else if (p->kh == 3 && p->kw == 3)
                rows_3x3(&gr, xs, nr, row_step, p->ow, gr.pstep, gr.cstep, j->res, j->y, yi, y_row, c);
            else
                rows_any(&gr, xs, nr, row_step, p->ow, p->kh, p->kw, j->res, j->y, yi, y_row, c);
        }
    }
}
