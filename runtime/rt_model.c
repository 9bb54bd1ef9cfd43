/*
 * rt_model.c - loading a model folder, sessions, and the executor that walks
 * the plan (see rt_model.h).
 */
#include "runtime/rt_model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/backend/backend.h"
#include "runtime/rt_model_impl.h"
#include "runtime/format/file_read.h"
#include "runtime/format/model_json.h"
#include "runtime/onnx/onnx_load.h"
#include "runtime/precision/graph_precision.h"

#define MAX_MODEL_JSON ((size_t)64 * 1024 * 1024)
#define MAX_LABELS 100000
#define MAX_LABEL_LEN 256

struct rt_model {
    struct rt_backend *backend;
    struct rt_safetensors st;
    struct rt_graph g;
    struct rt_plan plan;
    struct rt_model_config cfg;
    int input_tensor[RT_MAX_IO];
    int output_tensor[RT_MAX_IO];
    int prepared_steps;           /* steps whose prep the backend must release */
    int batch_chunk;              /* rt_session_run runs at most this many samples per pass */
    bool unfused;                 /* rt_load_options */
};

struct rt_session {
    const struct rt_model *m;
    void *ctx;
    char *arena;
    /* Step timing (rt_session_profile): [plan.n_steps] slots while it is
     * on, else NULL, the one thing the executor tests. */
    struct rt_step_timing *times;
    rt_step_timing_fn on_step;
    void *on_step_user;
    bool last_run_ok;   /* rt_session_device_time reads only a run that succeeded */
};

static enum rt_status load_labels(const char *path, const char *label, struct rt_model_config *cfg,
                                  struct rt_error *err)
{
    char *text;
    size_t len;
    enum rt_status s = rt_read_file(path, label, (size_t)MAX_LABELS * MAX_LABEL_LEN, &text, &len, err);
    if (s != RT_OK)
        return s;
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (len > 0 && text[len - 1] != '\n')
        lines++;
    if (lines > MAX_LABELS) {
        free(text);
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: more than %d labels", label, MAX_LABELS);
    }
    cfg->labels = calloc((size_t)lines + 1, sizeof(char *));
    if (!cfg->labels) {
        free(text);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    char *line = text;
    for (int i = 0; i < lines; i++) {
        char *nl = memchr(line, '\n', len - (size_t)(line - text));
        size_t n = nl ? (size_t)(nl - line) : len - (size_t)(line - text);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n >= MAX_LABEL_LEN || memchr(line, '\0', n)) {
            free(text);
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: line %d is too long or not text", label, i + 1);
        }
        cfg->labels[i] = strndup(line, n);
        if (!cfg->labels[i]) {
            free(text);
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        }
        cfg->n_labels = i + 1;
        line = nl ? nl + 1 : line + n;
    }
    free(text);
    if (cfg->n_labels != cfg->outputs[0].sample_elems)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: %d labels but output '%s' has %lld classes", label,
                            cfg->n_labels, cfg->outputs[0].name, (long long)cfg->outputs[0].sample_elems);
    return RT_OK;
}

/* The folder's last path component, used to name files in errors. */
static void folder_name(const char *dir, char *out, size_t cap)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(out, cap, "%.*s", (int)(len - start), dir + start);
}

static enum rt_status prepare_plan(struct rt_model *m, struct rt_error *err)
{
    struct rt_backend *b = m->backend;
    for (int i = 0; i < m->plan.n_steps; i++) {
        struct rt_step *s = &m->plan.steps[i];
        char why[160] = "not implemented";
        if (!b->iface->supports_step(b, &m->plan, s, m->cfg.precision, why, sizeof(why)))
            return rt_error_set(err, RT_ERR_UNSUPPORTED, "%s: node '%s' (%s) cannot run on the %s backend: %s",
                                m->cfg.name, s->node->name, rt_op_name(s->op), b->iface->name, why);
    }
    for (int i = 0; i < m->plan.n_steps; i++) {
        enum rt_status s = b->iface->prepare_step(b, &m->plan, &m->plan.steps[i], m->cfg.max_batch_size, err);
        if (s != RT_OK)
            return s;
        m->prepared_steps = i + 1;
    }
    return RT_OK;
}

