/*
 * gemm_avx2.c - the AVX2+FMA GEMM microkernel. Compiled with -mavx2 -mfma;
 * entered only through kcpu_gemm_run after the run-time ISA check.
 *
 * With 16 ymm registers the tile is 4 rows x 16 columns (8 accumulators,
 * 2 B loads + 4 broadcasts per 8 FMAs); an 8 x 32 block tile of the shared
 * packed layout is covered by up to four of them reading the panel with
 * its KCPU_MR stride. The epilogue is the portable one with AVX2
 * activations: AVX2 is the fallback ISA here, so code size wins over the
 * last few percent.
 */
#include "kcpu_impl.h"
#include "kcpu_math_avx2.h"

static inline __attribute__((always_inline)) void
tile(const int mr, const int partial, int64_t k, const float *a, const float *b, const int64_t *boff,
     int64_t ldb, __m256i m0, __m256i m1, float *out /* row stride KCPU_NR */)
{
    __m256 c0[4], c1[4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
        c0[i] = c1[i] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        const float *bk = boff ? b + boff[kk] : b;
        /* Masked so that an unpacked B may end at the strip's last column. */
        __m256 b0 = partial ? _mm256_maskload_ps(bk, m0) : _mm256_loadu_ps(bk);
        __m256 b1 = partial ? _mm256_maskload_ps(bk + 8, m1) : _mm256_loadu_ps(bk + 8);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
        a += KCPU_MR;
        if (!boff)
            b += ldb;
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
        _mm256_storeu_ps(out + (int64_t)i * KCPU_NR, c0[i]);
        _mm256_storeu_ps(out + (int64_t)i * KCPU_NR + 8, c1[i]);
    }
}

static __m256i lane_mask(int lanes)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), idx);
}

#define TILE_CASE(MR)                                                      \
    case MR:                                                               \
        if (cols < 16)                                                     \
            tile(MR, 1, g->k, a + r0, b + c0, g->boff, g->ldb, m0, m1, out); \
        else                                                               \
            tile(MR, 0, g->k, a + r0, b + c0, g->boff, g->ldb, m0, m1, out); \
        break;

void kcpu_gemm_avx2(const struct kcpu_gemm *g)
{
    float tmp[KCPU_MR * KCPU_NR];
    for (int i0 = 0; i0 < g->m; i0 += KCPU_MR) {
        int mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
        const float *a = g->a + (int64_t)i0 * g->k;
        for (int64_t t0 = 0; t0 < g->n; t0 += KCPU_NR) {
            int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const float *b = g->b + (t0 / KCPU_NR) * g->b_strip;
            for (int r0 = 0; r0 < mr; r0 += 4)
                for (int c0 = 0; c0 < nr; c0 += 16) {
                    int cols = nr - c0 < 16 ? nr - c0 : 16;
                    __m256i m0 = lane_mask(cols), m1 = lane_mask(cols - 8);
                    float *out = tmp + (int64_t)r0 * KCPU_NR + c0;
                    switch (mr - r0 < 4 ? mr - r0 : 4) {
                    TILE_CASE(1)
                    TILE_CASE(2)
                    TILE_CASE(3)
                    TILE_CASE(4)
                    }
                }
            kcpu_gemm_store_tile(g, tmp, i0, mr, g->j0 + t0, nr, kcpu_act_avx2);
        }
    }
}
