/*
 * test_http_versions.c - Triton's repository layout through a real inferd:
 * numeric version folders with a config.pbtxt, each version policy (all,
 * the default latest, specific), /v2/models/M/versions/N/{ready,infer} per
 * version and the unversioned routes on the latest; the repository index
 * answered with model control off, holding failed models with their reason
 * (an unsupported config.pbtxt field named) and folders added after start.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "http_harness.h"
#include "test.h"

/* lenet5's input without its batch dimension, as Triton writes it. */
#define LENET_IO                                                                            \
    "input [\n  {\n    name: \"input\"\n    data_type: TYPE_FP32\n    dims: [ 1, 28, 28 ]\n  }\n]\n" \
    "output [ { name: \"logits\", data_type: TYPE_FP32, dims: [ 10 ] } ]\n"

static bool write_text(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    return f ? fclose(f) == 0 && ok : false;
}

/* model `name` with version folders 1 and 2 and the given config.pbtxt */
static bool versioned(const char *repo, const char *name, const char *config)
{
    char dir[PATH_MAX], v[PATH_MAX + 8];
    snprintf(dir, sizeof(dir), "%s/%s", repo, name);
    if (mkdir(dir, 0755) != 0 || !write_text(dir, "config.pbtxt", config))
        return false;
    for (int i = 1; i <= 2; i++) {
        snprintf(v, sizeof(v), "%s/%d", dir, i);
        if (!http_copy_source_model(v, name))
            return false;
    }
    return true;
}

static bool fill(const char *repo)
{
    return versioned(repo, "all", "# every version\nname: \"all\"\nplatform: \"inferd\"\nmax_batch_size: 8\n" LENET_IO
                                  "version_policy: { all { } }\n"
                                  "dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 100 }\n"
                                  "instance_group [ { count: 2, kind: KIND_CPU } ]\n") &&
           versioned(repo, "latest", "name: \"latest\"\n") &&
           versioned(repo, "specific", "version_policy: { specific: { versions: [1] } }\n") &&
           versioned(repo, "bad", "name: \"bad\"\nensemble_scheduling { step [ ] }\n");
}

static long infer(const struct http_daemon *d, const char *path, char *version, size_t cap)
{
    static float x[784];
    for (int i = 0; i < 784; i++)
        x[i] = (float)(i % 17) / 17.0f;
    char *req = http_infer_json(x, 1, NULL);
    struct http_resp r;
    long st = http_post(d, path, "application/json", req, strlen(req), &r) ? r.status : 0;
    free(req);
    version[0] = '\0';
    const char *at = st == 200 ? strstr(r.body, "\"model_version\":\"") : NULL;
    if (at)
        snprintf(version, cap, "%.*s", (int)strcspn(at + 17, "\""), at + 17);
    http_resp_free(&r);
    return st;
}