/* From a parsed graph to a model ready to run: finish the graph, apply the
 * precision, plan, and let the backend prepare every step. */
static enum rt_status build(struct rt_model *m, const char *label, struct rt_error *err)
{
    enum rt_status s;
    if ((s = rt_graph_finish(&m->g, &m->cfg, label, err)) != RT_OK ||
        (s = rt_graph_apply_precision(&m->g, &m->cfg, label, err)) != RT_OK)
        return s;
    for (int i = 0; i < m->cfg.n_inputs; i++)
        m->input_tensor[i] = rt_graph_tensor(&m->g, m->cfg.inputs[i].name, false);
    for (int i = 0; i < m->cfg.n_outputs; i++)
        m->output_tensor[i] = rt_graph_tensor(&m->g, m->cfg.outputs[i].name, false);
    rt_chain_rule chains = m->cfg.precision == RT_PRECISION_FP16 ? NULL : m->backend->iface->chains;
    s = m->unfused ? rt_plan_build_unfused(&m->g, &m->plan, err) : rt_plan_build(&m->g, chains, &m->plan, err);
    if (s != RT_OK)
        return s;
    m->plan.cfg = &m->cfg;
    m->batch_chunk = m->cfg.max_batch_size;
    if (m->backend->iface->batch_chunk) {
        int chunk = m->backend->iface->batch_chunk(m->backend, &m->plan);
        if (chunk >= 1 && chunk < m->batch_chunk)
            m->batch_chunk = chunk;
    }
    return prepare_plan(m, err);
}

static enum rt_status load(struct rt_model *m, const char *dir, const struct rt_model_source *src,
                           struct rt_error *err)
{
    char name[RT_NAME_MAX], where[RT_NAME_MAX * 2], path[4096], label[RT_NAME_MAX * 3 + 2], labels_file[RT_NAME_MAX];
    if (src && src->name)
        snprintf(name, sizeof(name), "%s", src->name);
    else
        folder_name(dir, name, sizeof(name));
    snprintf(where, sizeof(where), "%s", src && src->where ? src->where : name);
    const char *onnx_file = src && src->onnx_file ? src->onnx_file : "model.onnx";
    if (strlen(dir) + strlen(onnx_file) > sizeof(path) - 64)
        return rt_error_set(err, RT_ERR_INVALID, "model path too long");

    enum rt_status s;
    char *json;
    size_t len;
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", dir, onnx_file);
    if (stat(path, &sb) == 0) {
        /* graph and weights from model.onnx; model.json, when there, holds serving settings */
        snprintf(label, sizeof(label), "%s/%s", where, onnx_file);
        if ((s = rt_onnx_load(path, label, &m->cfg, &m->g, err)) != RT_OK)
            return s;
        snprintf(path, sizeof(path), "%s/model.json", dir);
        snprintf(label, sizeof(label), "%s/model.json", where);
        s = rt_read_file(path, label, MAX_MODEL_JSON, &json, &len, err);
        if (s == RT_ERR_NOT_FOUND) {
            static const char DEFAULTS[] = "{\"format_version\": 1}";
            s = rt_model_json_parse_serving(DEFAULTS, sizeof(DEFAULTS) - 1, label, &m->cfg, &m->g, labels_file, err);
        } else if (s == RT_OK) {
            s = rt_model_json_parse_serving(json, len, label, &m->cfg, &m->g, labels_file, err);
            free(json);
        }
        if (s != RT_OK)
            return s;
        snprintf(label, sizeof(label), "%s/%s", where, onnx_file);
    } else {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        snprintf(label, sizeof(label), "%s/model.safetensors", where);
        if ((s = rt_safetensors_open(path, label, &m->st, err)) != RT_OK)
            return s;
        snprintf(path, sizeof(path), "%s/model.json", dir);
        snprintf(label, sizeof(label), "%s/model.json", where);
        if ((s = rt_read_file(path, label, MAX_MODEL_JSON, &json, &len, err)) != RT_OK)
            return s;
        s = rt_model_json_parse(json, len, label, &m->st, &m->cfg, &m->g, labels_file, err);
        free(json);
        if (s != RT_OK)
            return s;
    }
    if (m->cfg.name[0] == '\0')
        snprintf(m->cfg.name, sizeof(m->cfg.name), "%s", name);
    else if (strcmp(m->cfg.name, name) != 0)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: 'name' differs from the folder name", label);
    if (labels_file[0]) {
        char labels_label[RT_NAME_MAX * 3 + 2];
        snprintf(path, sizeof(path), "%s/%s", dir, labels_file);
        snprintf(labels_label, sizeof(labels_label), "%s/%s", where, labels_file);
        if ((s = load_labels(path, labels_label, &m->cfg, err)) != RT_OK)
            return s;
    }
    if (src && src->configure && (s = src->configure(src->user, &m->cfg, err)) != RT_OK)
        return s;
    return build(m, label, err);
}

