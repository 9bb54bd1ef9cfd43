/*
 * test_http.c - inferd's endpoints over real HTTP: health, metadata, infer
 * (JSON flat and nested, the binary tensor extension both ways, datatype
 * conversion, the classification extension), statistics, metrics, model
 * control, flags and the config file. Bad inputs: test_http_bad.c; images:
 * test_http_images.c; batching and shutdown: test_http_batching.c.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_harness.h"
#include "test.h"
#include "test_model_util.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

static cJSON *get_json(const struct http_daemon *d, const char *path, long want_status)
{
    struct http_resp r;
    http_get(d, path, &r);
    cJSON *root = r.status == want_status ? cJSON_ParseWithLength(r.body, r.len) : NULL;
    if (!root)
        printf("  GET %s: status %ld, body %s\n", path, r.status, r.body ? r.body : "");
    http_resp_free(&r);
    return root;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void random_images(float *x, int n)
{
    test_rand_fill(x, (int64_t)n * 784, -0.8f, 2.8f);
}

/* ------------------------------------------------------------ health and metadata */

static enum test_result health_metadata(struct http_daemon *d)
{
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/live", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 200);
    cJSON *meta = get_json(d, "/v2", 200);
    ASSERT_TRUE(meta);
    ASSERT_STR_EQ(json_str(meta, "name"), "inferd");
    char *ext = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(meta, "extensions"));
    cJSON_Delete(meta);
    ASSERT_STR_CONTAINS(ext, "\"classification\"");
    ASSERT_STR_CONTAINS(ext, "\"binary_tensor_data\"");
    free(ext);

    static const char *const MODEL_PATHS[] = {"/v2/models/lenet5", "/v2/models/lenet5/versions/1"};
    for (int i = 0; i < 2; i++) {
        cJSON *m = get_json(d, MODEL_PATHS[i], 200);
        ASSERT_TRUE(m);
        const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "inputs"), 0);
        char *shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, "shape"));
        ASSERT_STR_EQ(json_str(m, "name"), "lenet5");
        ASSERT_STR_EQ(json_str(in, "name"), "input");
        ASSERT_STR_EQ(json_str(in, "datatype"), "FP32");
        ASSERT_STR_EQ(shape, "[-1,1,28,28]");
        free(shape);
        cJSON_Delete(m);
    }
    cJSON *cfg = get_json(d, "/v2/models/lenet5/config", 200);
    ASSERT_TRUE(cfg);
    ASSERT_EQ_INT(cJSON_GetObjectItemCaseSensitive(cfg, "max_batch_size")->valueint, 64);
    cJSON_Delete(cfg);

    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/versions/2", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/ready", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/versions/1/ready", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/versions/7/ready", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/nope", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/nope/ready", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/nothing/here", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/health/live", "application/json", "{}", 2), 405);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/infer", NULL, NULL, 0), 405);
    ASSERT_EQ_INT(http_status(d, "DELETE", "/v2/models/lenet5", NULL, NULL, 0), 405);
    return TEST_PASS;
}

TEST(http_health_and_metadata) { return http_run(&LENET, 1, NULL, health_metadata); }

/* ------------------------------------------------------------ infer */

static enum test_result infer_json(struct http_daemon *d)
{
    enum { ROWS = 3 };
    static float x[ROWS * 784], want[ROWS * 10], got[ROWS * 10];
    random_images(x, ROWS);
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    bool ran = http_offline_run(&off, ROWS, x, want);
    http_offline_close(&off);
    ASSERT_TRUE(ran);

