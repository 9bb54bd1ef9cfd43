/*
 * pool_avx512.c - max pooling of one plane by rows on AVX-512, FP32 and
 * INT8. Per output row: the maximum down the window's rows, column by
 * column, into a row whose padding columns hold the lowest value; then the
 * maximum across each window of that row, at stride 1 (plain loads) or 2
 * (two loads and one permute, or one byte narrowing). Same results as
 * kref_pool.c: the maxima start from the reference's initial value
 * (-inf, K_Q8_MIN) and take an element only when it is greater, so a NaN
 * never wins and padding never does either.
 *
 * The per-output loops of kcpu_pool2d.c and kcpu_q8_ops.c compared every
 * window cell one at a time: ResNet-50's 3x3 stride-2 max pool took 1.9 ms
 * in INT8 (7 % of the model) and 1.0 ms in FP32.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../kernel_quant.h"
#include "kcpu_impl.h"

#define ROW_MAX 4096   /* elements of the padded row, on the stack */
#define ROWS_MAX 16    /* window rows */

/* Elements of the padded row: every window's cells and every input column. */
static int64_t row_len(const struct k_pool2d *p)
{
    int64_t extent = (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1;
    return kcpu_max64(extent, (int64_t)p->pad_l + p->w);
}

int kcpu_max_pool_rows_fits(const struct k_pool2d *p)
{
    return kcpu_isa() == KCPU_ISA_AVX512 && (p->stride_w == 1 || p->stride_w == 2) && p->kh <= ROWS_MAX &&
           row_len(p) <= ROW_MAX;
}

static __mmask16 mask16(int64_t n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }
static __mmask64 mask64(int64_t n) { return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1); }

/* ------------------------------------------------------------ FP32 */

static void colmax_f32(const float *const *rows, int nrows, int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask16(n - i);
        __m512 v = _mm512_set1_ps(-INFINITY);
        for (int r = 0; r < nrows; r++)   /* max_ps(a, v) is a > v ? a : v */
            v = _mm512_max_ps(_mm512_maskz_loadu_ps(m, rows[r] + i), v);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* y[o] = max over t < k of x[o * stride + t * dil], o < n. */
static void winmax_f32(const float *x, int64_t n, int stride, int k, int dil, float *y)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t o = 0; o < n; o += 16) {
        int64_t m = kcpu_min64(16, n - o);
        __m512 v = _mm512_set1_ps(-INFINITY);
        for (int t = 0; t < k; t++) {
            const float *s = x + o * stride + (int64_t)t * dil;
            __m512 w;
            if (stride == 1) {
                w = _mm512_maskz_loadu_ps(mask16(m), s);
            } else {
                int64_t need = 2 * m - 1;   /* s[0], s[2], ..., s[2m - 2] */
                __m512 lo = _mm512_maskz_loadu_ps(mask16(need), s);
                __m512 hi = _mm512_maskz_loadu_ps(mask16(kcpu_max64(0, need - 16)), s + 16);
                w = _mm512_permutex2var_ps(lo, even, hi);
            }
            v = _mm512_max_ps(w, v);
        }
        _mm512_mask_storeu_ps(y + o, mask16(m), v);
    }
}

/* ------------------------------------------------------------ INT8 */

static void colmax_s8(const int8_t *const *rows, int nrows, int64_t n, int8_t *y)
{
    for (int64_t i = 0; i < n; i += 64) {
        __mmask64 m = mask64(n - i);
        __m512i v = _mm512_set1_epi8(K_Q8_MIN);
        for (int r = 0; r < nrows; r++)
            v = _mm512_max_epi8(_mm512_maskz_loadu_epi8(m, rows[r] + i), v);
        _mm512_mask_storeu_epi8(y + i, m, v);
    }
}

static void winmax_s8(const int8_t *x, int64_t n, int stride, int k, int dil, int8_t *y)
{
    const int64_t per = stride == 1 ? 64 : 32;   /* outputs per vector */
    for (int64_t o = 0; o < n; o += per) {
        int64_t m = kcpu_min64(per, n - o);
        __m512i v = _mm512_set1_epi8(K_Q8_MIN);
        for (int t = 0; t < k; t++) {
            const int8_t *s = x + o * stride + (int64_t)t * dil;
            __m512i w;
            if (stride == 1) {
                w = _mm512_maskz_loadu_epi8(mask64(m), s);
            } else {
                /* the low byte of each 16-bit word is an even element */
                __m512i words = _mm512_maskz_loadu_epi8(mask64(2 * m - 1), s);
                w = _mm512_castsi256_si512(_mm512_cvtepi16_epi8(words));
            }
            v = _mm512_max_epi8(w, v);
        }
        _mm512_mask_storeu_epi8(y + o, mask64(m), v);
    }
}

/* ------------------------------------------------------------ 2x2 / 2 */

/* LeNet's 2x2 stride-2 pooling of one plane with every window inside the
 * input (the caller checks): per output row, the two input rows' maxima,
 * then each adjacent pair's. A loop per output would take 1.0 us on
 * LeNet-5's 6x28x28 INT8 plane set; this is the rows path without its
 * padded row. */
