/*
 * common.c - what inferctl's commands share: option parsing, opening a
 * model with its backend and a session, softmax and top-k, a clock,
 * folder names and temporary folders.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inferctl.h"

static bool parse_int(const char *text, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

static int usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "inferctl %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    ctl_print_command_usage(stderr, command);
    return CTL_EXIT_USAGE;
}

int ctl_parse_options(const char *command, int argc, char **argv, const struct ctl_option *opts,
                      int n, char **positional, int *n_positional)
{
    *n_positional = 0;
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            positional[(*n_positional)++] = argv[i];
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            ctl_print_command_usage(stdout, command);
            return -1;
        }
        const struct ctl_option *o = NULL;
        const char *value = NULL;
        for (int k = 0; k < n && !o; k++) {
            size_t len = strlen(opts[k].name);
            if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, opts[k].name, len) != 0)
                continue;
            if (arg[2 + len] == '=')
                value = arg + 3 + len;
            else if (arg[2 + len] != '\0')
                continue;
            o = &opts[k];
        }
        if (!o)
            return usage_error(command, "unknown option %s", arg);
        if (o->kind == CTL_OPT_FLAG) {
            if (value)
                return usage_error(command, "--%s takes no value", o->name);
            *(bool *)o->value = true;
            continue;
        }
        if (!value) {
            if (i + 1 == argc)
                return usage_error(command, "%s needs a value", arg);
            value = argv[++i];
        }
        if (o->kind == CTL_OPT_STRING) {
            *(const char **)o->value = value;
        } else if (!parse_int(value, o->min, o->max, o->value)) {
            return usage_error(command, "--%s must be an integer in %d..%d", o->name, o->min,
                               o->max);
        }
    }
    return CTL_EXIT_OK;
}

bool ctl_parse_backend(const char *text, enum rt_backend_kind *out)
{
    struct rt_error err;
    if (rt_backend_kind_parse(text, out, &err) == RT_OK)
        return true;
    fprintf(stderr, "inferctl: --backend: %s\n", err.msg);
    return false;
}

static bool model_fail(struct ctl_model *m, const char *dir, const char *msg)
{
    fprintf(stderr, "inferctl: %s: %s\n", dir, msg);
    ctl_model_close(m);
    return false;
}

bool ctl_model_open(const char *dir, enum rt_backend_kind kind, int threads, struct ctl_model *m)
{
    memset(m, 0, sizeof(*m));
    struct rt_error err = {0};
    struct rt_backend_options bo = {.threads = threads, .device = -1};
    if (rt_backend_create(kind, &bo, &m->backend, &err) != RT_OK) {
        fprintf(stderr, "inferctl: backend: %s\n", err.msg);
        return false;
    }
    if (rt_model_load(dir, m->backend, &m->model, &err) != RT_OK)
        return model_fail(m, dir, err.msg);
    m->cfg = rt_model_config(m->model);
    const struct rt_preprocess *pre = &m->cfg->pre;
    if (!pre->present)
        return model_fail(m, dir, "model.json has no \"preprocessing\" section for image input");
    if (m->cfg->n_inputs != 1 || m->cfg->n_outputs < 1)
        return model_fail(m, dir, "inferctl runs models with one input");
    if (pre->input < 0 || pre->input >= m->cfg->n_inputs)
        return model_fail(m, dir, "preprocessing names no model input");
    m->input = pre->input;
    if ((int64_t)pre->channels * pre->height * pre->width != m->cfg->inputs[m->input].sample_elems)
        return model_fail(m, dir, "preprocessing size does not match the input tensor");
    int64_t classes = m->cfg->outputs[0].sample_elems;
    if (classes < 1 || classes > INT_MAX / 2)
        return model_fail(m, dir, "output 0 is not a vector of class scores");
    m->classes = (int)classes;
    if (rt_session_create(m->model, &m->session, &err) != RT_OK)
        return model_fail(m, dir, err.msg);
    return true;
}

void ctl_model_close(struct ctl_model *m)
{
    if (m->session)
        rt_session_free(m->session);
    if (m->model)
        rt_model_free(m->model);
    if (m->backend)
        rt_backend_free(m->backend);
    memset(m, 0, sizeof(*m));
}

bool ctl_outputs_alloc(const struct ctl_model *m, int samples, float **outs)
{
    memset(outs, 0, sizeof(float *) * RT_MAX_IO);
    for (int o = 0; o < m->cfg->n_outputs; o++) {
        size_t n = (size_t)samples * (size_t)m->cfg->outputs[o].sample_elems;
        if (!(outs[o] = malloc(n * sizeof(float)))) {
            fprintf(stderr, "inferctl: out of memory for %d outputs\n", samples);
            ctl_outputs_free(m, outs);
            return false;
        }
    }
    return true;
}

void ctl_outputs_free(const struct ctl_model *m, float **outs)
{
    for (int o = 0; o < m->cfg->n_outputs; o++) {
        free(outs[o]);
        outs[o] = NULL;
    }
}

bool ctl_run_chunks(struct ctl_model *m, int samples, int max_batch, const float *input,
                    float **outs)
{
    const int64_t in_elems = m->cfg->inputs[m->input].sample_elems;
    for (int done = 0; done < samples;) {
        int batch = samples - done < max_batch ? samples - done : max_batch;
        const float *in[1] = {input + (size_t)done * (size_t)in_elems};
        float *out[RT_MAX_IO];
        for (int o = 0; o < m->cfg->n_outputs; o++)
            out[o] = outs[o] + (size_t)done * (size_t)m->cfg->outputs[o].sample_elems;
        struct rt_error err = {0};
        if (rt_session_run(m->session, batch, in, out, &err) != RT_OK) {
            fprintf(stderr, "inferctl: inference failed: %s\n", err.msg);
            return false;
        }
        done += batch;
    }
    return true;
}

const char *ctl_label(const struct ctl_model *m, int i, char *buf, size_t size)
{
    if (m->cfg->labels && i < m->cfg->n_labels)
        return m->cfg->labels[i];
    snprintf(buf, size, "class %d", i);
    return buf;
}

void ctl_softmax(const float *logits, int n, double *probs)
{
    double max = logits[0], sum = 0.0;
    for (int i = 1; i < n; i++)
        max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < n; i++) {
        probs[i] = exp((double)logits[i] - max);
        sum += probs[i];
    }
    for (int i = 0; i < n; i++)
        probs[i] /= sum;
}

void ctl_top_k(const double *scores, int n, int k, int *idx)
{
    /* Selection by insertion: k and n are class counts, small. */
    int have = 0;
    for (int i = 0; i < n; i++) {
        int pos = have;
        while (pos > 0 && scores[i] > scores[idx[pos - 1]])
            pos--;
        if (pos >= k)
            continue;
        int last = have < k ? have : k - 1;
        memmove(idx + pos + 1, idx + pos, (size_t)(last - pos) * sizeof(int));
        idx[pos] = i;
        have = have < k ? have + 1 : k;
    }
}

int ctl_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

double ctl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *ctl_dir_name(const char *dir, char *buf, size_t cap)
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

void ctl_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            ctl_remove_tree(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}
