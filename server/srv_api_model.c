/*
 * srv_api_model.c - per-model endpoints: metadata, Triton-style config,
 * readiness, statistics; the repository endpoints (index, load, unload);
 * and the helpers every model endpoint shares.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "srv_clock.h"
#include "srv_handlers.h"
#include "srv_json.h"

struct srv_model *srv_request_model(struct srv_request *r)
{
    struct srv_model *m = NULL;
    struct rt_error err = {RT_OK, ""};
    if (srv_repo_acquire(r->srv->repo, r->model, r->version, &m, &err) != RT_OK) {
        srv_reply_rt_error(r, &err);
        return NULL;
    }
    return m;
}

void srv_record_outcome(struct srv_request *r, struct srv_model *m,
                        const struct srv_request_times *t)
{
    uint64_t total = (uint64_t)(srv_now_ns() - r->start_ns);
    if (r->status >= 200 && r->status < 300)
        srv_stats_record_success(&m->stats, t, total);
    else
        srv_stats_record_failure(&m->stats,
                                 r->status == 503   ? SRV_FAIL_REJECTED
                                 : r->status >= 500 ? SRV_FAIL_BACKEND
                                                    : SRV_FAIL_OTHER,
                                 total);
}

static void write_shape(struct srv_buf *b, const struct rt_shape *s, int from)
{
    srv_buf_putc(b, '[');
    for (int d = from; d < s->rank; d++) {
        if (d > from)
            srv_buf_putc(b, ',');
        srv_buf_json_i64(b, s->dims[d]);
    }
    srv_buf_putc(b, ']');
}

static void write_io(struct srv_buf *b, const struct rt_io_desc *io, int n)
{
    srv_buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
        srv_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(b, io[i].name);
        srv_buf_puts(b, ",\"datatype\":");
        srv_buf_json_str(b, rt_dtype_kserve_name(io[i].dtype));
        srv_buf_puts(b, ",\"shape\":");
        write_shape(b, &io[i].shape, 0);
        srv_buf_putc(b, '}');
    }
    srv_buf_putc(b, ']');
}

void srv_handle_model_metadata(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    const struct rt_model_config *cfg = m->cfg;
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"name\":");
    srv_buf_json_str(&b, m->name);
    srv_buf_puts(&b, ",\"versions\":");
    srv_repo_write_versions(r->srv->repo, m->name, &b);
    srv_buf_puts(&b, ",\"platform\":\"inferd\",\"inputs\":");
    write_io(&b, cfg->inputs, cfg->n_inputs);
    srv_buf_puts(&b, ",\"outputs\":");
    write_io(&b, cfg->outputs, cfg->n_outputs);
    srv_buf_putc(&b, '}');
    srv_model_unref(m);
    srv_reply_json(r, 200, &b);
}

static void write_config_io(struct srv_buf *b, const struct rt_io_desc *io, int n)
{
    srv_buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
        srv_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(b, io[i].name);
        srv_buf_printf(b, ",\"data_type\":\"TYPE_%s\",\"dims\":", rt_dtype_kserve_name(io[i].dtype));
        write_shape(b, &io[i].shape, 1);
        srv_buf_putc(b, '}');
    }
    srv_buf_putc(b, ']');
}

/* GET .../config: the serving configuration in Triton's model-config JSON,
 * which Triton tools (perf_analyzer) read for max_batch_size and shapes. */
void srv_handle_model_config(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    const struct rt_model_config *cfg = m->cfg;
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"name\":");
    srv_buf_json_str(&b, m->name);
    srv_buf_printf(&b, ",\"platform\":\"inferd\",\"backend\":\"%s\",\"max_batch_size\":%d,"
                       "\"input\":",
                   rt_backend_name(r->srv->backend), cfg->max_batch_size);
    write_config_io(&b, cfg->inputs, cfg->n_inputs);
    srv_buf_puts(&b, ",\"output\":");
    write_config_io(&b, cfg->outputs, cfg->n_outputs);
    srv_buf_puts(&b, ",\"dynamic_batching\":{\"preferred_batch_size\":[");
    for (int i = 0; i < cfg->batching.n_preferred; i++)
        srv_buf_printf(&b, "%s%d", i ? "," : "", cfg->batching.preferred[i]);
    srv_buf_printf(&b, "],\"max_queue_delay_microseconds\":%lld,"
                       "\"default_queue_policy\":{\"max_queue_size\":%d,"
                       "\"default_timeout_microseconds\":%lld}},"
                       "\"instance_group\":[{\"count\":%d,\"kind\":\"%s\"}]}",
                   (long long)cfg->batching.max_queue_delay_us, cfg->batching.max_queue_size,
                   (long long)cfg->batching.default_timeout_us, cfg->instance_count,
                   rt_backend_device_kind(r->srv->backend) == RT_DEVICE_GPU ? "KIND_GPU" : "KIND_CPU");
    srv_model_unref(m);
    srv_reply_json(r, 200, &b);
}

