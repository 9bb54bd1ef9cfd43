/* test_srv_repo.c - the model repository's readiness (server/srv_repo.c):
 * a repository that yields no model is not ready and says why (an empty
 * folder, a Triton layout m/1/model.onnx, a folder with a name that is no
 * model name); one valid model, loaded, is ready; a model that fails to
 * load is named with its reason. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "server/srv_repo.h"
#include "test.h"
#include "test_model_util.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

/* Opens dir, loads everything, and returns whether it is ready (why: the reason). */
static bool repo_ready(const char *dir, char *why, size_t cap)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct srv_repo *r = NULL;
    const struct srv_batcher_options opt = {.batching = true};
    RT_ASSERT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err) == RT_OK);
    bool ready = false;
    if (srv_repo_open(dir, b, &opt, &r, &err) == RT_OK) {
        (void)srv_repo_load_all(r, &err);   /* a failure shows in the readiness */
        ready = srv_repo_all_ready(r, why, cap);
        srv_repo_free(r);
    } else {
        snprintf(why, cap, "open: %s", err.msg);
    }
    rt_backend_free(b);
    return ready;
}

TEST(srv_repo_without_models_not_ready)
{
    char dir[64], sub[128], why[400] = "";
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_FALSE(repo_ready(dir, why, sizeof(why)));   /* empty */
    ASSERT_STR_CONTAINS(why, "no model is loaded");
    snprintf(sub, sizeof(sub), "%s/m", dir);           /* Triton's layout: m/1/model.onnx */
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/m/1", dir);
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    ASSERT_TRUE(write_file(sub, "model.onnx", "x", 1));
    snprintf(sub, sizeof(sub), "%s/bad name", dir);    /* not a model name */
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    ASSERT_FALSE(repo_ready(dir, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "no model is loaded");
    /* a valid model makes it ready */
    snprintf(sub, sizeof(sub), "%s/tiny", dir);
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    struct tiny_weights w;
    tiny_weights_init(&w);
    ASSERT_TRUE(tiny_model_write(sub, TINY_MODEL_JSON, &w));
    bool ready = repo_ready(dir, why, sizeof(why));
    TEST_FAIL_IF(!ready, "one valid model: not ready: %s", why);
    /* one that fails to load is named, with its reason */
    snprintf(sub, sizeof(sub), "%s/broken", dir);
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    ASSERT_TRUE(write_file(sub, "model.json", "{", 1));
    ASSERT_FALSE(repo_ready(dir, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "model 'broken' is not ready");
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return TEST_PASS;
}
