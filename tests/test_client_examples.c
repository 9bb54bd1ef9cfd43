/*
 * test_client_examples.c - the examples in clients/examples/ run clean
 * against a real inferd: the curl walk-through (every step must answer
 * 2xx) and the standard-library Python client (whose JSON and binary
 * answers must agree).
 */
#include <unistd.h>

#include "client_harness.h"
#include "http_harness.h"
#include "test.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

static enum test_result curl_walkthrough(struct http_daemon *d)
{
    char url[64];
    const char *const args[] = {"clients/examples/curl.sh", client_url(d->port, url, sizeof(url)),
                                "tests/data/images/gray1.png", NULL};
    struct client_run r;
    ASSERT_TRUE(client_run_tool("/bin/sh", args, &r));
    if (r.status != 0)
        printf("  curl.sh: %s\n%s\n", r.out, r.err);
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "\"predictions\"");
    ASSERT_STR_CONTAINS(r.out, "\"binary_data_size\":40");
    ASSERT_STR_CONTAINS(r.out, "(40 bytes of binary output follow the header)");
    ASSERT_STR_CONTAINS(r.out, "nv_inference_request_success{model=\"lenet5\"");
    client_run_free(&r);
    return TEST_PASS;
}

TEST(client_examples_curl) { return http_run(&LENET, 1, NULL, curl_walkthrough); }

static enum test_result python_client(struct http_daemon *d)
{
    char url[64];
    const char *const args[] = {"clients/examples/client.py", "--url",
                                client_url(d->port, url, sizeof(url)),
                                "tests/data/images/gray1.png", "tests/data/images/rgba.png",
                                NULL};
    struct client_run r;
    ASSERT_TRUE(client_run_tool("/usr/bin/python3", args, &r));
    if (r.status != 0)
        printf("  client.py: %s\n%s\n", r.out, r.err);
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "tests/data/images/rgba.png\n  ");
    ASSERT_STR_CONTAINS(r.out, "JSON and binary agree");
    client_run_free(&r);
    const char *const ghost[] = {"clients/examples/client.py", "--url", url, "--model", "ghost",
                                 "tests/data/images/gray1.png", NULL};
    ASSERT_TRUE(client_run_tool("/usr/bin/python3", ghost, &r));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "HTTP 404");
    client_run_free(&r);
    return TEST_PASS;
}

TEST(client_examples_python)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        SKIP("/usr/bin/python3 is not installed; the Python example needs only it");
    return http_run(&LENET, 1, NULL, python_client);
}
