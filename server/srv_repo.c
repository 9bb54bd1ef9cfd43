/* srv_repo.c - model repository: listing, load/unload, lookups (see srv_repo.h). */
#include "srv_repo.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "srv_log.h"

struct entry {
    char name[RT_NAME_MAX];
    enum srv_model_state state;
    bool wanted;                /* loaded at start or by request, not unloaded since */
    char reason[160];
    struct srv_model *model;    /* the repository's reference, when READY */
    struct srv_model_stats *kept;   /* an unloaded model's statistics, for its next load */
};

struct srv_repo {
    char dir[PATH_MAX];
    struct rt_backend *be;
    struct srv_batcher_options opt;
    pthread_mutex_t mu;         /* guards entries */
    pthread_mutex_t load_mu;    /* serialises load and unload */
    struct entry *entries;
    int n, cap;
};

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

static bool has_model_files(const char *dir, const char *name)
{
    static const char *const FILES[] = {"model.json", "model.onnx"};
    for (size_t i = 0; i < 2; i++) {
        char path[PATH_MAX + 2 * RT_NAME_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s/%s", dir, name, FILES[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return true;
    }
    return false;
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
    if (!srv_repo_valid_name(name)) {
        srv_log_warn("model repository: skipping folder '%s': not a model name (letters, digits, '.', '_', '-')",
                     esc);
        return;
    }
    char triton[PATH_MAX + 2 * RT_NAME_MAX];
    snprintf(triton, sizeof(triton), "%s/%s/1/model.onnx", dir, name);
    if (stat(triton, &st) == 0)
        srv_log_warn("model repository: skipping folder '%s': Triton's layout (%s/1/model.onnx) is not read; "
                     "put model.onnx directly in %s/", esc, esc, esc);
    else
        srv_log_warn("model repository: skipping folder '%s': it holds no model.json or model.onnx", esc);
}

/* Caller holds mu. */
static struct entry *find(struct srv_repo *r, const char *name)
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

/* Caller holds mu. Keeps entries sorted by name. */
static struct entry *add_entry(struct srv_repo *r, const char *name)
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
    return find(r, name);
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
    DIR *d = opendir(r->dir);
    if (!d) {
        srv_repo_free(r);
        return rt_error_set(err, RT_ERR_IO, "cannot read model repository %s", dir);
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!srv_repo_valid_name(de->d_name) || !has_model_files(r->dir, de->d_name)) {
            log_skipped(r->dir, de->d_name);
            continue;
        }
        if (!add_entry(r, de->d_name)) {
            closedir(d);
            srv_repo_free(r);
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        }
    }
    closedir(d);
    *out = r;
    return RT_OK;
}

void srv_repo_free(struct srv_repo *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        srv_model_unref(r->entries[i].model);
        if (r->entries[i].kept) {
            srv_stats_destroy(r->entries[i].kept);
            free(r->entries[i].kept);
        }
    }
    srv_model_wait_frees(); /* models unloaded earlier may still be going */
    free(r->entries);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->load_mu);
    free(r);
}

/* Whether a failed call ran out of descriptors or memory (then it says
 * nothing about the file). */
static bool out_of_resources(int e) { return e == EMFILE || e == ENFILE || e == ENOMEM; }

/* 0 when path resolves (through every symlink) to root or below it; else
 * EXDEV (outside, or dangling) or the errno of a resource shortage. */
static int inside_root(const char *root, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return out_of_resources(errno) ? errno : EXDEV;
    size_t n = strlen(root);
    return strncmp(real, root, n) == 0 && (real[n] == '/' || real[n] == '\0') ? 0 : EXDEV;
}

/* The repository never reads outside its root: the model folder and every
 * symlink in it must resolve inside (a dangling one is refused too). Checked
 * before the loader opens anything; whoever can rewrite the folder between
 * this check and the open could already write the model itself. Returns
 * as inside_root. */
