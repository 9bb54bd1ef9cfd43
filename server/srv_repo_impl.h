/*
 * srv_repo_impl.h - the repository's insides, shared by srv_repo.c
 * (listing, lookups, the index) and srv_repo_load.c (load and unload).
 */
#ifndef SRV_REPO_IMPL_H
#define SRV_REPO_IMPL_H

#include <limits.h>
#include <pthread.h>

#include "srv_repo.h"
#include "srv_repo_layout.h"

/* One version of a model as the repository knows it. */
struct version {
    char name[SRV_VERSION_NAME_MAX];
    enum srv_model_state state;
    char reason[240];
    struct srv_model *model;            /* the repository's reference, when READY */
    struct srv_model_stats *kept;       /* an unloaded version's statistics, for its next load */
};

struct entry {
    char name[RT_NAME_MAX];
    bool wanted;                /* loaded at start or by request, not unloaded since */
    bool loading;               /* a load is under way: the entry stays, whatever its folder does */
    bool gone;                  /* its folder left the repository while a version is loaded */
    char reason[240];           /* why no version is listed: not loaded, unloaded, or the model's load error */
    struct version v[SRV_MAX_VERSIONS];   /* as the last load picked them, ascending */
    int n_versions;
};

struct srv_repo {
    char dir[PATH_MAX];
    struct rt_backend *be;
    struct srv_batcher_options opt;
    pthread_mutex_t mu;         /* guards entries */
    pthread_mutex_t load_mu;    /* serialises load and unload */
    struct entry *entries;      /* sorted by name */
    int n, cap;
};

/* Caller holds mu. NULL when there is none. */
struct entry *srv_repo_find(struct srv_repo *r, const char *name);
/* Caller holds mu. A new entry, "not loaded"; NULL when out of memory.
 * Pointers to entries do not survive it. */
struct entry *srv_repo_add(struct srv_repo *r, const char *name);
/* Whether a version of e is loaded (caller holds mu). */
bool srv_repo_any_loaded(const struct entry *e);
/* Frees a version's kept statistics. */
void srv_repo_drop_kept(struct version *v);

#endif /* SRV_REPO_IMPL_H */
