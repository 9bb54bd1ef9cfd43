/* test_cuda_onnx.c - the ONNX backend test suite on the CUDA backend (make
 * test-gpu): every case passes within the suite's tolerances or is refused
 * as unsupported, by the loader or by the backend's plan-time check for ops
 * it lacks. Skips with the reason where no device is usable or the cases
 * are not there (a GPU machine has no libonnx-testdata: make gpu-bundle
 * carries the cases the CPU passes, and gpu_check.sh points
 * INFERD_ONNX_TESTDATA at them). */
#include <stdio.h>
#include <unistd.h>

#include "onnx/suite.h"
#include "test_cuda_util.h"

TEST(cuda_onnx_suite)
{
    CUDA_REQUIRE();
    const char *root = onnx_suite_root();
    char first[512];
    snprintf(first, sizeof(first), "%s/%s", root, ONNX_SUITE_DIRS[0]);
    if (access(first, R_OK) != 0)
        SKIP("no ONNX test cases at %s (libonnx-testdata, or the GPU bundle's onnx/ with INFERD_ONNX_TESTDATA)", root);
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CUDA, &(struct rt_backend_options){.threads = 1, .device = -1}, &b,
                                    &err),
                  RT_OK);
    int failed = 0, passed = 0;
    for (int i = 0; ONNX_SUITE_DIRS[i]; i++) {
        struct onnx_suite_counts c;
        bool read = onnx_suite_run_dir(b, root, ONNX_SUITE_DIRS[i], &(struct onnx_suite_opts){0}, &c);
        TEST_FAIL_IF(!read, "cannot read %s/%s", root, ONNX_SUITE_DIRS[i]);
        printf("  %-18s %3d passed, %d failed, %3d unsupported\n", ONNX_SUITE_DIRS[i], c.passed, c.failed,
               c.unsupported);
        failed += c.failed;
        passed += c.passed;
    }
    rt_backend_free(b);
    ASSERT_EQ_INT(failed, 0);
    ASSERT_GE(passed, 1);
    return TEST_PASS;
}
