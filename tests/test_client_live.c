/*
 * test_client_live.c - the client library against a real inferd (started
 * by http_harness.h): health, metadata, infer as JSON and binary (answers
 * equal the offline run), classify raw and multipart, model control, the
 * server's error messages and statuses, and /metrics.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "clients/lib/icl.h"
#include "http_harness.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "test.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

static struct icl_client *connect_to(const struct http_daemon *d)
{
    char url[64];
    struct icl_client *c = NULL;
    icl_client_create(client_url(d->port, url, sizeof(url)), NULL, &c, NULL);
    return c;
}

static enum test_result health_metadata(struct http_daemon *d)
{
    struct icl_client *c = connect_to(d);
    ASSERT_TRUE(c);
    struct icl_error err;
    bool ok = false;
    ASSERT_EQ_INT(icl_server_live(c, &ok, &err), ICL_OK);
    ASSERT_TRUE(ok);
    ASSERT_EQ_INT(icl_server_ready(c, &ok, &err), ICL_OK);
    ASSERT_TRUE(ok);
    ASSERT_EQ_INT(icl_model_ready(c, "lenet5", &ok, &err), ICL_OK);
    ASSERT_TRUE(ok);
    ASSERT_EQ_INT(icl_model_ready(c, "no-such-model", &ok, &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 404);
    ASSERT_STR_CONTAINS(err.message, "no-such-model");

    struct icl_server_metadata sm;
    ASSERT_EQ_INT(icl_server_metadata(c, &sm, &err), ICL_OK);
    ASSERT_STR_EQ(sm.name, "inferd");
    bool binary = false;
    for (int i = 0; i < sm.n_extensions; i++)
        binary |= strcmp(sm.extensions[i], "binary_tensor_data") == 0;
    ASSERT_TRUE(binary);

    struct icl_model_metadata mm;
    ASSERT_EQ_INT(icl_model_metadata(c, "lenet5", &mm, &err), ICL_OK);
    ASSERT_STR_EQ(mm.name, "lenet5");
    ASSERT_EQ_INT(mm.n_inputs, 1);
    ASSERT_STR_EQ(mm.inputs[0].datatype, "FP32");
    ASSERT_EQ_INT(mm.inputs[0].rank, 4);
    ASSERT_EQ_INT(mm.inputs[0].shape[0], -1);
    ASSERT_EQ_INT(mm.inputs[0].shape[3], 28);
    ASSERT_EQ_INT(mm.outputs[0].shape[1], 10);
    ASSERT_EQ_INT(icl_model_metadata(c, "no-such-model", &mm, &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 404);
    ASSERT_STR_CONTAINS(err.message, "unknown model");
    icl_client_free(c);
    return TEST_PASS;
}

TEST(client_live_health_metadata) { return http_run(&LENET, 1, NULL, health_metadata); }

/* Runs x (rows images) through icl_infer, JSON or binary, and checks the
 * logits against the offline run. */
static enum test_result infer_matches(struct icl_client *c, const float *x, int rows,
                                      const float *want, bool binary)
{
    struct icl_tensor in = {.name = "input", .datatype = "FP32", .rank = 4,
                            .shape = {rows, 1, 28, 28}, .data = x,
                            .byte_size = (size_t)rows * 784 * sizeof(float)};
    struct icl_infer_request req = {.id = "t1", .n_inputs = 1, .inputs = &in,
                                    .binary_inputs = binary, .binary_outputs = binary};
    struct icl_infer_result res;
    struct icl_error err;
    ASSERT_EQ_INT(icl_infer(c, "lenet5", &req, &res, &err), ICL_OK);
    ASSERT_STR_EQ(res.model_name, "lenet5");
    ASSERT_STR_EQ(res.id, "t1");
    ASSERT_EQ_INT(res.n_outputs, 1);
    const struct icl_tensor *o = &res.outputs[0];
    ASSERT_STR_EQ(o->datatype, "FP32");
    ASSERT_EQ_INT(o->shape[0], rows);
    ASSERT_EQ_INT(o->byte_size, (size_t)rows * 10 * sizeof(float));
    double rel = test_rel_error(o->data, want, (int64_t)rows * 10);
    icl_infer_result_free(&res);
    /* binary answers are the server's floats bit for bit; JSON ones are
     * printed by the server and may round the last digit */
    ASSERT_LE(rel, binary ? 0 : 1e-6);
    return TEST_PASS;
}

