/*
 * suite.c - runs the ONNX backend test cases against a runtime backend
 * (see suite.h). A case's ONNX tensors meet the model's runtime edges as
 * the loader mapped them: in batch mode an input [N, ...] is N samples, in
 * whole mode (one more runtime dim) it is one sample.
 */
#include "suite.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"
#include "runtime/onnx/onnx_load.h"

const char *const ONNX_SUITE_DIRS[] = {"node", "pytorch-converted", "pytorch-operator", "simple", NULL};

const char *onnx_suite_root(void)
{
    const char *env = getenv("INFERD_ONNX_TESTDATA");
    return env && env[0] ? env : ONNX_SUITE_ROOT;
}

#define MAX_PB (256u << 20)
#define WHY_MAX 400

enum outcome { PASSED, FAILED, UNSUPPORTED, BOUND };

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &sb) == 0 && (size_t)sb.st_size <= MAX_PB && (buf = malloc((size_t)sb.st_size + 1))) {
        *len = fread(buf, 1, (size_t)sb.st_size, f);
        if (*len != (size_t)sb.st_size) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of the subfolders of path starting with prefix. */
static int list_dirs(const char *path, const char *prefix, char ***out)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        char full[1024];
        struct stat sb;
        snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0 || stat(full, &sb) != 0 ||
            !S_ISDIR(sb.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, sizeof(*names) * (size_t)cap);
            if (!grown)
                break;
            names = grown;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, (size_t)n, sizeof(*names), cmp_names);
    *out = names;
    return n;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Records why and evaluates to FAILED. */
#define FAIL_WHY(...) (snprintf(why, WHY_MAX, __VA_ARGS__), FAILED)

static bool read_tensor(const char *path, struct rt_onnx_tensor *t, char *why)
{
    size_t len;
    uint8_t *buf = read_all(path, &len);
    struct rt_error err = {0};
    if (!buf) {
        snprintf(why, WHY_MAX, "cannot read %s", path);
        return false;
    }
    enum rt_status s = rt_onnx_tensor_parse(buf, len, path, t, &err);
    free(buf);
    if (s != RT_OK)
        snprintf(why, WHY_MAX, "%s", err.msg);
    return s == RT_OK;
}

/* The batch that ONNX tensor t (of an edge with runtime shape rs) makes:
 * its first dim, or 1 when the runtime adds a dim; -1 when they disagree. */
static int64_t batch_of(const struct rt_onnx_tensor *t, const struct rt_shape *rs)
{
    int extra = rs->rank - t->shape.rank;
    if (extra != 0 && extra != 1)
        return -1;
    for (int i = 1; i < rs->rank; i++) {
        if (rs->dims[i] != t->shape.dims[i - extra])
            return -1;
    }
    return extra ? 1 : t->shape.dims[0];
}

static bool close_enough(float got, float want, double atol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs((double)got - (double)want) <= atol + ONNX_SUITE_RTOL * fabs((double)want);
}

/* Runs one test_data_set_N folder; bound: the model takes only input_0.pb
 * (the rest are its initializers). */
