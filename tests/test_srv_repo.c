/* test_srv_repo.c - the model repository (server/srv_repo*.c): a
 * repository that yields no model is not ready and says why (an empty
 * folder, a folder with a name that is no model name, a Triton layout whose
 * model.onnx does not load); one valid model, loaded, is ready; a model that
 * fails to load is named with its reason. Triton's layout: each version
 * policy picks its versions; config.pbtxt's dims or data type against the
 * model's; the index read live. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/srv_buf.h"
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
    snprintf(sub, sizeof(sub), "%s/bad name", dir);    /* not a model name */
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    ASSERT_FALSE(repo_ready(dir, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "no model is loaded");
    snprintf(sub, sizeof(sub), "%s/m", dir);           /* Triton's layout: m/1/model.onnx, not ONNX */
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/m/1", dir);
    ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    ASSERT_TRUE(write_file(sub, "model.onnx", "x", 1));
    ASSERT_FALSE(repo_ready(dir, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "model 'm' is not ready: m/1/model.onnx: not a valid protobuf");
    ASSERT_EQ_INT(remove(sub), -1);   /* not empty */
    snprintf(sub, sizeof(sub), "%s/m/1/model.onnx", dir);
    ASSERT_EQ_INT(remove(sub), 0);
    snprintf(sub, sizeof(sub), "%s/m/1", dir);
    ASSERT_EQ_INT(remove(sub), 0);
    snprintf(sub, sizeof(sub), "%s/m", dir);
    ASSERT_EQ_INT(remove(sub), 0);
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

/* ------------------------------------------------------------ Triton's layout */

struct opened {
    struct rt_backend *b;
    struct srv_repo *r;
};

static bool open_repo(const char *dir, struct opened *o)
{
    struct rt_error err = {0};
    const struct srv_batcher_options opt = {.batching = true};
    RT_ASSERT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &o->b, &err) == RT_OK);
    if (srv_repo_open(dir, o->b, &opt, &o->r, &err) != RT_OK)
        return false;
    (void)srv_repo_load_all(o->r, &err);
    return true;
}

static void close_repo(struct opened *o)
{
    srv_repo_free(o->r);
    rt_backend_free(o->b);
}

/* The index as a string (caller frees). */
static char *index_text(struct srv_repo *r)
{
    struct srv_buf b = {0};
    srv_repo_write_index(r, false, &b);
    srv_buf_putc(&b, '\0');
    size_t len;
    char *text = srv_buf_take(&b, &len);
    RT_ASSERT(text);
    return text;
}

/* model `name` in repo with version folders 1..3 of the tiny model and config (NULL: none) */
static bool tiny_versions(const char *repo, const char *name, const char *config)
{
    char dir[256], v[300];
    snprintf(dir, sizeof(dir), "%s/%s", repo, name);
    if (mkdir(dir, 0755) != 0 || (config && !write_file(dir, "config.pbtxt", config, strlen(config))))
        return false;
    struct tiny_weights w;
    tiny_weights_init(&w);
    for (int i = 1; i <= 3; i++) {
        snprintf(v, sizeof(v), "%s/%d", dir, i);
        if (mkdir(v, 0755) != 0 || !tiny_model_write(v, TINY_MODEL_JSON, &w))
            return false;
    }
    return true;
}

/* "1,3": the versions of model name that acquire serves (highest last). */
static void served(struct srv_repo *r, const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    for (int v = 1; v <= 3; v++) {
        char ver[8];
        struct srv_model *m = NULL;
        struct rt_error err = {0};
        snprintf(ver, sizeof(ver), "%d", v);
        if (srv_repo_acquire(r, name, ver, &m, &err) == RT_OK) {
            size_t used = strlen(out);
            snprintf(out + used, cap - used, "%s%s", used ? "," : "", m->version);
            srv_model_unref(m);
        }
    }
}

