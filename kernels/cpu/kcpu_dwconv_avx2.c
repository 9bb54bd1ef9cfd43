/*
 * kcpu_dwconv_avx2.c - the AVX2 block kernel of the direct depthwise /
 * grouped convolution (kcpu_dwconv.h).
 *
 * As the AVX-512 kernel, with 8-lane vectors: mo output channels times 2
 * vectors (16 positions) of accumulators, at most 8 of the 16 registers,
 * leaving room for the loads and broadcasts.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_dwconv.h"

/* mo is a constant at every call (the switch below), so the loops unroll
 * and acc lives in registers. */
static inline __attribute__((always_inline)) void accumulate(const struct kcpu_dw_block *b, int64_t t,
                                                             const int mo)
{
    __m256 acc[KCPU_DW_MAX_MO][2];
#pragma GCC unroll 4
    for (int o = 0; o < mo; o++) {
        __m256 init = _mm256_set1_ps(b->bias ? b->bias[o] : 0.0f);
        acc[o][0] = acc[o][1] = init;
    }
    const float *g = b->grid + t;
    for (int64_t k = 0; k < b->ntaps; k++) {
        const float *src = g + b->off[k];
        __m256 x0 = _mm256_loadu_ps(src), x1 = _mm256_loadu_ps(src + 8);
#pragma GCC unroll 4
        for (int o = 0; o < mo; o++) {
            __m256 wk = _mm256_broadcast_ss(b->w + o * b->ntaps + k);
            acc[o][0] = _mm256_fmadd_ps(wk, x0, acc[o][0]);
            acc[o][1] = _mm256_fmadd_ps(wk, x1, acc[o][1]);
        }
    }
#pragma GCC unroll 4
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

void kcpu_dw_block_avx2(const struct kcpu_dw_block *b)
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
                kcpu_add_avx2(b->ow, a, b->res + o * plane + (int64_t)r * b->ow, y);
                a = y;
            }
            if (b->act != K_ACT_NONE)
                kcpu_act_avx2(b->act, b->ow, a, y);
            else if (a != y)
                memcpy(y, a, (size_t)b->ow * sizeof(float));
        }
}