static enum outcome run_set(struct rt_session *s, const struct rt_model_config *cfg, const char *set, bool bound,
                            const struct onnx_suite_opts *opts, char *why)
{
    struct rt_onnx_tensor in[RT_MAX_IO] = {0}, want[RT_MAX_IO] = {0};
    float *got[RT_MAX_IO] = {0};
    enum outcome o = PASSED;
    int64_t batch = -1;
    char path[1200];
    snprintf(path, sizeof(path), "%s/input_%d.pb", set, cfg->n_inputs);
    struct stat sb;
    if (!bound && stat(path, &sb) == 0)
        o = FAIL_WHY("%s: more input files than the model's %d inputs", set, cfg->n_inputs);
    for (int k = 0; k < cfg->n_inputs && o == PASSED; k++) {
        snprintf(path, sizeof(path), "%s/input_%d.pb", set, k);
        if (!read_tensor(path, &in[k], why))
            o = FAILED;
        else if (batch_of(&in[k], &cfg->inputs[k].shape) < 0 ||
                 (batch >= 0 && batch != batch_of(&in[k], &cfg->inputs[k].shape)))
            o = FAIL_WHY("%s: input %d does not fit the model's input shape", set, k);
        else
            batch = batch_of(&in[k], &cfg->inputs[k].shape);
    }
    if (o == PASSED && (batch < 1 || batch > cfg->max_batch_size))
        o = FAIL_WHY("%s: batch %lld outside [1, %d]", set, (long long)batch, cfg->max_batch_size);
    for (int k = 0; k < cfg->n_outputs && o == PASSED; k++) {
        snprintf(path, sizeof(path), "%s/output_%d.pb", set, k);
        if (!read_tensor(path, &want[k], why))
            o = FAILED;
        else if (want[k].elems != batch * cfg->outputs[k].sample_elems)
            o = FAIL_WHY("%s: output %d holds %lld values", set, k, (long long)want[k].elems);
        else if (!(got[k] = malloc(sizeof(float) * (size_t)(want[k].elems + 1))))
            o = FAIL_WHY("%s: out of memory", set);
    }
    if (o == PASSED) {
        const float *ins[RT_MAX_IO];
        for (int k = 0; k < cfg->n_inputs; k++)
            ins[k] = in[k].data;
        struct rt_error err = {0};
        if (rt_session_run(s, (int)batch, ins, got, &err) != RT_OK) {
            snprintf(why, WHY_MAX, "run: %s", err.msg);
            o = FAILED;
        }
    }
    for (int k = 0; k < cfg->n_outputs && o == PASSED; k++) {
        int64_t bad = -1;
        double worst = 0, scale = 0;   /* the largest error and |want|: is it noise near zero? */
        for (int64_t i = 0; i < want[k].elems; i++) {
            if (isfinite(want[k].data[i]))
                scale = fmax(scale, fabs((double)want[k].data[i]));
        }
        double atol = opts->atol_of_peak > 0 ? opts->atol_of_peak * scale : ONNX_SUITE_ATOL;
        for (int64_t i = 0; i < want[k].elems; i++) {
            if (bad < 0 && !close_enough(got[k][i], want[k].data[i], atol))
                bad = i;
            worst = fmax(worst, fabs((double)got[k][i] - (double)want[k].data[i]));
        }
        if (bad >= 0) {
            snprintf(why, WHY_MAX, "%s: output %d element %lld: got %.9g, want %.9g (largest error %.3g, largest "
                     "|want| %.3g)", set, k, (long long)bad, got[k][bad], want[k].data[bad], worst, scale);
            o = FAILED;
        }
    }
    for (int k = 0; k < RT_MAX_IO; k++) {
        rt_onnx_tensor_free(&in[k]);
        rt_onnx_tensor_free(&want[k]);
        free(got[k]);
    }
    return o;
}

static bool names_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strcmp(g->initializer[i]->name, name) == 0)
            return true;
    }
    return false;
}

/* The graph inputs of m after the first (those no initializer names) made
 * initializers holding set's input_1.pb, input_2.pb, ...; false when there
 * is none or a file cannot be read. */
static bool bind_inputs(Onnx__ModelProto *m, const char *set)
{
    Onnx__GraphProto *g = m->graph;
    Onnx__TensorProto **inits = realloc(g->initializer, sizeof(Onnx__TensorProto *) * (g->n_initializer + g->n_input + 1));
    if (!inits)
        return false;
    g->initializer = inits;
    size_t kept = 0;
    int fed = 0;   /* inputs the test feeds, counted as their files are */
    bool ok = true;
    for (size_t i = 0; i < g->n_input; i++) {
        Onnx__ValueInfoProto *vi = g->input[i];
        Onnx__TensorProto *t = NULL;
        bool tensor = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        if (!names_initializer(g, vi->name) && fed++ > 0 && ok && (ok = tensor)) {
            char path[1200];
            size_t len;
            snprintf(path, sizeof(path), "%s/input_%d.pb", set, fed - 1);
            uint8_t *buf = read_all(path, &len);
            t = buf ? onnx__tensor_proto__unpack(NULL, len, buf) : NULL;
            free(buf);
            ok = t != NULL;
        }
        if (!t) {
            g->input[kept++] = vi;
            continue;
        }
        char *name = t->name;   /* the input's name moves to the tensor; vi frees the tensor's */
        t->name = vi->name;
        vi->name = name;
        onnx__value_info_proto__free_unpacked(vi, NULL);
        g->initializer[g->n_initializer++] = t;
    }
    bool any = kept < g->n_input;
    g->n_input = kept;
    return ok && any;
}

/* dir's model with set's inputs bound (bind_inputs), written to
 * tmp/model.onnx in a new folder tmp; false when nothing was bound. */
static bool write_bound(const char *dir, const char *set, char *tmp, size_t tmp_len)
{
    char path[1200];
    size_t len;
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    uint8_t *buf = read_all(path, &len);
    Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    free(buf);
    bool ok = m && m->graph && bind_inputs(m, set);
    snprintf(tmp, tmp_len, "/tmp/onnx-suite-XXXXXX");
    if (ok && !mkdtemp(tmp))
        ok = false;
    if (ok) {
        size_t size = onnx__model_proto__get_packed_size(m);
        uint8_t *out = malloc(size + 1);
        snprintf(path, sizeof(path), "%s/model.onnx", tmp);
        FILE *f = out ? fopen(path, "wb") : NULL;
        ok = f && fwrite(out, 1, onnx__model_proto__pack(m, out), f) == size;
        ok = f && fclose(f) == 0 && ok;
        free(out);
        if (!ok) {
            unlink(path);
            rmdir(tmp);
        }
    }
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    return ok;
}