static enum test_result versions(struct http_daemon *d)
{
    char v[32];
    /* policy all: both versions, by path; the latest without one */
    ASSERT_EQ_INT(infer(d, "/v2/models/all/versions/1/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "1");
    ASSERT_EQ_INT(infer(d, "/v2/models/all/versions/2/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "2");
    ASSERT_EQ_INT(infer(d, "/v2/models/all/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "2");
    ASSERT_EQ_INT(infer(d, "/v2/models/all/versions/3/infer", v, sizeof(v)), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/all/versions/1/ready", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/all/versions/2/ready", NULL, NULL, 0), 200);
    /* a missing model is reported before a missing version */
    struct http_resp r;
    ASSERT_TRUE(http_get(d, "/v2/models/ghost/versions/9/ready", &r));
    ASSERT_EQ_INT(r.status, 404);
    ASSERT_STR_CONTAINS(r.body, "unknown model 'ghost'");
    http_resp_free(&r);
    ASSERT_TRUE(http_get(d, "/v2/models/all", &r));
    ASSERT_STR_CONTAINS(r.body, "\"versions\":[\"1\",\"2\"]");
    http_resp_free(&r);
    /* config.pbtxt's settings are the model's */
    ASSERT_TRUE(http_get(d, "/v2/models/all/versions/1/config", &r));
    ASSERT_STR_CONTAINS(r.body, "\"max_batch_size\":8");
    ASSERT_STR_CONTAINS(r.body, "\"preferred_batch_size\":[4,8],\"max_queue_delay_microseconds\":100");
    ASSERT_STR_CONTAINS(r.body, "\"instance_group\":[{\"count\":2");
    http_resp_free(&r);

    /* default policy (latest 1): only version 2 */
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "2");
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/versions/1/infer", v, sizeof(v)), 404);
    /* specific [1]: only version 1 */
    ASSERT_EQ_INT(infer(d, "/v2/models/specific/versions/1/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "1");
    ASSERT_EQ_INT(infer(d, "/v2/models/specific/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "1");
    ASSERT_EQ_INT(infer(d, "/v2/models/specific/versions/2/infer", v, sizeof(v)), 404);

    /* the refused model: its reason on ready, the health and the index */
    ASSERT_TRUE(http_get(d, "/v2/models/bad/ready", &r));
    ASSERT_EQ_INT(r.status, 503);
    ASSERT_STR_CONTAINS(r.body, "bad/config.pbtxt:2:1: field 'ensemble_scheduling' is not supported");
    http_resp_free(&r);
    ASSERT_TRUE(http_get(d, "/v2/health/ready", &r));
    ASSERT_EQ_INT(r.status, 503);
    ASSERT_STR_CONTAINS(r.body, "model 'bad' is not ready");
    http_resp_free(&r);

    /* the index with model control off, read live */
    char late[PATH_MAX];
    snprintf(late, sizeof(late), "%s/repo/late", d->dir);
    ASSERT_TRUE(http_copy_source_model(late, "late"));
    ASSERT_TRUE(http_post(d, "/v2/repository/index", "application/json", "", 0, &r));
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"all\",\"version\":\"1\",\"state\":\"READY\"}");
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"all\",\"version\":\"2\",\"state\":\"READY\"}");
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"latest\",\"version\":\"2\",\"state\":\"READY\"}");
    ASSERT_TRUE(strstr(r.body, "{\"name\":\"latest\",\"version\":\"1\"") == NULL);
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"bad\",\"state\":\"UNAVAILABLE\",\"reason\":\"bad/config.pbtxt:2:1: "
                                "field 'ensemble_scheduling' is not supported\"}");
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"late\",\"state\":\"UNAVAILABLE\",\"reason\":\"not loaded\"}");
    http_resp_free(&r);
    /* load and unload stay off */
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/late/load", NULL, "", 0), 403);
    ASSERT_EQ_INT(infer(d, "/v2/models/all/versions/1/infer", v, sizeof(v)), 200);
    return TEST_PASS;
}

TEST(http_triton_layout_versions)
{
    if (!http_source_model_present())
        SKIP("%s is missing (make models)", HTTP_SOURCE_MODEL);
    struct http_daemon d;
    /* the refused model must not end the daemon */
    static const char *const ARGS[] = {"--exit-on-error", "false", NULL};
    TEST_FAIL_IF(!http_daemon_start_custom(&d, fill, ARGS, "/v2/health/live"), "inferd did not start");
    /* start-up loads in the background: wait until the last model is settled */
    for (int i = 0; i < 3000; i++) {
        struct http_resp r;
        bool up = http_get(&d, "/v2/models/specific/ready", &r) && r.status == 200 &&
                  http_status(&d, "GET", "/v2/models/all/ready", NULL, NULL, 0) == 200;
        http_resp_free(&r);
        if (up)
            break;
        struct timespec ts = {0, 10L * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    enum test_result res = versions(&d);
    int status = http_daemon_stop(&d);
    TEST_FAIL_IF(status != 0, "inferd exited with status %d after the test", status);
    return res;
}

/* The load API's parameters.config (protobuf's JSON mapping, as
 * tritonclient's load_model(config=...) sends it) stands in for the
 * folder's config.pbtxt for that load; what it cannot honour is a 400
 * naming it, and the model keeps serving. */
static long load_with(const struct http_daemon *d, const char *body, char *msg, size_t cap)
{
    struct http_resp r;
    long st = http_post(d, "/v2/repository/models/latest/load", "application/json", body, strlen(body), &r)
                  ? r.status
                  : 0;
    snprintf(msg, cap, "%s", st ? r.body : "");
    if (st)
        http_resp_free(&r);
    return st;
}

static enum test_result load_config_override(struct http_daemon *d)
{
    char v[32], msg[1024];
    struct http_resp r;
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "2");
    /* camelCase names, an enum and an int64 as strings: both versions, batch 4 */
    ASSERT_EQ_INT(load_with(d, "{\"parameters\":{\"config\":\"{\\\"maxBatchSize\\\":4,"
                               "\\\"version_policy\\\":{\\\"specific\\\":{\\\"versions\\\":[\\\"1\\\",2]}},"
                               "\\\"input\\\":[{\\\"name\\\":\\\"input\\\",\\\"data_type\\\":\\\"TYPE_FP32\\\","
                               "\\\"dims\\\":[1,28,28]}]}\"}}",
                            msg, sizeof(msg)),
                  200);
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/versions/1/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "1");
    ASSERT_TRUE(http_get(d, "/v2/models/latest/versions/2/config", &r));
    ASSERT_STR_CONTAINS(r.body, "\"max_batch_size\":4");
    http_resp_free(&r);
    /* a plain load reads config.pbtxt again: the latest version only */
    ASSERT_EQ_INT(load_with(d, "", msg, sizeof(msg)), 200);
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/versions/1/infer", v, sizeof(v)), 404);
    /* refused, each by name (the first five before loading, the dims when
     * the model is checked); the model serves on */
    static const struct { const char *body, *says; } BAD[] = {
        {"{\"parameters\":{\"config\":\"{\\\"ensemble_scheduling\\\":{}}\"}}",
         "latest: parameters.config: field 'ensemble_scheduling' is not supported"},
        {"{\"parameters\":{\"config\":\"{\\\"name\\\":\\\"other\\\"}\"}}", "differs from the model's folder name"},
        {"{\"parameters\":{\"config\":\"{\\\"input\\\":[{\\\"name\\\":\\\"input\\\",\\\"dims\\\":[3,28,28]}]}\"}}",
         "dims"},
        {"{\"parameters\":{\"config\":\"{not json\"}}", "parameters.config: malformed JSON"},
        {"{\"parameters\":{\"config\":7}}", "must be a string"},
        {"{\"parameters\":{\"file:1/model.onnx\":\"AAAA\"}}", "file overrides are not supported"},
        {"{\"parameters\":{\"colour\":\"red\"}}", "parameter 'colour' is not supported"},
        {"{\"params\":{}}", "unknown key 'params'"},
    };
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
        long st = load_with(d, BAD[i].body, msg, sizeof(msg));
        TEST_FAIL_IF(st != 400 || !strstr(msg, BAD[i].says), "case %zu: %ld %s (want 400 with '%s')", i, st, msg,
                     BAD[i].says);
    }
    ASSERT_EQ_INT(infer(d, "/v2/models/latest/infer", v, sizeof(v)), 200);
    ASSERT_STR_EQ(v, "2");
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/latest/unload", "application/json",
                              "{\"parameters\":{\"unload_dependents\":true}}", 41),
                  200);
    return TEST_PASS;
}

static bool fill_latest(const char *repo) { return versioned(repo, "latest", "name: \"latest\"\n"); }

TEST(http_triton_load_config_override)
{
    if (!http_source_model_present())
        SKIP("%s is missing (make models)", HTTP_SOURCE_MODEL);
    struct http_daemon d;
    static const char *const ARGS[] = {"--enable-model-control", NULL};
    TEST_FAIL_IF(!http_daemon_start_custom(&d, fill_latest, ARGS, "/v2/health/ready"), "inferd did not start");
    enum test_result res = load_config_override(&d);
    int status = http_daemon_stop(&d);
    TEST_FAIL_IF(status != 0, "inferd exited with status %d after the test", status);
    return res;
}
