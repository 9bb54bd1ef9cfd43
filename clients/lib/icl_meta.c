/*
 * icl_meta.c - server and model metadata, the repository endpoints (index,
 * load, unload) and /metrics: each a request and a parse into native
 * structs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icl_impl.h"

enum icl_status icl_server_metadata(struct icl_client *c, struct icl_server_metadata *out,
                                    struct icl_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *root;
    enum icl_status st = icl_get_json(c, "GET", "/v2", NULL, &root, err);
    if (st != ICL_OK)
        return st;
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "extensions"), *e;
    if (!icl_json_str(root, "name", out->name, sizeof(out->name))) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_PROTOCOL, "server metadata has no \"name\"");
    }
    icl_json_str(root, "version", out->version, sizeof(out->version));
    cJSON_ArrayForEach(e, ext) {
        if (cJSON_IsString(e) && out->n_extensions < ICL_MAX_EXTENSIONS)
            icl_copy(out->extensions[out->n_extensions++], sizeof(out->extensions[0]),
                     e->valuestring);
    }
    cJSON_Delete(root);
    return ICL_OK;
}

static bool tensor_list(const cJSON *root, const char *name, struct icl_tensor *t, int *n)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, name), *e;
    *n = 0;
    if (!arr)
        return true; /* KServe lets a model list no outputs */
    if (!cJSON_IsArray(arr))
        return false;
    cJSON_ArrayForEach(e, arr) {
        if (*n == ICL_MAX_IO || !icl_json_tensor_desc(e, &t[*n]))
            return false;
        (*n)++;
    }
    return true;
}

enum icl_status icl_model_metadata(struct icl_client *c, const char *model,
                                   struct icl_model_metadata *out, struct icl_error *err)
{
    memset(out, 0, sizeof(*out));
    char path[600];
    if (!icl_model_path(path, sizeof(path), model, "", err))
        return ICL_ERR_INVALID;
    cJSON *root;
    enum icl_status st = icl_get_json(c, "GET", path, NULL, &root, err);
    if (st != ICL_OK)
        return st;
    icl_json_str(root, "platform", out->platform, sizeof(out->platform));
    if (!icl_json_str(root, "name", out->name, sizeof(out->name)) ||
        !tensor_list(root, "inputs", out->inputs, &out->n_inputs) ||
        !tensor_list(root, "outputs", out->outputs, &out->n_outputs))
        st = icl_fail(err, ICL_ERR_PROTOCOL, "model metadata for '%s' is malformed", model);
    cJSON_Delete(root);
    return st;
}

enum icl_status icl_repository_index(struct icl_client *c, struct icl_model_entry **models,
                                     int *n, struct icl_error *err)
{
    *models = NULL;
    *n = 0;
    cJSON *root;
    enum icl_status st = icl_get_json(c, "POST", "/v2/repository/index", "{}", &root, err);
    if (st != ICL_OK)
        return st;
    int count = cJSON_GetArraySize(root);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_PROTOCOL, "the repository index is not a JSON array");
    }
    struct icl_model_entry *m = calloc(count > 0 ? (size_t)count : 1, sizeof(*m));
    if (!m) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory");
    }
    const cJSON *e;
    int k = 0;
    cJSON_ArrayForEach(e, root) {
        if (!icl_json_str(e, "name", m[k].name, sizeof(m[k].name)))
            continue; /* entries without a name say nothing usable */
        icl_json_str(e, "version", m[k].version, sizeof(m[k].version));
        icl_json_str(e, "state", m[k].state, sizeof(m[k].state));
        icl_json_str(e, "reason", m[k].reason, sizeof(m[k].reason));
        k++;
    }
    cJSON_Delete(root);
    *models = m;
    *n = k;
    return ICL_OK;
}

/* The ready models, from the statistics endpoint (open whatever the
 * server's model-control setting). */
