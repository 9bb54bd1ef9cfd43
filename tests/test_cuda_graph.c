/* test_cuda_graph.c - the CUDA graph rules of backend_cuda_graph.c, with a
 * stand-in for the CUDA runtime, so they are checked without a GPU: a batch
 * size runs eagerly once, is captured on its second run and replayed after;
 * a capture that fails ends the capture, leaves no pending error for the
 * eager run that follows (a kernel launch reports the pending error as its
 * own: the request would fail), and that batch size stays eager; a sticky
 * error inside a capture fails the run. */
#include "runtime/backend/backend_cuda_impl.h"
#include "test.h"

/* The stand-in runtime: one stream, one pending error, as CUDA keeps it. */
static struct {
    cudaError_t pending;            /* what cudaGetLastError would return */
    bool capturing, invalidated;
    bool fail_in_capture;           /* a launch inside a capture is refused */
    bool sticky_in_capture;         /* ... with an error that poisons the context */
    int begins, eager_runs, captured_runs, graph_launches, execs_alive;
    struct cuda_backend *cb;
} fake;

static char fake_object;   /* what the fake graph handles point at */

static cudaError_t fake_begin(cudaStream_t st)
{
    (void)st;
    if (fake.capturing)
        return cudaErrorIllegalState;
    fake.begins++;
    fake.capturing = true;
    fake.invalidated = false;
    return cudaSuccess;
}

static cudaError_t fake_end(cudaStream_t st, cudaGraph_t *graph)
{
    (void)st;
    if (!fake.capturing)
        return cudaErrorIllegalState;
    fake.capturing = false;
    if (fake.invalidated) {
        fake.pending = cudaErrorStreamCaptureInvalidated;
        return fake.pending;
    }
    *graph = (cudaGraph_t)(void *)&fake_object;
    return cudaSuccess;
}

static cudaError_t fake_instantiate(cudaGraphExec_t *exec, cudaGraph_t graph)
{
    (void)graph;
    *exec = (cudaGraphExec_t)(void *)&fake_object;
    fake.execs_alive++;
    return cudaSuccess;
}

static cudaError_t fake_launch(cudaGraphExec_t exec, cudaStream_t st)
{
    (void)exec, (void)st;
    if (fake.capturing)
        return cudaErrorStreamCaptureUnsupported;
    fake.graph_launches++;
    return cudaSuccess;
}

static cudaError_t fake_take_error(void)
{
    cudaError_t e = fake.pending;
    fake.pending = cudaSuccess;
    return e;
}

static void fake_destroy_graph(cudaGraph_t graph) { (void)graph; }
static void fake_destroy_exec(cudaGraphExec_t exec) { (void)exec, fake.execs_alive--; }

static const struct cuda_graph_api FAKE_API = {fake_begin, fake_end, fake_instantiate, fake_launch,
                                               fake_take_error, fake_destroy_graph, fake_destroy_exec};

/* The recorded run: its first kernel launch returns the pending error,
 * as kcuda_* do (cudaGetLastError after the launch). */
static enum rt_status fake_enqueue(void *ctx, struct rt_error *err)
{
    (void)ctx;
    if (fake.pending != cudaSuccess)
        return rt_error_set(err, RT_ERR_DEVICE, "launch reported %s", cudaGetErrorName(fake_take_error()));
    if (fake.capturing && (fake.fail_in_capture || fake.sticky_in_capture)) {
        fake.invalidated = true;
        if (fake.sticky_in_capture)
            __atomic_store_n(&fake.cb->poisoned, 1, __ATOMIC_RELEASE);
        fake.pending = cudaErrorStreamCaptureUnsupported;
        return rt_error_set(err, RT_ERR_DEVICE, "operation not permitted when stream is capturing");
    }
    if (fake.capturing)
        fake.captured_runs++;
    else
        fake.eager_runs++;
    return RT_OK;
}

static void fake_reset(struct cuda_backend *cb, struct cuda_graph_cache *gc, bool enabled)
{
    memset(&fake, 0, sizeof(fake));
    memset(cb, 0, sizeof(*cb));
    fake.cb = cb;
    *gc = (struct cuda_graph_cache){.api = &FAKE_API, .enabled = enabled};
}

/* One run of batch `batch` with signature `sig`; the path it took, or -1 on error. */
static int run(struct cuda_graph_cache *gc, struct cuda_backend *cb, int batch, uint64_t sig)
{
    struct rt_error err = {0};
    enum cuda_graph_path path;
    enum rt_status s = cuda_graph_run(gc, cb, NULL, batch, sig, fake_enqueue, NULL, &path, &err);
    if (s != RT_OK) {
        printf("  batch %d: %s\n", batch, err.msg);
        return -1;
    }
    return (int)path;
}

