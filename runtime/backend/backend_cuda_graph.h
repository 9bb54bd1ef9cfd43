/*
 * backend_cuda_graph.h - CUDA graphs per batch size for the CUDA backend:
 * when a recorded run is captured, replayed or run eagerly, and what a
 * failed capture leaves behind.
 *
 * The life of one batch size's graph:
 *
 *   first run              eager (lazy module loading and cuDNN's first-call
 *                          set-up happen here, outside any capture)
 *   second run             captured, instantiated, launched
 *   later runs             replayed; a changed signature recaptures
 *   a capture that fails   the stream leaves capture mode, the pending error
 *                          is cleared, the run goes eagerly, and that batch
 *                          size runs eagerly from then on
 *
 * The CUDA calls go through struct cuda_graph_api so that the rules above
 * are tested without a GPU (tests/test_cuda_graph.c); the backend passes
 * CUDA_GRAPH_API_RUNTIME.
 */
#ifndef BACKEND_CUDA_GRAPH_H
#define BACKEND_CUDA_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "runtime/rt_status.h"

#define CUDA_MAX_GRAPHS 64          /* captured batch sizes per session; others run eagerly */

struct cuda_backend;

/* The CUDA runtime calls graph capture needs. */
struct cuda_graph_api {
    cudaError_t (*begin_capture)(cudaStream_t st);
    cudaError_t (*end_capture)(cudaStream_t st, cudaGraph_t *graph);
    cudaError_t (*instantiate)(cudaGraphExec_t *exec, cudaGraph_t graph);
    cudaError_t (*launch)(cudaGraphExec_t exec, cudaStream_t st);
    cudaError_t (*take_error)(void);        /* cudaGetLastError: returns and clears the pending error */
    void (*destroy_graph)(cudaGraph_t graph);
    void (*destroy_exec)(cudaGraphExec_t exec);
};

extern const struct cuda_graph_api CUDA_GRAPH_API_RUNTIME;

enum cuda_graph_state {
    CUDA_GRAPH_WARMING,             /* seen once, ran eagerly; the next run captures */
    CUDA_GRAPH_READY,               /* exec holds the captured run */
    CUDA_GRAPH_FAILED,              /* capture failed; this batch size runs eagerly */
};

struct cuda_graph {
    int batch;
    uint64_t signature;             /* of the recorded ops it was captured from */
    enum cuda_graph_state state;
    cudaGraphExec_t exec;           /* READY only */
};

/* How cuda_graph_run ran a batch (for tests and logs). */
enum cuda_graph_path {
    CUDA_PATH_EAGER,                /* graphs off, the table full, or a failed batch size */
    CUDA_PATH_WARMUP,               /* first run of a batch size, eager */
    CUDA_PATH_CAPTURED,             /* captured now, then launched */
    CUDA_PATH_REPLAYED,             /* an earlier capture launched */
    CUDA_PATH_CAPTURE_FAILED,       /* capture failed; ran eagerly instead */
};

/* A session's graphs. */
struct cuda_graph_cache {
    const struct cuda_graph_api *api;
    bool enabled;                   /* rt_backend_options.cuda_graphs: OFF turns capture off */
    struct cuda_graph graphs[CUDA_MAX_GRAPHS];
    int n;
};

/* Enqueues the recorded run on the stream (eagerly, or into a capture). */
typedef enum rt_status (*cuda_enqueue_fn)(void *ctx, struct rt_error *err);

/* Runs the recorded run of `batch` with signature `sig` on stream st:
 * eagerly, into a new capture, or by replaying one, following the rules
 * above. cb is poisoned by sticky errors (cuda_fail). *path (may be NULL)
 * says which way it went. Errors of a capture that fails are logged, not
 * returned, unless they poisoned the context. */
enum rt_status cuda_graph_run(struct cuda_graph_cache *gc, struct cuda_backend *cb, cudaStream_t st, int batch,
                              uint64_t sig, cuda_enqueue_fn enqueue, void *ctx, enum cuda_graph_path *path,
                              struct rt_error *err);

/* Whether cuda_graph_run would replay a captured graph for this batch and
 * signature (no kernel is enqueued one by one: work done only for an
 * enqueue, such as cuDNN's algorithm choice, can be skipped). */
bool cuda_graph_will_replay(const struct cuda_graph_cache *gc, int batch, uint64_t sig);

/* Destroys every captured graph; the cache starts empty again. */
void cuda_graph_cache_release(struct cuda_graph_cache *gc);

#endif /* BACKEND_CUDA_GRAPH_H */