static enum rt_status load_with(const char *dir, const struct rt_model_source *src, struct rt_backend *b,
                                const struct rt_load_options *opt, struct rt_model **out, struct rt_error *err)
{
    struct rt_model *m = calloc(1, sizeof(*m));
    if (!m)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    m->backend = b;
    m->unfused = opt && opt->unfused;
    enum rt_status s = load(m, dir, src, err);
    if (s != RT_OK) {
        rt_model_free(m);
        return s;
    }
    *out = m;
    return RT_OK;
}

enum rt_status rt_model_load(const char *dir, struct rt_backend *b, struct rt_model **out, struct rt_error *err)
{
    return rt_model_load_ex(dir, b, NULL, out, err);
}

enum rt_status rt_model_load_source(const char *dir, const struct rt_model_source *src, struct rt_backend *b,
                                    struct rt_model **out, struct rt_error *err)
{
    return load_with(dir, src, b, NULL, out, err);
}

enum rt_status rt_model_load_ex(const char *dir, struct rt_backend *b, const struct rt_load_options *opt,
                                struct rt_model **out, struct rt_error *err)
{
    return load_with(dir, NULL, b, opt, out, err);
}

enum rt_status rt_model_from_graph(struct rt_graph *g, const struct rt_model_config *cfg, struct rt_backend *b,
                                   const struct rt_load_options *opt, struct rt_model **out, struct rt_error *err)
{
    struct rt_model *m = calloc(1, sizeof(*m));
    if (!m) {
        rt_graph_free(g);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    m->backend = b;
    m->unfused = opt && opt->unfused;
    m->g = *g;
    memset(g, 0, sizeof(*g));
    m->cfg = *cfg;
    m->cfg.labels = NULL;
    m->cfg.n_labels = 0;
    enum rt_status s = build(m, m->cfg.name, err);
    if (s != RT_OK) {
        rt_model_free(m);
        return s;
    }
    *out = m;
    return RT_OK;
}

void rt_model_free(struct rt_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->prepared_steps; i++)
        m->backend->iface->release_step(m->backend, &m->plan.steps[i]);
    rt_plan_free(&m->plan);
    rt_graph_free(&m->g);
    rt_safetensors_close(&m->st);
    for (int i = 0; i < m->cfg.n_labels; i++)
        free(m->cfg.labels[i]);
    free(m->cfg.labels);
    free(m);
}

const struct rt_model_config *rt_model_config(const struct rt_model *m) { return &m->cfg; }

const struct rt_graph *rt_model_graph(const struct rt_model *m) { return &m->g; }

int rt_model_plan_steps(const struct rt_model *m) { return m->plan.n_steps; }

int rt_model_batch_chunk(const struct rt_model *m) { return m->batch_chunk; }

const struct rt_plan *rt_model_plan(const struct rt_model *m) { return &m->plan; }

struct rt_backend *rt_model_backend(const struct rt_model *m) { return m->backend; }

size_t rt_model_arena_bytes(const struct rt_model *m, int batch) { return m->plan.sample_bytes * (size_t)batch; }

enum rt_status rt_session_create(const struct rt_model *m, struct rt_session **out, struct rt_error *err)
{
    struct rt_session *s = calloc(1, sizeof(*s));
    if (!s)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    s->m = m;
    size_t bytes = rt_model_arena_bytes(m, m->cfg.max_batch_size);
    enum rt_status st =
        m->backend->iface->session_create(m->backend, &m->plan, m->cfg.max_batch_size, bytes, &s->ctx, err);
    if (st != RT_OK) {
        free(s);
        return st;
    }
    s->arena = m->backend->iface->session_arena(s->ctx);
    *out = s;
    return RT_OK;
}

