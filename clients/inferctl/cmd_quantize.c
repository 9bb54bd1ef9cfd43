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

/* Prints top-1 of the source and the quantised model and their
 * disagreement, on the images of eval_dir (ImageFolder) or Fashion-MNIST's
 * test set; a model Fashion-MNIST does not fit gets no report without
 * eval_dir. */
static bool report(const char *src, const char *out, const struct rt_model_config *cfg, const char *eval_dir,
                   int threads)
{
    if (!eval_dir && cfg->outputs[0].sample_elems != 10) {
        printf("no accuracy report: give --eval-data DIR (one sub-folder of images per class) to measure one\n");
        return true;
    }
    struct ctl_images test;
    if (!(eval_dir ? ctl_images_folder(eval_dir, cfg, true, &test) : ctl_images_fashion_mnist("test", cfg, &test)))
        return false;
    int *a = calloc((size_t)test.count, sizeof(int)), *b = calloc((size_t)test.count, sizeof(int));
    bool ok = a && b && ctl_predict(src, &test, threads, a) && ctl_predict(out, &test, threads, b);
    if (ok) {
        double fa = ctl_top1(&test, a), fb = ctl_top1(&test, b);
        int d = ctl_disagree(a, b, test.count);
        printf("%s (%d images), top-1:\n", eval_dir ? eval_dir : "Fashion-MNIST test set", test.count);
        printf("  %-28s fp32  %.2f%%\n", src, fa);
        printf("  %-28s int8  %.2f%%  (%+.2f points; %d predictions, %.2f%%, differ from fp32)\n", out, fb, fb - fa,
               d, 100.0 * d / test.count);
    }
    free(a), free(b);
    ctl_images_free(&test);
    return ok;
}

int ctl_cmd_quantize(int argc, char **argv)
{
    const char *out = NULL, *method = "entropy", *pct_text = "99.99", *calib_dir = NULL, *eval_dir = NULL;
    int calib = CTL_CALIB_DEFAULT, threads = 0;
    const struct ctl_option opts[] = {
        {"output", CTL_OPT_STRING, &out, 0, 0},
        {"method", CTL_OPT_STRING, &method, 0, 0},
        {"calib", CTL_OPT_INT, &calib, 1, 1000000},
        {"percentile", CTL_OPT_STRING, &pct_text, 0, 0},
        {"threads", CTL_OPT_INT, &threads, 0, 4096},
        {"calib-data", CTL_OPT_STRING, &calib_dir, 0, 0},
        {"eval-data", CTL_OPT_STRING, &eval_dir, 0, 0},
    };
    char **args = ctl_output_alias(argc, argv), **pos = NULL;
    int npos = 0;
    int rc = args ? ctl_positional("quantize", argc, args, opts, 7, 1, 1, &pos, &npos) : CTL_EXIT_ERROR;
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
    if (!ctl_distinct_dirs(src, out) || !ctl_calibrate(src, calib, calib_dir, threads, &c))
        return CTL_EXIT_ERROR;
    bool ok = ctl_write_int8(&c, m, pct, out);
    if (ok) {
        printf("wrote %s: int8, %s calibration over %d images of %s\n", out, method, c.images,
               calib_dir ? calib_dir : "the Fashion-MNIST training set");
        ok = report(src, out, rt_model_config(c.model), eval_dir, threads);
    }
    ctl_calibration_free(&c);
    return ok ? CTL_EXIT_OK : CTL_EXIT_ERROR;
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
