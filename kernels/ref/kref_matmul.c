/*
 * kref_matmul.c - reference matrix product of two run-time operands (ONNX
 * MatMul, Gemm) and batch normalisation with run-time parameters: plain
 * loops, double accumulation.
 */
#include <math.h>

#include "kref.h"

/* Offsets of the operands' matrices for output matrix `idx` of a sample. */
static void matrix_offsets(const struct k_matmul *p, int64_t idx, int64_t *oa, int64_t *ob)
{
    *oa = 0, *ob = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        int64_t i = idx % p->dims[d];
        idx /= p->dims[d];
        *oa += i * p->a_stride[d];
        *ob += i * p->b_stride[d];
    }
}

void kref_matmul_f32(const struct k_matmul *p, const float *a, const float *b, float *y)
{
    int64_t mats = 1;
    for (int d = 0; d < p->rank; d++)
        mats *= p->dims[d];
    for (int s = 0; s < p->n; s++) {
        for (int64_t t = 0; t < mats; t++) {
            int64_t oa, ob;
            matrix_offsets(p, t, &oa, &ob);
            const float *A = a + s * p->a_sample + oa, *B = b + s * p->b_sample + ob;
            float *Y = y + ((int64_t)s * mats + t) * p->m * p->cols;
            for (int64_t i = 0; i < p->m; i++) {
                for (int64_t j = 0; j < p->cols; j++) {
                    double acc = 0;
                    for (int64_t q = 0; q < p->k; q++) {
                        double av = p->trans_a ? A[q * p->m + i] : A[i * p->k + q];
                        double bv = p->trans_b ? B[j * p->k + q] : B[q * p->cols + j];
                        acc += av * bv;
                    }
                    Y[i * p->cols + j] = (float)(p->alpha * acc);
                }
            }
        }
    }
}

void kref_batch_norm_f32(const struct k_batch_norm *p, const float *x, const float *scale, const float *bias,
                         const float *mean, const float *var, float *y)
{
    int64_t per = p->in_n * p->c * p->inner;
    for (int s = 0; s < p->n; s++) {
        const float *sc = scale + s * p->c, *bi = bias + s * p->c, *mu = mean + s * p->c, *va = var + s * p->c;
        for (int64_t i = 0; i < p->in_n; i++) {
            for (int64_t ch = 0; ch < p->c; ch++) {
                int64_t o = s * per + (i * p->c + ch) * p->inner;
                double den = sqrt((double)va[ch] + (double)p->eps);
                for (int64_t e = 0; e < p->inner; e++)
                    y[o + e] = (float)(((double)x[o + e] - mu[ch]) / den * sc[ch] + bi[ch]);
            }
        }
    }
}