    char *req = http_infer_json(x, ROWS, ",\"id\":\"req-42\"");
    struct http_resp r;
    http_post(d, "/v2/models/lenet5/infer", "application/json", req, strlen(req), &r);
    free(req);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.body, "\"id\":\"req-42\"");
    ASSERT_STR_CONTAINS(r.body, "\"shape\":[3,10]");
    bool parsed = http_parse_logits(r.body, got, ROWS * 10);
    http_resp_free(&r);
    ASSERT_TRUE(parsed);
    ASSERT_LE(test_rel_error(got, want, (int64_t)ROWS * 10), 1e-5);

    /* Nested data, row-major, gives the same numbers as flat data. */
    struct { char *p; size_t len, cap; } nested = {0};
    FILE *f = open_memstream(&nested.p, &nested.len);
    fprintf(f, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[%d,1,28,28],\"data\":[", ROWS);
    for (int n = 0; n < ROWS; n++) {
        fprintf(f, "%s[[", n ? "," : "");
        for (int y = 0; y < 28; y++) {
            fprintf(f, "%s[", y ? "," : "");
            for (int xx = 0; xx < 28; xx++)
                fprintf(f, "%s%.9g", xx ? "," : "", (double)x[n * 784 + y * 28 + xx]);
            fprintf(f, "]");
        }
        fprintf(f, "]]");
    }
    fprintf(f, "]}]}");
    fclose(f);
    float nested_out[ROWS * 10];
    http_post(d, "/v2/models/lenet5/versions/1/infer", "application/json", nested.p, nested.len, &r);
    free(nested.p);
    ASSERT_EQ_INT(r.status, 200);
    parsed = http_parse_logits(r.body, nested_out, ROWS * 10);
    http_resp_free(&r);
    ASSERT_TRUE(parsed);
    ASSERT_TRUE(test_same_bits(nested_out, got, sizeof(got)));

    /* UINT8 data converts losslessly: the same answer as the same values in FP32. */
    static float ints[784];
    for (int i = 0; i < 784; i++)
        ints[i] = (float)test_rand_int(0, 255);
    char *fp = http_infer_json(ints, 1, NULL);
    char *u8 = str_replace_once(fp, "\"FP32\"", "\"UINT8\"");
    float a[10], b[10];
    http_post(d, "/v2/models/lenet5/infer", "application/json", fp, strlen(fp), &r);
    bool ok_a = r.status == 200 && http_parse_logits(r.body, a, 10);
    http_resp_free(&r);
    http_post(d, "/v2/models/lenet5/infer", "application/json", u8, strlen(u8), &r);
    bool ok_b = r.status == 200 && http_parse_logits(r.body, b, 10);
    http_resp_free(&r);
    free(fp);
    free(u8);
    ASSERT_TRUE(ok_a && ok_b);
    ASSERT_TRUE(test_same_bits(a, b, sizeof(a)));
    return TEST_PASS;
}

TEST(http_infer_json_matches_offline) { return http_run(&LENET, 1, NULL, infer_json); }

/* ------------------------------------------------------------ binary tensors */

struct bin_req {
    char *data;
    size_t len, header_len;
};

/* A binary-extension request: JSON header then the raw tensor. */
static struct bin_req binary_request(const char *datatype, int rows, const void *raw,
                                     size_t raw_len, const char *outputs)
{
    char header[512];
    int n = snprintf(header, sizeof(header),
                     "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"%s\",\"shape\":[%d,1,28,28],"
                     "\"parameters\":{\"binary_data_size\":%zu}}],\"outputs\":[%s]}",
                     datatype, rows, raw_len, outputs);
    struct bin_req b = {malloc((size_t)n + raw_len), (size_t)n + raw_len, (size_t)n};
    RT_ASSERT(b.data);
    memcpy(b.data, header, (size_t)n);
    memcpy(b.data + n, raw, raw_len);
    return b;
}

static void post_binary(const struct http_daemon *d, struct bin_req *b, struct http_resp *r)
{
    char hl[64];
    snprintf(hl, sizeof(hl), "Inference-Header-Content-Length: %zu", b->header_len);
    const char *headers[] = {"Content-Type: application/octet-stream", hl, NULL};
    http_request(d, "POST", "/v2/models/lenet5/infer", headers, b->data, b->len, r);
    free(b->data);
    b->data = NULL;
}