void rt_session_free(struct rt_session *s)
{
    if (!s)
        return;
    s->m->backend->iface->session_free(s->ctx);
    free(s->times);
    free(s);
}

enum rt_status rt_session_profile(struct rt_session *s, rt_step_timing_fn fn, void *user, struct rt_error *err)
{
    const struct rt_backend_iface *be = s->m->backend->iface;
    int n = s->m->plan.n_steps;
    if (fn && !be->profile_mark)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "the %s backend cannot time steps", be->name);
    if (!fn) {
        if (s->times && be->profile_set)
            be->profile_set(s->ctx, 0, err);   /* releasing never fails */
        free(s->times);
        s->times = NULL;
        return RT_OK;
    }
    if (!s->times) {
        struct rt_step_timing *times = calloc((size_t)(n > 0 ? n : 1), sizeof(*times));
        if (!times)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        enum rt_status st = be->profile_set ? be->profile_set(s->ctx, n, err) : RT_OK;
        if (st != RT_OK) {
            free(times);
            return st;
        }
        s->times = times;
    }
    s->on_step = fn;
    s->on_step_user = user;
    return RT_OK;
}

enum rt_status rt_session_time_device(struct rt_session *s, bool on, struct rt_error *err)
{
    const struct rt_backend_iface *be = s->m->backend->iface;
    if (!be->device_time_set)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "the %s backend has no device clock", be->name);
    return be->device_time_set(s->ctx, on, err);
}

enum rt_status rt_session_device_time(struct rt_session *s, struct rt_device_time *t, struct rt_error *err)
{
    const struct rt_backend_iface *be = s->m->backend->iface;
    if (!be->device_time_read)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "the %s backend has no device clock", be->name);
    if (!s->last_run_ok)
        return rt_error_set(err, RT_ERR_INVALID, "the last run failed: it has no device time");
    return be->device_time_read(s->ctx, t, err);
}

/* After a timed pass: each step's times to the session's callback. */
static enum rt_status report_times(struct rt_session *s, int batch, struct rt_error *err)
{
    const struct rt_backend_iface *be = s->m->backend->iface;
    int n = s->m->plan.n_steps;
    enum rt_status st = be->profile_read ? be->profile_read(s->ctx, s->times, n, err) : RT_OK;
    for (int i = 0; st == RT_OK && i < n; i++) {
        s->times[i].step = i;
        s->times[i].batch = batch;
        s->on_step(s->on_step_user, &s->times[i]);
    }
    return st;
}

/* An observed run's callback and its host staging buffer. */
struct observer {
    rt_observe_fn fn;
    void *user;
    float *host;
};

/* Hands tensor t (when F32) to the observer, through host memory. */
static enum rt_status observe(struct rt_session *s, const struct observer *ob, int t, int batch, struct rt_error *err)
{
    const struct rt_model *m = s->m;
    const struct rt_tensor *tt = &m->g.tensors[t];
    if (tt->dtype != RT_DTYPE_F32)
        return RT_OK;
    size_t bytes = (size_t)tt->sample_elems * sizeof(float) * (size_t)batch;
    enum rt_status st = m->backend->iface->copy_out(s->ctx, ob->host, s->arena + rt_plan_offset(&m->plan, t, batch),
                                                    bytes, err);
    if (st == RT_OK && (st = m->backend->iface->sync(s->ctx, err)) == RT_OK)
        ob->fn(ob->user, t, ob->host, batch);
    return st;
}

