/*
 * cmd_accuracy.c - "inferctl accuracy MODEL_DIR...": the precision report
 * of docs/quantization.md (make accuracy). For each FP32 model: top-1 on
 * the whole Fashion-MNIST test set in FP32, FP16 (inferctl convert) and
 * INT8 with each calibration method (one calibration run, three scale
 * choices), and how many predictions each differs from FP32 on. The
 * variants are written to a temporary folder and removed afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "quant_tools.h"

static void row(const char *model, const char *precision, const char *calib, const struct ctl_images *test,
                const int *pred, const int *fp32)
{
    double top1 = ctl_top1(test, pred), base = ctl_top1(test, fp32);
    int d = ctl_disagree(pred, fp32, test->count);
    printf("| %s | %s | %s | %.2f | %+.2f | %d (%.2f%%) |\n", model, precision, calib, top1, top1 - base, d,
           100.0 * d / test->count);
    fflush(stdout);
}

/* All rows of one model; variants go under tmp. */
static bool model_rows(const char *dir, const char *tmp, const struct ctl_images *test, int calib, int threads)
{
    char name[RT_NAME_MAX], path[4096];
    ctl_dir_name(dir, name, sizeof(name));
    int *fp32 = calloc((size_t)test->count, sizeof(int)), *pred = calloc((size_t)test->count, sizeof(int));
    bool ok = fp32 && pred && ctl_predict(dir, test, threads, fp32);
    if (ok)
        row(name, "fp32", "-", test, fp32, fp32);
    snprintf(path, sizeof(path), "%s/%s-fp16", tmp, name);
    ok = ok && ctl_convert(dir, RT_PRECISION_FP16, path) && ctl_predict(path, test, threads, pred);
    if (ok)
        row(name, "fp16", "-", test, pred, fp32);
    struct ctl_calibration c = {0};
    ok = ok && ctl_calibrate(dir, calib, NULL, threads, &c);
    for (int m = RT_CALIB_MAX; ok && m <= RT_CALIB_ENTROPY; m++) {
        char label[64];
        snprintf(path, sizeof(path), "%s/%s-int8-%s", tmp, name, rt_calib_method_name((enum rt_calib_method)m));
        snprintf(label, sizeof(label), "%s%s, %d images", rt_calib_method_name((enum rt_calib_method)m),
                 m == RT_CALIB_PERCENTILE ? " 99.99" : "", c.images);
        ok = ctl_write_int8(&c, (enum rt_calib_method)m, 99.99, path) && ctl_predict(path, test, threads, pred);
        if (ok)
            row(name, "int8", label, test, pred, fp32);
    }
    if (c.model)
        ctl_calibration_free(&c);
    free(fp32), free(pred);
    return ok;
}

int ctl_cmd_accuracy(int argc, char **argv)
{
    int calib = CTL_CALIB_DEFAULT, threads = 0;
    const struct ctl_option opts[] = {
        {"calib", CTL_OPT_INT, &calib, 1, 60000},
        {"threads", CTL_OPT_INT, &threads, 0, 4096},
    };
    char **pos = NULL;
    int npos = 0;
    int rc = ctl_positional("accuracy", argc, argv, opts, 2, 1, 64, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    struct ctl_images test;
    char tmp[] = "/tmp/inferd-accuracy-XXXXXX";
    if (!ctl_images_fashion_mnist("test", NULL, &test)) {
        free(pos);
        return CTL_EXIT_ERROR;
    }
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "inferctl accuracy: cannot make a temporary folder\n");
        ctl_images_free(&test);
        free(pos);
        return CTL_EXIT_ERROR;
    }
    printf("Top-1 on the Fashion-MNIST test set (%d images), CPU backend.\n\n", test.count);
    printf("| model | precision | calibration | top-1 (%%) | vs fp32 (points) | predictions differing from fp32 |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    rc = CTL_EXIT_OK;
    for (int i = 0; i < npos && rc == CTL_EXIT_OK; i++)
        rc = model_rows(pos[i], tmp, &test, calib, threads) ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    ctl_remove_tree(tmp);
    ctl_images_free(&test);
    free(pos);
    return rc;
}