static uint16_t exact_half(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if (v == 0)
        return 0;
    uint32_t exp = ((bits >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(((bits >> 16) & 0x8000) | (exp << 10) | ((bits >> 13) & 0x3ff));
}

static enum test_result infer_binary(struct http_daemon *d)
{
    enum { ROWS = 4 };
    static float x[ROWS * 784], json_out[ROWS * 10];
    random_images(x, ROWS);
    char *req = http_infer_json(x, ROWS, NULL);
    struct http_resp r;
    http_post(d, "/v2/models/lenet5/infer", "application/json", req, strlen(req), &r);
    free(req);
    ASSERT_EQ_INT(r.status, 200);
    bool parsed = http_parse_logits(r.body, json_out, ROWS * 10);
    http_resp_free(&r);
    ASSERT_TRUE(parsed);

    /* Binary in, binary out: the very same bits. */
    struct bin_req b = binary_request("FP32", ROWS, x, sizeof(x),
                                      "{\"name\":\"logits\",\"parameters\":{\"binary_data\":true}}");
    post_binary(d, &b, &r);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_EQ(r.content_type, "application/octet-stream");
    ASSERT_TRUE(r.header_len > 0 && (size_t)r.header_len + sizeof(json_out) == r.len);
    ASSERT_STR_CONTAINS(r.body, "\"binary_data_size\":160");
    ASSERT_TRUE(test_same_bits(r.body + r.header_len, json_out, sizeof(json_out)));
    http_resp_free(&r);

    /* Binary in, JSON out, still identical. */
    float out2[ROWS * 10];
    b = binary_request("FP32", ROWS, x, sizeof(x), "");
    post_binary(d, &b, &r);
    ASSERT_EQ_INT(r.status, 200);
    parsed = http_parse_logits(r.body, out2, ROWS * 10);
    http_resp_free(&r);
    ASSERT_TRUE(parsed);
    ASSERT_TRUE(test_same_bits(out2, json_out, sizeof(out2)));

    /* FP16 binary input of FP16-exact values equals the FP32 request. */
    static float xs[784];
    static uint16_t half[784];
    for (int i = 0; i < 784; i++) {
        xs[i] = (float)test_rand_int(0, 255) / 256.0f;
        half[i] = exact_half(xs[i]);
    }
    float f32_out[10], f16_out[10];
    b = binary_request("FP32", 1, xs, sizeof(xs), "");
    post_binary(d, &b, &r);
    bool ok32 = r.status == 200 && http_parse_logits(r.body, f32_out, 10);
    http_resp_free(&r);
    b = binary_request("FP16", 1, half, sizeof(half), "");
    post_binary(d, &b, &r);
    bool ok16 = r.status == 200 && http_parse_logits(r.body, f16_out, 10);
    http_resp_free(&r);
    ASSERT_TRUE(ok32 && ok16);
    ASSERT_TRUE(test_same_bits(f32_out, f16_out, sizeof(f32_out)));

    /* Sizes that disagree with the shape, the body or the header are 400. */
    b = binary_request("FP32", 1, xs, sizeof(xs) - 4, "");
    post_binary(d, &b, &r);
    ASSERT_EQ_INT(r.status, 400);
    http_resp_free(&r);
    b = binary_request("FP32", 1, xs, sizeof(xs), "");
    b.len -= 10;
    post_binary(d, &b, &r);
    ASSERT_EQ_INT(r.status, 400);
    http_resp_free(&r);
    b = binary_request("FP32", 1, xs, sizeof(xs), "");
    b.header_len = b.len + 1;
    post_binary(d, &b, &r);
    ASSERT_EQ_INT(r.status, 400);
    http_resp_free(&r);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_infer_binary_bit_identical) { return http_run(&LENET, 1, NULL, infer_binary); }

/* ------------------------------------------------------------ classification extension */

static enum test_result infer_classification(struct http_daemon *d)
{
    enum { ROWS = 2 };
    static float x[ROWS * 784], logits[ROWS * 10];
    random_images(x, ROWS);
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    bool ran = http_offline_run(&off, ROWS, x, logits);
    char top_label[64];
    snprintf(top_label, sizeof(top_label), "%s", off.cfg->labels[http_argmax(logits, 10)]);
    http_offline_close(&off);
    ASSERT_TRUE(ran);

    char *req = http_infer_json(x, ROWS, ",\"outputs\":[{\"name\":\"logits\","
                                         "\"parameters\":{\"classification\":3}}]");
    struct http_resp r;
    http_post(d, "/v2/models/lenet5/infer", "application/json", req, strlen(req), &r);
    free(req);
    ASSERT_EQ_INT(r.status, 200);
    cJSON *root = cJSON_ParseWithLength(r.body, r.len);
    http_resp_free(&r);
    const cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "outputs"), 0);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(out, "data");
    char *shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(out, "shape"));
    const cJSON *first_item = cJSON_GetArrayItem(data, 0);
    char first[128];
    snprintf(first, sizeof(first), "%s", cJSON_IsString(first_item) ? first_item->valuestring : "");
    int n = cJSON_GetArraySize(data);
    const char *dtype = json_str(out, "datatype");
    bool bytes = dtype && strcmp(dtype, "BYTES") == 0;
    cJSON_Delete(root);
    ASSERT_TRUE(bytes);
    ASSERT_STR_EQ(shape, "[2,3]");
    free(shape);
    ASSERT_EQ_INT(n, ROWS * 3);
    /* "score:index:label": the top class first, the score being the raw output. */
    float score;
    int index;
    char label[64];
    ASSERT_EQ_INT(sscanf(first, "%f:%d:%63[^\n]", &score, &index, label), 3); // NOLINT(cert-err34-c): a bad number fails the checks below
    ASSERT_EQ_INT(index, http_argmax(logits, 10));
    ASSERT_STR_EQ(label, top_label);
    ASSERT_NEAR(score, logits[index], 1e-5 + 1e-5 * fabs(logits[index]));

    /* As binary BYTES: a 4-byte little-endian length, then the string. */
    req = http_infer_json(x, ROWS, ",\"outputs\":[{\"name\":\"logits\",\"parameters\":"
                                   "{\"classification\":3,\"binary_data\":true}}]");
    http_post(d, "/v2/models/lenet5/infer", "application/json", req, strlen(req), &r);
    free(req);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_TRUE(r.header_len > 0 && (size_t)r.header_len + 4 < r.len);
    const unsigned char *p = (const unsigned char *)r.body + r.header_len;
    size_t len0 = p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    bool same = len0 == strlen(first) && memcmp(p + 4, first, len0) == 0;
    http_resp_free(&r);
    ASSERT_TRUE(same);
    return TEST_PASS;
}