TEST(cuda_graph_warm_capture_replay)
{
    struct cuda_backend cb;
    struct cuda_graph_cache gc;
    fake_reset(&cb, &gc, true);
    ASSERT_EQ_INT(run(&gc, &cb, 8, 1), CUDA_PATH_WARMUP);
    ASSERT_EQ_INT(fake.begins, 0);   /* nothing is captured on a batch size's first run */
    ASSERT_FALSE(cuda_graph_will_replay(&gc, 8, 1));
    ASSERT_EQ_INT(run(&gc, &cb, 8, 1), CUDA_PATH_CAPTURED);
    ASSERT_TRUE(cuda_graph_will_replay(&gc, 8, 1));
    ASSERT_FALSE(cuda_graph_will_replay(&gc, 8, 2));   /* a changed recording recaptures */
    ASSERT_FALSE(cuda_graph_will_replay(&gc, 3, 1));
    ASSERT_EQ_INT(run(&gc, &cb, 8, 1), CUDA_PATH_REPLAYED);
    ASSERT_EQ_INT(run(&gc, &cb, 8, 1), CUDA_PATH_REPLAYED);
    ASSERT_EQ_INT(fake.eager_runs, 1);
    ASSERT_EQ_INT(fake.captured_runs, 1);
    ASSERT_EQ_INT(fake.graph_launches, 3);
    /* a changed recording recaptures, replacing the old graph */
    ASSERT_EQ_INT(run(&gc, &cb, 8, 2), CUDA_PATH_CAPTURED);
    ASSERT_EQ_INT(fake.execs_alive, 1);
    ASSERT_EQ_INT(run(&gc, &cb, 3, 7), CUDA_PATH_WARMUP);
    ASSERT_EQ_INT(run(&gc, &cb, 3, 7), CUDA_PATH_CAPTURED);
    ASSERT_EQ_INT(fake.execs_alive, 2);
    cuda_graph_cache_release(&gc);
    ASSERT_EQ_INT(fake.execs_alive, 0);
    ASSERT_EQ_INT(gc.n, 0);
    return TEST_PASS;
}

TEST(cuda_graph_failed_capture_runs_eagerly)
{
    struct cuda_backend cb;
    struct cuda_graph_cache gc;
    fake_reset(&cb, &gc, true);
    fake.fail_in_capture = true;
    ASSERT_EQ_INT(run(&gc, &cb, 4, 1), CUDA_PATH_WARMUP);
    /* the capture fails; the same request still succeeds, eagerly */
    ASSERT_EQ_INT(run(&gc, &cb, 4, 1), CUDA_PATH_CAPTURE_FAILED);
    ASSERT_FALSE(fake.capturing);
    ASSERT_EQ_INT(fake.pending, cudaSuccess);
    ASSERT_EQ_INT(fake.eager_runs, 2);
    /* and that batch size is never captured again */
    ASSERT_EQ_INT(run(&gc, &cb, 4, 1), CUDA_PATH_EAGER);
    ASSERT_EQ_INT(run(&gc, &cb, 4, 2), CUDA_PATH_EAGER);
    ASSERT_FALSE(cuda_graph_will_replay(&gc, 4, 1));
    ASSERT_EQ_INT(fake.begins, 1);
    ASSERT_EQ_INT(fake.eager_runs, 4);
    ASSERT_EQ_INT(fake.execs_alive, 0);
    ASSERT_EQ_INT(cb.poisoned, 0);
    return TEST_PASS;
}

TEST(cuda_graph_sticky_error_in_capture_fails)
{
    struct cuda_backend cb;
    struct cuda_graph_cache gc;
    fake_reset(&cb, &gc, true);
    fake.sticky_in_capture = true;
    ASSERT_EQ_INT(run(&gc, &cb, 2, 1), CUDA_PATH_WARMUP);
    ASSERT_EQ_INT(run(&gc, &cb, 2, 1), -1);   /* no eager retry on a lost context */
    ASSERT_EQ_INT(fake.eager_runs, 1);
    ASSERT_FALSE(fake.capturing);
    return TEST_PASS;
}

TEST(cuda_graph_off_and_table_full)
{
    struct cuda_backend cb;
    struct cuda_graph_cache gc;
    fake_reset(&cb, &gc, false);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ_INT(run(&gc, &cb, 8, 1), CUDA_PATH_EAGER);
    ASSERT_EQ_INT(fake.begins, 0);
    fake_reset(&cb, &gc, true);
    for (int b = 1; b <= CUDA_MAX_GRAPHS; b++)
        ASSERT_EQ_INT(run(&gc, &cb, b, 1), CUDA_PATH_WARMUP);
    ASSERT_EQ_INT(run(&gc, &cb, CUDA_MAX_GRAPHS + 1, 1), CUDA_PATH_EAGER);
    ASSERT_EQ_INT(run(&gc, &cb, CUDA_MAX_GRAPHS + 1, 1), CUDA_PATH_EAGER);
    ASSERT_EQ_INT(run(&gc, &cb, 1, 1), CUDA_PATH_CAPTURED);
    cuda_graph_cache_release(&gc);
    return TEST_PASS;
}
