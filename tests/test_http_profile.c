/*
 * test_http_profile.c - GET /v2/models/{m}/profile: with --profile-steps,
 * one pass per request run alone, a median for every step of the plan
 * (names as the offline plan has them) summing to total_us; the versioned
 * path answers the same; 403 without the flag, 404 for an unknown model
 * or version; Triton's /stats keeps its shape either way.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "http_harness.h"
#include "test.h"

#define REQUESTS 12

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

static int plan_steps(void)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    int n = -1;
    if (rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) == RT_OK &&
        rt_model_load(HTTP_SOURCE_MODEL, b, &m, &err) == RT_OK)
        n = rt_model_plan_steps(m);
    rt_model_free(m);
    rt_backend_free(b);
    return n;
}

static enum test_result check_profile(const char *body, int n_steps)
{
    cJSON *root = cJSON_Parse(body);
    ASSERT_TRUE(root);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(root, "steps");
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(root, "batch_sizes");
    ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "name")), "lenet5");
    ASSERT_EQ_INT(cJSON_GetArraySize(steps), n_steps);
    ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(steps, 0), "op")),
                  "conv2d");
    /* every request ran alone: one pass of batch 1 each */
    ASSERT_EQ_INT(cJSON_GetArraySize(sizes), 1);
    const cJSON *one = cJSON_GetArrayItem(sizes, 0), *med = cJSON_GetObjectItemCaseSensitive(one, "median_us"), *v;
    ASSERT_EQ_INT(cJSON_GetObjectItemCaseSensitive(one, "batch_size")->valuedouble, 1);
    ASSERT_EQ_INT(cJSON_GetObjectItemCaseSensitive(one, "passes")->valuedouble, REQUESTS);
    ASSERT_EQ_INT(cJSON_GetArraySize(med), n_steps);
    double sum = 0;
    cJSON_ArrayForEach(v, med) {
        ASSERT_TRUE(cJSON_IsNumber(v) && v->valuedouble > 0);
        sum += v->valuedouble;
    }
    ASSERT_NEAR(sum, cJSON_GetObjectItemCaseSensitive(one, "total_us")->valuedouble, 0.01);
    cJSON_Delete(root);
    return TEST_PASS;
}

static enum test_result profile_on(struct http_daemon *d)
{
    int n_steps = plan_steps();
    ASSERT_TRUE(n_steps > 0);
    float x[784];
    test_rand_fill(x, 784, 0, 1);
    char *req = http_infer_json(x, 1, NULL);
    ASSERT_TRUE(req);
    for (int i = 0; i < REQUESTS; i++)   /* one at a time: each is its own batch */
        ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", req, strlen(req)), 200);
    free(req);
    struct http_resp r;
    ASSERT_TRUE(http_get(d, "/v2/models/lenet5/profile", &r));
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.content_type, "application/json");
    enum test_result t = check_profile(r.body, n_steps);
    http_resp_free(&r);
    if (t != TEST_PASS)
        return t;
    ASSERT_TRUE(http_get(d, "/v2/models/lenet5/versions/1/profile", &r));
    ASSERT_EQ_INT(r.status, 200);
    t = check_profile(r.body, n_steps);
    http_resp_free(&r);
    if (t != TEST_PASS)
        return t;
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/versions/2/profile", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/ghost/profile", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/profile", "application/json", "{}", 2), 405);
    /* Triton's statistics are untouched */
    ASSERT_TRUE(http_get(d, "/v2/models/lenet5/stats", &r));
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_TRUE(strstr(r.body, "\"model_stats\"") && !strstr(r.body, "median_us"));
    http_resp_free(&r);
    return TEST_PASS;
}

TEST(http_profile_steps_endpoint)
{
    const char *const args[] = {"--profile-steps", NULL};
    return http_run(&LENET, 1, args, profile_on);
}

static enum test_result profile_off(struct http_daemon *d)
{
    struct http_resp r;
    ASSERT_TRUE(http_get(d, "/v2/models/lenet5/profile", &r));
    ASSERT_EQ_INT(r.status, 403);
    ASSERT_STR_CONTAINS(r.body, "--profile-steps");
    http_resp_free(&r);
    return TEST_PASS;
}

TEST(http_profile_off_by_default) { return http_run(&LENET, 1, NULL, profile_off); }
