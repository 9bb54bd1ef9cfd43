/*
 * kcpu_matmul.c - matrix product of two run-time operands (kcpu.h). One
 * task per output row; the inner loops run along contiguous memory for the
 * compiler to vectorise. Accumulation is FP32, so results differ
 * from kref_matmul.c by rounding only.
 */
#include <string.h>

#include "kcpu.h"

struct mm_job {
    const struct k_matmul *p;
    const float *a, *b;
    float *y;
    int64_t mats;
};

static void mm_row(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct mm_job *j = arg;
    const struct k_matmul *p = j->p;
    int64_t i = task % p->m, mat = task / p->m, t = mat % j->mats, s = mat / j->mats;
    int64_t oa = 0, ob = 0, idx = t;
    for (int d = p->rank - 1; d >= 0; d--) {
        int64_t v = idx % p->dims[d];
        idx /= p->dims[d];
        oa += v * p->a_stride[d];
        ob += v * p->b_stride[d];
    }
    const float *A = j->a + s * p->a_sample + oa, *B = j->b + s * p->b_sample + ob;
    float *Y = j->y + mat * p->m * p->cols + i * p->cols;
    int64_t n = p->cols, k = p->k;
    if (p->trans_b) {
        for (int64_t c = 0; c < n; c++) {
            const float *brow = B + c * k;
            float acc = 0;
            for (int64_t q = 0; q < k; q++)
                acc += (p->trans_a ? A[q * p->m + i] : A[i * k + q]) * brow[q];
            Y[c] = p->alpha * acc;
        }
        return;
    }
    memset(Y, 0, sizeof(float) * (size_t)n);
    for (int64_t q = 0; q < k; q++) {
        float av = p->trans_a ? A[q * p->m + i] : A[i * k + q];
        const float *brow = B + q * n;
        for (int64_t c = 0; c < n; c++)
            Y[c] += av * brow[c];
    }
    if (p->alpha != 1.0f) {
        for (int64_t c = 0; c < n; c++)
            Y[c] *= p->alpha;
    }
}

void kcpu_matmul_f32(struct kcpu_threads *th, const struct k_matmul *p, const float *a, const float *b, float *y)
{
    int64_t mats = 1;
    for (int d = 0; d < p->rank; d++)
        mats *= p->dims[d];
    struct mm_job j = {p, a, b, y, mats};
    kcpu_threads_run(th, (int64_t)p->n * mats * p->m, mm_row, &j);
}
