/* srv_repo.c - model repository: listing, lookups, readiness and the index (see srv_repo.h). */
#include "srv_repo.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "srv_log.h"
#include "srv_repo_impl.h"

static const char *const STATE_NAMES[] = {"UNAVAILABLE", "LOADING", "READY"};

bool srv_repo_valid_name(const char *name)
{
    size_t n = strnlen(name, RT_NAME_MAX);
    if (n == 0 || n >= RT_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* A folder of the repository that is no model, said once when the
 * repository is opened so a user sees why it is not served (files beside
 * the models are passed over in silence). */
static void log_skipped(const char *dir, const char *name)
{
    char path[PATH_MAX + RT_NAME_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (name[0] == '.' || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    const char *esc = name;   /* srv_log escapes what it prints */
    if (!srv_repo_valid_name(name))
        srv_log_warn("model repository: skipping folder '%s': not a model name (letters, digits, '.', '_', '-')",
                     esc);
    else
        srv_log_warn("model repository: skipping folder '%s': it holds no model.json, model.onnx, config.pbtxt "
                     "or numeric version folder", esc);
}

struct entry *srv_repo_find(struct srv_repo *r, const char *name)
{
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->entries[i].name, name) == 0)
            return &r->entries[i];
    }
    return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

struct entry *srv_repo_add(struct srv_repo *r, const char *name)
{
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        struct entry *e = realloc(r->entries, (size_t)cap * sizeof(*e));
        if (!e)
            return NULL;
        r->entries = e;
        r->cap = cap;
    }
    struct entry *e = &r->entries[r->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->reason, sizeof(e->reason), "not loaded");
    qsort(r->entries, (size_t)r->n, sizeof(*r->entries), cmp_entry);
    return srv_repo_find(r, name);
}

void srv_repo_drop_kept(struct version *v)
{
    if (v->kept) {
        srv_stats_destroy(v->kept);
        free(v->kept);
        v->kept = NULL;
    }
}

/* The model folders in dir now (*out malloc'd, n names); -1 when dir
 * cannot be read or memory runs out. log: say why other folders are skipped. */
static int scan(const char *dir, bool log, char (**out)[RT_NAME_MAX])
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char (*names)[RT_NAME_MAX] = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!srv_repo_valid_name(de->d_name) || !srv_layout_is_model(dir, de->d_name)) {
            if (log)
                log_skipped(dir, de->d_name);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char (*grown)[RT_NAME_MAX] = realloc(names, (size_t)cap * RT_NAME_MAX);
            if (!grown) {
                free(names);
                closedir(d);
                return -1;
            }
            names = grown;
        }
        snprintf(names[n++], RT_NAME_MAX, "%s", de->d_name);
    }
    closedir(d);
    *out = names;
    return n;
}

enum rt_status srv_repo_open(const char *dir, struct rt_backend *be,
                             const struct srv_batcher_options *opt, struct srv_repo **out,
                             struct rt_error *err)
{
    struct srv_repo *r = calloc(1, sizeof(*r));
    if (!r)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    if (!realpath(dir, r->dir)) {
        free(r);
        return rt_error_set(err, RT_ERR_NOT_FOUND, "model repository %s does not exist", dir);
    }
    r->be = be;
    r->opt = *opt;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->load_mu, NULL);
    char (*names)[RT_NAME_MAX] = NULL;
    int n = scan(r->dir, true, &names);
    if (n < 0) {
        srv_repo_free(r);
        return rt_error_set(err, RT_ERR_IO, "cannot read model repository %s", dir);
    }
    for (int i = 0; i < n; i++) {
        if (!srv_repo_add(r, names[i])) {
            free(names);
            srv_repo_free(r);
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        }
    }
    free(names);
    *out = r;
    return RT_OK;
}

void srv_repo_free(struct srv_repo *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < r->entries[i].n_versions; k++) {
            srv_model_unref(r->entries[i].v[k].model);
            srv_repo_drop_kept(&r->entries[i].v[k]);
        }
    }
    srv_model_wait_frees(); /* models unloaded earlier may still be going */
    free(r->entries);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->load_mu);
    free(r);
}

