/*
 * kcpu_gemm.c - the GEMM block shared by convolution and linear: ISA
 * dispatch, the portable epilogue store, and the plain-C microkernel.
 *
 * A block walks A panels in the outer loop and B strips in the inner one, so
 * the KCPU_MR x k panel stays in L1 while the strips stream from L2 (the
 * callers size a block's B to fit L2). k is not blocked: the models served
 * have k <= a few thousand, for which one panel still fits L1, and keeping
 * the whole reduction in registers lets the epilogue run once, fused.
 */
#include <string.h>

#include "kcpu_impl.h"

void kcpu_gemm_run(const struct kcpu_gemm *g)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        kcpu_gemm_avx512(g);
        return;
    case KCPU_ISA_AVX2:
        kcpu_gemm_avx2(g);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    kcpu_gemm_scalar(g);
}

void kcpu_gemm_pack_a(const float *w, int64_t m, int64_t k, int64_t a_step, float *packed)
{
    const int64_t per = a_step / KCPU_MR;   /* panels interleaved: 1, or 2 in a pair */
    for (int64_t pn = 0; pn < kcpu_ceil_div(m, KCPU_MR); pn++) {
        float *panel = packed + pn / per * per * KCPU_MR * k + pn % per * KCPU_MR;
        for (int64_t kk = 0; kk < k; kk++)
            for (int i = 0; i < KCPU_MR; i++) {
                int64_t o = pn * KCPU_MR + i;
                panel[kk * a_step + i] = o < m ? w[o * k + kk] : 0.0f;
            }
    }
}

void kcpu_gemm_store_tile(const struct kcpu_gemm *g, const float *tmp, int i0, int mr,
                          int64_t j, int nr, kcpu_act_row_fn act_row)
{
    int64_t first, off, len;
    /* A tile may span several images and output rows: one run each. */
    for (int64_t jj = j; (len = kcpu_gemm_next_run(g, jj, j + nr, &first, &off)) > 0; jj = first + len)
        for (int i = 0; i < mr; i++) {
            const float *t = tmp + (int64_t)i * KCPU_NR + (first - j);
            float bias_i = g->bias_row ? g->bias_row[i0 + i] : 0.0f;
            int64_t at = off + (int64_t)(i0 + i) * g->ldc;
            float *c = g->c + at;
            for (int64_t e = 0; e < len; e++) {
                float v = t[e] + bias_i;
                if (g->bias_col)
                    v += g->bias_col[first + e];
                if (g->res)
                    v += g->res[at + e];
                c[e] = v;
            }
            if (g->act != K_ACT_NONE)
                act_row(g->act, len, c, c);
        }
}

void kcpu_gemm_scalar(const struct kcpu_gemm *g)
{
    float tmp[KCPU_MR * KCPU_NR];
    for (int i0 = 0; i0 < g->m; i0 += KCPU_MR) {
        int mr = (int)kcpu_min64(KCPU_MR, g->m - i0);
        const float *a = kcpu_gemm_panel(g, i0);
        for (int64_t t0 = 0; t0 < g->n; t0 += KCPU_NR) {
            int nr = (int)kcpu_min64(KCPU_NR, g->n - t0);
            const float *b = g->b + (t0 / KCPU_NR) * g->b_strip;
            memset(tmp, 0, sizeof(tmp));
            for (int64_t kk = 0; kk < g->k; kk++) {
                const float *ak = a + kk * g->a_step;
                const float *bk = b + (g->boff ? g->boff[kk] : kk * g->ldb);
                for (int i = 0; i < mr; i++)
                    for (int t = 0; t < nr; t++)
                        tmp[i * KCPU_NR + t] += ak[i] * bk[t];
            }
            kcpu_gemm_store_tile(g, tmp, i0, mr, g->j0 + t0, nr, kcpu_act_scalar);
        }
    }
}