/* A case refused as it is, run with its inputs after the first bound per
 * set: BOUND when every set passes, UNSUPPORTED (why kept) when binding is
 * impossible or the bound model is still refused, FAILED otherwise. The
 * loader may refuse a bound model as malformed where binding alone made it so
 * (before opset 8, Max of the batch input [N, 4] and a bound [3, 4] is an
 * operation on unequal shapes): the case as given loaded, so that is
 * UNSUPPORTED too. */
static enum outcome run_bound(struct rt_backend *b, const char *dir, const struct onnx_suite_opts *opts, char *why)
{
    char **sets = NULL;
    int n = list_dirs(dir, "test_data_set_", &sets);
    enum outcome o = n > 0 ? BOUND : UNSUPPORTED;
    for (int i = 0; i < n && o == BOUND; i++) {
        char set[1100], tmp[64], path[100], bound_why[WHY_MAX] = "";
        struct rt_model *m = NULL;
        struct rt_session *s = NULL;
        struct rt_error err = {0};
        snprintf(set, sizeof(set), "%s/%s", dir, sets[i]);
        if (!write_bound(dir, set, tmp, sizeof(tmp))) {
            o = UNSUPPORTED;
            break;
        }
        enum rt_status st = rt_model_load(tmp, b, &m, &err);
        if (st == RT_ERR_UNSUPPORTED || st == RT_ERR_BAD_MODEL) {
            size_t len = strlen(why);
            snprintf(why + len, WHY_MAX - len, "; bound, %s", err.msg);
            o = UNSUPPORTED;
        }
        else if (st != RT_OK)
            o = FAIL_WHY("bound: %s", err.msg);
        else if (rt_session_create(m, &s, &err) != RT_OK)
            o = FAIL_WHY("bound: session: %s", err.msg);
        else if (run_set(s, rt_model_config(m), set, true, opts, bound_why) == FAILED)
            o = FAIL_WHY("bound: %s", bound_why);
        rt_session_free(s);
        rt_model_free(m);
        snprintf(path, sizeof(path), "%s/model.onnx", tmp);
        unlink(path);
        rmdir(tmp);
    }
    free_names(sets, n > 0 ? n : 0);
    return o;
}

static enum outcome run_case(struct rt_backend *b, const char *dir, const struct onnx_suite_opts *opts, char *why)
{
    struct rt_model *m = NULL;
    struct rt_session *s = NULL;
    struct rt_error err = {0};
    enum rt_status st = rt_model_load(dir, b, &m, &err);
    if (st != RT_OK) {
        snprintf(why, WHY_MAX, "%s", err.msg);
        return st == RT_ERR_UNSUPPORTED ? run_bound(b, dir, opts, why) : FAILED;
    }
    enum outcome o = PASSED;
    if (rt_session_create(m, &s, &err) != RT_OK) {
        snprintf(why, WHY_MAX, "session: %s", err.msg);
        o = FAILED;
    }
    char **sets = NULL;
    int n = o == PASSED ? list_dirs(dir, "test_data_set_", &sets) : 0;
    if (o == PASSED && n < 1) {
        snprintf(why, WHY_MAX, "no test_data_set_* folder");
        o = FAILED;
    }
    for (int i = 0; i < n && o == PASSED; i++) {
        char set[1100];
        snprintf(set, sizeof(set), "%s/%s", dir, sets[i]);
        o = run_set(s, rt_model_config(m), set, false, opts, why);
    }
    free_names(sets, n > 0 ? n : 0);
    rt_session_free(s);
    rt_model_free(m);
    return o;
}

bool onnx_suite_run_dir(struct rt_backend *b, const char *root, const char *dir, const struct onnx_suite_opts *opts,
                        struct onnx_suite_counts *out)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", root, dir);
    char **cases;
    int n = list_dirs(path, "", &cases);
    memset(out, 0, sizeof(*out));
    if (n < 0)
        return false;
    for (int i = 0; i < n; i++) {
        char case_dir[1100], why[WHY_MAX] = "";
        snprintf(case_dir, sizeof(case_dir), "%s/%s", path, cases[i]);
        enum outcome o = run_case(b, case_dir, opts, why);
        out->passed += o == PASSED;
        out->failed += o == FAILED;
        out->unsupported += o == UNSUPPORTED;
        out->bound += o == BOUND;
        static const char *const SAID[] = {"passed", "FAILED", "unsupported", "bound"};
        if (o == FAILED || opts->verbose)
            printf("  %-11s %s/%s%s%s\n", SAID[o], dir, cases[i], why[0] && o != BOUND ? ": " : "",
                   o != BOUND ? why : "");
    }
    free_names(cases, n);
    return true;
}
