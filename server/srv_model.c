/* srv_model.c - loading a model with its batcher, and reference counting. */
#include "srv_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_clock.h"

enum rt_status srv_model_load(const char *dir, const char *name, struct rt_backend *be,
                              const struct srv_batcher_options *opt, struct srv_model **out,
                              struct rt_error *err)
{
    int64_t t0 = srv_now_ns();
    struct srv_model *m = calloc(1, sizeof(*m));
    if (!m)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    snprintf(m->name, sizeof(m->name), "%s", name);
    if (rt_model_load(dir, be, &m->rt, err) != RT_OK) {
        free(m);
        return err->status;
    }
    m->cfg = rt_model_config(m->rt);
    if (srv_stats_init(&m->stats, m->cfg->max_batch_size) != 0) {
        rt_model_free(m->rt);
        free(m);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    if (srv_batcher_create(m->rt, opt, &m->stats, &m->batcher, err) != RT_OK) {
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

void srv_model_unref(struct srv_model *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    srv_batcher_free(m->batcher);
    srv_stats_destroy(&m->stats);
    rt_model_free(m->rt);
    free(m);
}