TEST(http_infer_classification_extension) { return http_run(&LENET, 1, NULL, infer_classification); }

/* ------------------------------------------------------------ statistics and metrics */

static double stat_count(const cJSON *stats, const char *key, const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(stats, key), field);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static enum test_result stats_metrics(struct http_daemon *d)
{
    static float x[2 * 784];
    random_images(x, 2);
    char *req = http_infer_json(x, 2, NULL);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", req,
                                  strlen(req)), 200);
    free(req);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", "{}", 2), 400);

    cJSON *st = get_json(d, "/v2/models/lenet5/stats", 200);
    ASSERT_TRUE(st);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "model_stats"), 0);
    const cJSON *is = cJSON_GetObjectItemCaseSensitive(m, "inference_stats");
    double success = stat_count(is, "success", "count"), fail = stat_count(is, "fail", "count");
    double queue_ns = stat_count(is, "queue", "ns"), infer_ns = stat_count(is, "compute_infer", "ns");
    double inferences = cJSON_GetObjectItemCaseSensitive(m, "inference_count")->valuedouble;
    double executions = cJSON_GetObjectItemCaseSensitive(m, "execution_count")->valuedouble;
    int batch_stats = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "batch_stats"));
    bool named = json_str(m, "name") && strcmp(json_str(m, "name"), "lenet5") == 0;
    cJSON_Delete(st);
    ASSERT_TRUE(named);
    ASSERT_EQ_INT(success, 5);
    ASSERT_EQ_INT(fail, 1);
    ASSERT_EQ_INT(inferences, 10);
    ASSERT_TRUE(executions >= 1 && executions <= 5);
    ASSERT_TRUE(queue_ns > 0 && infer_ns > 0);
    ASSERT_GE(batch_stats, 1);
    cJSON *all = get_json(d, "/v2/models/stats", 200);
    ASSERT_TRUE(all);
    int n_models = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(all, "model_stats"));
    cJSON_Delete(all);
    ASSERT_EQ_INT(n_models, 1);

    struct http_resp r;
    http_get(d, "/metrics", &r);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.content_type, "text/plain");
    const char *t = r.body;
#define SERIES(name) http_metric(t, name "{model=\"lenet5\",version=\"1\"}")
    double ok = SERIES("nv_inference_request_success");
    double bad = http_metric(t, "nv_inference_request_failure{model=\"lenet5\",reason=\"OTHER\",version=\"1\"}");
    double count = SERIES("nv_inference_count");
    double execs = SERIES("nv_inference_exec_count");
    double hist = SERIES("inferd_batch_size_count");
    double req_count = SERIES("inferd_request_duration_us_count");
    double pending = SERIES("nv_inference_pending_request_count");
    double load = SERIES("inferd_model_load_duration_seconds");
#undef SERIES
    double inf_bucket = http_metric(t, "inferd_request_duration_us_bucket{model=\"lenet5\",version=\"1\",le=\"+Inf\"}");
    double inflight = http_metric(t, "inferd_inflight_requests");
    bool has_types = strstr(t, "# TYPE inferd_queue_duration_us histogram") &&
                     strstr(t, "# TYPE nv_inference_request_success counter");
    http_resp_free(&r);
    ASSERT_EQ_INT(ok, 5);
    ASSERT_EQ_INT(bad, 1);
    ASSERT_EQ_INT(count, 10);
    ASSERT_EQ_INT(execs, executions);
    ASSERT_EQ_INT(hist, executions);
    ASSERT_EQ_INT(req_count, 6);
    ASSERT_EQ_INT(inf_bucket, 6);
    ASSERT_EQ_INT(pending, 0);
    ASSERT_TRUE(load > 0);
    /* The /metrics request itself; the previous request may still be
     * finishing on the server after its client got the answer, so ask
     * again until that settles. */
    for (int i = 0; i < 50 && inflight != 1; i++) {
        usleep(10 * 1000);
        inflight = http_get(d, "/metrics", &r) && r.status == 200
                       ? http_metric(r.body, "inferd_inflight_requests")
                       : -1;
        http_resp_free(&r);
    }
    ASSERT_EQ_INT(inflight, 1);
    ASSERT_TRUE(has_types);
    return TEST_PASS;
}

