/* srv_repo_load.c - loading and unloading models and their versions (see srv_repo.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "srv_log.h"
#include "srv_repo_impl.h"

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

/* RT_OK when dir may be read (model_contained), else the reason in err. */
static enum rt_status check_contained(const char *root, const char *dir, const char *name, struct rt_error *err)
{
    int contained = model_contained(root, dir);
    if (contained == 0)
        return RT_OK;
    if (contained == EXDEV)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "model %s: a file links outside the model repository", name);
    return rt_error_set(err, RT_ERR_UNAVAILABLE, "model %s: cannot be read now: %s", name,
                        contained == ENOMEM ? "out of memory" : "the server has too many files open");
}

/* One picked version's load, done outside the lock. */
struct attempt {
    struct srv_model *model;
    struct rt_error err;
};

static void load_version(const struct srv_repo *r, const char *name, const struct srv_layout *lay, int i,
                         struct attempt *a)
{
    char dir[PATH_MAX + RT_NAME_MAX + SRV_VERSION_NAME_MAX + 4], where[RT_NAME_MAX + SRV_VERSION_NAME_MAX + 2];
    const char *ver = lay->versions[i];
    a->err = (struct rt_error){RT_OK, ""};
    if (lay->flat)
        snprintf(where, sizeof(where), "%s", name);
    else
        snprintf(where, sizeof(where), "%s/%s", name, ver);
    snprintf(dir, sizeof(dir), "%s/%s", r->dir, where);
    if (!lay->present[i]) {
        rt_error_set(&a->err, RT_ERR_NOT_FOUND, "version_policy names version %s, but there is no folder %s/%s",
                     ver, name, ver);
        return;
    }
    if (check_contained(r->dir, dir, name, &a->err) == RT_OK &&
        srv_model_load(dir, where, name, ver, lay->has_config ? &lay->cfg : NULL, r->be, &r->opt, &a->model, &a->err) == RT_OK)
        return;
    scrub_path(a->err.msg, dir);
    scrub_path(a->err.msg, r->dir);
}

/* Caller holds mu. Replaces e's versions with those just loaded: a version
 * that failed keeps its old model when it had one (a reload that fails
 * leaves the old one serving); statistics carry over, as Triton's do. The
 * models the entry lets go are put in drop. */
static void merge(struct entry *e, const struct srv_layout *lay, struct attempt *a, struct srv_model **drop,
                  int *n_drop)
{
    struct version next[SRV_MAX_VERSIONS];
    memset(next, 0, sizeof(next));
    bool used[SRV_MAX_VERSIONS] = {false};
    for (int i = 0; i < lay->n; i++) {
        struct version *nv = &next[i], *old = NULL;
        snprintf(nv->name, sizeof(nv->name), "%s", lay->versions[i]);
        for (int k = 0; k < e->n_versions && !old; k++) {
            if (strcmp(e->v[k].name, nv->name) == 0) {
                old = &e->v[k];
                used[k] = true;
            }
        }
        if (a[i].model) {
            nv->model = a[i].model;
            nv->state = SRV_MODEL_READY;
            if (old && old->model) {
                srv_stats_absorb(&nv->model->stats, &old->model->stats);
                drop[(*n_drop)++] = old->model;
            } else if (old && old->kept) {
                srv_stats_absorb(&nv->model->stats, old->kept);
            }
            if (old)
                srv_repo_drop_kept(old);
        } else if (old && old->model) {
            *nv = *old;
        } else {
            nv->state = SRV_MODEL_UNAVAILABLE;
            snprintf(nv->reason, sizeof(nv->reason), "%s", a[i].err.msg);
            if (old) {
                nv->kept = old->kept;
                old->kept = NULL;
            }
        }
    }
    for (int k = 0; k < e->n_versions; k++) {   /* versions the policy no longer picks */
        if (used[k])
            continue;
        if (e->v[k].model)
            drop[(*n_drop)++] = e->v[k].model;
        srv_repo_drop_kept(&e->v[k]);
    }
    memcpy(e->v, next, sizeof(next));
    e->n_versions = lay->n;
    e->reason[0] = '\0';
}

static void log_outcome(const char *name, const struct srv_layout *lay, const struct attempt *a)
{
    for (int i = 0; i < lay->n; i++) {
        const struct srv_model *m = a[i].model;
        char which[RT_NAME_MAX + SRV_VERSION_NAME_MAX + 16];
        if (lay->flat)
            snprintf(which, sizeof(which), "%s", name);
        else
            snprintf(which, sizeof(which), "%s version %s", name, lay->versions[i]);
        if (m)
            srv_log_info("model %s loaded in %.1f ms (max batch %d, %d instance%s)", which, m->load_seconds * 1e3,
                         m->cfg->max_batch_size, m->cfg->instance_count, m->cfg->instance_count == 1 ? "" : "s");
        else
            srv_log_error("model %s failed to load: %s", which, a[i].err.msg);
    }
}

