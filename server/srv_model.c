/* srv_model.c - loading a model with its batcher, and reference counting. */
#include "srv_model.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "srv_clock.h"
#include "srv_log.h"

/* A config.pbtxt that names ONNX wants the ONNX file there: without it the
 * loader would read model.json + safetensors instead. */
static enum rt_status check_platform(const char *dir, const char *where, const struct srv_triton_config *tc,
                                     const char *onnx_file, struct rt_error *err)
{
    char path[4096];
    struct stat st;
    if (!tc || !tc->onnx)
        return RT_OK;
    snprintf(path, sizeof(path), "%s/%s", dir, onnx_file);
    if (stat(path, &st) != 0)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "config.pbtxt names ONNX, but %s holds no %s", where, onnx_file);
    return RT_OK;
}

enum rt_status srv_model_load(const char *dir, const char *where, const char *name, const char *version,
                              const struct srv_triton_config *tc, struct rt_backend *be,
                              const struct srv_batcher_options *opt, struct srv_model **out,
                              struct rt_error *err)
{
    int64_t t0 = srv_now_ns();
    const char *onnx_file = tc && tc->model_filename[0] ? tc->model_filename : "model.onnx";
    if (check_platform(dir, where, tc, onnx_file, err) != RT_OK)
        return err->status;
    struct srv_model *m = calloc(1, sizeof(*m));
    if (!m)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    snprintf(m->name, sizeof(m->name), "%s", name);
    snprintf(m->version, sizeof(m->version), "%s", version);
    const struct rt_model_source src = {.name = name, .where = where, .onnx_file = onnx_file,
                                        .configure = tc ? srv_triton_config_apply : NULL, .user = tc};
    if (rt_model_load_source(dir, &src, be, &m->rt, err) != RT_OK) {
        free(m);
        return err->status;
    }
    m->cfg = rt_model_config(m->rt);
    if (srv_stats_init(&m->stats, m->cfg->max_batch_size) != 0) {
        rt_model_free(m->rt);
        free(m);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    if ((opt->profile_steps && srv_step_profile_create(m->rt, &m->stats.steps, err) != RT_OK) ||
        srv_batcher_create(m->rt, opt, &m->stats, &m->batcher, err) != RT_OK) {
        srv_step_profile_free(m->stats.steps);
        srv_stats_destroy(&m->stats);
        rt_model_free(m->rt);
        free(m);
        return err->status;
    }
    atomic_init(&m->refs, 1);
    m->load_seconds = (double)(srv_now_ns() - t0) / 1e9;
    *out = m;
    return RT_OK;
}

void srv_model_ref(struct srv_model *m) { atomic_fetch_add(&m->refs, 1); }

static void model_free(struct srv_model *m)
{
    srv_batcher_free(m->batcher);
    srv_step_profile_free(m->stats.steps);
    srv_stats_destroy(&m->stats);
    rt_model_free(m->rt);
    free(m);
}

/* Models being freed on a thread of their own (see srv_model_unref). */
static pthread_mutex_t frees_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t frees_cv = PTHREAD_COND_INITIALIZER;
static int frees_pending;

static void *model_free_thread(void *m)
{
    model_free(m);
    pthread_mutex_lock(&frees_mu);
    frees_pending--;
    pthread_cond_broadcast(&frees_cv);
    pthread_mutex_unlock(&frees_mu);
    return NULL;
}

void srv_model_unref(struct srv_model *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    /* The last reference can drop on one of the model's own batcher workers:
     * a request whose client vanished is freed by its job's done(), and if
     * the model was unloaded meanwhile that frees the model. A worker cannot
     * join itself, so another thread does it (the worker returns first). */
    if (m->batcher && srv_batcher_is_worker_thread(m->batcher)) {
        pthread_mutex_lock(&frees_mu);
        frees_pending++;
        pthread_mutex_unlock(&frees_mu);
        pthread_t t;
        pthread_attr_t attr;
        bool spawned = pthread_attr_init(&attr) == 0;
        if (spawned) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            spawned = pthread_create(&t, &attr, model_free_thread, m) == 0;
            pthread_attr_destroy(&attr);
        }
        if (!spawned) {
            srv_log_error("model %s: no thread to free it; its memory stays allocated", m->name);
            pthread_mutex_lock(&frees_mu);
            frees_pending--;
            pthread_mutex_unlock(&frees_mu);
        }
        return;
    }
    model_free(m);
}

void srv_model_wait_frees(void)
{
    pthread_mutex_lock(&frees_mu);
    while (frees_pending > 0)
        pthread_cond_wait(&frees_cv, &frees_mu);
    pthread_mutex_unlock(&frees_mu);
}
