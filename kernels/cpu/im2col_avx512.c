/*
 * im2col_avx512.c - AVX-512 im2col of one 32-column strip, and the row copy
 * that builds the implicit-GEMM path's padded input.
 *
 * Written element by element, im2col costs as much as the GEMM for layers
 * with few output channels. Here every (input channel, ki, kj) row of a
 * strip is built in two registers with one masked load per run and half,
 * then stored whole. The masks admit only in-bounds input columns (padding
 * lanes stay zero) and, with the load offsets, depend only on (kj, run),
 * and the row validity only on (ki, run), so both are tabulated once per
 * strip and the inner loop is loads and stores. Stride 2 loads the input
 * floats under the lanes and keeps the even ones; larger strides gather.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kcpu_impl.h"
#include "kcpu_pad_avx512.h"

#define MAX_K 16  /* kernel extent tabulated; larger kernels use the plain C path */

/* Input columns iw + t * sw (t in [0, len)) that fall in [0, w): [*lo, *hi). */
static void valid_range(int iw, int sw, int len, int w, int *lo, int *hi)
{
    int l = iw < 0 ? (-iw + sw - 1) / sw : 0;
    int h = iw >= w ? 0 : (w - iw + sw - 1) / sw;
    *lo = l;
    *hi = h < len ? h : len;
}

int kcpu_im2col_strip_avx512(const struct k_conv2d *p, const struct kcpu_col_run *runs, int nruns,
                             float *dst)
{
    if (p->kh > MAX_K || p->kw > MAX_K)
        return -1;
    const int sw = p->stride_w, cg = p->c / p->groups;
    const int64_t plane = (int64_t)p->h * p->w;
    /* Per (kj, run): the strip lanes it fills from in-bounds columns, and
     * the offset o such that lane L reads row[o + L * sw]. */
    uint32_t mask[MAX_K][KCPU_NR];
    int64_t off[MAX_K][KCPU_NR];
    /* Per (ki, run): offset of the input row from the run's channel base,
     * and whether it exists (0 in the padding). */
    int64_t row_off[MAX_K][KCPU_NR];
    uint32_t row_ok[MAX_K][KCPU_NR];

    for (int r = 0; r < nruns; r++) {
        const struct kcpu_col_run *run = &runs[r];
        for (int kj = 0; kj < p->kw; kj++) {
            int iw = run->iw0 + kj * p->dil_w, lo, hi;
            valid_range(iw, sw, run->len, p->w, &lo, &hi);
            mask[kj][r] = kv_lane_bits(run->lane + lo, run->lane + hi);
            off[kj][r] = iw - (int64_t)run->lane * sw;
        }
        for (int ki = 0; ki < p->kh; ki++) {
            int ih = run->ih0 + ki * p->dil_h;
            row_ok[ki][r] = ih >= 0 && ih < p->h ? 0xffffffffu : 0;
            row_off[ki][r] = row_ok[ki][r] ? (int64_t)ih * p->w : 0;
        }
    }

    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int ci = 0; ci < cg; ci++)
        for (int ki = 0; ki < p->kh; ki++)
            for (int kj = 0; kj < p->kw; kj++, dst += KCPU_NR) {
                __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
                for (int r = 0; r < nruns; r++) {
                    uint32_t m = mask[kj][r] & row_ok[ki][r];
                    const float *row = runs[r].img + ci * plane + row_off[ki][r];
                    const float *base = kv_at(row, off[kj][r]);
                    __mmask16 m0 = (__mmask16)m, m1 = (__mmask16)(m >> 16);
                    if (sw == 1) {
                        /* Zero-masked loads OR-ed in: runs cover disjoint
                         * lanes, and a merging load would chain the runs
                         * through its destination register. */
                        v0 = _mm512_or_ps(v0, _mm512_maskz_loadu_ps(m0, base));
                        v1 = _mm512_or_ps(v1, _mm512_maskz_loadu_ps(m1, base + 16));
                    } else if (sw == 2) {
                        /* Lane L of half h reads base[2L + 32h]: load the
                         * input floats under the valid lanes, keep the even. */
                        for (int h = 0; h < 2; h++) {
                            uint32_t lanes = h ? m >> 16 : m & 0xffff;
                            if (!lanes)
                                continue;
                            int lo = __builtin_ctz(lanes), hi = 32 - __builtin_clz(lanes);
                            uint32_t src = kv_lane_bits(2 * lo, 2 * hi - 1);
                            const float *b = base + (int64_t)32 * h;
                            __m512 a = _mm512_maskz_loadu_ps((__mmask16)src, b);
                            __m512 c = _mm512_maskz_loadu_ps((__mmask16)(src >> 16), b + 16);
                            __m512 v = _mm512_permutex2var_ps(a, evens, c);
                            if (h)
                                v1 = _mm512_mask_mov_ps(v1, (__mmask16)lanes, v);
                            else
                                v0 = _mm512_mask_mov_ps(v0, (__mmask16)lanes, v);
                        }
                    } else {
                        __m512i idx = _mm512_mullo_epi32(iota, _mm512_set1_epi32(sw));
                        v0 = _mm512_mask_i32gather_ps(v0, m0, idx, base, 4);
                        v1 = _mm512_mask_i32gather_ps(v1, m1, idx, base + (int64_t)16 * sw, 4);
                    }
                }
                _mm512_storeu_ps(dst, v0);
                _mm512_storeu_ps(dst + 16, v1);
            }
    return 0;
}

void kcpu_pad_row_avx512(const float *src, int w, int iw0, int sw, float *dst, int64_t len)
{
    kv_pad_row(src, w, iw0, sw, dst, len);
}