bool srv_repo_any_loaded(const struct entry *e)
{
    for (int k = 0; k < e->n_versions; k++) {
        if (e->v[k].model)
            return true;
    }
    return false;
}

/* Brings the list in line with the folder, as Triton's index does: new
 * model folders appear (not loaded), removed ones disappear unless a
 * version is still loaded (then they stay, marked gone, until unloaded). */
static void refresh(struct srv_repo *r)
{
    char (*names)[RT_NAME_MAX] = NULL;
    int n = scan(r->dir, false, &names);
    if (n < 0)
        return;   /* the index then shows what was known */
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < n; i++) {
        if (!srv_repo_find(r, names[i]) && !srv_repo_add(r, names[i]))
            break;   /* out of memory: the rest appear next time */
    }
    for (int i = 0; i < r->n;) {
        struct entry *e = &r->entries[i];
        bool there = false;
        for (int k = 0; k < n && !there; k++)
            there = strcmp(names[k], e->name) == 0;
        e->gone = !there;
        if (there || e->loading || srv_repo_any_loaded(e)) {
            i++;
            continue;
        }
        for (int k = 0; k < e->n_versions; k++)
            srv_repo_drop_kept(&e->v[k]);
        memmove(e, e + 1, (size_t)(r->n - i - 1) * sizeof(*e));
        r->n--;
    }
    pthread_mutex_unlock(&r->mu);
    free(names);
}

/* Caller holds mu. The version named (NULL or "": the highest ready one). */
static struct version *pick_version(struct entry *e, const char *version)
{
    for (int k = e->n_versions - 1; k >= 0; k--) {
        struct version *v = &e->v[k];
        if (version && version[0] ? strcmp(v->name, version) == 0 : v->model != NULL)
            return v;
    }
    return NULL;
}

enum rt_status srv_repo_acquire(struct srv_repo *r, const char *name, const char *version,
                                struct srv_model **out, struct rt_error *err)
{
    /* A name no folder can have is not echoed back: it may be anything. */
    if (!srv_repo_valid_name(name))
        return rt_error_set(err, RT_ERR_NOT_FOUND, "unknown model");
    bool named = version && version[0];
    pthread_mutex_lock(&r->mu);
    struct entry *e = srv_repo_find(r, name);
    struct version *v = e ? pick_version(e, version) : NULL;
    struct srv_model *m = v ? v->model : NULL;
    if (m)
        srv_model_ref(m);
    else if (!e)
        rt_error_set(err, RT_ERR_NOT_FOUND, "unknown model '%s'", name);
    else if (named && !v && e->n_versions > 0)   /* a missing model is reported before a missing version */
        rt_error_set(err, RT_ERR_NOT_FOUND, "model '%s' has no version '%s'", name, version);
    else if (v)   /* why not, as the index says it: loading, unloaded, or its load error */
        rt_error_set(err, RT_ERR_UNAVAILABLE, "model '%s' version %s is not ready (%s%s%s)", name, v->name,
                     STATE_NAMES[v->state], v->reason[0] ? ": " : "", v->reason);
    else if (e->n_versions > 0)
        rt_error_set(err, RT_ERR_UNAVAILABLE, "model '%s' is not ready (%s%s%s)", name,
                     STATE_NAMES[e->v[e->n_versions - 1].state], e->v[e->n_versions - 1].reason[0] ? ": " : "",
                     e->v[e->n_versions - 1].reason);
    else
        rt_error_set(err, RT_ERR_UNAVAILABLE, "model '%s' is not ready (%s: %s)", name,
                     e->loading ? "LOADING" : "UNAVAILABLE", e->reason);
    pthread_mutex_unlock(&r->mu);
    if (!m)
        return err->status;
    *out = m;
    return RT_OK;
}

