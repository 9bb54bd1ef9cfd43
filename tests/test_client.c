/*
 * test_client.c - the client library without a server: request encoding
 * (JSON, the binary tensor extension, multipart), argument checks, the
 * Prometheus reader, URLs, and the connect error when nobody listens.
 * Against a live inferd: test_client_live.c.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "client_harness.h"
#include "clients/lib/icl.h"
#include "test.h"

static struct icl_tensor fp32_input(const float *x, int rows)
{
    struct icl_tensor t = {.name = "input", .datatype = "FP32", .rank = 4,
                           .shape = {rows, 1, 28, 28}, .data = x,
                           .byte_size = (size_t)rows * 784 * sizeof(float)};
    return t;
}

TEST(client_encode_json)
{
    float x[2 * 784];
    test_rand_fill(x, (int64_t)2 * 784, -3.0f, 3.0f);
    struct icl_tensor in = fp32_input(x, 2);
    struct icl_output_request out = {"logits", 3};
    struct icl_infer_request req = {.id = "req \"7\"", .n_inputs = 1, .inputs = &in,
                                    .n_outputs = 1, .outputs = &out, .timeout_us = 5000};
    uint8_t *body;
    size_t len, header_len;
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, NULL), ICL_OK);
    ASSERT_EQ_INT(header_len, len);
    cJSON *root = cJSON_ParseWithLength((const char *)body, len);
    free(body);
    ASSERT_TRUE(root);
    ASSERT_STR_EQ(cJSON_GetObjectItem(root, "id")->valuestring, "req \"7\"");
    const cJSON *i0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "inputs"), 0);
    const cJSON *data = cJSON_GetObjectItem(i0, "data");
    ASSERT_EQ_INT(cJSON_GetArraySize(data), 2 * 784);
    int k = 0, exact = 0;
    for (const cJSON *v = data->child; v; v = v->next, k++)
        exact += (float)v->valuedouble == x[k]; /* %.9g round-trips every float */
    ASSERT_EQ_INT(exact, 2 * 784);
    ASSERT_EQ_INT(cJSON_GetArrayItem(cJSON_GetObjectItem(i0, "shape"), 0)->valueint, 2);
    const cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "outputs"), 0);
    ASSERT_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(o0, "parameters"), "classification")
                      ->valueint, 3);
    ASSERT_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "parameters"), "timeout")
                      ->valueint, 5000);
    cJSON_Delete(root);
    return TEST_PASS;
}

TEST(client_encode_binary)
{
    float x[3 * 784];
    test_rand_fill(x, (int64_t)3 * 784, -1.0f, 1.0f);
    struct icl_tensor in = fp32_input(x, 3);
    struct icl_infer_request req = {.n_inputs = 1, .inputs = &in, .binary_inputs = true,
                                    .binary_outputs = true};
    uint8_t *body;
    size_t len, header_len;
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, NULL), ICL_OK);
    ASSERT_EQ_INT(len - header_len, sizeof(x));
    ASSERT_TRUE(test_same_bits(body + header_len, x, sizeof(x)));
    cJSON *root = cJSON_ParseWithLength((const char *)body, header_len);
    free(body);
    ASSERT_TRUE(root);
    const cJSON *i0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "inputs"), 0);
    ASSERT_FALSE(cJSON_GetObjectItem(i0, "data"));
    ASSERT_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(i0, "parameters"), "binary_data_size")
                      ->valueint, (int)sizeof(x));
    /* no outputs named: the request-level switch asks for all of them binary */
    ASSERT_TRUE(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(root, "parameters"), "binary_data_output")));
    cJSON_Delete(root);
    return TEST_PASS;
}

TEST(client_encode_types)
{
    const int64_t i64[3] = {-5, 0, INT64_C(1) << 40};
    const uint8_t flags[2] = {1, 0};
    const uint8_t strings[] = {2, 0, 0, 0, 'h', 'i', 1, 0, 0, 0, '"'};
    struct icl_tensor in[3] = {
        {.name = "a", .datatype = "INT64", .rank = 1, .shape = {3}, .data = i64, .byte_size = 24},
        {.name = "b", .datatype = "BOOL", .rank = 1, .shape = {2}, .data = flags, .byte_size = 2},
        {.name = "c", .datatype = "BYTES", .rank = 1, .shape = {2}, .data = strings,
         .byte_size = sizeof(strings)},
    };
    struct icl_infer_request req = {.n_inputs = 3, .inputs = in};
    uint8_t *body;
    size_t len, header_len;
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, NULL), ICL_OK);
    body[len - 1] = '\0'; /* the closing brace; enough for strstr */
    ASSERT_STR_CONTAINS((char *)body, "\"data\":[-5,0,1099511627776]");
    ASSERT_STR_CONTAINS((char *)body, "\"data\":[true,false]");
    ASSERT_STR_CONTAINS((char *)body, "\"data\":[\"hi\",\"\\\"\"]");
    free(body);
    return TEST_PASS;
}

TEST(client_encode_rejects)
{
    float x[784];
    test_rand_fill(x, 784, 0.0f, 1.0f);
    struct icl_tensor in = fp32_input(x, 1);
    struct icl_infer_request req = {.n_inputs = 1, .inputs = &in};
    uint8_t *body;
    size_t len, header_len;
    struct icl_error err;
    in.byte_size -= 4; /* shape and data disagree */
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, &err), ICL_ERR_INVALID);
    ASSERT_STR_CONTAINS(err.message, "3132 bytes");
    in.byte_size += 4;
    x[5] = NAN; /* JSON has no NaN; binary carries it */
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, &err), ICL_ERR_INVALID);
    ASSERT_STR_CONTAINS(err.message, "NaN");
    req.binary_inputs = true;
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, &err), ICL_OK);
    free(body);
    snprintf(in.datatype, sizeof(in.datatype), "FP8");
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, &err), ICL_ERR_INVALID);
    req.n_inputs = 0;
    ASSERT_EQ_INT(icl_infer_encode(&req, &body, &len, &header_len, &err), ICL_ERR_INVALID);
    return TEST_PASS;
}