static enum rt_status run(struct rt_session *s, int batch, const float *const *inputs, float *const *outputs,
                          const struct observer *ob, struct rt_error *err)
{
    const struct rt_model *m = s->m;
    const struct rt_backend_iface *be = m->backend->iface;
    const struct rt_plan *p = &m->plan;
    if (batch < 1 || batch > m->cfg.max_batch_size)
        return rt_error_set(err, RT_ERR_INVALID, "batch size %d outside [1, %d]", batch, m->cfg.max_batch_size);
    struct rt_step_timing *times = ob ? NULL : s->times;
    enum rt_status st;
    for (int i = 0; i < m->cfg.n_inputs; i++) {
        size_t bytes = (size_t)m->cfg.inputs[i].sample_elems * sizeof(float) * (size_t)batch;
        st = be->copy_in(s->ctx, s->arena + rt_plan_offset(p, m->input_tensor[i], batch), inputs[i], bytes, err);
        if (st == RT_OK && ob)
            st = observe(s, ob, m->input_tensor[i], batch, err);
        if (st != RT_OK)
            return st;
    }
    for (int i = 0; i < p->n_steps; i++) {
        const struct rt_step *step = &p->steps[i];
        struct rt_step_io io = {.out = s->arena + rt_plan_offset(p, step->out, batch)};
        for (int k = 0; k < step->n_in; k++)
            io.in[k] = s->arena + rt_plan_offset(p, step->in[k], batch);
        if (step->residual >= 0)
            io.residual = s->arena + rt_plan_offset(p, step->residual, batch);
        if (times && (st = be->profile_mark(s->ctx, i, false, &times[i], err)) != RT_OK)
            return st;
        if ((st = be->run_step(s->ctx, p, step, batch, &io, err)) != RT_OK)
            return st;
        if (times && (st = be->profile_mark(s->ctx, i, true, &times[i], err)) != RT_OK)
            return st;
        if (ob && (st = observe(s, ob, step->out, batch, err)) != RT_OK)
            return st;
    }
    for (int i = 0; i < m->cfg.n_outputs; i++) {
        size_t bytes = (size_t)m->cfg.outputs[i].sample_elems * sizeof(float) * (size_t)batch;
        st = be->copy_out(s->ctx, outputs[i], s->arena + rt_plan_offset(p, m->output_tensor[i], batch), bytes, err);
        if (st != RT_OK)
            return st;
    }
    if ((st = be->sync(s->ctx, err)) != RT_OK || !times)
        return st;
    return report_times(s, batch, err);
}

enum rt_status rt_session_run(struct rt_session *s, int batch, const float *const *inputs, float *const *outputs,
                              struct rt_error *err)
{
    const struct rt_model *m = s->m;
    s->last_run_ok = false;
    if (batch < 1 || batch > m->cfg.max_batch_size)
        return rt_error_set(err, RT_ERR_INVALID, "batch size %d outside [1, %d]", batch, m->cfg.max_batch_size);
    const float *in[RT_MAX_IO];
    float *out[RT_MAX_IO];
    for (int start = 0; start < batch; start += m->batch_chunk) {
        int n = batch - start < m->batch_chunk ? batch - start : m->batch_chunk;
        for (int i = 0; i < m->cfg.n_inputs; i++)
            in[i] = inputs[i] + (size_t)start * (size_t)m->cfg.inputs[i].sample_elems;
        for (int i = 0; i < m->cfg.n_outputs; i++)
            out[i] = outputs[i] + (size_t)start * (size_t)m->cfg.outputs[i].sample_elems;
        enum rt_status st = run(s, n, in, out, NULL, err);
        if (st != RT_OK)
            return st;
    }
    s->last_run_ok = true;
    return RT_OK;
}

enum rt_status rt_session_run_observed(struct rt_session *s, int batch, const float *const *inputs,
                                       float *const *outputs, rt_observe_fn fn, void *user, struct rt_error *err)
{
    s->last_run_ok = false;   /* an observed run is never timed on the device */
    const struct rt_graph *g = &s->m->g;
    int64_t most = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].sample_elems > most)
            most = g->tensors[t].sample_elems;
    }
    if (batch < 1 || batch > s->m->cfg.max_batch_size)
        return rt_error_set(err, RT_ERR_INVALID, "batch size %d outside [1, %d]", batch, s->m->cfg.max_batch_size);
    struct observer ob = {fn, user, malloc(sizeof(float) * ((size_t)most * (size_t)batch + 1))};
    if (!ob.host)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum rt_status st = run(s, batch, inputs, outputs, &ob, err);
    free(ob.host);
    return st;
}
