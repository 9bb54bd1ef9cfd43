/*
 * backend_cuda_graph.c - CUDA graphs per batch size (see backend_cuda_graph.h
 * for the rules). A graph is valid for a batch size because everything it
 * touches is fixed for it: arena offsets scale with the batch, staging
 * offsets follow the order of the calls, weights never move. The caller's
 * signature of the recorded calls guards that assumption: a mismatch
 * recaptures.
 */
#include <stdio.h>

#include "runtime/backend/backend_cuda_impl.h"

static cudaError_t begin_capture(cudaStream_t st)
{
    /* thread-local: another session's thread may be capturing on its own stream */
    return cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
}

static cudaError_t instantiate(cudaGraphExec_t *exec, cudaGraph_t graph)
{
    return cudaGraphInstantiate(exec, graph, 0);
}

static void destroy_graph(cudaGraph_t graph) { cudaGraphDestroy(graph); }
static void destroy_exec(cudaGraphExec_t exec) { cudaGraphExecDestroy(exec); }

const struct cuda_graph_api CUDA_GRAPH_API_RUNTIME = {
    .begin_capture = begin_capture,
    .end_capture = cudaStreamEndCapture,
    .instantiate = instantiate,
    .launch = cudaGraphLaunch,
    .take_error = cudaGetLastError,
    .destroy_graph = destroy_graph,
    .destroy_exec = destroy_exec,
};

void cuda_graph_cache_release(struct cuda_graph_cache *gc)
{
    for (int i = 0; i < gc->n; i++) {
        if (gc->graphs[i].state == CUDA_GRAPH_READY)
            gc->api->destroy_exec(gc->graphs[i].exec);
    }
    gc->n = 0;
}

/* Captures the run into g and launches it. On a failed capture the stream
 * has left capture mode and no error is pending; the caller runs eagerly. */
static enum rt_status capture(struct cuda_graph_cache *gc, struct cuda_backend *cb, struct cuda_graph *g,
                              cudaStream_t st, cuda_enqueue_fn enqueue, void *ctx, bool *captured,
                              struct rt_error *err)
{
    const struct cuda_graph_api *api = gc->api;
    *captured = false;
    if (g->state == CUDA_GRAPH_READY)
        api->destroy_exec(g->exec);
    g->state = CUDA_GRAPH_FAILED;
    g->exec = NULL;
    struct rt_error why = {0};
    cudaError_t e = api->begin_capture(st);
    enum rt_status r = e == cudaSuccess ? enqueue(ctx, &why) : cuda_fail(cb, e, "cudaStreamBeginCapture", &why);
    if (e == cudaSuccess) {
        /* always end a capture that began, even an invalidated one, or the
         * stream stays in capture mode and every later call on it fails */
        cudaGraph_t graph = NULL;
        cudaError_t end = api->end_capture(st, &graph);
        if (r == RT_OK && end == cudaSuccess) {
            end = api->instantiate(&g->exec, graph);
            if (end != cudaSuccess)
                r = cuda_fail(cb, end, "cudaGraphInstantiate", &why);
        } else if (r == RT_OK) {
            r = cuda_fail(cb, end, "cudaStreamEndCapture", &why);
        }
        if (graph)
            api->destroy_graph(graph);
    }
    /* A launch refused inside the capture leaves cudaErrorStreamCaptureInvalidated
     * (or its own error) pending; the eager run's first kernel launch would
     * report it as its own failure. */
    (void)api->take_error();
    if (__atomic_load_n(&cb->poisoned, __ATOMIC_ACQUIRE)) {
        *err = why;
        return err->status;
    }
    if (r != RT_OK) {
        fprintf(stderr, "inferd: CUDA graph capture failed for batch %d (%s); that batch size runs without a graph\n",
                g->batch, why.msg);
        return RT_OK;
    }
    g->state = CUDA_GRAPH_READY;
    *captured = true;
    CUDA_CHECK(cb, api->launch(g->exec, st), err);
    return RT_OK;
}

bool cuda_graph_will_replay(const struct cuda_graph_cache *gc, int batch, uint64_t sig)
{
    for (int i = 0; gc->enabled && i < gc->n; i++) {
        const struct cuda_graph *g = &gc->graphs[i];
        if (g->batch == batch)
            return g->state == CUDA_GRAPH_READY && g->signature == sig;
    }
    return false;
}

static struct cuda_graph *find_or_add(struct cuda_graph_cache *gc, int batch, uint64_t sig, bool *added)
{
    *added = false;
    for (int i = 0; i < gc->n; i++) {
        if (gc->graphs[i].batch == batch)
            return &gc->graphs[i];
    }
    if (gc->n == CUDA_MAX_GRAPHS)
        return NULL;
    *added = true;
    struct cuda_graph *g = &gc->graphs[gc->n++];
    *g = (struct cuda_graph){.batch = batch, .signature = sig, .state = CUDA_GRAPH_WARMING};
    return g;
}

enum rt_status cuda_graph_run(struct cuda_graph_cache *gc, struct cuda_backend *cb, cudaStream_t st, int batch,
                              uint64_t sig, cuda_enqueue_fn enqueue, void *ctx, enum cuda_graph_path *path,
                              struct rt_error *err)
{
    enum cuda_graph_path unused = CUDA_PATH_EAGER;
    path = path ? path : &unused;
    *path = CUDA_PATH_EAGER;
    bool added = false;
    struct cuda_graph *g = gc->enabled && batch > 0 ? find_or_add(gc, batch, sig, &added) : NULL;
    if (!g || g->state == CUDA_GRAPH_FAILED)
        return enqueue(ctx, err);
    if (added) {
        *path = CUDA_PATH_WARMUP;
        return enqueue(ctx, err);
    }
    if (g->state == CUDA_GRAPH_READY && g->signature == sig) {
        *path = CUDA_PATH_REPLAYED;
        CUDA_CHECK(cb, gc->api->launch(g->exec, st), err);
        return RT_OK;
    }
    g->signature = sig;
    bool captured;
    enum rt_status r = capture(gc, cb, g, st, enqueue, ctx, &captured, err);
    *path = captured ? CUDA_PATH_CAPTURED : CUDA_PATH_CAPTURE_FAILED;
    if (r != RT_OK || captured)
        return r;
    return enqueue(ctx, err);
}
