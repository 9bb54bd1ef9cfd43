/*
 * kcpu_dwconv_avx512.c - the AVX-512 block kernel of the direct depthwise /
 * grouped convolution (kcpu_dwconv.h).
 *
 * Accumulators for mo output channels times 4 vectors (64 positions) stay
 * in registers across all taps: per tap, 4 grid loads and mo weight
 * broadcasts feed 4 * mo multiply-adds (16 independent chains at mo = 4,
 * enough to hide the FMA latency; 4 at mo = 1, which the loads bound
 * anyway). The epilogue then drops each output row's extra columns, adds
 * the residual and applies the activation row by row.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_dwconv.h"

/* mo and nv are constants at every call (the switch below), so the loops
 * unroll and acc lives in registers. */
static inline __attribute__((always_inline)) void accumulate(const struct kcpu_dw_block *b, int64_t t,
                                                             const int mo, const int nv)
{
    __m512 acc[KCPU_DW_MAX_MO][4];
#pragma GCC unroll 4
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
#pragma GCC unroll 4
        for (int o = 0; o < mo; o++) {
            __m512 wk = _mm512_set1_ps(b->w[o * b->ntaps + k]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[o][v] = _mm512_fmadd_ps(wk, x[v], acc[o][v]);
        }
    }
#pragma GCC unroll 4
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

void kcpu_dw_block_avx512(const struct kcpu_dw_block *b)
{
    switch (b->mo) {
    case 1: sweep(b, 1); break;
    case 2: sweep(b, 2); break;
    case 3: sweep(b, 3); break;
    default: sweep(b, 4); break;
    }
    int64_t plane = (int64_t)b->oh * b->ow;
    for (int o = 0; o < b->mo; o++)
        for (int r = 0; r < b->oh; r++) {
            const float *a = b->acc + o * b->count + r * b->row_len;
            float *y = b->y + o * plane + (int64_t)r * b->ow;
            if (b->res) {
                kcpu_add_avx512(b->ow, a, b->res + o * plane + (int64_t)r * b->ow, y);
                a = y;
            }
            if (b->act != K_ACT_NONE)
                kcpu_act_avx512(b->act, b->ow, a, y);
            else if (a != y)
                memcpy(y, a, (size_t)b->ow * sizeof(float));
        }
}