static enum icl_status ready_models(struct icl_client *c, struct icl_model_entry **models,
                                    int *n, struct icl_error *err)
{
    cJSON *root;
    enum icl_status st = icl_get_json(c, "GET", "/v2/models/stats", NULL, &root, err);
    if (st != ICL_OK)
        return st;
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(root, "model_stats"), *e;
    int count = cJSON_GetArraySize(stats);
    struct icl_model_entry *m = calloc(count > 0 ? (size_t)count : 1, sizeof(*m));
    if (!m) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory");
    }
    int k = 0;
    cJSON_ArrayForEach(e, stats) {
        if (!icl_json_str(e, "name", m[k].name, sizeof(m[k].name)))
            continue;
        icl_json_str(e, "version", m[k].version, sizeof(m[k].version));
        icl_copy(m[k].state, sizeof(m[k].state), "READY");
        k++;
    }
    cJSON_Delete(root);
    *models = m;
    *n = k;
    return ICL_OK;
}

enum icl_status icl_model_list(struct icl_client *c, struct icl_model_entry **models, int *n,
                               struct icl_error *err)
{
    struct icl_error local;
    if (!err)
        err = &local;
    enum icl_status st = icl_repository_index(c, models, n, err);
    if (st == ICL_ERR_HTTP && (err->http_status == 403 || err->http_status == 404)) {
        icl_error_clear(err);
        st = ready_models(c, models, n, err);
    }
    return st;
}

static enum icl_status repo_action(struct icl_client *c, const char *model, const char *action,
                                   struct icl_error *err)
{
    if (!model || !model[0])
        return icl_fail(err, ICL_ERR_INVALID, "no model name");
    char path[600];
    /* the repository paths escape the name the same way the model paths do */
    if (!icl_model_path(path, sizeof(path), model, action, err))
        return ICL_ERR_INVALID;
    char full[640];
    snprintf(full, sizeof(full), "/v2/repository/models/%s", path + strlen("/v2/models/"));
    struct icl_response resp;
    enum icl_status st = icl_request(c, "POST", full, NULL, 0, NULL, &resp, err);
    icl_response_free(&resp);
    return st;
}

enum icl_status icl_model_load(struct icl_client *c, const char *model, struct icl_error *err)
{
    return repo_action(c, model, "/load", err);
}

enum icl_status icl_model_unload(struct icl_client *c, const char *model, struct icl_error *err)
{
    return repo_action(c, model, "/unload", err);
}

/* ------------------------------------------------------------ metrics */

enum icl_status icl_metrics(struct icl_client *c, char **text, struct icl_error *err)
{
    *text = NULL;
    struct icl_response resp;
    enum icl_status st = icl_request(c, "GET", "/metrics", NULL, 0, NULL, &resp, err);
    if (st == ICL_OK) {
        *text = (char *)resp.body; /* NUL-terminated by the request core */
        resp.body = NULL;
    }
    icl_response_free(&resp);
    return st;
}

/* Whether the label block [open, close) holds model="<model>". */
static bool labels_match(const char *open, const char *close, const char *model)
{
    size_t n = strlen(model);
    for (const char *p = open; p && p < close; p = strstr(p + 1, "model=\"")) {
        if (p + 7 + n < close && strncmp(p, "model=\"", 7) == 0 &&
            strncmp(p + 7, model, n) == 0 && p[7 + n] == '"' &&
            (p == open + 1 || p[-1] == ',' || p[-1] == '{'))
            return true;
    }
    return false;
}

bool icl_metrics_value(const char *text, const char *name, const char *model, double *value)
{
    size_t n = strlen(name);
    bool found = false;
    *value = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, name, n) != 0 || (line[n] != '{' && line[n] != ' '))
            continue; /* also skips comments and longer names sharing the prefix */
        const char *eol = strchr(line, '\n');
        const char *v = line + n;
        if (*v == '{') {
            const char *close = strchr(v, '}');
            if (!close || (eol && close > eol))
                continue;
            if (model && !labels_match(v, close, model))
                continue;
            v = close + 1;
        } else if (model) {
            continue;
        }
        char *end;
        double d = strtod(v, &end);
        if (end == v)
            continue;
        *value += d;
        found = true;
    }
    return found;
}
