/*
 * kcpu_matmul.c - matrix product of two run-time operands (kcpu.h).
 *
 * The plain product (ONNX MatMul: attention's Q.K^T and A.V) runs on the
 * GEMM microkernels: each task takes one matrix, packs its A into KCPU_MR-row
 * panels and its B into KCPU_NR-column strips in the thread's scratch (m * k
 * + k * n copies against m * k * n multiply-adds), then runs one GEMM.
 * ViT-B/16's 24 attention products take 34-38 ms an image this way on two Zen 1
 * threads, 300 ms on the plain loops.
 * Gemm's transposed forms and alpha keep one task per output row on loops
 * along contiguous memory. Accumulation is FP32 either way, so results
 * differ from kref_matmul.c by rounding only.
 */
#include <string.h>

#include "kcpu_impl.h"

struct mm_job {
    const struct k_matmul *p;
    const float *a, *b;
    float *y;
    int64_t mats;              /* matrices a sample */
    float *scratch;            /* per thread: packed A, then packed B */
    int64_t a_floats, per_thread;
};

/* Where matrix `mat` (of all samples) of A and B start. */
static void operands(const struct mm_job *j, int64_t mat, const float **A, const float **B)
{
    const struct k_matmul *p = j->p;
    int64_t t = mat % j->mats, s = mat / j->mats, oa = 0, ob = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        int64_t v = t % p->dims[d];
        t /= p->dims[d];
        oa += v * p->a_stride[d];
        ob += v * p->b_stride[d];
    }
    *A = j->a + s * p->a_sample + oa;
    *B = j->b + s * p->b_sample + ob;
}

static int64_t packed_a_floats(const struct k_matmul *p)
{
    return (kcpu_ceil_div(p->m, KCPU_MR) * KCPU_MR * p->k + 15) / 16 * 16;   /* B's strips stay 64-byte aligned */
}

static int64_t packed_b_floats(const struct k_matmul *p)
{
    return kcpu_ceil_div(p->cols, KCPU_NR) * KCPU_NR * p->k;
}

static bool plain(const struct k_matmul *p)
{
    return !p->trans_a && !p->trans_b && p->alpha == 1.0f;
}

size_t kcpu_matmul_scratch_bytes(const struct k_matmul *p, int threads)
{
    return plain(p) ? (size_t)threads * (size_t)(packed_a_floats(p) + packed_b_floats(p)) * sizeof(float) + 64 : 0;
}

static void mm_gemm(void *arg, int64_t mat, int thread)
{
    const struct mm_job *j = arg;
    const struct k_matmul *p = j->p;
    const float *A, *B;
    operands(j, mat, &A, &B);
    float *pa = j->scratch + thread * j->per_thread, *pb = pa + j->a_floats;
    int64_t k = p->k, n = p->cols;
    kcpu_gemm_pack_a(A, p->m, k, KCPU_MR, pa);
    for (int64_t st = 0; st < kcpu_ceil_div(n, KCPU_NR); st++) {   /* [strip][k][KCPU_NR], zero padded */
        int64_t c0 = st * KCPU_NR, w = kcpu_min64(KCPU_NR, n - c0);
        for (int64_t kk = 0; kk < k; kk++) {
            float *d = pb + (st * k + kk) * KCPU_NR;
            memcpy(d, B + kk * n + c0, sizeof(float) * (size_t)w);
            memset(d + w, 0, sizeof(float) * (size_t)(KCPU_NR - w));
        }
    }
    struct kcpu_gemm g = {
        .m = (int)p->m, .k = k, .a = pa, .a_step = KCPU_MR,
        .b = pb, .ldb = KCPU_NR, .b_strip = k * KCPU_NR, .j0 = 0, .n = n,
        .seg_len = INT64_MAX, .row_len = INT64_MAX, .row_valid = INT64_MAX, .rows_valid = 1,
        .ldc = n, .c = j->y + mat * p->m * n, .act = K_ACT_NONE,
    };
    kcpu_gemm_run(&g);
}

static void mm_row(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct mm_job *j = arg;
    const struct k_matmul *p = j->p;
    int64_t i = task % p->m, mat = task / p->m;
    const float *A, *B;
    operands(j, mat, &A, &B);
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

void kcpu_matmul_f32(struct kcpu_threads *th, const struct k_matmul *p, const float *a, const float *b, float *y,
                     void *scratch)
{
    int64_t mats = 1;
    for (int d = 0; d < p->rank; d++)
        mats *= p->dims[d];
    struct mm_job j = {.p = p, .a = a, .b = b, .y = y, .mats = mats, .scratch = kcpu_align64(scratch),
                       .a_floats = packed_a_floats(p), .per_thread = packed_a_floats(p) + packed_b_floats(p)};
    if (plain(p))
        kcpu_threads_run(th, (int64_t)p->n * mats, mm_gemm, &j);
    else
        kcpu_threads_run(th, (int64_t)p->n * mats * p->m, mm_row, &j);
}
