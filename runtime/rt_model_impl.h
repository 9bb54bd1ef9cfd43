/*
 * rt_model_impl.h - internal entry points of rt_model.c for the runtime's
 * offline tools (calibration, conversion: clients/inferctl) and tests:
 * load without fusion, read the loaded (folded) graph, and watch every
 * tensor of a run.
 */
#ifndef RT_MODEL_IMPL_H
#define RT_MODEL_IMPL_H

#include "runtime/core/plan.h"
#include "runtime/rt_model.h"

struct rt_load_options {
    bool unfused;   /* every node its own step, so every tensor is observable */
};

/* rt_model_load with options (NULL: the defaults). */
enum rt_status rt_model_load_ex(const char *dir, struct rt_backend *b, const struct rt_load_options *opt,
                                struct rt_model **out, struct rt_error *err);

/* A model from a graph built in memory (tests): takes the graph (g is left
 * empty, also on failure) and a copy of cfg without labels, then finishes,
 * plans and prepares as rt_model_load does. */
enum rt_status rt_model_from_graph(struct rt_graph *g, const struct rt_model_config *cfg, struct rt_backend *b,
                                   const struct rt_load_options *opt, struct rt_model **out, struct rt_error *err);

/* Samples rt_session_run runs per pass: the backend's batch_chunk (the CPU's
 * cpu_batch_chunk option), at most max_batch_size. */
int rt_model_batch_chunk(const struct rt_model *m);

/* The model's graph after batch-norm folding and the precision pass;
 * valid while the model lives. */
const struct rt_graph *rt_model_graph(const struct rt_model *m);

/* The model's execution plan and the backend it was prepared for (the
 * step descriptions of rt_profile.c). */
const struct rt_plan *rt_model_plan(const struct rt_model *m);
struct rt_backend *rt_model_backend(const struct rt_model *m);

/* data: batch samples of graph tensor `tensor` (F32, host memory, valid
 * during the call), in the order the backend stores them: the CUDA
 * backend's channels-last tensors (runtime/backend/layout_nhwc.h) arrive
 * NHWC, which statistics over all values (calibration) do not notice. */
typedef void (*rt_observe_fn)(void *user, int tensor, const float *data, int batch);

/* rt_session_run that also hands fn every F32 tensor as it is written:
 * each model input after copy-in, then each step's output (in a fused plan
 * the tensors a step absorbs are never written; load unfused to see all). */
enum rt_status rt_session_run_observed(struct rt_session *s, int batch, const float *const *inputs,
                                       float *const *outputs, rt_observe_fn fn, void *user, struct rt_error *err);

#endif /* RT_MODEL_IMPL_H */
