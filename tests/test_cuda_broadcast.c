/*
 * test_cuda_broadcast.c - the CUDA kernels of the ONNX element-wise ops
 * (kernels/cuda/broadcast.cu): binary operations with numpy broadcasting
 * and the unary functions. Without a GPU, their arithmetic on the host
 * (kcuda_binary_host, kcuda_unary_host: the kernels' own functions)
 * against kernels/ref; with one, the kernels themselves, FP32 and FP16.
 * A binary op is one float operation (pow in double), so FP32 agrees with
 * kref bit for bit (NaN where kref has NaN); unary functions within 1e-5.
 */
#include <math.h>
#include <stdlib.h>

#include "kernel_test_util.h"
#include "kernels/ref/kref.h"
#include "test_cuda_util.h"

/* A random broadcast binary op (kernel_binary_cpu_matches_ref's shapes),
 * its operands' elements over all samples in *na and *nb. */
static struct k_binary random_binary(int iter, int64_t *na, int64_t *nb)
{
    struct k_binary p = {.n = test_rand_int(1, 3), .rank = test_rand_int(0, 4),
                         .op = (enum k_binop)test_rand_int(0, K_BIN_COUNT - 1)};
    for (int d = 0; d < p.rank; d++)
        p.dims[d] = test_rand_int(1, iter % 10 == 0 ? 70 : iter % 10 == 1 ? 19 : 5);
    int64_t a = binary_operand_strides(&p, (unsigned)test_rand_int(0, 15), test_rand_int(0, p.rank), p.a_stride);
    int64_t b = binary_operand_strides(&p, (unsigned)test_rand_int(0, 15), test_rand_int(0, p.rank), p.b_stride);
    p.a_sample = test_rand_int(0, 3) ? a : 0;   /* 0: a constant shared by the samples */
    p.b_sample = test_rand_int(0, 3) ? b : 0;
    *na = a * p.n;
    *nb = b * p.n;
    return p;
}

static int64_t binary_outputs(const struct k_binary *p)
{
    int64_t out = p->n;
    for (int d = 0; d < p->rank; d++)
        out *= p->dims[d];
    return out;
}

/* Random inputs within op's domain (log and sqrt positive, reciprocal away
 * from 0) and its parameters. */
static struct k_unary random_unary(enum k_unop op, int64_t count, float *x)
{
    struct k_unary p = {.count = count, .op = op, .alpha = test_rand_float(0.2f, 2.0f),
                        .beta = test_rand_float(-1.0f, 1.0f)};
    test_rand_fill(x, count, -6, 6);
    for (int64_t i = 0; i < count; i++) {
        if (op == K_UN_LOG || op == K_UN_SQRT)
            x[i] = fabsf(x[i]) + 0.01f;
        else if (op == K_UN_RECIPROCAL)
            x[i] = x[i] < 0 ? x[i] - 0.1f : x[i] + 0.1f;
    }
    return p;
}

TEST(cuda_broadcast_host)
{
    for (int iter = 0; iter < 300; iter++) {
        int64_t na, nb;
        struct k_binary p = random_binary(iter, &na, &nb);
        int64_t out = binary_outputs(&p);
        float *a = rand_buf(na, -3, 3, KCUDA_F32), *b = rand_buf(nb, -3, 3, KCUDA_F32);
        float *want = out_buf(out), *got = out_buf(out);
        if (iter % 7 == 0)
            b[0] = NAN;   /* max and min carry NaN as numpy does */
        kref_binary_f32(&p, a, b, want);
        kcuda_binary_host(&p, a, b, got);
        int64_t bad = first_float_difference(got, want, out);
        float g = bad >= 0 ? got[bad] : 0, w = bad >= 0 ? want[bad] : 0;
        free(a), free(b), free(want), free(got);
        TEST_FAIL_IF(bad >= 0, "binary iter %d op %d rank %d element %lld: %.9g vs %.9g", iter, p.op, p.rank,
                     (long long)bad, g, w);
    }
    enum { COUNT = 2000 };
    float *x = out_buf(COUNT), *want = out_buf(COUNT), *got = out_buf(COUNT);
    int failed = 0;
    for (int op = 0; op < K_UN_COUNT; op++) {
        struct k_unary p = random_unary((enum k_unop)op, COUNT, x);
        kref_unary_f32(&p, x, want);
        kcuda_unary_host(&p, x, got);
        double e = test_rel_error(got, want, COUNT);
        if (!(e <= 1e-5)) {
            printf("  unary op %d: rel error %.3g\n", op, e);
            failed++;
        }
    }
    free(x), free(want), free(got);
    TEST_FAIL_IF(failed, "%d unary functions off their reference", failed);
    return TEST_PASS;
}

TEST(cuda_op_broadcast)
{
    CUDA_REQUIRE();
    int failed = 0;
    for (int t = 0; t < 2; t++) {
        enum kcuda_dtype dt = t ? KCUDA_F16 : KCUDA_F32;
        for (int iter = 0; iter < 60; iter++) {
            int64_t na, nb;
            struct k_binary p = random_binary(iter, &na, &nb);
            int64_t out = binary_outputs(&p);
            float *a = rand_buf(na, -3, 3, dt), *b = rand_buf(nb, -3, 3, dt), *want = out_buf(out);
            /* FP16: no quotient past half's range, no pow of a negative base (NaN) */
            for (int64_t i = 0; dt == KCUDA_F16 && i < nb; i++)
                b[i] = fabsf(b[i]) < 0.25f ? (b[i] < 0 ? -0.25f : 0.25f) : b[i];
            for (int64_t i = 0; dt == KCUDA_F16 && p.op == K_BIN_POW && i < na; i++)
                a[i] = fabsf(a[i]) + 0.25f;
            kref_binary_f32(&p, a, b, want);
            void *da = dbuf_upload(a, na, dt), *db = dbuf_upload(b, nb, dt), *dy = dbuf_poisoned(out, dt);
            cudaError_t e = kcuda_binary(&p, dt, da, db, dy, 0);
            float *got = out_buf(out);
            bool ok = e == cudaSuccess && dbuf_download(got, dy, out, dt);
            if (ok)
                ok = dt == KCUDA_F32 ? first_float_difference(got, want, out) < 0
                                     : cuda_check_close("binary", got, want, out, dt);
            if (!ok)
                printf("  binary %s iter %d op %d rank %d n %d: %s\n", dt == KCUDA_F16 ? "f16" : "f32", iter, p.op,
                       p.rank, p.n, cudaGetErrorString(e));
            failed += !ok;
            dbuf_free(da), dbuf_free(db), dbuf_free(dy);
            free(a), free(b), free(want), free(got);
        }
        enum { COUNT = 5000 };
        for (int op = 0; op < K_UN_COUNT; op++) {
            float *x = out_buf(COUNT), *want = out_buf(COUNT);
            struct k_unary p = random_unary((enum k_unop)op, COUNT, x);
            if (dt == KCUDA_F16)
                round_to_half(x, COUNT);
            kref_unary_f32(&p, x, want);
            void *dx = dbuf_upload(x, COUNT, dt), *dy = dbuf_poisoned(COUNT, dt);
            char what[48];
            snprintf(what, sizeof(what), "unary op %d", op);
            failed += !check_launch(what, dy, want, COUNT, dt, kcuda_unary(&p, dt, dx, dy, 0));
            dbuf_free(dx), dbuf_free(dy);
            free(x), free(want);
        }
    }
    TEST_FAIL_IF(failed, "%d element-wise cases failed", failed);
    return TEST_PASS;
}
