/*
 * wino_avx512.c - the 16 GEMMs of a Winograd block (kcpu_wino.h) on
 * AVX-512. The transforms stay the AVX2 ones (kcpu_wino_in_avx2 and
 * kcpu_wino_out_avx2): they are a fraction of the time, and the GEMM does
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
static inline __attribute__((always_inline)) void gemm_tile(const int nv, const int first, int64_t k,
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

#define TILE_WIDTHS(FIRST)                                                      \
    if (width == 48)                                                            \
        gemm_tile(3, FIRST, k1 - k0, a, b, g->ld, c, g->ldm);                   \
    else if (width == 32)                                                       \
        gemm_tile(2, FIRST, k1 - k0, a, b, g->ld, c, g->ldm);                   \
    else                                                                        \
        gemm_tile(1, FIRST, k1 - k0, a, b, g->ld, c, g->ldm);

/* The next strip's width for left columns (a multiple of 16): 48 where
 * what is left then is not 16 wide, else 32 or what is left. */
static inline int64_t strip_width(int64_t left)
{
    return left == 48 || left >= 80 ? 48 : left >= 32 ? 32 : left;
}

/* Floats of V a depth pass may hold: a strip's V (depth x width) stays in
 * L1 while every panel of the slice passes over it, U's panels in L2. A
 * narrow block (a 7x7 map at batch 1: 16 tiles) thus reads each panel's
 * whole depth in one pass; with a fixed depth of 128, the 7x7 stage's
 * layers took 2.35 ms instead of 1.95 in the model. */
#define V_L1_FLOATS 8192

void kcpu_wino_gemm_avx512(const struct kcpu_wino_gemm *g)
{
    const int64_t widest = strip_width(g->n);
    const int64_t passes = kcpu_ceil_div(g->k, V_L1_FLOATS / widest), kc = kcpu_ceil_div(g->k, passes);
    for (int xi = 0; xi < 16; xi++)
        for (int64_t k0 = 0; k0 < g->k; k0 += kc) {
            const int64_t k1 = kcpu_min64(g->k, k0 + kc);
            for (int64_t t = 0, width; t < g->n; t += width) {
                width = strip_width(g->n - t);
                const float *b = g->v + xi * g->v_xi + k0 * g->ld + t;
                for (int64_t p = 0; p < g->panels; p++) {
                    const float *a = g->u + xi * g->u_xi + (p * g->k + k0) * KCPU_MR;
                    float *c = g->m + xi * g->m_xi + p * KCPU_MR * g->ldm + t;
                    if (k0 == 0) {
                        TILE_WIDTHS(1)
                    } else {
                        TILE_WIDTHS(0)
                    }
                }
            }
        }
}
#undef TILE_WIDTHS