TEST(client_encode_multipart)
{
    /* the first image holds the boundary the encoder would try first */
    char clash[64] = "xx";
    uint8_t raw[300];
    for (int i = 0; i < 300; i++)
        raw[i] = (uint8_t)test_rand_int(0, 255);
    struct icl_image img[2] = {{clash, 0, "image/png", "dir/a.png"},
                               {raw, sizeof(raw), NULL, NULL}};
    uint8_t *body;
    size_t len;
    char ctype[128];
    struct icl_error err;
    ASSERT_EQ_INT(icl_classify_encode(img, 2, ICL_BODY_AUTO, &body, &len, ctype, sizeof(ctype),
                                      &err), ICL_ERR_INVALID); /* an empty image */
    ASSERT_EQ_INT(icl_classify_encode(img + 1, 1, ICL_BODY_AUTO, &body, &len, ctype,
                                      sizeof(ctype), &err), ICL_OK);
    ASSERT_STR_EQ(ctype, "application/octet-stream");
    ASSERT_EQ_INT(len, sizeof(raw));
    free(body);
    ASSERT_EQ_INT(icl_classify_encode(img + 1, 1, ICL_BODY_MULTIPART, &body, &len, ctype,
                                      sizeof(ctype), &err), ICL_OK);
    free(body);
    const char *first = strstr(ctype, "boundary=") + 9;
    snprintf(clash, sizeof(clash), "%s", first);
    img[0].len = strlen(clash);
    ASSERT_EQ_INT(icl_classify_encode(img, 2, ICL_BODY_RAW, &body, &len, ctype, sizeof(ctype),
                                      &err), ICL_ERR_INVALID); /* raw carries one image */
    ASSERT_EQ_INT(icl_classify_encode(img, 2, ICL_BODY_AUTO, &body, &len, ctype, sizeof(ctype),
                                      &err), ICL_OK);
    const char *boundary = strstr(ctype, "boundary=") + 9;
    ASSERT_TRUE(strcmp(boundary, clash) != 0);
    ASSERT_TRUE(memmem(body, len, "filename=\"a.png\"\r\nContent-Type: image/png", 41));
    ASSERT_TRUE(memmem(body, len, raw, sizeof(raw)));
    char closing[80];
    int n = snprintf(closing, sizeof(closing), "\r\n--%s--\r\n", boundary);
    ASSERT_TRUE(len > (size_t)n && memcmp(body + len - (size_t)n, closing, (size_t)n) == 0);
    free(body);
    return TEST_PASS;
}

TEST(client_metrics_value)
{
    const char *text =
        "# HELP nv_inference_request_success Successful requests\n"
        "# TYPE nv_inference_request_success counter\n"
        "nv_inference_request_success{model=\"lenet5\",version=\"1\"} 42\n"
        "nv_inference_request_success{model=\"lenet5-b\",version=\"1\"} 7\n"
        "nv_inference_request_success_total{model=\"lenet5\"} 1000\n"
        "inferd_inflight_requests 3\n";
    double v;
    ASSERT_TRUE(icl_metrics_value(text, "nv_inference_request_success", "lenet5", &v));
    ASSERT_NEAR(v, 42, 0);
    ASSERT_TRUE(icl_metrics_value(text, "nv_inference_request_success", NULL, &v));
    ASSERT_NEAR(v, 49, 0);
    ASSERT_TRUE(icl_metrics_value(text, "inferd_inflight_requests", NULL, &v));
    ASSERT_NEAR(v, 3, 0);
    ASSERT_FALSE(icl_metrics_value(text, "nv_inference_request_success", "resnet", &v));
    ASSERT_FALSE(icl_metrics_value(text, "inferd_inflight", NULL, &v));
    return TEST_PASS;
}

TEST(client_url_and_connect_error)
{
    struct icl_client *c;
    struct icl_error err;
    ASSERT_EQ_INT(icl_client_create("127.0.0.1:8000//", NULL, &c, &err), ICL_OK);
    ASSERT_STR_EQ(icl_client_url(c), "http://127.0.0.1:8000");
    icl_client_free(c);
    ASSERT_EQ_INT(icl_client_create("", NULL, &c, &err), ICL_ERR_INVALID);
    char url[64];
    ASSERT_EQ_INT(icl_client_create(client_url(client_closed_port(), url, sizeof(url)), NULL, &c,
                                    &err), ICL_OK);
    bool live = true;
    ASSERT_EQ_INT(icl_server_live(c, &live, &err), ICL_ERR_CONNECT);
    ASSERT_FALSE(live);
    ASSERT_EQ_INT(err.http_status, 0);
    ASSERT_STR_CONTAINS(err.message, "cannot connect");
    struct icl_model_metadata meta;
    ASSERT_EQ_INT(icl_model_metadata(c, "lenet5", &meta, &err), ICL_ERR_CONNECT);
    ASSERT_EQ_INT(icl_model_metadata(c, "", &meta, &err), ICL_ERR_INVALID);
    icl_client_free(c);
    ASSERT_STR_EQ(icl_status_name(ICL_ERR_HTTP), "server error");
    ASSERT_EQ_INT(icl_datatype_size("FP16"), 2);
    ASSERT_EQ_INT(icl_datatype_size("BYTES"), 0);
    return TEST_PASS;
}