void kcpu_max_pool_2x2_avx512(const struct k_pool2d *p, int s8, const void *x, void *y)
{
    const int64_t w = p->w, ow = p->ow;
    for (int64_t oh = 0; oh < p->oh; oh++) {
        if (s8) {
            const int8_t *r0 = (const int8_t *)x + 2 * oh * w, *r1 = r0 + w;
            int8_t *out = (int8_t *)y + oh * ow;
            for (int64_t o = 0; o < ow; o += 32) {   /* 64 inputs, 32 outputs */
                int64_t m = kcpu_min64(32, ow - o);
                __m512i v = _mm512_max_epi8(_mm512_maskz_loadu_epi8(mask64(2 * m), r0 + 2 * o),
                                            _mm512_maskz_loadu_epi8(mask64(2 * m), r1 + 2 * o));
                /* the low byte of each 16-bit word: the maximum of the pair */
                v = _mm512_max_epi8(v, _mm512_srli_epi16(v, 8));
                _mm256_mask_storeu_epi8(out + o, (__mmask32)mask64(m), _mm512_cvtepi16_epi8(v));
            }
        } else {
            const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
            const __m512 ninf = _mm512_set1_ps(-INFINITY);
            const float *r0 = (const float *)x + 2 * oh * w, *r1 = r0 + w;
            float *out = (float *)y + oh * ow;
            for (int64_t o = 0; o < ow; o += 16) {   /* 32 inputs, 16 outputs */
                int64_t m = kcpu_min64(16, ow - o);
                __mmask16 lo = mask16(2 * m), hi = mask16(2 * m - 16);
                /* from -inf, taking an element only when greater: a NaN never wins */
                __m512 a = _mm512_max_ps(_mm512_maskz_loadu_ps(lo, r0 + 2 * o), ninf);
                __m512 b = _mm512_max_ps(_mm512_maskz_loadu_ps(hi, r0 + 2 * o + 16), ninf);
                a = _mm512_max_ps(_mm512_maskz_loadu_ps(lo, r1 + 2 * o), a);
                b = _mm512_max_ps(_mm512_maskz_loadu_ps(hi, r1 + 2 * o + 16), b);
                __m512 v = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), _mm512_permutex2var_ps(a, even, b));
                _mm512_mask_storeu_ps(out + o, mask16(m), v);
            }
        }
    }
}

/* ------------------------------------------------------------ the plane */

void kcpu_max_pool_rows(const struct k_pool2d *p, int s8, const void *x, void *y)
{
    _Alignas(64) union {
        float f[ROW_MAX];
        int8_t b[ROW_MAX];
    } row;
    const int64_t len = row_len(p), w = p->w, ow = p->ow;
    if (s8)
        memset(row.b, K_Q8_MIN, (size_t)len);
    else
        for (int64_t i = 0; i < len; i++)
            row.f[i] = -INFINITY;
    for (int oh = 0; oh < p->oh; oh++) {
        int h0 = oh * p->stride_h - p->pad_t, lo, hi, nrows = 0;
        kcpu_window_clip(h0, p->kh, p->dil_h, p->h, &lo, &hi);
        /* columns [pad_l, pad_l + w) of the row: the window rows' maxima */
        if (s8) {
            const int8_t *rows[ROWS_MAX];
            for (int ki = lo; ki < hi; ki++)
                rows[nrows++] = (const int8_t *)x + (int64_t)(h0 + ki * p->dil_h) * w;
            colmax_s8(rows, nrows, w, row.b + p->pad_l);
            winmax_s8(row.b, ow, p->stride_w, p->kw, p->dil_w, (int8_t *)y + oh * ow);
        } else {
            const float *rows[ROWS_MAX];
            for (int ki = lo; ki < hi; ki++)
                rows[nrows++] = (const float *)x + (int64_t)(h0 + ki * p->dil_h) * w;
            colmax_f32(rows, nrows, w, row.f + p->pad_l);
            winmax_f32(row.f, ow, p->stride_w, p->kw, p->dil_w, (float *)y + oh * ow);
        }
    }
}

/* ------------------------------------------------------------ channels last */

void kcpu_max_pool_nhwc_row_q8_avx512(const struct k_pool2d *p, const int8_t *x, int64_t oy, int8_t *out)
{
    const int64_t c = p->c;
    for (int64_t ox = 0; ox < p->ow; ox++, out += c)
        for (int64_t c0 = 0; c0 < c; c0 += 64) {
            const __mmask64 m = mask64(c - c0);
            __m512i best = _mm512_set1_epi8(K_Q8_MIN);
            for (int64_t ki = 0; ki < p->kh; ki++) {
                const int64_t ih = oy * p->stride_h - p->pad_t + ki * p->dil_h;
                if (ih < 0 || ih >= p->h)
                    continue;
                for (int64_t kj = 0; kj < p->kw; kj++) {
                    const int64_t iw = ox * p->stride_w - p->pad_l + kj * p->dil_w;
                    if (iw >= 0 && iw < p->w)
                        best = _mm512_max_epi8(best, _mm512_maskz_loadu_epi8(m, x + (ih * p->w + iw) * c + c0));
                }
            }
            _mm512_mask_storeu_epi8(out + c0, m, best);
        }
}

void kcpu_sum_pixels_nhwc_q8_avx512(int64_t hw, int64_t c, const int8_t *x, int64_t c0, int64_t nc, int32_t *sum)
{
    for (int64_t k = 0; k < nc; k += 16) {
        const __mmask16 m = mask16(nc - k);
        __m512i acc = _mm512_setzero_si512();
        for (int64_t i = 0; i < hw; i++)
            acc = _mm512_add_epi32(acc, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, x + i * c + c0 + k)));
        _mm512_mask_storeu_epi32(sum + k, m, acc);
    }
}
