/*
 * main.c - build/onnx-suite: the ONNX backend test suite as a table.
 *
 *   build/onnx-suite [--backend cpu|cuda] [--verbose] [--root DIR] [--atol-of-peak F] [FOLDER...]
 *
 * Runs the cases of each folder (default: node, pytorch-converted,
 * pytorch-operator, simple under /usr/share/libonnx-testdata/data, or
 * $INFERD_ONNX_TESTDATA), prints
 * failures (every case with --verbose) and a passed / failed / unsupported
 * / passed bound line per folder (bound: refused as it is, passed with its
 * inputs after the first made constants; suite.h). Exits non-zero when a case failed. `make test-onnx`.
 * --atol-of-peak F compares within F times each output's largest value
 * (plus the suite's relative tolerance): for whole models, whose rounding
 * noise near zero is relative to their scale, not to each element.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

int main(int argc, char **argv)
{
    enum rt_backend_kind kind = RT_BACKEND_CPU;
    struct onnx_suite_opts opts = {0};
    const char *root = onnx_suite_root();
    const char *dirs[64];
    int n_dirs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            struct rt_error err;
            if (rt_backend_kind_parse(argv[++i], &kind, &err) != RT_OK) {
                fprintf(stderr, "--backend: %s\n", err.msg);
                return 2;
            }
        } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
            root = argv[++i];
        } else if (strcmp(argv[i], "--verbose") == 0) {
            opts.verbose = true;
        } else if (strcmp(argv[i], "--atol-of-peak") == 0 && i + 1 < argc) {
            char *end;
            opts.atol_of_peak = strtod(argv[++i], &end);
            if (*end || !(opts.atol_of_peak > 0 && opts.atol_of_peak < 1)) {
                fprintf(stderr, "--atol-of-peak: a number in (0, 1)\n");
                return 2;
            }
        } else if (argv[i][0] != '-' && n_dirs < 64) {
            dirs[n_dirs++] = argv[i];
        } else {
            fprintf(stderr, "usage: %s [--backend cpu|cuda] [--verbose] [--root DIR] [--atol-of-peak F] [FOLDER...]\n", argv[0]);
            return 2;
        }
    }
    if (n_dirs == 0) {
        for (; ONNX_SUITE_DIRS[n_dirs]; n_dirs++)
            dirs[n_dirs] = ONNX_SUITE_DIRS[n_dirs];
    }
    struct rt_error err = {0};
    struct rt_backend *b;
    if (rt_backend_create(kind, &(struct rt_backend_options){.threads = 2, .device = -1}, &b, &err) != RT_OK) {
        fprintf(stderr, "backend: %s\n", err.msg);
        return 1;
    }
    printf("ONNX backend test suite (%s) on %s\n", root, rt_backend_describe(b));
    struct onnx_suite_counts total = {0}, per[64];
    for (int i = 0; i < n_dirs; i++) {
        if (!onnx_suite_run_dir(b, root, dirs[i], &opts, &per[i])) {
            fprintf(stderr, "cannot read %s/%s (is libonnx-testdata installed?)\n", root, dirs[i]);
            rt_backend_free(b);
            return 1;
        }
        total.passed += per[i].passed;
        total.failed += per[i].failed;
        total.unsupported += per[i].unsupported;
        total.bound += per[i].bound;
    }
    printf("\n| folder | passed | failed | unsupported | passed bound |\n| --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < n_dirs; i++)
        printf("| %s | %d | %d | %d | %d |\n", dirs[i], per[i].passed, per[i].failed, per[i].unsupported,
               per[i].bound);
    printf("| total | %d | %d | %d | %d |\n", total.passed, total.failed, total.unsupported, total.bound);
    rt_backend_free(b);
    return total.failed ? 1 : 0;
}