static int model_contained(const char *root, const char *dir)
{
    int e = inside_root(root, dir);
    if (e)
        return e;
    DIR *d = opendir(dir);
    if (!d)
        return out_of_resources(errno) ? errno : EXDEV;
    struct dirent *de;
    while (!e && (de = readdir(d))) {
        char path[PATH_MAX + 2 * RT_NAME_MAX + 300];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (strcmp(de->d_name, "..") != 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            e = inside_root(root, path);
    }
    closedir(d);
    return e;
}

/* Removes the host's path from a loader message: clients see model names only. */
static void scrub_path(char *msg, const char *dir)
{
    size_t dl = strlen(dir);
    char *p;
    while (dl > 0 && (p = strstr(msg, dir))) {
        char rest[RT_ERROR_MSG_MAX];
        const char *after = p + dl;
        if (*after == '/')
            after++;
        snprintf(rest, sizeof(rest), "%s", after);
        *p = '\0';
        size_t used = strlen(msg);
        snprintf(p, RT_ERROR_MSG_MAX - used, "%s", rest);
    }
}

enum rt_status srv_repo_load(struct srv_repo *r, const char *name, struct rt_error *err)
{
    if (!srv_repo_valid_name(name))
        return rt_error_set(err, RT_ERR_INVALID, "invalid model name");
    pthread_mutex_lock(&r->load_mu);
    pthread_mutex_lock(&r->mu);
    struct entry *e = find(r, name);
    if (!e && has_model_files(r->dir, name))
        e = add_entry(r, name);
    if (!e) {
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_unlock(&r->load_mu);
        return rt_error_set(err, RT_ERR_NOT_FOUND, "no model named '%s' in the repository", name);
    }
    if (!e->model)
        e->state = SRV_MODEL_LOADING;
    e->wanted = true;
    pthread_mutex_unlock(&r->mu);

    char dir[PATH_MAX + RT_NAME_MAX + 2];
    snprintf(dir, sizeof(dir), "%s/%s", r->dir, name);
    struct srv_model *m = NULL;
    enum rt_status st = RT_ERR_BAD_MODEL;
    int contained = model_contained(r->dir, dir);
    if (contained == 0)
        st = srv_model_load(dir, name, r->be, &r->opt, &m, err);
    else if (contained == EXDEV)
        rt_error_set(err, RT_ERR_BAD_MODEL, "model %s: a file links outside the model repository",
                     name);
    else
        st = rt_error_set(err, RT_ERR_UNAVAILABLE, "model %s: cannot be read now: %s", name,
                          contained == ENOMEM ? "out of memory"
                                              : "the server has too many files open");
    if (st != RT_OK) {
        scrub_path(err->msg, dir);
        scrub_path(err->msg, r->dir);
    }

    pthread_mutex_lock(&r->mu);
    e = find(r, name);
    struct srv_model *old = NULL;
    if (st == RT_OK) {
        old = e->model;     /* a reload replaces the old version once the new one is ready */
        /* counters carry over a reload, or an unload and a load, as Triton's do */
        if (old)
            srv_stats_absorb(&m->stats, &old->stats);
        else if (e->kept)
            srv_stats_absorb(&m->stats, e->kept);
        if (e->kept) {
            srv_stats_destroy(e->kept);
            free(e->kept);
            e->kept = NULL;
        }
        e->model = m;
        e->state = SRV_MODEL_READY;
        e->reason[0] = '\0';
    } else if (!e->model) {
        e->state = SRV_MODEL_UNAVAILABLE;
        snprintf(e->reason, sizeof(e->reason), "%s", err->msg);
    }
    pthread_mutex_unlock(&r->mu);
    srv_model_unref(old);
    /* still under load_mu: a concurrent unload or reload could free m */
    if (st == RT_OK && m)
        srv_log_info("model %s loaded in %.1f ms (max batch %d, %d instance%s)", name,
                     m->load_seconds * 1e3, m->cfg->max_batch_size, m->cfg->instance_count,
                     m->cfg->instance_count == 1 ? "" : "s");
    else
        srv_log_error("model %s failed to load: %s", name, err->msg);
    pthread_mutex_unlock(&r->load_mu);
    return st;
}

enum rt_status srv_repo_load_all(struct srv_repo *r, struct rt_error *err)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    char (*names)[RT_NAME_MAX] = calloc((size_t)(n ? n : 1), RT_NAME_MAX);
    for (int i = 0; names && i < n; i++)
        memcpy(names[i], r->entries[i].name, RT_NAME_MAX);
    pthread_mutex_unlock(&r->mu);
    if (!names)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum rt_status st = RT_OK;
    struct rt_error one = {RT_OK, ""};
    for (int i = 0; i < n; i++) {
        if (srv_repo_load(r, names[i], &one) != RT_OK && st == RT_OK) {
            *err = one;
            st = rt_error_prefix(err, "model %s", names[i]);
        }
    }
    free(names);
    return st;
}

