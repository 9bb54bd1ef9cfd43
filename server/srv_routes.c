/* srv_routes.c - the route table and path matching (see srv_routes.h). */
#include "srv_routes.h"

#include <stdio.h>
#include <string.h>

#include "srv_handlers.h"

static const struct srv_route ROUTES[] = {
    {"GET", "/v2/health/live", srv_handle_live},
    {"GET", "/v2/health/ready", srv_handle_ready},
    {"GET", "/v2", srv_handle_server_metadata},
    {"GET", "/v2/models/stats", srv_handle_model_stats},
    {"GET", "/v2/models/{model}", srv_handle_model_metadata},
    {"GET", "/v2/models/{model}/versions/{version}", srv_handle_model_metadata},
    {"GET", "/v2/models/{model}/config", srv_handle_model_config},
    {"GET", "/v2/models/{model}/versions/{version}/config", srv_handle_model_config},
    {"GET", "/v2/models/{model}/ready", srv_handle_model_ready},
    {"GET", "/v2/models/{model}/versions/{version}/ready", srv_handle_model_ready},
    {"GET", "/v2/models/{model}/stats", srv_handle_model_stats},
    {"GET", "/v2/models/{model}/versions/{version}/stats", srv_handle_model_stats},
    {"GET", "/v2/models/{model}/profile", srv_handle_model_profile},
    {"GET", "/v2/models/{model}/versions/{version}/profile", srv_handle_model_profile},
    {"POST", "/v2/models/{model}/infer", srv_handle_infer},
    {"POST", "/v2/models/{model}/versions/{version}/infer", srv_handle_infer},
    {"POST", "/v2/models/{model}/classify", srv_handle_classify},
    {"POST", "/v2/models/{model}/versions/{version}/classify", srv_handle_classify},
    {"POST", "/v2/repository/index", srv_handle_repo_index},
    {"POST", "/v2/repository/models/{model}/load", srv_handle_repo_load},
    {"POST", "/v2/repository/models/{model}/unload", srv_handle_repo_unload},
    {"GET", "/metrics", srv_handle_metrics},
    {"GET", "/", srv_handle_ui},
    {"GET", "/ui/{file}", srv_handle_ui},
};
#define N_ROUTES (sizeof(ROUTES) / sizeof(ROUTES[0]))

/* Copies a captured segment; false when it does not fit (no such model). */
static bool capture(char *dst, size_t cap, const char *seg, size_t len)
{
    if (len == 0 || len >= cap)
        return false;
    memcpy(dst, seg, len);
    dst[len] = '\0';
    return true;
}

static bool match(const char *pattern, const char *path, struct srv_request *r)
{
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return false;
        p++;
        s++;
        const char *pe = strchr(p, '/'), *se = strchr(s, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        size_t sl = se ? (size_t)(se - s) : strlen(s);
        if (pl == 7 && strncmp(p, "{model}", 7) == 0) {
            if (!capture(r->model, sizeof(r->model), s, sl))
                return false;
        } else if (pl == 9 && strncmp(p, "{version}", 9) == 0) {
            if (!capture(r->version, sizeof(r->version), s, sl))
                return false;
        } else if (pl == 6 && strncmp(p, "{file}", 6) == 0) {
            if (sl == 0) /* any one segment: the handler reads it from the path */
                return false;
        } else if (pl != sl || strncmp(p, s, pl) != 0) {
            return false;
        }
        p += pl;
        s += sl;
    }
    return *p == '\0' && *s == '\0';
}

const struct srv_route *srv_route_find(struct srv_request *r, int *status, char *allow,
                                       size_t allow_len)
{
    allow[0] = '\0';
    bool path_known = false;
    for (size_t i = 0; i < N_ROUTES; i++) {
        r->model[0] = r->version[0] = '\0';
        if (!match(ROUTES[i].pattern, r->path, r))
            continue;
        if (strcmp(ROUTES[i].method, r->method) == 0)
            return &ROUTES[i];
        if (!strstr(allow, ROUTES[i].method)) {
            size_t n = strlen(allow);
            snprintf(allow + n, allow_len - n, "%s%s", n ? ", " : "", ROUTES[i].method);
        }
        path_known = true;
    }
    r->model[0] = r->version[0] = '\0';
    *status = path_known ? 405 : 404;
    return NULL;
}
