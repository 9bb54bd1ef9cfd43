/*
 * quant_tools.c - what inferctl's precision commands share (quant_tools.h):
 * calibration, writing a model folder at another precision, top-1 over the
 * Fashion-MNIST test set.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant_tools.h"
#include "runtime/rt_model_impl.h"
#include "runtime/format/model_write.h"

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

/* The source model.json: the folder's, or for an ONNX folder without one
 * an empty object (the writer then takes the inputs and outputs from the
 * ONNX graph). */
static char *source_json(const char *dir, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    if (access(path, F_OK) != 0) {
        snprintf(path, sizeof(path), "%s/model.onnx", dir);
        if (access(path, F_OK) == 0) {
            *len = 2;
            return strdup("{}");
        }
    }
    return read_text(dir, "model.json", len);
}

static bool make_dir(const char *dir)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return true;
    fprintf(stderr, "inferctl: cannot create %s: %s\n", dir, strerror(errno));
    return false;
}

bool ctl_distinct_dirs(const char *src, const char *out)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(src, a) && realpath(out, b) && strcmp(a, b) == 0) {
        fprintf(stderr, "inferctl: the output folder is the model folder itself\n");
        return false;
    }
    return true;
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

bool ctl_calibrate(const char *dir, int images, const char *calib_dir, int threads, struct ctl_calibration *c)
{
    memset(c, 0, sizeof(*c));
    struct rt_error err = {0};
    struct rt_backend_options bo = {.threads = threads, .device = -1};
    struct rt_load_options lo = {.unfused = true};
    struct rt_session *s = NULL;
    struct ctl_images src = {0};
    float *x = NULL, *y = NULL;
    int *idx = NULL;
    bool ok = false;
    if (rt_backend_create(RT_BACKEND_CPU, &bo, &c->backend, &err) != RT_OK ||
        rt_model_load_ex(dir, c->backend, &lo, &c->model, &err) != RT_OK ||
        rt_session_create(c->model, &s, &err) != RT_OK) {
        fprintf(stderr, "inferctl: %s: %s\n", dir, err.msg);
        goto done;
    }
    const struct rt_model_config *cfg = rt_model_config(c->model);
    if (!(calib_dir ? ctl_images_folder(calib_dir, cfg, false, &src) : ctl_images_fashion_mnist("train", cfg, &src)))
        goto done;
    if (cfg->precision != RT_PRECISION_FP32 || cfg->n_inputs != 1 || !cfg->pre.present) {
        fprintf(stderr, "inferctl: %s: calibration needs an fp32 model with one image input\n", dir);
        goto done;
    }
    if (!(c->json = source_json(dir, &c->json_len)))
        goto done;
    const struct rt_graph *g = rt_model_graph(c->model);
    int batch = cfg->max_batch_size, in_elems = (int)cfg->inputs[0].sample_elems;
    c->images = images < src.count ? images : src.count;
    x = malloc(sizeof(float) * (size_t)batch * (size_t)in_elems);
    y = malloc(sizeof(float) * (size_t)batch * (size_t)cfg->outputs[0].sample_elems);
    idx = calloc((size_t)src.count, sizeof(int));
    if (!x || !y || !idx || cfg->n_outputs != 1 || !rt_calib_init(&c->stats, g->n_tensors)) {
        fprintf(stderr, "inferctl: out of memory (or more than one output)\n");
        goto done;
    }
    calib_indices(src.count, idx);
    for (int pass = 0; pass < 2; pass++) {
        for (int start = 0; start < c->images; start += batch) {
            int n = c->images - start < batch ? c->images - start : batch;
            for (int i = 0; i < n; i++)
                if (!ctl_images_preprocess(&src, idx[start + i], &cfg->pre, x + (size_t)i * (size_t)in_elems))
                    goto done;
            const float *in[1] = {x};
            float *out[1] = {y};
            if (rt_session_run_observed(s, n, in, out, observe, c, &err) != RT_OK) {
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
    ctl_images_free(&src);
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
    struct rt_write_options wo = {.name = ctl_dir_name(out_dir, name, sizeof(name)), .precision = RT_PRECISION_INT8,
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
    char *json = source_json(dir, &len), name[RT_NAME_MAX];
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
    struct rt_write_options wo = {.name = ctl_dir_name(out_dir, name, sizeof(name)), .precision = prec};
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

bool ctl_predict(const char *dir, const struct ctl_images *test, int threads, int *pred)
{
    struct ctl_model m;
    if (!ctl_model_open(dir, RT_BACKEND_CPU, threads, &m))
        return false;
    int batch = m.cfg->max_batch_size;
    size_t in_elems = (size_t)m.cfg->inputs[m.input].sample_elems;
    float *x = malloc(sizeof(float) * (size_t)batch * in_elems), *outs[RT_MAX_IO] = {0};
    bool ok = x && ctl_outputs_alloc(&m, batch, outs);
    for (int start = 0; ok && start < test->count; start += batch) {
        int n = test->count - start < batch ? test->count - start : batch;
        for (int i = 0; ok && i < n; i++)
            ok = ctl_images_preprocess(test, start + i, &m.cfg->pre, x + (size_t)i * in_elems);
        ok = ok && ctl_run_chunks(&m, n, batch, x, outs);
        for (int i = 0; ok && i < n; i++)
            pred[start + i] = ctl_argmax(outs[0] + (size_t)i * (size_t)m.classes, m.classes);
    }
    if (x)
        ctl_outputs_free(&m, outs);
    free(x);
    ctl_model_close(&m);
    return ok;
}

double ctl_top1(const struct ctl_images *test, const int *pred)
{
    int correct = 0;
    for (int i = 0; i < test->count; i++)
        correct += pred[i] == test->labels[i];
    return 100.0 * correct / test->count;
}

int ctl_disagree(const int *a, const int *b, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++)
        d += a[i] != b[i];
    return d;
}
