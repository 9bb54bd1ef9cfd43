/* test_binary_kernel.c - the broadcasting binary kernel (ONNX Add, Sub, Mul,
 * Div, PRelu, Pow, and Clip's max / min): the CPU version against the
 * reference over random ranks, shapes, broadcast patterns, batch sizes and
 * constant operands. One float operation per element in both (pow: the
 * same double pow rounded once), so they must agree bit for bit (NaN where
 * both are NaN), under every ISA (add, sub, mul and div run in vectors on
 * AVX2 and AVX-512) and in place. */
#include <stdlib.h>
#include <string.h>

#include "kernel_test_util.h"
#include "kernels/cpu/kcpu.h"
#include "kernels/ref/kref.h"
#include "test.h"

TEST(kernel_binary_cpu_matches_ref)
{
    struct kcpu_threads *pool = kcpu_threads_create(2);
    for (int iter = 0; iter < 300; iter++) {
        struct k_binary p = {.n = test_rand_int(1, 3), .rank = test_rand_int(0, 4),
                             .op = (enum k_binop)test_rand_int(0, K_BIN_COUNT - 1)};
        int64_t out = 1;
        for (int d = 0; d < p.rank; d++)
            out *= p.dims[d] = test_rand_int(1, iter % 10 == 0 ? 70 : iter % 10 == 1 ? 19 : 5);
        int64_t na = binary_operand_strides(&p, (unsigned)test_rand_int(0, 15), test_rand_int(0, p.rank), p.a_stride);
        int64_t nb = binary_operand_strides(&p, (unsigned)test_rand_int(0, 15), test_rand_int(0, p.rank), p.b_stride);
        p.a_sample = test_rand_int(0, 3) ? na : 0;   /* 0: a constant shared by the samples */
        p.b_sample = test_rand_int(0, 3) ? nb : 0;
        float *a = malloc(sizeof(float) * (size_t)(na * p.n)), *b = malloc(sizeof(float) * (size_t)(nb * p.n));
        float *want = malloc(sizeof(float) * (size_t)(out * p.n)), *got = calloc((size_t)(out * p.n), sizeof(float));
        test_rand_fill(a, na * p.n, -3, 3);
        test_rand_fill(b, nb * p.n, -3, 3);
        if (iter % 7 == 0)
            b[0] = NAN;   /* max and min must carry NaN as numpy does */
        kref_binary_f32(&p, a, b, want);
        /* In place where a has the output's shape, as the runtime may run it. */
        bool in_place = na == out && p.a_sample == na && iter % 3 == 0;
        float *a_copy = malloc(sizeof(float) * (size_t)(na * p.n));
        memcpy(a_copy, a, sizeof(float) * (size_t)(na * p.n));
        char wrong[200] = "";
        FOR_EACH_ISA(isa) {
            float *y = in_place ? a : got;
            memcpy(a, a_copy, sizeof(float) * (size_t)(na * p.n));
            kcpu_binary_f32(iter % 2 ? pool : NULL, &p, a, b, y);
            int64_t i = wrong[0] ? -1 : first_float_difference(y, want, out * p.n);
            if (i >= 0)
                snprintf(wrong, sizeof(wrong), "iter %d op %d rank %d isa %s%s element %lld: %.9g vs %.9g", iter,
                         p.op, p.rank, kcpu_isa_name((enum kcpu_isa)isa), in_place ? " in place" : "", (long long)i,
                         y[i], want[i]);
        }
        free(a), free(a_copy), free(b), free(want), free(got);
        if (wrong[0])
            kcpu_threads_free(pool);
        TEST_FAIL_IF(wrong[0], "%s", wrong);
    }
    kcpu_threads_free(pool);
    return TEST_PASS;
}
