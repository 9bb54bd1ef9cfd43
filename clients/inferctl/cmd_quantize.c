/*
 * cmd_quantize.c - "inferctl quantize": INT8 post-training quantisation of
 * an FP32 model folder, and "inferctl convert": the same folder at another
 * float precision.
 *
 * quantize runs the FP32 model, loaded without fusion so that every
 * activation tensor is observable, over N images of a fixed subset of the
 * Fashion-MNIST training set (quant_tools.h), collects per-tensor |x|
 * maxima and histograms, picks a scale per tensor (max, percentile or
 * entropy: runtime/rt_calib.h), quantises the folded weights per output
 * channel and writes the INT8 folder; then it prints top-1 of both models
 * on the test set. Scheme and rounding: docs/quantization.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant_tools.h"
#include "runtime/rt_image.h"
#include "runtime/rt_model_impl.h"
#include "runtime/rt_model_write.h"

#define BAR 40

static void progress(const char *what, int done, int total)
{
    if (!isatty(STDERR_FILENO))
        return;
    int filled = (int)((long)done * BAR / total);
    fprintf(stderr, "\r%s [%.*s%.*s] %d/%d", what, filled, "########################################", BAR - filled,
            "........................................", done, total);
    if (done == total)
        fprintf(stderr, "\r%*s\r", BAR + 40, "");
    fflush(stderr);
}

static char *read_text(const char *dir, const char *file, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *len = (size_t)n;
    } else {
        fprintf(stderr, "inferctl: cannot read %s: %s\n", path, strerror(errno));
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

static bool make_dir(const char *dir)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return true;
    fprintf(stderr, "inferctl: cannot create %s: %s\n", dir, strerror(errno));
    return false;
}

/* Writing over the source folder would destroy the model being read. */
static bool distinct_dirs(const char *src, const char *out)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(src, a) && realpath(out, b) && strcmp(a, b) == 0) {
        fprintf(stderr, "inferctl: the output folder is the model folder itself\n");
        return false;
    }
    return true;
}

static const char *base_name(const char *dir, char *buf, size_t cap)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(buf, cap, "%.*s", (int)(len - start), dir + start);
    return buf;
}

/* The fixed calibration subset: indices of the shuffled training set. */
static void calib_indices(int total, int *idx)
{
    uint64_t s = CTL_CALIB_SEED;
    for (int i = 0; i < total; i++)
        idx[i] = i;
    for (int i = total - 1; i > 0; i--) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        int j = (int)((s * 2685821657736338717ull >> 33) % (uint64_t)(i + 1));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

static void observe(void *user, int tensor, const float *data, int batch)
{
    struct ctl_calibration *c = user;
    const struct rt_graph *g = rt_model_graph(c->model);
    rt_calib_add(&c->stats, tensor, data, g->tensors[tensor].sample_elems * batch);
}

bool ctl_calibrate(const char *dir, int images, int threads, struct ctl_calibration *c)
{
    memset(c, 0, sizeof(*c));
    struct rt_error err = {0};
    struct rt_backend_options bo = {.threads = threads, .device = -1};
    struct rt_load_options lo = {.unfused = true};
    struct rt_session *s = NULL;
    struct rt_dataset ds = {0};
    float *x = NULL, *y = NULL;
    int *idx = NULL;
    bool ok = false;
    if (rt_backend_create(RT_BACKEND_CPU, &bo, &c->backend, &err) != RT_OK ||
        rt_model_load_ex(dir, c->backend, &lo, &c->model, &err) != RT_OK ||
        rt_session_create(c->model, &s, &err) != RT_OK || rt_dataset_load_fashion_mnist("train", &ds, &err) != RT_OK) {
        fprintf(stderr, "inferctl: %s: %s\n", dir, err.msg);
        goto done;
    }
    const struct rt_model_config *cfg = rt_model_config(c->model);
    if (cfg->precision != RT_PRECISION_FP32 || cfg->n_inputs != 1 || !cfg->pre.present) {
        fprintf(stderr, "inferctl: %s: calibration needs an fp32 model with one image input\n", dir);
        goto done;
    }
    if (!(c->json = read_text(dir, "model.json", &c->json_len)))
        goto done;
    const struct rt_graph *g = rt_model_graph(c->model);
    int batch = cfg->max_batch_size, in_elems = (int)cfg->inputs[0].sample_elems;
    c->images = images < ds.count ? images : ds.count;
    x = malloc(sizeof(float) * (size_t)batch * (size_t)in_elems);
    y = malloc(sizeof(float) * (size_t)batch * (size_t)cfg->outputs[0].sample_elems);
    idx = calloc((size_t)ds.count, sizeof(int));
    if (!x || !y || !idx || cfg->n_outputs != 1 || !rt_calib_init(&c->stats, g->n_tensors)) {
        fprintf(stderr, "inferctl: out of memory (or more than one output)\n");
        goto done;
    }
    calib_indices(ds.count, idx);
    struct rt_preprocess pre = cfg->pre;   /* dataset images are already upright, 28x28 */
    pre.invert = false;
    pre.resize_shorter = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int start = 0; start < c->images; start += batch) {
            int n = c->images - start < batch ? c->images - start : batch;
            for (int i = 0; i < n; i++) {
                struct rt_image img = {ds.cols, ds.rows, 1, ds.images + (size_t)idx[start + i] * (size_t)(ds.rows * ds.cols)};
                if (rt_image_preprocess(&img, &pre, x + (size_t)i * (size_t)in_elems, &err) != RT_OK)
                    break;
            }
            const float *in[1] = {x};
            float *out[1] = {y};
            if (err.status != RT_OK || rt_session_run_observed(s, n, in, out, observe, c, &err) != RT_OK) {
                fprintf(stderr, "inferctl: calibration: %s\n", err.msg);
                goto done;
            }
            progress(pass ? "histograms" : "ranges", start + n, c->images);
        }
        rt_calib_next_pass(&c->stats);
    }
    ok = !c->stats.failed;
    if (!ok)
        fprintf(stderr, "inferctl: out of memory for histograms\n");
