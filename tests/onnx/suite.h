/*
 * suite.h - the ONNX backend test suite runner (the cases of Debian's
 * libonnx-testdata): each case folder holds model.onnx and
 * test_data_set_N/{input,output}_K.pb. A case is loaded with rt_model_load
 * on the given backend, fed its inputs and compared with its outputs
 * (|got - want| <= atol + rtol * |want|, as the ONNX backend tests).
 *
 * Outcome per case: passed; unsupported (the loader or the backend refused
 * it with RT_ERR_UNSUPPORTED, naming why); failed (any other load error, a
 * wrong value, a shape mismatch); bound: refused as it is, passed with its
 * graph inputs after the first made constants. Many node tests feed an
 * op's parameters (Reshape's shape, Resize's scales, Slice's starts) as
 * inputs, which inferd takes only as constants (INT64 inputs it never
 * serves); bound, each set's values are written into a copy of the model
 * as initializers, which checks the op against the suite's outputs. Used by run-tests (make test, make
 * test-gpu) and by build/onnx-suite (make test-onnx, the full table).
 */
#ifndef ONNX_SUITE_H
#define ONNX_SUITE_H

#include <stdbool.h>

#include "runtime/rt_model.h"

#define ONNX_SUITE_ROOT "/usr/share/libonnx-testdata/data"
#define ONNX_SUITE_RTOL 1e-3
#define ONNX_SUITE_ATOL 1e-7

struct onnx_suite_opts {
    bool verbose;          /* print every case's outcome, not only failures */
    double atol_of_peak;   /* > 0: atol is this times the output's largest |want|
                              instead of ONNX_SUITE_ATOL (whole models, whose
                              rounding noise is relative to their scale) */
};

struct onnx_suite_counts {
    int passed, failed, unsupported, bound;
};

/* Runs every case in root/dir on backend b. Failures are printed with
 * their reason; with opts->verbose, every case's outcome (and why
 * unsupported). False when the folder cannot be read. */
bool onnx_suite_run_dir(struct rt_backend *b, const char *root, const char *dir, const struct onnx_suite_opts *opts,
                        struct onnx_suite_counts *out);

/* Where the cases are: $INFERD_ONNX_TESTDATA when set (the GPU bundle
 * carries the supported cases there), else ONNX_SUITE_ROOT. */
const char *onnx_suite_root(void);

/* The four folders the suite covers, NULL-terminated. */
extern const char *const ONNX_SUITE_DIRS[];

#endif /* ONNX_SUITE_H */