TEST(http_stats_and_metrics) { return http_run(&LENET, 1, NULL, stats_metrics); }

/* ------------------------------------------------------------ model control */

static enum test_result control_disabled(struct http_daemon *d)
{
    /* the index answers in every mode, as Triton's does */
    struct http_resp r;
    ASSERT_TRUE(http_post(d, "/v2/repository/index", "application/json", "", 0, &r));
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"lenet5\",\"version\":\"1\",\"state\":\"READY\"}");
    http_resp_free(&r);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/unload", NULL, "", 0), 403);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/load", NULL, "", 0), 403);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/ready", NULL, NULL, 0), 200);
    return TEST_PASS;
}

static enum test_result control_enabled(struct http_daemon *d)
{
    struct http_resp r;
    http_post(d, "/v2/repository/index", "application/json", "", 0, &r);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"lenet5\",\"version\":\"1\",\"state\":\"READY\"}");
    ASSERT_STR_CONTAINS(r.body, "{\"name\":\"second\",\"version\":\"1\",\"state\":\"READY\"}");
    http_resp_free(&r);

    static float x[784];
    random_images(x, 1);
    char *req = http_infer_json(x, 1, NULL);
    size_t len = strlen(req);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/second/unload", NULL, "", 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/second/ready", NULL, NULL, 0), 503);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/second/infer", "application/json", req, len), 503);
    /* A model unloaded on request does not make the server unready. */
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 200);
    http_post(d, "/v2/repository/index", "application/json", "{\"ready\":true}", 14, &r);
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_TRUE(strstr(r.body, "second") == NULL);
    http_resp_free(&r);
    http_post(d, "/v2/repository/index", "application/json", "", 0, &r);
    ASSERT_STR_CONTAINS(r.body, "\"name\":\"second\",\"version\":\"1\",\"state\":\"UNAVAILABLE\","
                                "\"reason\":\"unloaded\"");
    http_resp_free(&r);

    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/second/load", NULL, "", 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/second/ready", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/second/infer", "application/json", req, len), 200);
    /* Reloading a loaded model replaces it in place. */
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/load", NULL, "", 0), 200);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", req, len), 200);
    free(req);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/nope/load", NULL, "", 0), 404);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/nope/unload", NULL, "", 0), 404);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/bad%24name/load", NULL, "", 0), 400);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/index", "application/json", "{\"ready\":", 9), 400);
    return TEST_PASS;
}

TEST(http_model_control)
{
    static const char *const ENABLE[] = {"--enable-model-control", NULL};
    const struct http_model_spec two[] = {HTTP_MODEL_SPEC("lenet5"), HTTP_MODEL_SPEC("second")};
    enum test_result r = http_run(&LENET, 1, NULL, control_disabled);
    return r == TEST_PASS ? http_run(two, 2, ENABLE, control_enabled) : r;
}

/* ------------------------------------------------------------ flags and the config file */

/* A flat request (nesting 4) passes; one nested 7 deep passes only when
 * the daemon's --max-json-depth allows it. */
static enum test_result nesting(struct http_daemon *d, long want_deep)
{
    static float x[784];
    random_images(x, 1);
    char *flat = http_infer_json(x, 1, NULL);
    char *deep1 = str_replace_once(flat, "\"data\":[", "\"data\":[[[");
    char *deep = str_replace_once(deep1, "]}]}", "]]]}]}");
    long flat_status = http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", flat, strlen(flat));
    long deep_status = http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", deep, strlen(deep));
    free(flat);
    free(deep1);
    free(deep);
    ASSERT_EQ_INT(flat_status, 200);
    ASSERT_EQ_INT(deep_status, want_deep);
    return TEST_PASS;
}

static enum test_result depth_limited(struct http_daemon *d) { return nesting(d, 400); }
static enum test_result depth_relaxed(struct http_daemon *d) { return nesting(d, 200); }

