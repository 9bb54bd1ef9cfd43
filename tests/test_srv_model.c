/*
 * test_srv_model.c - the server's reference-counted model (server/srv_model.c):
 * the last reference may drop inside a job's done(), on the model's own
 * batcher thread, as when a request whose client vanished finishes after its
 * model was unloaded. The model must still be freed, without the worker
 * joining itself (before the fix: EDEADLK, then the batcher was freed under
 * the running worker; the join is now asserted, and ASan sees any
 * use-after-free).
 */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"
#include "server/srv_model.h"
#include "test.h"

struct last_ref {
    struct srv_model *m;
    atomic_bool done;
};

static void drop_last_ref(struct srv_job *job)
{
    struct last_ref *l = job->user;
    srv_model_unref(l->m);
    atomic_store(&l->done, true);
}

TEST(srv_model_last_ref_on_batcher_thread)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct rt_error err = {RT_OK, ""};
    struct rt_backend *be = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1},
                                    &be, &err),
                  RT_OK);
    struct srv_model *m = NULL;
    ASSERT_EQ_INT(srv_model_load(HTTP_SOURCE_MODEL, "lenet5", "lenet5", "1", NULL, be,
                                 &(struct srv_batcher_options){.batching = true}, &m, &err),
                  RT_OK);
    float in[784] = {0}, out[10];
    struct last_ref l = {m, false};
    struct srv_job job = {.rows = 1, .inputs = {in}, .outputs = {out}, .done = drop_last_ref,
                          .user = &l};
    /* The job holds the only reference from here on, as an orphaned
     * request does once the repository has let go. */
    ASSERT_EQ_INT(srv_batcher_submit(m->batcher, &job, 0, &err), RT_OK);
    for (int i = 0; i < 1000 && !atomic_load(&l.done); i++)
        usleep(10 * 1000);
    ASSERT_TRUE(atomic_load(&l.done));
    ASSERT_EQ_INT(job.err.status, RT_OK);
    /* The model is freed on a thread of its own: wait for it, as the
     * repository does before the backend goes. */
    srv_model_wait_frees();
    rt_backend_free(be);
    return TEST_PASS;
}
