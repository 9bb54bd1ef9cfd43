/*
 * srv_model.h - a loaded model as the server holds it: the runtime model,
 * its batcher (instances and queue) and its statistics, shared by reference.
 *
 * The repository holds one reference while the model is loaded; every
 * request that uses the model holds another from lookup until its response
 * is done. The last srv_model_unref lets the batcher finish its queue, stops
 * the workers and frees the model, so unloading never pulls a model out from
 * under a running request.
 */
#ifndef SRV_MODEL_H
#define SRV_MODEL_H

#include <stdatomic.h>

#include "runtime/rt_model.h"
#include "srv_batcher.h"
#include "srv_stats.h"
#include "srv_triton_config.h"

struct srv_model {
    char name[RT_NAME_MAX];
    char version[24];             /* its version folder's name; "1" in the flat layout */
    struct rt_model *rt;
    const struct rt_model_config *cfg;
    struct srv_batcher *batcher;
    struct srv_model_stats stats;
    double load_seconds;          /* wall time rt_model_load + batcher start took */
    atomic_int refs;
};

/* Loads dir (a folder holding one version's files) as version `version` of
 * model `name` for backend be, with config.pbtxt's settings laid over the
 * model's own (tc; NULL: none). The returned model holds one reference.
 * Errors name the model's files from where ("m" or "m/2"), never the host path. */
enum rt_status srv_model_load(const char *dir, const char *where, const char *name, const char *version,
                              const struct srv_triton_config *tc, struct rt_backend *be,
                              const struct srv_batcher_options *opt, struct srv_model **out,
                              struct rt_error *err);

void srv_model_ref(struct srv_model *m);
void srv_model_unref(struct srv_model *m);
/* Waits until every model whose last reference dropped on its own batcher
 * thread has been freed (they are freed on a thread of their own); before
 * the backend goes. */
void srv_model_wait_frees(void);

#endif /* SRV_MODEL_H */