enum rt_status srv_repo_unload(struct srv_repo *r, const char *name, struct rt_error *err)
{
    pthread_mutex_lock(&r->load_mu);
    pthread_mutex_lock(&r->mu);
    struct entry *e = srv_repo_valid_name(name) ? find(r, name) : NULL;
    struct srv_model *m = e ? e->model : NULL;
    if (m && !e->kept && (e->kept = calloc(1, sizeof(*e->kept))) &&
        srv_stats_init(e->kept, m->stats.max_batch) != 0) {
        free(e->kept);   /* out of memory: the counters restart at the next load */
        e->kept = NULL;
    }
    if (m && e->kept)
        srv_stats_absorb(e->kept, &m->stats);
    if (e) {
        e->model = NULL;
        e->wanted = false;
        e->state = SRV_MODEL_UNAVAILABLE;
        snprintf(e->reason, sizeof(e->reason), "unloaded");
    }
    pthread_mutex_unlock(&r->mu);
    srv_model_unref(m);
    pthread_mutex_unlock(&r->load_mu);
    if (!e)
        return rt_error_set(err, RT_ERR_NOT_FOUND, "no model named '%s' in the repository", name);
    if (m)
        srv_log_info("model %s unloaded", name);
    return RT_OK;
}

enum rt_status srv_repo_acquire(struct srv_repo *r, const char *name, struct srv_model **out,
                                struct rt_error *err)
{
    /* A name no folder can have is not echoed back: it may be anything. */
    if (!srv_repo_valid_name(name))
        return rt_error_set(err, RT_ERR_NOT_FOUND, "unknown model");
    pthread_mutex_lock(&r->mu);
    struct entry *e = find(r, name);
    struct srv_model *m = e ? e->model : NULL;
    if (m)
        srv_model_ref(m);
    else if (e)   /* why not, as the index says it: loading, unloaded, or its load error */
        rt_error_set(err, RT_ERR_UNAVAILABLE, "model '%s' is not ready (%s%s%s)", name, STATE_NAMES[e->state],
                     e->reason[0] ? ": " : "", e->reason);
    pthread_mutex_unlock(&r->mu);
    if (!e)
        return rt_error_set(err, RT_ERR_NOT_FOUND, "unknown model '%s'", name);
    if (!m)
        return err->status;
    *out = m;
    return RT_OK;
}

int srv_repo_ready_models(struct srv_repo *r, struct srv_model ***out)
{
    pthread_mutex_lock(&r->mu);
    struct srv_model **list = calloc((size_t)(r->n ? r->n : 1), sizeof(struct srv_model *));
    int k = 0;
    for (int i = 0; list && i < r->n; i++) {
        if (r->entries[i].model) {
            srv_model_ref(r->entries[i].model);
            list[k++] = r->entries[i].model;
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
    const struct entry *bad = NULL;
    for (int i = 0; i < r->n; i++) {
        const struct entry *e = &r->entries[i];
        wanted += e->wanted;
        if (!bad && e->wanted && e->state != SRV_MODEL_READY)
            bad = e;
    }
    if (bad)
        snprintf(why, cap, "model '%s' is not ready: %s", bad->name, bad->reason[0] ? bad->reason : "loading");
    else if (wanted == 0)
        snprintf(why, cap, "no model is loaded: the repository holds none (a model is a folder with model.json "
                           "or model.onnx directly inside), or all were unloaded");
    pthread_mutex_unlock(&r->mu);
    return !bad && wanted > 0;
}

void srv_repo_write_index(struct srv_repo *r, bool ready_only, struct srv_buf *out)
{
    pthread_mutex_lock(&r->mu);
    srv_buf_putc(out, '[');
    bool first = true;
    for (int i = 0; i < r->n; i++) {
        const struct entry *e = &r->entries[i];
        if (ready_only && e->state != SRV_MODEL_READY)
            continue;
        srv_buf_puts(out, first ? "{\"name\":" : ",{\"name\":");
        srv_buf_json_str(out, e->name);
        srv_buf_puts(out, ",\"version\":\"1\",\"state\":");
        srv_buf_json_str(out, STATE_NAMES[e->state]);
        if (e->reason[0]) {
            srv_buf_puts(out, ",\"reason\":");
            srv_buf_json_str(out, e->reason);
        }
        srv_buf_putc(out, '}');
        first = false;
    }
    srv_buf_putc(out, ']');
    pthread_mutex_unlock(&r->mu);
}