TEST(http_flags_and_config_file)
{
    char out[8192];
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--help", NULL}, out, sizeof(out)), 0);
    ASSERT_STR_CONTAINS(out, "--http-port");
    ASSERT_STR_CONTAINS(out, "--max-json-depth");
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--no-such-flag", NULL}, out, sizeof(out)), 2);
    ASSERT_STR_CONTAINS(out, "unknown option");
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--http-port", "70000", NULL}, out, sizeof(out)), 2);
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--backend=tpu", NULL}, out, sizeof(out)), 2);
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--model-repository", "/nonexistent",
                                                        "--http-port", "0", NULL}, out, sizeof(out)), 1);

    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    const char cfg[] = "{\"max_json_depth\": 5, \"log-level\": \"warn\", \"max-body-bytes\": \"1M\"}";
    const char bad[] = "{\"max-json-depth\": 5, \"no-such-option\": 1}";
    char cfg_path[128], bad_path[128];
    snprintf(cfg_path, sizeof(cfg_path), "%s/inferd.json", dir);
    snprintf(bad_path, sizeof(bad_path), "%s/bad.json", dir);
    bool written = write_file(dir, "inferd.json", cfg, sizeof(cfg) - 1) &&
                   write_file(dir, "bad.json", bad, sizeof(bad) - 1);
    int bad_status = http_run_inferd((const char *const[]){"--config", bad_path, NULL}, out, sizeof(out));
    const char *const from_file[] = {"--config", cfg_path, NULL};
    enum test_result r1 = http_run(&LENET, 1, from_file, depth_limited);
    /* A flag wins over the file. */
    const char *const overridden[] = {"--config", cfg_path, "--max-json-depth", "32", NULL};
    enum test_result r2 = http_run(&LENET, 1, overridden, depth_relaxed);
    tmp_dir_remove(dir);
    ASSERT_TRUE(written);
    ASSERT_EQ_INT(bad_status, 2);
    ASSERT_EQ_INT(r1, TEST_PASS);
    ASSERT_EQ_INT(r2, TEST_PASS);
    return TEST_PASS;
}

/* ------------------------------------------------------------ backend flags */

static enum test_result backend_flags_applied(struct http_daemon *d)
{
    char log[16384];
    ASSERT_TRUE(http_daemon_log(d, log, sizeof(log)));
    ASSERT_STR_CONTAINS(log, "backend cpu: cpu (scalar, 1 threads per instance, 3 samples per pass)");
    struct http_resp cfg, metrics;
    ASSERT_TRUE(http_get(d, "/v2/models/lenet5/config", &cfg));
    ASSERT_TRUE(http_get(d, "/metrics", &metrics));
    bool cpu_kind = cfg.status == 200 && strstr(cfg.body, "\"kind\":\"KIND_CPU\"") != NULL;
    bool gpu_gauges = strstr(metrics.body, "nv_gpu_") != NULL;
    http_resp_free(&cfg);
    http_resp_free(&metrics);
    ASSERT_TRUE(cpu_kind);
    ASSERT_FALSE(gpu_gauges);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_backend_flags)
{
    char out[8192];
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--help", NULL}, out, sizeof(out)), 0);
    ASSERT_STR_CONTAINS(out, "{auto|cpu|cuda}");
    ASSERT_STR_CONTAINS(out, "--cpu-batch-chunk N");
    ASSERT_STR_CONTAINS(out, "--cpu-isa NAME");
    ASSERT_STR_CONTAINS(out, "--cuda-graphs WHEN");
    ASSERT_STR_CONTAINS(out, "{auto|on|off}");
    ASSERT_STR_CONTAINS(out, "--cuda-kernels SET");
    ASSERT_STR_CONTAINS(out, "{auto|new|baseline}");
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--backend=tpu", NULL}, out, sizeof(out)), 2);
    ASSERT_STR_CONTAINS(out, "--backend: unknown backend 'tpu' (valid: auto, cpu, cuda)");
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--cuda-graphs", "sometimes", NULL}, out, sizeof(out)), 2);
    ASSERT_STR_CONTAINS(out, "--cuda-graphs: 'sometimes'");
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--cpu-batch-chunk", "5000", NULL}, out, sizeof(out)), 2);
    ASSERT_STR_CONTAINS(out, "--cpu-batch-chunk: 5000 is outside 0..4096");
    /* Refused at start-up, before the repository is read (which would fail too). */
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--cpu-isa", "bogus", "--model-repository", "/nonexistent",
                                                        "--http-port", "0", NULL},
                                  out, sizeof(out)),
                  1);
    ASSERT_STR_CONTAINS(out, "backend: unknown CPU instruction set 'bogus' (valid: scalar, avx2, avx512)");
    static const char *const FLAGS[] = {"--backend", "cpu", "--cpu-isa", "scalar", "--cpu-batch-chunk", "3", NULL};
    return http_run(&LENET, 1, FLAGS, backend_flags_applied);
}