done:
    free(x), free(y), free(idx);
    rt_session_free(s);
    rt_dataset_free(&ds);
    if (!ok)
        ctl_calibration_free(c);
    return ok;
}

void ctl_calibration_free(struct ctl_calibration *c)
{
    rt_calib_free(&c->stats);
    rt_model_free(c->model);
    rt_backend_free(c->backend);
    free(c->json);
    memset(c, 0, sizeof(*c));
}

bool ctl_write_int8(const struct ctl_calibration *c, enum rt_calib_method m, double percentile, const char *out_dir)
{
    const struct rt_graph *g = rt_model_graph(c->model);
    float *scales = calloc((size_t)g->n_tensors + 1, sizeof(float));
    if (!scales || !make_dir(out_dir)) {
        free(scales);
        return false;
    }
    rt_calib_scales(&c->stats, g, m, percentile, scales);
    char name[RT_NAME_MAX];
    struct rt_write_options wo = {.name = base_name(out_dir, name, sizeof(name)), .precision = RT_PRECISION_INT8,
                                  .act_scales = scales, .method = rt_calib_method_name(m),
                                  .calibration_images = c->images};
    struct rt_error err = {0};
    enum rt_status s = rt_model_write(out_dir, c->json, c->json_len, rt_model_config(c->model), g, &wo, &err);
    free(scales);
    if (s != RT_OK)
        fprintf(stderr, "inferctl: %s\n", err.msg);
    return s == RT_OK;
}

bool ctl_convert(const char *dir, enum rt_precision prec, const char *out_dir)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    size_t len = 0;
    char *json = read_text(dir, "model.json", &len), name[RT_NAME_MAX];
    bool ok = false;
    if (!json || !make_dir(out_dir))
        goto done;
    if (rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) != RT_OK || rt_model_load(dir, b, &m, &err) != RT_OK) {
        fprintf(stderr, "inferctl: %s: %s\n", dir, err.msg);
        goto done;
    }
    if (rt_model_config(m)->precision != RT_PRECISION_FP32) {
        fprintf(stderr, "inferctl: %s: convert reads fp32 models\n", dir);
        goto done;
    }
    struct rt_write_options wo = {.name = base_name(out_dir, name, sizeof(name)), .precision = prec};
    ok = rt_model_write(out_dir, json, len, rt_model_config(m), rt_model_graph(m), &wo, &err) == RT_OK;
    if (!ok)
        fprintf(stderr, "inferctl: %s\n", err.msg);
done:
    rt_model_free(m);
    rt_backend_free(b);
    free(json);
    return ok;
}

char **ctl_output_alias(int argc, char **argv)
{
    static char output[] = "--output";
    char **v = calloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; v && i < argc; i++)
        v[i] = strcmp(argv[i], "-o") == 0 ? output : argv[i];
    return v;
}

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
    if (!distinct_dirs(src, out) || !ctl_calibrate(src, calib, threads, &c))
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
    if (!distinct_dirs(src, out) || !ctl_convert(src, fp16 ? RT_PRECISION_FP16 : RT_PRECISION_FP32, out))
        return CTL_EXIT_ERROR;
    printf("wrote %s: %s\n", out, precision);
    return CTL_EXIT_OK;
}
