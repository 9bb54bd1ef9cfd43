/* test_onnx_dyn_kernels.c - kernels for ONNX ops whose weights are computed
 * tensors (MatMul / Gemm of two tensors, BatchNormalization with run-time
 * parameters): the CPU versions against the references over random shapes,
 * transposes, broadcast batch dims and sample counts. The CPU kernels
 * accumulate in FP32, the references in double: they agree within rounding. */
#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/ref/kref.h"
#include "test.h"

/* Batch strides of an operand whose matrix has `mat` elements, with size 1
 * along the dims in `ones` (bit mask) and missing the leading `missing`. */
static int64_t mm_strides(const struct k_matmul *p, unsigned ones, int missing, int64_t mat, int64_t *stride)
{
    int64_t step = mat;
    for (int d = p->rank - 1; d >= 0; d--) {
        bool one = d < missing || (ones >> d & 1u);
        stride[d] = one ? 0 : step;
        step *= one ? 1 : p->dims[d];
    }
    return step;
}

TEST(onnx_matmul_kernel_cpu_matches_ref)
{
    struct kcpu_threads *pool = kcpu_threads_create(2);
    for (int iter = 0; iter < 200; iter++) {
        struct k_matmul p = {.n = test_rand_int(1, 3), .rank = test_rand_int(0, 3),
                             .m = test_rand_int(1, iter % 10 == 0 ? 40 : 6), .k = test_rand_int(1, 33),
                             .cols = test_rand_int(1, iter % 10 == 0 ? 40 : 9), .trans_a = test_rand_int(0, 1),
                             .trans_b = test_rand_int(0, 1), .alpha = iter % 3 ? 1.0f : 0.25f};
        int64_t mats = 1;
        for (int d = 0; d < p.rank; d++)
            mats *= p.dims[d] = test_rand_int(1, 4);
        int64_t na = mm_strides(&p, (unsigned)test_rand_int(0, 7), test_rand_int(0, p.rank), p.m * p.k, p.a_stride);
        int64_t nb = mm_strides(&p, (unsigned)test_rand_int(0, 7), test_rand_int(0, p.rank), p.k * p.cols,
                                p.b_stride);
        p.a_sample = na;
        p.b_sample = test_rand_int(0, 3) ? nb : 0;   /* 0: shared by the samples */
        int64_t out = p.n * mats * p.m * p.cols;
        float *a = malloc(sizeof(float) * (size_t)(na * p.n)), *b = malloc(sizeof(float) * (size_t)(nb * p.n));
        float *want = malloc(sizeof(float) * (size_t)out), *got = malloc(sizeof(float) * (size_t)out);
        test_rand_fill(a, na * p.n, -1, 1);
        test_rand_fill(b, nb * p.n, -1, 1);
        kref_matmul_f32(&p, a, b, want);
        struct kcpu_threads *th = iter % 2 ? pool : NULL;
        void *scratch = malloc(kcpu_matmul_scratch_bytes(&p, kcpu_threads_count(th)) + 1);
        kcpu_matmul_f32(th, &p, a, b, got, scratch);
        free(scratch);
        for (int64_t i = 0; i < out; i++) {
            TEST_FAIL_IF(!(fabsf(got[i] - want[i]) <= 1e-5f * (float)p.k), "iter %d element %lld: %.9g vs %.9g", iter,
                         (long long)i, got[i], want[i]);
        }
        free(a), free(b), free(want), free(got);
    }
    kcpu_threads_free(pool);
    return TEST_PASS;
}

/* A hand-worked product: [2, 3] x [3, 2] and its transposed forms. */
TEST(onnx_matmul_kernel_known_values)
{
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
    const float at[6] = {1, 4, 2, 5, 3, 6}, bt[6] = {7, 9, 11, 8, 10, 12};
    const float want[4] = {58, 64, 139, 154};
    for (int t = 0; t < 5; t++) {   /* t == 4: the plain product with alpha 1, on the GEMM */
        struct k_matmul p = {.n = 1, .m = 2, .k = 3, .cols = 2, .a_sample = 6, .b_sample = 6,
                             .trans_a = t & 1 && t < 4, .trans_b = t >> 1 && t < 4, .alpha = t < 4 ? 2 : 1};
        float y[4], r[4];
        void *scratch = malloc(kcpu_matmul_scratch_bytes(&p, 1) + 1);
        kcpu_matmul_f32(NULL, &p, p.trans_a ? at : a, p.trans_b ? bt : b, y, scratch);
        free(scratch);
        kref_matmul_f32(&p, p.trans_a ? at : a, p.trans_b ? bt : b, r);
        for (int i = 0; i < 4; i++) {
            ASSERT_NEAR(y[i], p.alpha * want[i], 1e-4);
            ASSERT_NEAR(r[i], p.alpha * want[i], 1e-4);
        }
    }
    return TEST_PASS;
}

TEST(onnx_batch_norm_kernel_cpu_matches_ref)
{
    struct kcpu_threads *pool = kcpu_threads_create(2);
    for (int iter = 0; iter < 100; iter++) {
        struct k_batch_norm p = {.n = test_rand_int(1, 3), .in_n = test_rand_int(1, 3), .c = test_rand_int(1, 6),
                                 .inner = test_rand_int(1, 40), .eps = iter % 2 ? 1e-5f : 0.5f};
        int64_t per = p.in_n * p.c * p.inner, cnt = p.n * per, pc = p.n * p.c;
        float *x = malloc(sizeof(float) * (size_t)cnt), *want = malloc(sizeof(float) * (size_t)cnt);
        float *got = malloc(sizeof(float) * (size_t)cnt), *prm = malloc(sizeof(float) * (size_t)(4 * pc));
        test_rand_fill(x, cnt, -3, 3);
        test_rand_fill(prm, 3 * pc, -2, 2);
        test_rand_fill(prm + 3 * pc, pc, 0.1f, 2);   /* var > 0 */
        kref_batch_norm_f32(&p, x, prm, prm + pc, prm + 2 * pc, prm + 3 * pc, want);
        kcpu_batch_norm_f32(iter % 2 ? pool : NULL, &p, x, prm, prm + pc, prm + 2 * pc, prm + 3 * pc, got);
        for (int64_t i = 0; i < cnt; i++) {
            TEST_FAIL_IF(!(fabsf(got[i] - want[i]) <= 1e-5f + 1e-5f * fabsf(want[i])),
                         "iter %d element %lld: %.9g vs %.9g", iter, (long long)i, got[i], want[i]);
        }
        free(x), free(want), free(got), free(prm);
    }
    kcpu_threads_free(pool);
    return TEST_PASS;
}