enum rt_status srv_repo_load(struct srv_repo *r, const char *name, const struct srv_triton_config *config,
                             struct rt_error *err)
{
    if (!srv_repo_valid_name(name))
        return rt_error_set(err, RT_ERR_INVALID, "invalid model name");
    pthread_mutex_lock(&r->load_mu);
    pthread_mutex_lock(&r->mu);
    struct entry *e = srv_repo_find(r, name);
    if (!e && srv_layout_is_model(r->dir, name))
        e = srv_repo_add(r, name);
    if (!e) {
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_unlock(&r->load_mu);
        return rt_error_set(err, RT_ERR_NOT_FOUND, "no model named '%s' in the repository", name);
    }
    e->loading = true;   /* the index's refresh keeps the entry (and so our pointer's target) */
    e->wanted = true;
    pthread_mutex_unlock(&r->mu);

    char dir[PATH_MAX + RT_NAME_MAX + 2];
    snprintf(dir, sizeof(dir), "%s/%s", r->dir, name);
    struct srv_layout *lay = calloc(1, sizeof(*lay));
    struct attempt a[SRV_MAX_VERSIONS];
    memset(a, 0, sizeof(a));
    enum rt_status st = RT_ERR_NO_MEMORY;
    if (!lay)
        rt_error_set(err, st, "out of memory");
    else if ((st = check_contained(r->dir, dir, name, err)) == RT_OK)
        st = srv_layout_read(dir, name, config, lay, err);
    if (st != RT_OK) {
        scrub_path(err->msg, dir);
        scrub_path(err->msg, r->dir);
    }
    for (int i = 0; lay && st == RT_OK && i < lay->n; i++)
        load_version(r, name, lay, i, &a[i]);

    struct srv_model *drop[2 * SRV_MAX_VERSIONS];
    int n_drop = 0;
    pthread_mutex_lock(&r->mu);
    e = srv_repo_find(r, name);
    e->loading = false;
    if (lay && st == RT_OK) {
        merge(e, lay, a, drop, &n_drop);
    } else if (!srv_repo_any_loaded(e)) {
        for (int k = 0; k < e->n_versions; k++)
            srv_repo_drop_kept(&e->v[k]);
        e->n_versions = 0;
        snprintf(e->reason, sizeof(e->reason), "%s", err->msg);
    }
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < n_drop; i++)
        srv_model_unref(drop[i]);
    /* still under load_mu: a concurrent unload or reload could free the models */
    if (lay && st == RT_OK) {
        log_outcome(name, lay, a);
        for (int i = 0; i < lay->n && st == RT_OK; i++) {
            if (!a[i].model) {
                *err = a[i].err;
                st = err->status;
            }
        }
    } else {
        srv_log_error("model %s failed to load: %s", name, err->msg);
    }
    pthread_mutex_unlock(&r->load_mu);
    free(lay);
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
        if (srv_repo_load(r, names[i], NULL, &one) != RT_OK && st == RT_OK) {
            *err = one;
            st = rt_error_prefix(err, "model %s", names[i]);
        }
    }
    free(names);
    return st;
}

/* Caller holds mu. Keeps v's statistics for its next load and lets its model go. */
static struct srv_model *unload_version(struct version *v)
{
    struct srv_model *m = v->model;
    if (m && !v->kept && (v->kept = calloc(1, sizeof(*v->kept))) &&
        srv_stats_init(v->kept, m->stats.max_batch) != 0) {
        free(v->kept);   /* out of memory: the counters restart at the next load */
        v->kept = NULL;
    }
    if (m && v->kept)
        srv_stats_absorb(v->kept, &m->stats);
    v->model = NULL;
    v->state = SRV_MODEL_UNAVAILABLE;
    snprintf(v->reason, sizeof(v->reason), "unloaded");
    return m;
}

enum rt_status srv_repo_unload(struct srv_repo *r, const char *name, struct rt_error *err)
{
    pthread_mutex_lock(&r->load_mu);
    pthread_mutex_lock(&r->mu);
    struct entry *e = srv_repo_valid_name(name) ? srv_repo_find(r, name) : NULL;
    struct srv_model *drop[SRV_MAX_VERSIONS];
    int n_drop = 0;
    if (e) {
        for (int k = 0; k < e->n_versions; k++) {
            struct srv_model *m = unload_version(&e->v[k]);
            if (m)
                drop[n_drop++] = m;
        }
        e->wanted = false;
        snprintf(e->reason, sizeof(e->reason), "unloaded");
    }
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < n_drop; i++)
        srv_model_unref(drop[i]);
    pthread_mutex_unlock(&r->load_mu);
    if (!e)
        return rt_error_set(err, RT_ERR_NOT_FOUND, "no model named '%s' in the repository", name);
    if (n_drop > 0)
        srv_log_info("model %s unloaded", name);
    return RT_OK;
}