void srv_handle_model_ready(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"name\":");
    srv_buf_json_str(&b, m->name);
    srv_buf_puts(&b, ",\"ready\":true}");
    srv_model_unref(m);
    srv_reply_json(r, 200, &b);
}

void srv_handle_model_stats(struct srv_request *r)
{
    struct srv_model **models = NULL;
    int n;
    if (r->model[0]) {
        struct srv_model *m = srv_request_model(r);
        if (!m)
            return;
        models = malloc(sizeof(struct srv_model *));
        if (!models) {
            srv_model_unref(m);
            srv_reply_error(r, 503, "out of memory");
            return;
        }
        models[0] = m;
        n = 1;
    } else {
        n = srv_repo_ready_models(r->srv->repo, &models);
        if (!models) {
            srv_reply_error(r, 503, "out of memory");
            return;
        }
    }
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"model_stats\":[");
    for (int i = 0; i < n; i++) {
        if (i)
            srv_buf_putc(&b, ',');
        srv_stats_write_json(&models[i]->stats, models[i]->name, models[i]->version, &b);
        srv_model_unref(models[i]);
    }
    srv_buf_puts(&b, "]}");
    free(models);
    srv_reply_json(r, 200, &b);
}

/* Whether a presented token equals the key, in time that depends only on
 * their lengths (no early exit a client could time byte by byte). */
static bool same_secret(const char *given, const char *key)
{
    size_t gl = strlen(given), kl = strlen(key);
    unsigned char diff = gl != kl;
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < gl ? given[i] : 0));
    return diff == 0;
}

/* With --api-key, the repository endpoints need the token. */
static bool key_presented(struct srv_request *r)
{
    const char *key = r->srv->cfg.api_key;
    if (!key[0])
        return true;
    const char *auth = srv_request_header(r, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0 && same_secret(auth + 7, key))
        return true;
    srv_reply_header(r, "WWW-Authenticate", "Bearer");
    srv_reply_error(r, 401, "the repository endpoints need 'Authorization: Bearer' with the server's key");
    return false;
}

/* Load and unload are off unless enabled, and with --api-key need the token. */
static bool model_control_allowed(struct srv_request *r)
{
    if (!r->srv->cfg.enable_model_control) {
        srv_reply_error(r, 403,
                        "model control is disabled (start inferd with --enable-model-control)");
        return false;
    }
    return key_presented(r);
}

/* Answered whether model control is on or off, as Triton's is: the index
 * is where failed models show their reasons. */
void srv_handle_repo_index(struct srv_request *r)
{
    if (!key_presented(r))
        return;
    bool ready_only = false;
    if (r->body_len > 0) {
        struct rt_error err = {RT_OK, ""};
        cJSON *root = srv_json_parse((const char *)r->body, r->body_len,
                                     (int)r->srv->cfg.max_json_depth, &err);
        const cJSON *ready = NULL;
        if (root && !cJSON_IsObject(root))
            rt_error_set(&err, RT_ERR_INVALID, "the index request must be a JSON object");
        else if (root && srv_json_get(root, "ready", cJSON_True | cJSON_False, "index request",
                                      &ready, &err))
            ready_only = cJSON_IsTrue(ready);
        cJSON_Delete(root);
        if (err.status != RT_OK) {
            srv_reply_rt_error(r, &err);
            return;
        }
    }
    struct srv_buf b = {0};
    srv_repo_write_index(r->srv->repo, ready_only, &b);
    srv_reply_json(r, 200, &b);
}

/* Load and unload run on the control pool (srv_server.h): a model file
 * that blocks on open (a FIFO, a dead network mount) or an unload that
 * waits for the model's queue holds that thread, never an HTTP one. */
struct control_ctx {
    struct srv_request *r;
    struct srv_work work;
    bool load;
    bool has_config;                   /* parameters.config was given */
    struct srv_triton_config config;
    struct rt_error err;
};

