/*
 * cmd_quantize.c - "inferctl quantize": INT8 post-training quantisation of
 * an FP32 model folder, and "inferctl convert": the same folder at another
 * float precision.
 *
 * quantize runs the FP32 model, loaded without fusion so that every
 * activation tensor is observable, over N images of a fixed subset of the
 * Fashion-MNIST training set (quant_tools.h), collects per-tensor |x|
 * maxima and histograms, picks a scale per tensor (max, percentile or
 * entropy: runtime/precision/calib.h), quantises the folded weights per output
 * channel and writes the INT8 folder; then it prints top-1 of both models
 * on the test set. Scheme and rounding: docs/quantization.md.
 */
#include <stdlib.h>
#include <string.h>

#include "quant_tools.h"

/* Prints top-1 of the source and the quantised model and their disagreement. */
static bool report(const char *src, const char *out, int threads)
{
    struct rt_dataset test;
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist("test", &test, &err) != RT_OK) {
        fprintf(stderr, "inferctl: %s\n", err.msg);
        return false;
    }
    uint8_t *a = calloc((size_t)test.count, 1), *b = calloc((size_t)test.count, 1);
    bool ok = a && b && ctl_predict(src, &test, threads, a) && ctl_predict(out, &test, threads, b);
    if (ok) {
        double fa = ctl_top1(&test, a), fb = ctl_top1(&test, b);
        int d = ctl_disagree(a, b, test.count);
        printf("Fashion-MNIST test set (%d images), top-1:\n", test.count);
        printf("  %-28s fp32  %.2f%%\n", src, fa);
        printf("  %-28s int8  %.2f%%  (%+.2f points; %d predictions, %.2f%%, differ from fp32)\n", out, fb, fb - fa,
               d, 100.0 * d / test.count);
    }
    free(a), free(b);
    rt_dataset_free(&test);
    return ok;
}

int ctl_cmd_quantize(int argc, char **argv)
{
    const char *out = NULL, *method = "entropy", *pct_text = "99.99";
    int calib = CTL_CALIB_DEFAULT, threads = 0;
    const struct ctl_option opts[] = {
        {"output", CTL_OPT_STRING, &out, 0, 0},
        {"method", CTL_OPT_STRING, &method, 0, 0},
        {"calib", CTL_OPT_INT, &calib, 1, 60000},
        {"percentile", CTL_OPT_STRING, &pct_text, 0, 0},
        {"threads", CTL_OPT_INT, &threads, 0, 4096},
    };
    char **args = ctl_output_alias(argc, argv), **pos = NULL;
    int npos = 0;
    int rc = args ? ctl_positional("quantize", argc, args, opts, 5, 1, 1, &pos, &npos) : CTL_EXIT_ERROR;
    free(args);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    const char *src = pos[0];
    free(pos);
    enum rt_calib_method m;
    char *end;
    double pct = strtod(pct_text, &end);
    if (!out || !rt_calib_method_parse(method, &m) || *end || !(pct > 0 && pct <= 100)) {
        fprintf(stderr, "inferctl quantize: needs -o OUT_DIR, --method max|percentile|entropy, "
                        "--percentile in (0, 100]\n");
        ctl_print_command_usage(stderr, "quantize");
        return CTL_EXIT_USAGE;
    }
    struct ctl_calibration c;
    if (!ctl_distinct_dirs(src, out) || !ctl_calibrate(src, calib, threads, &c))
        return CTL_EXIT_ERROR;
    bool ok = ctl_write_int8(&c, m, pct, out);
    ctl_calibration_free(&c);
    if (!ok)
        return CTL_EXIT_ERROR;
    printf("wrote %s: int8, %s calibration over %d training images\n", out, method, calib);
    return report(src, out, threads) ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}

int ctl_cmd_convert(int argc, char **argv)
{
    const char *out = NULL, *precision = "fp16";
    const struct ctl_option opts[] = {
        {"output", CTL_OPT_STRING, &out, 0, 0},
        {"precision", CTL_OPT_STRING, &precision, 0, 0},
    };
    char **args = ctl_output_alias(argc, argv), **pos = NULL;
    int npos = 0;
    int rc = args ? ctl_positional("convert", argc, args, opts, 2, 1, 1, &pos, &npos) : CTL_EXIT_ERROR;
    free(args);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    const char *src = pos[0];
    free(pos);
    bool fp16 = strcmp(precision, "fp16") == 0;
    if (!out || (!fp16 && strcmp(precision, "fp32") != 0)) {
        fprintf(stderr, "inferctl convert: needs -o OUT_DIR and --precision fp16|fp32\n");
        ctl_print_command_usage(stderr, "convert");
        return CTL_EXIT_USAGE;
    }
    if (!ctl_distinct_dirs(src, out) || !ctl_convert(src, fp16 ? RT_PRECISION_FP16 : RT_PRECISION_FP32, out))
        return CTL_EXIT_ERROR;
    printf("wrote %s: %s\n", out, precision);
    return CTL_EXIT_OK;
}