/* ------------------------------------------------------------ a model that fails to load */

static enum test_result load_failure(struct http_daemon *d)
{
    /* --exit-on-error false: the good model serves, the daemon is not ready. */
    for (int i = 0; i < 200 && http_status(d, "GET", "/v2/models/lenet5/ready", NULL, NULL, 0) != 200; i++)
        usleep(10 * 1000);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 503);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/broken/ready", NULL, NULL, 0), 503);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/broken", NULL, NULL, 0), 503);
    ASSERT_TRUE(http_still_serves(d));
    /* By default the same repository ends start-up with status 1. */
    char repo[300], out[8192];
    snprintf(repo, sizeof(repo), "%s/repo", d->dir);
    int status = http_run_inferd((const char *const[]){"--model-repository", repo,
                                                       "--http-port", "0", NULL}, out, sizeof(out));
    ASSERT_EQ_INT(status, 1);
    ASSERT_STR_CONTAINS(out, "broken");
    return TEST_PASS;
}

TEST(http_model_load_failure)
{
    struct http_model_spec specs[2] = {HTTP_MODEL_SPEC("lenet5"), HTTP_MODEL_SPEC("broken")};
    specs[1].broken = true;
    static const char *const KEEP_GOING[] = {"--exit-on-error", "false", NULL};
    return http_run(specs, 2, KEEP_GOING, load_failure);
}

/* docs/http-api.md's flags table names every flag `inferd --help` lists,
 * and nothing else, so neither can drift from the other. */