TEST(srv_repo_version_policies)
{
    char dir[64], got[32], why[400];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_versions(dir, "dflt", NULL));
    ASSERT_TRUE(tiny_versions(dir, "all", "version_policy: { all: {} }"));
    ASSERT_TRUE(tiny_versions(dir, "two", "version_policy { latest { num_versions: 2 } }"));
    ASSERT_TRUE(tiny_versions(dir, "some", "version_policy { specific { versions: [1, 3] } }\nmax_batch_size: 4"));
    struct opened o;
    ASSERT_TRUE(open_repo(dir, &o));
    bool ready = srv_repo_all_ready(o.r, why, sizeof(why));
    TEST_FAIL_IF(!ready, "not ready: %s", why);
    served(o.r, "dflt", got, sizeof(got));
    ASSERT_STR_EQ(got, "3");
    served(o.r, "all", got, sizeof(got));
    ASSERT_STR_EQ(got, "1,2,3");
    served(o.r, "two", got, sizeof(got));
    ASSERT_STR_EQ(got, "2,3");
    served(o.r, "some", got, sizeof(got));
    ASSERT_STR_EQ(got, "1,3");
    /* no version: the latest ready; config.pbtxt's max_batch_size is the model's */
    struct srv_model *m = NULL;
    struct rt_error err = {0};
    ASSERT_EQ_INT(srv_repo_acquire(o.r, "some", NULL, &m, &err), RT_OK);
    ASSERT_STR_EQ(m->version, "3");
    ASSERT_EQ_INT(m->cfg->max_batch_size, 4);
    srv_model_unref(m);
    /* a missing model before a missing version */
    ASSERT_EQ_INT(srv_repo_acquire(o.r, "ghost", "2", &m, &err), RT_ERR_NOT_FOUND);
    ASSERT_STR_CONTAINS(err.msg, "unknown model 'ghost'");
    ASSERT_EQ_INT(srv_repo_acquire(o.r, "some", "2", &m, &err), RT_ERR_NOT_FOUND);
    ASSERT_STR_CONTAINS(err.msg, "model 'some' has no version '2'");
    char *idx = index_text(o.r);
    ASSERT_STR_CONTAINS(idx, "{\"name\":\"some\",\"version\":\"1\",\"state\":\"READY\"},"
                             "{\"name\":\"some\",\"version\":\"3\",\"state\":\"READY\"}");
    free(idx);
    /* unloaded: every version says so, and a load brings them back */
    ASSERT_EQ_INT(srv_repo_unload(o.r, "all", &err), RT_OK);
    idx = index_text(o.r);
    ASSERT_STR_CONTAINS(idx, "{\"name\":\"all\",\"version\":\"2\",\"state\":\"UNAVAILABLE\",\"reason\":\"unloaded\"}");
    free(idx);
    ASSERT_EQ_INT(srv_repo_load(o.r, "all", NULL, &err), RT_OK);
    served(o.r, "all", got, sizeof(got));
    ASSERT_STR_EQ(got, "1,2,3");
    close_repo(&o);
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return TEST_PASS;
}

TEST(srv_repo_config_checked_against_the_model)
{
    static const struct {
        const char *config, *want;
    } CASES[] = {
        {"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 1, 6, 7 ] } ]",
         "m/config.pbtxt:1:1: input 'x': dims differ from the model's [1, 6, 6]"},
        {"input [ { name: \"x\" data_type: TYPE_FP16 dims: [ 1, 6, 6 ] } ]",
         "input 'x': data_type TYPE_FP16, but the model's is TYPE_FP32"},
        {"output { name: \"z\" }", "output 'z' is not one of the model's ('y')"},
        {"dynamic_batching { preferred_batch_size: 16 }", "preferred batch size 16 is above max_batch_size 8"},
        {"platform: \"onnxruntime_onnx\"", "config.pbtxt names ONNX, but m/3 holds no model.onnx"},
        {"version_policy { specific { versions: [ 7 ] } }", "version_policy names version 7, but there is no folder m/7"},
        {"sequence_batching { }", "m/config.pbtxt:1:1: field 'sequence_batching' is not supported"},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        char dir[64];
        ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
        ASSERT_TRUE(tiny_versions(dir, "m", CASES[i].config));
        struct opened o;
        ASSERT_TRUE(open_repo(dir, &o));
        char why[400];
        ASSERT_FALSE(srv_repo_all_ready(o.r, why, sizeof(why)));
        ASSERT_STR_CONTAINS(why, CASES[i].want);
        char *idx = index_text(o.r);
        ASSERT_STR_CONTAINS(idx, CASES[i].want);
        free(idx);
        close_repo(&o);
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    }
    return TEST_PASS;
}

TEST(srv_repo_index_read_live)
{
    char dir[64], sub[128];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_versions(dir, "m", NULL));
    struct opened o;
    ASSERT_TRUE(open_repo(dir, &o));
    char *idx = index_text(o.r);
    ASSERT_TRUE(strstr(idx, "late") == NULL);
    free(idx);
    /* a folder added after start appears, not loaded; loading it works */
    ASSERT_TRUE(tiny_versions(dir, "late", NULL));
    idx = index_text(o.r);
    ASSERT_STR_CONTAINS(idx, "{\"name\":\"late\",\"state\":\"UNAVAILABLE\",\"reason\":\"not loaded\"}");
    free(idx);
    /* removed again before a load: it disappears */
    snprintf(sub, sizeof(sub), "%s/late", dir);
    nftw(sub, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    idx = index_text(o.r);
    ASSERT_TRUE(strstr(idx, "late") == NULL);
    free(idx);
    /* a loaded model whose folder goes stays, said so, until unloaded */
    snprintf(sub, sizeof(sub), "%s/m", dir);
    nftw(sub, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    idx = index_text(o.r);
    ASSERT_STR_CONTAINS(idx, "{\"name\":\"m\",\"version\":\"3\",\"state\":\"READY\",\"reason\":\"its folder was "
                             "removed from the repository; still loaded\"}");
    free(idx);
    struct rt_error err = {0};
    ASSERT_EQ_INT(srv_repo_unload(o.r, "m", &err), RT_OK);
    idx = index_text(o.r);
    ASSERT_STR_EQ(idx, "[]");
    free(idx);
    close_repo(&o);
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return TEST_PASS;
}
