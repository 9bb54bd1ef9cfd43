/*
 * test_srv_batcher.c - who runs a batch (server/srv_batcher.h): a cheap one
 * runs inside srv_batcher_submit on the submitting thread when an instance
 * is idle, with the same answer as on the instance's worker; with no budget,
 * or before the model's cost per row is known, the worker runs it. The
 * model's last reference may drop inside a batch run by a submitter: it is
 * freed by another thread once the run ends (a wait on itself would hang).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "http_harness.h"
#include "server/srv_model.h"
#include "test.h"

struct probe {
    struct srv_model *drop;     /* non-NULL: done() drops this reference */
    pthread_t thread;           /* where done() ran */
    atomic_bool done;
};

static void probe_done(struct srv_job *job)
{
    struct probe *p = job->user;
    p->thread = pthread_self();
    if (p->drop)
        srv_model_unref(p->drop);
    atomic_store(&p->done, true);
}

/* Submits one row of x and waits for its answer in y; false on failure.
 * *here: whether done() ran on this thread before submit returned. */
static bool run_one(struct srv_model *m, const float *x, float *y, struct srv_model *drop, bool *here)
{
    struct rt_error err = {RT_OK, ""};
    struct probe p = {.drop = drop};
    struct srv_job job = {.rows = 1, .inputs = {x}, .outputs = {y}, .done = probe_done, .user = &p};
    if (srv_batcher_submit(m->batcher, &job, 0, &err) != RT_OK)
        return false;
    *here = atomic_load(&p.done) && pthread_equal(p.thread, pthread_self());
    for (int i = 0; i < 1000 && !atomic_load(&p.done); i++)
        usleep(1000);
    return atomic_load(&p.done) && job.err.status == RT_OK;
}

static struct srv_model *load(struct rt_backend *be, int64_t budget_ns)
{
    struct rt_error err = {RT_OK, ""};
    struct srv_model *m = NULL;
    const struct srv_batcher_options opt = {.batching = true, .inline_budget_ns = budget_ns};
    if (srv_model_load(HTTP_SOURCE_MODEL, "lenet5", "lenet5", "1", NULL, be, &opt, &m, &err) != RT_OK)
        return NULL;
    return m;
}

TEST(srv_batcher_cheap_batch_runs_on_submitting_thread)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct rt_error err = {RT_OK, ""};
    struct rt_backend *be = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &be, &err),
                  RT_OK);
    float x[784], first[10], again[10], worker[10];
    test_rand_fill(x, 784, -0.8f, 2.8f);
    bool here;
    struct srv_model *m = load(be, 1000000000);   /* every lenet5 batch fits */
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(run_one(m, x, first, NULL, &here));
    ASSERT_FALSE(here);                           /* the cost per row is not known yet: the worker */
    ASSERT_TRUE(run_one(m, x, again, NULL, &here));
    ASSERT_TRUE(here);                            /* known now, the instance idle: this thread */
    ASSERT_TRUE(test_same_bits(first, again, sizeof(first)));
    /* The last reference drops inside the run on this thread: the model
     * is freed on another, after the run ends. */
    ASSERT_TRUE(run_one(m, x, again, m, &here));
    ASSERT_TRUE(here);
    srv_model_wait_frees();

    m = load(be, 0);                              /* no budget: always the worker */
    ASSERT_TRUE(m != NULL);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(run_one(m, x, worker, NULL, &here));
        ASSERT_FALSE(here);
    }
    ASSERT_TRUE(test_same_bits(first, worker, sizeof(first)));
    srv_model_unref(m);
    srv_model_wait_frees();
    rt_backend_free(be);
    return TEST_PASS;
}
