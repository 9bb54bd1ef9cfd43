/*
 * wino_avx512.c - the tile of a Winograd block's 16 GEMMs (kcpu_wino.h) on
 * AVX-512. The transforms stay the AVX2 ones (kcpu_wino_in_avx2 and
 * kcpu_wino_out_avx2): they are a fraction of the time, and the GEMMs do
 * not mind their tile order. Compiled with the AVX-512 flags; entered
 * only from kcpu_wino.c after the run-time ISA check.
 *
 * A tile is a whole 8-row panel of U[xi] by 1-3 vectors of 16 columns: 24
 * FMA chains for 3 vectors (11 loads per 24 FMAs), 8 for one, as many as
 * the two FMA pipes need at 4 cycles each. The AVX2 kernel's 4 x 24 tiles
 * left half of each AVX-512 FMA unused.
 */
#include "kcpu_math_avx512.h"
#include "kcpu_wino.h"

/* Floats of U fetched ahead of the depth loop: a panel's depth runs
 * through memory in one stream, and at batch 1 on small maps U (16 MiB on
 * ResNet-50's 7x7 stage) comes from DRAM while each float of it serves
 * only 16 columns. 2 KiB ahead: ResNet-50's 14x14 stage, in the model at
 * batch 1, 1.05 -> 0.83 ms a layer; 1, 4 KiB about the same. */
#define U_AHEAD 512

/* Rows 0..7 of a panel of U[xi] (a: at depth k0, KCPU_MR floats a depth
 * step) times nv vectors of V's columns over depth k0 .. k0 + k - 1,
 * added to M's sums (stored, for the first depth pass). */
static inline __attribute__((always_inline)) void gemm_tile(const int nv, int first, int64_t k,
                                                            const float *a, const float *b, int64_t ldb, float *c,
                                                            int64_t ldc)
{
    __m512 acc[KCPU_MR][3];
#pragma GCC unroll 8
    for (int i = 0; i < KCPU_MR; i++)
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            acc[i][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * v);
    for (int64_t kk = 0; kk < k; kk++, a += KCPU_MR, b += ldb) {
        __m512 bv[3];
        _mm_prefetch((const char *)(a + U_AHEAD), _MM_HINT_T0);
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < KCPU_MR; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 3
            for (int64_t v = 0; v < nv; v++)
                acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < KCPU_MR; i++)
#pragma GCC unroll 3
        for (int64_t v = 0; v < nv; v++)
            _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
}

void kcpu_wino_tile_avx512(int nv, int first, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                           int64_t ldc)
{
    if (nv == 3)
        gemm_tile(3, first, k, a, b, ldb, c, ldc);
    else if (nv == 2)
        gemm_tile(2, first, k, a, b, ldb, c, ldc);
    else
        gemm_tile(1, first, k, a, b, ldb, c, ldc);
}