TEST(http_flags_table_matches_help)
{
    static char help[32768];
    ASSERT_EQ_INT(http_run_inferd((const char *const[]){"--help", NULL}, help, sizeof(help)), 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/http-api.md", test_root());
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    const char *table = strstr(doc, "\n## Flags");
    ASSERT_TRUE(table != NULL);
    const char *table_end = strstr(table + 1, "\n## ");
    int listed = 0, missing = 0;
    /* every "  --flag" line of --help appears as `--flag` in the table */
    for (const char *p = help; (p = strstr(p, "\n  --")); p++) {
        char flag[64], want[80];
        if (sscanf(p + 3, "%63[a-z0-9-]", flag) != 1)
            continue;
        listed++;
        snprintf(want, sizeof(want), "`%s", flag);
        const char *at = strstr(table, want);
        if (!at || (table_end && at > table_end)) {
            printf("  --help lists %s; the flags table does not\n", flag);
            missing++;
        }
    }
    /* every `--flag` opening a table row is a flag --help knows */
    for (const char *p = table; (p = strstr(p, "\n| `--")) && (!table_end || p < table_end); p++) {
        char flag[64], want[80];
        if (sscanf(p + 4, "%63[a-z0-9-]", flag) != 1)
            continue;
        snprintf(want, sizeof(want), "\n  %s ", flag);
        char alone[80];
        snprintf(alone, sizeof(alone), "\n  %s\n", flag);
        if (!strstr(help, want) && !strstr(help, alone)) {
            printf("  the flags table lists %s; --help does not\n", flag);
            missing++;
        }
    }
    printf("  %d flags in --help\n", listed);
    ASSERT_TRUE(listed >= 30);
    ASSERT_EQ_INT(missing, 0);
    return TEST_PASS;
}

/* Reads a whole file under the checkout into buf (NUL-terminated). */
static bool read_source(const char *rel, char *buf, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", test_root(), rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n < cap - 1;
}

/* The three digits at p as a status code, or 0. */
static int status_at(const char *p)
{
    if (p[0] < '1' || p[0] > '5' || p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9' ||
        (p[3] >= '0' && p[3] <= '9'))
        return 0;
    return (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
}

/* docs/http-api.md's status table has a row for every error status inferd's
 * own code answers with: srv_reply_*(r, NNN, ...) and the status mapping's
 * "return NNN;" in server/ (issue 23: the table lacked 401, and said 500
 * where the server sent 415). */
TEST(http_status_table_covers_server_errors)
{
    static char doc[1 << 17], src[1 << 18];
    ASSERT_TRUE(read_source("docs/http-api.md", doc, sizeof(doc)));
    const char *table = strstr(doc, "\n### Status codes");
    ASSERT_TRUE(table != NULL);
    const char *table_end = strstr(table + 1, "\n\n#");
    bool seen[600] = {false};
    int read = 0;
    char dir_path[4096];
    snprintf(dir_path, sizeof(dir_path), "%s/server", test_root());
    DIR *dir = opendir(dir_path);
    ASSERT_TRUE(dir != NULL);
    for (struct dirent *ent; (ent = readdir(dir));) {
        size_t len = strlen(ent->d_name);
        char rel[512];
        if (len < 3 || strcmp(ent->d_name + len - 2, ".c") != 0)
            continue;
        snprintf(rel, sizeof(rel), "server/%s", ent->d_name);
        if (!read_source(rel, src, sizeof(src)))
            continue;
        read++;
        for (const char *p = src; (p = strstr(p, "srv_reply_")); p++) {
            const char *open = strchr(p, '(');
            const char *comma = open ? strchr(open, ',') : NULL;
            if (comma && comma - p < 48 && comma[1] == ' ')
                seen[status_at(comma + 2)] = true;
        }
        for (const char *p = src; (p = strstr(p, "return ")); p++)
            if (status_at(p + 7) && p[10] == ';')
                seen[status_at(p + 7)] = true;
    }
    closedir(dir);
    ASSERT_TRUE(read >= 10);
    int codes = 0, missing = 0;
    for (int code = 400; code < 600; code++) {
        if (!seen[code])
            continue;
        codes++;
        char want[16];
        snprintf(want, sizeof(want), "\n| %d |", code);
        const char *at = strstr(table, want);
        if (!at || (table_end && at > table_end)) {
            printf("  the server answers %d; docs/http-api.md's status table has no row for it\n", code);
            missing++;
        }
    }
    printf("  %d error statuses in server/\n", codes);
    ASSERT_TRUE(seen[400] && seen[401] && seen[404] && seen[415] && seen[500] && seen[503]);
    ASSERT_EQ_INT(missing, 0);
    return TEST_PASS;
}

/* --cors-origin: a browser page from that origin may call the API (the
 * preflight is answered, answers carry Access-Control-Allow-Origin);
 * without the flag neither happens. */
static enum test_result cors_on(struct http_daemon *d)
{
    int fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    static const char PREFLIGHT[] = "OPTIONS /v2/models/lenet5/infer HTTP/1.1\r\nHost: x\r\n"
                                    "Origin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n"
                                    "Access-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n";
    ASSERT_TRUE(http_raw_send(fd, PREFLIGHT, sizeof(PREFLIGHT) - 1));
    char out[4096];
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof(out) && (k = recv(fd, out + n, sizeof(out) - 1 - n, 0)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fd);
    ASSERT_STR_CONTAINS(out, "HTTP/1.1 204");
    ASSERT_STR_CONTAINS(out, "Access-Control-Allow-Origin: https://app.example.com");
    ASSERT_STR_CONTAINS(out, "Access-Control-Allow-Methods: GET, POST, OPTIONS");
    ASSERT_STR_CONTAINS(out, "Content-Type");
    /* an ordinary answer carries the origin too */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    static const char GET[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example.com\r\n"
                              "Connection: close\r\n\r\n";
    ASSERT_TRUE(http_raw_send(fd, GET, sizeof(GET) - 1));
    n = 0;
    while (n + 1 < sizeof(out) && (k = recv(fd, out + n, sizeof(out) - 1 - n, 0)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fd);
    ASSERT_STR_CONTAINS(out, "HTTP/1.1 200");
    ASSERT_STR_CONTAINS(out, "Access-Control-Allow-Origin: https://app.example.com");
    return TEST_PASS;
}

static enum test_result cors_off(struct http_daemon *d)
{
    const char *const headers[] = {"Origin: https://app.example.com", "Access-Control-Request-Method: POST", NULL};
    struct http_resp r;
    ASSERT_TRUE(http_request(d, "OPTIONS", "/v2/models/lenet5/infer", headers, NULL, 0, &r));
    long status = r.status;
    http_resp_free(&r);
    ASSERT_EQ_INT(status, 405);
    return TEST_PASS;
}

TEST(http_cors_origin_flag)
{
    static const struct http_model_spec LENET5 = HTTP_MODEL_SPEC("lenet5");
    const char *const args[] = {"--cors-origin", "https://app.example.com", NULL};
    enum test_result r = http_run(&LENET5, 1, args, cors_on);
    return r == TEST_PASS ? http_run(&LENET5, 1, NULL, cors_off) : r;
}