int srv_repo_ready_models(struct srv_repo *r, struct srv_model ***out)
{
    pthread_mutex_lock(&r->mu);
    int total = 0;
    for (int i = 0; i < r->n; i++)
        total += r->entries[i].n_versions;
    struct srv_model **list = calloc((size_t)(total ? total : 1), sizeof(struct srv_model *));
    int k = 0;
    for (int i = 0; list && i < r->n; i++) {
        for (int j = 0; j < r->entries[i].n_versions; j++) {
            struct srv_model *m = r->entries[i].v[j].model;
            if (m) {
                srv_model_ref(m);
                list[k++] = m;
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
    *out = list;
    return k;
}

bool srv_repo_all_ready(struct srv_repo *r, char *why, size_t cap)
{
    pthread_mutex_lock(&r->mu);
    int wanted = 0;
    bool ok = true;
    for (int i = 0; ok && i < r->n; i++) {
        const struct entry *e = &r->entries[i];
        if (!e->wanted)
            continue;
        wanted++;
        if (e->n_versions == 0) {
            snprintf(why, cap, "model '%s' is not ready: %s", e->name, e->loading ? "loading" : e->reason);
            ok = false;
        }
        for (int k = 0; ok && k < e->n_versions; k++) {
            const struct version *v = &e->v[k];
            if (v->state == SRV_MODEL_READY)
                continue;
            if (e->n_versions == 1 && strcmp(v->name, "1") == 0)
                snprintf(why, cap, "model '%s' is not ready: %s", e->name, v->reason[0] ? v->reason : "loading");
            else
                snprintf(why, cap, "model '%s' version %s is not ready: %s", e->name, v->name,
                         v->reason[0] ? v->reason : "loading");
            ok = false;
        }
    }
    if (ok && wanted == 0)
        snprintf(why, cap, "no model is loaded: the repository holds none (a model is a folder with model.json "
                           "or model.onnx inside, or in numeric version folders), or all were unloaded");
    pthread_mutex_unlock(&r->mu);
    return ok && wanted > 0;
}

static void index_item(struct srv_buf *out, bool *first, const char *name, const char *version, const char *state,
                       const char *reason)
{
    srv_buf_puts(out, *first ? "{\"name\":" : ",{\"name\":");
    srv_buf_json_str(out, name);
    if (version) {
        srv_buf_puts(out, ",\"version\":");
        srv_buf_json_str(out, version);
    }
    srv_buf_puts(out, ",\"state\":");
    srv_buf_json_str(out, state);
    if (reason[0]) {
        srv_buf_puts(out, ",\"reason\":");
        srv_buf_json_str(out, reason);
    }
    srv_buf_putc(out, '}');
    *first = false;
}

void srv_repo_write_index(struct srv_repo *r, bool ready_only, struct srv_buf *out)
{
    refresh(r);
    pthread_mutex_lock(&r->mu);
    srv_buf_putc(out, '[');
    bool first = true;
    for (int i = 0; i < r->n; i++) {
        const struct entry *e = &r->entries[i];
        if (e->n_versions == 0 && !ready_only)
            index_item(out, &first, e->name, NULL, e->loading ? "LOADING" : "UNAVAILABLE", e->reason);
        for (int k = 0; k < e->n_versions; k++) {
            const struct version *v = &e->v[k];
            if (ready_only && v->state != SRV_MODEL_READY)
                continue;
            const char *reason = e->gone && v->model ? "its folder was removed from the repository; still loaded"
                                                     : v->reason;
            index_item(out, &first, e->name, v->name, STATE_NAMES[v->state], reason);
        }
    }
    srv_buf_putc(out, ']');
    pthread_mutex_unlock(&r->mu);
}

void srv_repo_write_versions(struct srv_repo *r, const char *name, struct srv_buf *out)
{
    pthread_mutex_lock(&r->mu);
    const struct entry *e = srv_repo_find(r, name);
    srv_buf_putc(out, '[');
    bool first = true;
    for (int k = 0; e && k < e->n_versions; k++) {
        if (e->v[k].model) {
            if (!first)
                srv_buf_putc(out, ',');
            srv_buf_json_str(out, e->v[k].name);
            first = false;
        }
    }
    srv_buf_putc(out, ']');
    pthread_mutex_unlock(&r->mu);
}