static void control_run(struct srv_work *w)
{
    struct control_ctx *c = (struct control_ctx *)((char *)w - offsetof(struct control_ctx, work));
    struct srv_request *r = c->r;
    if (c->load)
        srv_repo_load(r->srv->repo, r->model, c->has_config ? &c->config : NULL, &c->err);
    else
        srv_repo_unload(r->srv->repo, r->model, &c->err);
    if (c->has_config && c->err.status == RT_ERR_BAD_MODEL)
        c->err.status = RT_ERR_INVALID;   /* the request's configuration does not fit the model: 400 */
    srv_request_resume(r);
}

static void control_finish(struct srv_request *r)
{
    struct control_ctx *c = r->ctx;
    if (c->err.status != RT_OK) {
        srv_reply_rt_error(r, &c->err);
        return;
    }
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{}");
    srv_reply_json(r, 200, &b);
}

/* The parameters of a load or unload request, as Triton takes them: for a
 * load, "config" (a model configuration in JSON, used instead of the
 * folder's config.pbtxt); for an unload, "unload_dependents" (no model here
 * has dependents). Anything else is refused by name, never ignored. */
static bool read_parameters(struct srv_request *r, struct control_ctx *c, struct rt_error *err)
{
    if (r->body_len == 0)
        return true;
    int depth = (int)r->srv->cfg.max_json_depth;
    cJSON *root = srv_json_parse((const char *)r->body, r->body_len, depth, err);
    bool ok = root != NULL;
    if (ok && !cJSON_IsObject(root))
        ok = !rt_error_set(err, RT_ERR_INVALID, "the request must be a JSON object");
    for (const cJSON *k = ok ? root->child : NULL; k && ok; k = k->next) {
        if (strcmp(k->string, "parameters") != 0)
            ok = !rt_error_set(err, RT_ERR_INVALID, "unknown key '%s' (a load or unload request holds \"parameters\")",
                               k->string);
        else if (!cJSON_IsObject(k))
            ok = !rt_error_set(err, RT_ERR_INVALID, "\"parameters\" must be an object");
    }
    const cJSON *params = ok ? cJSON_GetObjectItemCaseSensitive(root, "parameters") : NULL;
    for (const cJSON *p = params ? params->child : NULL; p && ok; p = p->next) {
        if (c->load && strcmp(p->string, "config") == 0) {
            struct rt_error why = {RT_OK, ""};
            cJSON *conf = cJSON_IsString(p) ? srv_json_parse(p->valuestring, strlen(p->valuestring), depth, &why) : NULL;
            if (!cJSON_IsString(p))
                rt_error_set(err, RT_ERR_INVALID, "parameters.config must be a string holding a JSON model configuration");
            else if (!conf)
                rt_error_set(err, RT_ERR_INVALID, "parameters.config: %s", why.msg);
            else if (srv_triton_config_from_json(conf, r->model, &c->config, err) != RT_OK)
                err->status = RT_ERR_INVALID;   /* the request's fault, not the model's */
            c->has_config = ok = conf && err->status == RT_OK;
            cJSON_Delete(conf);
        } else if (!c->load && strcmp(p->string, "unload_dependents") == 0) {
            if (!cJSON_IsBool(p))
                ok = !rt_error_set(err, RT_ERR_INVALID, "parameters.unload_dependents must be true or false");
        } else if (c->load && strncmp(p->string, "file:", 5) == 0) {
            ok = !rt_error_set(err, RT_ERR_INVALID,
                               "parameters.%.200s: file overrides are not supported; put the files in the "
                               "model repository", p->string);
        } else {
            ok = !rt_error_set(err, RT_ERR_INVALID, "parameter '%.200s' is not supported by %s", p->string,
                               c->load ? "load (only \"config\")" : "unload (only \"unload_dependents\")");
        }
    }
    cJSON_Delete(root);
    return ok;
}

static void repo_action(struct srv_request *r, bool load)
{
    if (!model_control_allowed(r))
        return;
    struct control_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        srv_reply_error(r, 503, "out of memory");
        return;
    }
    *c = (struct control_ctx){.r = r, .work.run = control_run, .load = load, .err = {RT_OK, ""}};
    struct rt_error err = {RT_OK, ""};
    if (!read_parameters(r, c, &err)) {
        free(c);
        srv_reply_rt_error(r, &err);
        return;
    }
    r->ctx = c;
    r->ctx_free = free;
    srv_request_defer(r, control_finish);
    if (srv_work_submit(r->srv->control, &c->work))
        return;
    srv_request_undefer(r);
    srv_reply_header(r, "Retry-After", "1");
    srv_reply_error(r, 503, "too many model loads and unloads are waiting; retry later");
}

void srv_handle_repo_load(struct srv_request *r) { repo_action(r, true); }

void srv_handle_repo_unload(struct srv_request *r) { repo_action(r, false); }