static enum test_result infer(struct http_daemon *d)
{
    enum { ROWS = 3 };
    static float x[ROWS * 784], want[ROWS * 10];
    test_rand_fill(x, (int64_t)ROWS * 784, -0.8f, 2.8f);
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    bool ran = http_offline_run(&off, ROWS, x, want);
    http_offline_close(&off);
    ASSERT_TRUE(ran);
    struct icl_client *c = connect_to(d);
    ASSERT_TRUE(c);
    enum test_result r = infer_matches(c, x, ROWS, want, false);
    if (r == TEST_PASS)
        r = infer_matches(c, x, ROWS, want, true);
    if (r != TEST_PASS) {
        icl_client_free(c);
        return r;
    }
    /* the classification extension, binary: BYTES "score:index:label" */
    struct icl_tensor in = {.name = "input", .datatype = "FP32", .rank = 4,
                            .shape = {1, 1, 28, 28}, .data = x, .byte_size = 784 * sizeof(float)};
    struct icl_output_request out = {"logits", 2};
    struct icl_infer_request req = {.n_inputs = 1, .inputs = &in, .n_outputs = 1,
                                    .outputs = &out, .binary_outputs = true};
    struct icl_infer_result res;
    struct icl_error err;
    ASSERT_EQ_INT(icl_infer(c, "lenet5", &req, &res, &err), ICL_OK);
    ASSERT_STR_EQ(res.outputs[0].datatype, "BYTES");
    const char *s;
    size_t len;
    ASSERT_TRUE(icl_tensor_string(&res.outputs[0], 0, &s, &len));
    char entry[128];
    snprintf(entry, sizeof(entry), "%.*s", (int)len, s);
    char idx[8];
    snprintf(idx, sizeof(idx), ":%d:", http_argmax(want, 10));
    ASSERT_STR_CONTAINS(entry, idx);
    ASSERT_TRUE(icl_tensor_string(&res.outputs[0], 1, &s, &len));
    ASSERT_FALSE(icl_tensor_string(&res.outputs[0], 2, &s, &len));
    icl_infer_result_free(&res);
    /* the server's own words come back with its status */
    snprintf(in.name, sizeof(in.name), "nope");
    ASSERT_EQ_INT(icl_infer(c, "lenet5", &req, &res, &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 400);
    ASSERT_STR_CONTAINS(err.message, "nope");
    ASSERT_EQ_INT(icl_infer(c, "ghost", &req, &res, &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 404);
    icl_client_free(c);
    return TEST_PASS;
}

TEST(client_live_infer) { return http_run(&LENET, 1, NULL, infer); }

static enum test_result classify(struct http_daemon *d)
{
    enum { N = 3 };
    struct rt_dataset ds;
    struct rt_error rerr = {0};
    ASSERT_EQ_INT(rt_dataset_load_fashion_mnist("test", &ds, &rerr), RT_OK);
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    struct icl_image img[N];
    uint8_t *png[N] = {0};
    static float x[N * 784], want[N * 10];
    bool ok = true;
    for (int i = 0; i < N && ok; i++) {
        struct rt_image im = {28, 28, 1, ds.images + (size_t)i * 784}, dec;
        size_t len = 0;
        ok = rt_image_encode_png(&im, &png[i], &len, &rerr) == RT_OK &&
             rt_image_decode(png[i], len, NULL, &dec, &rerr) == RT_OK;
        if (ok) {
            ok = rt_image_preprocess(&dec, &off.cfg->pre, x + (size_t)i * 784, &rerr) == RT_OK;
            rt_image_free(&dec);
        }
        img[i] = (struct icl_image){png[i], len, "image/png", NULL};
    }
    ok = ok && http_offline_run(&off, N, x, want);
    http_offline_close(&off);
    rt_dataset_free(&ds);
    struct icl_client *c = connect_to(d);
    enum test_result r = ok && c ? TEST_PASS : TEST_FAIL;
    for (int kind = 0; r == TEST_PASS && kind < 2; kind++) {
        int n = kind == 0 ? 1 : N; /* one raw body, then every image as multipart */
        struct icl_classify_result res;
        struct icl_error err;
        if (icl_classify(c, "lenet5", img, n, 3, kind ? ICL_BODY_MULTIPART : ICL_BODY_RAW, &res,
                         &err) != ICL_OK) {
            printf("  classify: %s\n", err.message);
            r = TEST_FAIL;
            break;
        }
        for (int i = 0; i < n && r == TEST_PASS; i++) {
            const struct icl_classification *k = &res.results[i];
            if (k->n_predictions != 3 || k->predictions[0].index != http_argmax(want + (size_t)i * 10, 10) ||
                !(k->predictions[0].score >= k->predictions[1].score) || k->total_us < 0) {
                printf("  image %d: %d predictions, top %d, want %d\n", i, k->n_predictions,
                       k->n_predictions ? k->predictions[0].index : -1,
                       http_argmax(want + (size_t)i * 10, 10));
                r = TEST_FAIL;
            }
        }
        icl_classify_result_free(&res);
    }
    struct icl_classify_result res;
    struct icl_error err;
    if (r == TEST_PASS) {
        /* not an image: the server's 4xx and message reach the caller */
        struct icl_image junk = {"hello", 5, "image/png", NULL};
        ASSERT_EQ_INT(icl_classify(c, "lenet5", &junk, 1, 0, ICL_BODY_AUTO, &res, &err),
                      ICL_ERR_HTTP);
        ASSERT_GE(err.http_status, 400);
        ASSERT_LE(err.http_status, 499);
        ASSERT_TRUE(err.message[0]);
    }
    for (int i = 0; i < N; i++)
        free(png[i]);
    icl_client_free(c);
    return r;
}

TEST(client_live_classify) { return http_run(&LENET, 1, NULL, classify); }

static enum test_result model_control(struct http_daemon *d)
{
    struct icl_client *c = connect_to(d);
    ASSERT_TRUE(c);
    struct icl_error err;
    bool ready = true;
    ASSERT_EQ_INT(icl_model_unload(c, "lenet5", &err), ICL_OK);
    ASSERT_EQ_INT(icl_model_ready(c, "lenet5", &ready, &err), ICL_OK);
    ASSERT_FALSE(ready);
    struct icl_model_entry *m;
    int n;
    ASSERT_EQ_INT(icl_repository_index(c, &m, &n, &err), ICL_OK);
    ASSERT_EQ_INT(n, 1);
    ASSERT_STR_EQ(m[0].name, "lenet5");
    ASSERT_TRUE(strcmp(m[0].state, "READY") != 0);
    free(m);
    ASSERT_EQ_INT(icl_model_load(c, "lenet5", &err), ICL_OK);
    ASSERT_EQ_INT(icl_model_ready(c, "lenet5", &ready, &err), ICL_OK);
    ASSERT_TRUE(ready);
    ASSERT_EQ_INT(icl_model_load(c, "ghost", &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 404);
    icl_client_free(c);
    return TEST_PASS;
}

TEST(client_live_model_control)
{
    static const char *const ARGS[] = {"--enable-model-control", NULL};
    return http_run(&LENET, 1, ARGS, model_control);
}

static enum test_result control_off_and_metrics(struct http_daemon *d)
{
    struct icl_client *c = connect_to(d);
    ASSERT_TRUE(c);
    struct icl_error err;
    ASSERT_EQ_INT(icl_model_unload(c, "lenet5", &err), ICL_ERR_HTTP);
    ASSERT_EQ_INT(err.http_status, 403);
    ASSERT_STR_CONTAINS(err.message, "model control");
    struct icl_model_entry *m;
    int n;
    ASSERT_EQ_INT(icl_model_list(c, &m, &n, &err), ICL_OK); /* falls back to the ready list */
    ASSERT_EQ_INT(n, 1);
    ASSERT_STR_EQ(m[0].name, "lenet5");
    ASSERT_STR_EQ(m[0].state, "READY");
    free(m);
    char *text;
    double before, after;
    ASSERT_EQ_INT(icl_metrics(c, &text, &err), ICL_OK);
    ASSERT_TRUE(icl_metrics_value(text, "nv_inference_request_success", "lenet5", &before));
    free(text);
    float x[784];
    test_rand_fill(x, 784, 0.0f, 1.0f);
    struct icl_tensor in = {.name = "input", .datatype = "FP32", .rank = 4,
                            .shape = {1, 1, 28, 28}, .data = x, .byte_size = sizeof(x)};
    struct icl_infer_request req = {.n_inputs = 1, .inputs = &in};
    struct icl_infer_result res;
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ_INT(icl_infer(c, "lenet5", &req, &res, &err), ICL_OK);
        icl_infer_result_free(&res);
    }
    /* the server counts a request just after queueing its answer: give the
     * last one a moment */
    for (int i = 0; i < 25; i++) {
        ASSERT_EQ_INT(icl_metrics(c, &text, &err), ICL_OK);
        ASSERT_TRUE(icl_metrics_value(text, "nv_inference_request_success", "lenet5", &after));
        free(text);
        if (after - before >= 5)
            break;
        usleep(20000);
    }
    ASSERT_NEAR(after - before, 5, 0);
    icl_client_free(c);
    return TEST_PASS;
}

TEST(client_live_control_off_metrics) { return http_run(&LENET, 1, NULL, control_off_and_metrics); }
