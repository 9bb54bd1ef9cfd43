/*
 * test_http_bad.c - every bad input of the HTTP issue, each answered with
 * its exact status and followed by a check that the daemon still serves:
 * empty and truncated bodies, wrong datatype / shape / element count,
 * unknown model / version / input, a 2 GB Content-Length, JSON nested
 * 100000 deep, text sent as an image, truncated PNG and JPEG, a 1x1 image,
 * a header claiming 60000x60000, broken multipart, idle and slow clients.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"
#include "http_images.h"
#include "test.h"
#include "test_model_util.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

#define INFER "/v2/models/lenet5/infer"
#define CLASSIFY "/v2/models/lenet5/classify"

/* Asserts the status of a POST, then that the daemon still serves. */
#define EXPECT_POST(d, path, ct, body, len, want) do {                              \
        ASSERT_EQ_INT(http_status((d), "POST", (path), (ct), (body), (len)), (want)); \
        ASSERT_TRUE(http_still_serves(d));                                          \
    } while (0)

static char *valid_request(void)
{
    static float x[784];
    for (int i = 0; i < 784; i++)
        x[i] = test_rand_float(-1, 2);
    return http_infer_json(x, 1, NULL);
}

/* ------------------------------------------------------------ number ranges */

/* Numbers the declared datatype cannot hold are 400 (they used to become
 * infinities); the largest values that fit, and tiny ones, pass; so do the
 * NaN / Infinity tokens for float types (they used to be malformed JSON). */
static enum test_result out_of_range_numbers(struct http_daemon *d)
{
    static float x[784];
    x[0] = 0.5f;
    char *good = http_infer_json(x, 1, NULL);
    static const struct { const char *dtype, *value; int status; } CASES[] = {
        {"FP32", "1e400", 400}, {"FP32", "-1e400", 400}, {"FP32", "1e39", 400},
        {"FP32", "3.4e38", 200}, {"FP16", "70000", 400}, {"FP16", "-65520", 400},
        {"FP16", "65504", 200}, {"BF16", "1e39", 400}, {"FP32", "1e-50", 200},
        /* Triton's NaN and infinity tokens: values of the float types, of no integer type */
        {"FP32", "NaN", 200}, {"FP32", "-Infinity", 200}, {"FP16", "Inf", 200},
        {"BF16", "-Inf", 200}, {"FP32", "-NaN", 200}, {"UINT8", "NaN", 400},
        {"INT16", "Infinity", 400}, {"FP32", "nan", 400}, {"FP32", "Infinit", 400},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        char first[40], dtype[24];
        snprintf(first, sizeof(first), "\"data\":[%s,", CASES[i].value);
        snprintf(dtype, sizeof(dtype), "\"%s\"", CASES[i].dtype);
        char *a = str_replace_once(good, "\"data\":[0.5,", first);
        char *b = str_replace_once(a, "\"FP32\"", dtype);
        long status = http_status(d, "POST", INFER, "application/json", b, strlen(b));
        free(a), free(b);
        TEST_FAIL_IF(status != CASES[i].status, "%s %s: status %ld, want %d", CASES[i].dtype, CASES[i].value,
                     status, CASES[i].status);
    }
    free(good);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_out_of_range_numbers)
{
    return http_run(&LENET, 1, NULL, out_of_range_numbers);
}

/* ------------------------------------------------------------ paths */

/* A decoded path with a control byte is 400: %00 used to cut the path
 * short ("lenet5%00x" read as "lenet5"); ordinary escapes still decode. */
static enum test_result control_bytes_in_paths(struct http_daemon *d)
{
    static const struct { const char *path; long status; } CASES[] = {
        {"/v2/models/lenet5%00x/ready", 400}, {"/v2/models/lenet5%00/ready", 400},
        {"/v2/models/lenet5%0a/ready", 400},  {"/v2/health/live%7f", 400},
        {"/v2/models/%01lenet5", 400},        {"/v2/models/len%65t5/ready", 200},
        {"/v2/models/lenet5/ready", 200},     {"/v2/models/lenet5%zz/ready", 404},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        long status = http_status(d, "GET", CASES[i].path, NULL, NULL, 0);
        TEST_FAIL_IF(status != CASES[i].status, "%s: status %ld, want %ld", CASES[i].path, status,
                     CASES[i].status);
    }
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_control_bytes_in_paths)
{
    return http_run(&LENET, 1, NULL, control_bytes_in_paths);
}

/* ------------------------------------------------------------ strict heads */

/* Heads a proxy may read differently are 400 and close the connection, so
 * the bytes after them never become a request of their own. */
static enum test_result strict_heads(struct http_daemon *d)
{
    /* The body is a whole request: read as one, it would get an answer of its own. */
    static const char BODY[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";   /* 41 bytes */
    static const struct { const char *head; int status; } CASES[] = {
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Length : 41\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.1\r\n: x\r\nHost: x\r\nContent-Length: 41\r\n\r\n", 400},
        /* after another header libmicrohttpd drops the nameless line and the
         * Content-Length: the POST, with no length left, closes after its 400 */
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\n: x\r\nContent-Length: 41\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Length: 41\r\nContent-Length: 5\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Length: 41\r\n"
         "Transfer-Encoding: chunked\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\nX\tY: 1\r\nContent-Length: 41\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.1\r\nContent-Length: 41\r\n\r\n", 400},         /* no Host */
        /* what stays accepted: the same Content-Length twice, HTTP/1.0 without Host */
        {"POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Length: 41\r\nContent-Length: 41\r\n"
         "Connection: close\r\n\r\n", 400},
        {"POST " INFER " HTTP/1.0\r\nContent-Length: 41\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        int fd = http_raw_connect(d);
        ASSERT_TRUE(fd >= 0);
        bool sent = http_raw_send(fd, CASES[i].head, strlen(CASES[i].head)) &&
                    http_raw_send(fd, BODY, sizeof(BODY) - 1);
        char out[4096];
        size_t n = 0;
        ssize_t k;
        struct timeval tv = {3, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (n + 1 < sizeof(out) && (k = recv(fd, out + n, sizeof(out) - 1 - n, 0)) > 0)
            n += (size_t)k;
        out[n] = '\0';
        close(fd);
        int status = 0, answers = 0;
        for (const char *p = out; (p = strstr(p, "HTTP/1.")); p++) {
            /* a status line: "HTTP/1.x NNN " ("HTTP/1.1" in a message is not one) */
            if (!isdigit((unsigned char)p[7]) || p[8] != ' ' || !isdigit((unsigned char)p[9]) ||
                !isdigit((unsigned char)p[10]) || !isdigit((unsigned char)p[11]) || p[12] != ' ')
                continue;
            int code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
            if (!answers++)
                status = code;
        }
        TEST_FAIL_IF(!sent || status != CASES[i].status || answers != 1,
                     "case %zu: status %d, %d answers (want %d, 1): %s", i, status, answers,
                     CASES[i].status, out);
        /* The accepted ones reached the handler, which read the body as JSON. */
        TEST_FAIL_IF(i >= 7 && !strstr(out, "malformed JSON"), "case %zu: %s", i, out);
    }
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_strict_heads) { return http_run(&LENET, 1, NULL, strict_heads); }

/* ------------------------------------------------------------ infer bodies */

static enum test_result bad_infer_bodies(struct http_daemon *d)
{
    const char *json = "application/json";
    EXPECT_POST(d, INFER, json, "", 0, 400);
    EXPECT_POST(d, INFER, json, "{\"inputs\":[{\"name\":\"input\"", 27, 400);
    EXPECT_POST(d, INFER, json, "[1,2,3]", 7, 400);
    EXPECT_POST(d, INFER, json, "{\"inputs\":[]}", 13, 400);
    EXPECT_POST(d, INFER, json, "{} trailing", 11, 400);

    char *good = valid_request();
    size_t n = strlen(good);
    EXPECT_POST(d, INFER, json, good, n / 2, 400);   /* truncated */
    static const struct { const char *from, *to; int status; } EDITS[] = {
        {"\"FP32\"", "\"INT64\"", 400},          /* lossy datatype */
        {"\"FP32\"", "\"BYTES\"", 400},
        {"\"FP32\"", "\"FLOAT\"", 400},          /* no such datatype */
        {"[1,1,28,28]", "[1,28,28]", 400},       /* rank */
        {"[1,1,28,28]", "[1,1,28,27]", 400},     /* dimension */
        {"[1,1,28,28]", "[2,1,28,28]", 400},     /* element count: 784 for 1568 */
        {"[1,1,28,28]", "[0,1,28,28]", 400},
        {"[1,1,28,28]", "[65,1,28,28]", 400},    /* above max_batch_size */
        {"[1,1,28,28]", "[-1,1,28,28]", 400},
        {"[1,1,28,28]", "[1.5,1,28,28]", 400},
        {"\"data\":[", "\"data\":[\"x\",", 400}, /* not a number */
        {"\"data\":[", "\"data\":[1,", 400},     /* 785 elements */
        {"\"name\":\"input\"", "\"name\":\"image\"", 400},   /* unknown input */
        {"]}", "],\"parameters\":{\"shared_memory_region\":\"r\"}}", 400},
        {"}]}", "}],\"outputs\":[{\"name\":\"probs\"}]}", 400},  /* unknown output */
        {"}]}", "}],\"outputs\":[{\"name\":\"logits\",\"parameters\":{\"classification\":0}}]}", 400},
        {"}]}", "}],\"parameters\":{\"timeout\":-5}}", 400},
        {"{\"inputs\"", "{\"id\":7,\"inputs\"", 400},
    };
    for (size_t i = 0; i < sizeof(EDITS) / sizeof(EDITS[0]); i++) {
        char *bad = str_replace_once(good, EDITS[i].from, EDITS[i].to);
        long status = http_status(d, "POST", INFER, json, bad, strlen(bad));
        free(bad);
        TEST_FAIL_IF(status != EDITS[i].status, "edit %zu (%s -> %s): status %ld, want %d", i,
                     EDITS[i].from, EDITS[i].to, status, EDITS[i].status);
    }
    ASSERT_TRUE(http_still_serves(d));
    /* The input twice; the input missing (only an unknown one given). */
    char *twice = str_replace_once(good, "}]}", "},{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":[]}]}");
    EXPECT_POST(d, INFER, json, twice, strlen(twice), 400);
    free(twice);

    /* Unknown model and version: 404 on infer, classify and metadata. */
    EXPECT_POST(d, "/v2/models/nope/infer", json, good, n, 404);
    EXPECT_POST(d, "/v2/models/lenet5/versions/2/infer", json, good, n, 404);
    EXPECT_POST(d, "/v2/models/lenet5/versions/1/infer", json, good, n, 200);
    EXPECT_POST(d, "/v2/models/nope/classify", "image/png", "x", 1, 404);
    free(good);

    /* JSON nested 100000 deep is refused before parsing. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    EXPECT_POST(d, INFER, json, deep, 2 * depth, 400);
    memset(deep, '{', 1);
    for (size_t i = 0; i < depth; i++)
        deep[i] = i % 2 ? '[' : '{';
    EXPECT_POST(d, INFER, json, deep, depth, 400);
    free(deep);
    return TEST_PASS;
}

TEST(http_bad_infer_bodies) { return http_run(&LENET, 1, NULL, bad_infer_bodies); }

/* ------------------------------------------------------------ transport */

static enum test_result bad_transport(struct http_daemon *d)
{
    /* Content-Length of 2 GB: refused from the headers alone. */
    int fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    const char big[] = "POST " INFER " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Length: 2147483648\r\n\r\n{\"inputs\":";
    ASSERT_TRUE(http_raw_send(fd, big, sizeof(big) - 1));
    int status = http_raw_status(fd, 5000);
    close(fd);
    ASSERT_EQ_INT(status, 413);
    ASSERT_TRUE(http_still_serves(d));

    /* A chunked body that grows past --max-body-bytes (64k here): discarded,
     * answered 413 when it ends. */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    const char head[] = "POST " INFER " HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n";
    bool sent = http_raw_send(fd, head, sizeof(head) - 1);
    static char chunk[16 * 1024 + 16];
    const size_t size = (size_t)16 * 1024;
    int hl = snprintf(chunk, sizeof(chunk), "%zx\r\n", size);
    memset(chunk + hl, ' ', size);
    memcpy(chunk + hl + size, "\r\n", sizeof("\r\n"));
    for (int i = 0; i < 6 && sent; i++)
        sent = http_raw_send(fd, chunk, (size_t)hl + size + 2);
    if (sent)
        http_raw_send(fd, "0\r\n\r\n", 5);
    status = http_raw_status(fd, 5000);
    close(fd);
    ASSERT_EQ_INT(status, 413);
    ASSERT_TRUE(http_still_serves(d));

    /* Over --max-tensor-elements (4096 here): by the shape, and by sheer
     * count of JSON values that are not numbers. */
    static float x8[8 * 784];
    char *eight = http_infer_json(x8, 8, NULL);
    EXPECT_POST(d, INFER, "application/json", eight, strlen(eight), 413);
    free(eight);
    size_t n_strings = 10000, len = 0;
    char *strings = malloc(n_strings * 4 + 256);
    size_t cap = n_strings * 4 + 256;
    len += (size_t)snprintf(strings, cap, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\","
                                    "\"shape\":[1,1,28,28],\"data\":[");
    for (size_t i = 0; i < n_strings; i++)
        len += (size_t)snprintf(strings + len, cap - len, "%s\"\"", i ? "," : "");
    len += (size_t)snprintf(strings + len, cap - len, "]}]}");
    EXPECT_POST(d, INFER, "application/json", strings, len, 413);
    free(strings);

    /* Not HTTP at all. */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(http_raw_send(fd, "HELLO\r\n\r\n", 9));
    status = http_raw_status(fd, 5000);
    close(fd);
    ASSERT_TRUE(status == 400 || status == 0);
    ASSERT_TRUE(http_still_serves(d));

    /* A client that sends headers announcing a body, then nothing: the
     * daemon keeps serving others and closes it after --idle-timeout (1 s). */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    const char idle[] = "POST " INFER " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n";
    ASSERT_TRUE(http_raw_send(fd, idle, sizeof(idle) - 1));
    ASSERT_TRUE(http_still_serves(d));
    status = http_raw_status(fd, 4000);
    close(fd);
    ASSERT_EQ_INT(status, 0); /* closed, no answer */
    ASSERT_TRUE(http_still_serves(d));

    /* A body trickling in for longer than --request-timeout (2 s): the
     * connection is closed (libmicrohttpd cannot answer mid-body). */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    const char slow[] = "POST " INFER " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n";
    sent = http_raw_send(fd, slow, sizeof(slow) - 1);
    status = -1;
    int rounds = 0;
    for (; rounds < 20 && sent && status < 0; rounds++) {
        usleep(300 * 1000);
        sent = http_raw_send(fd, " ", 1);
        status = http_raw_status(fd, 1);
    }
    close(fd);
    ASSERT_TRUE(!sent || status == 0);
    ASSERT_GE(rounds, 6);   /* not before the 2 s */
    ASSERT_TRUE(rounds < 20);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_transport)
{
    static const char *const LIMITS[] = {"--max-body-bytes", "64k", "--idle-timeout", "1",
                                         "--request-timeout", "2", "--max-tensor-elements",
                                         "4096", NULL};
    return http_run(&LENET, 1, LIMITS, bad_transport);
}

/* ------------------------------------------------------------ images */

static enum test_result bad_images(struct http_daemon *d)
{
    uint8_t px[28 * 28];
    for (int i = 0; i < 28 * 28; i++)
        px[i] = (uint8_t)test_rand_int(0, 255);
    uint8_t *png, *jpeg, *tiny;
    size_t png_len, jpeg_len, tiny_len;
    ASSERT_TRUE(http_encode_png(px, 28, 28, &png, &png_len));
    ASSERT_TRUE(http_encode_jpeg(px, 28, 28, 90, &jpeg, &jpeg_len));
    ASSERT_TRUE(http_encode_png(px, 1, 1, &tiny, &tiny_len));
    enum test_result r = TEST_FAIL;

    EXPECT_POST(d, CLASSIFY, "image/png", png, png_len, 200);
    EXPECT_POST(d, CLASSIFY, "image/jpeg", jpeg, jpeg_len, 200);
    EXPECT_POST(d, CLASSIFY, "image/png", "", 0, 400);                       /* empty */
    EXPECT_POST(d, CLASSIFY, "image/png", "this is not a picture", 21, 415); /* text as image */
    EXPECT_POST(d, CLASSIFY, "text/plain", "this is not a picture", 21, 415);
    EXPECT_POST(d, CLASSIFY, "image/png", png, png_len / 2, 400);            /* truncated PNG */
    EXPECT_POST(d, CLASSIFY, "image/png", png, 40, 400);
    EXPECT_POST(d, CLASSIFY, "image/jpeg", jpeg, jpeg_len / 2, 400);         /* truncated JPEG */
    EXPECT_POST(d, CLASSIFY, "image/jpeg", jpeg, 200, 400);
    EXPECT_POST(d, CLASSIFY, "image/png", tiny, tiny_len, 200);              /* 1x1 is an image */
    ASSERT_TRUE(http_png_set_size(png, png_len, 60000, 60000));              /* claims 3.6 Gpx */
    EXPECT_POST(d, CLASSIFY, "image/png", png, png_len, 413);
    ASSERT_TRUE(http_jpeg_set_size(jpeg, jpeg_len, 60000, 60000));
    EXPECT_POST(d, CLASSIFY, "image/jpeg", jpeg, jpeg_len, 413);
    EXPECT_POST(d, CLASSIFY "?top_k=0", "image/png", tiny, tiny_len, 400);
    EXPECT_POST(d, CLASSIFY "?top_k=abc", "image/png", tiny, tiny_len, 400);
    EXPECT_POST(d, CLASSIFY "?top_k=100", "image/png", tiny, tiny_len, 200);  /* clamped */

    /* Multipart: no boundary; a part that never ends; no parts; junk. */
    const char *mp = "multipart/form-data; boundary=XyZ";
    char body[512];
    int n = snprintf(body, sizeof(body), "--XyZ\r\nContent-Disposition: form-data; name=\"image\"; "
                                         "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n");
    memcpy(body + n, tiny, tiny_len);
    size_t len = (size_t)n + tiny_len;
    EXPECT_POST(d, CLASSIFY, "multipart/form-data", body, len, 400);
    EXPECT_POST(d, CLASSIFY, mp, body, len, 400);                             /* unterminated */
    memcpy(body + len, "\r\n--XyZ--\r\n", sizeof("\r\n--XyZ--\r\n"));
    EXPECT_POST(d, CLASSIFY, mp, body, len + 11, 200);                        /* now complete */
    EXPECT_POST(d, CLASSIFY, mp, "--XyZ--\r\n", 9, 400);
    EXPECT_POST(d, CLASSIFY, mp, "no boundary line here", 21, 400);
    EXPECT_POST(d, CLASSIFY, mp, "--XyZ\r\nContent-Type: image/png", 30, 400); /* headers never end */
    EXPECT_POST(d, CLASSIFY, "multipart/form-data; boundary=\"unclosed", body, len + 11, 400);
    r = TEST_PASS;
    free(png);
    free(jpeg);
    free(tiny);
    return r;
}

TEST(http_bad_images_and_multipart) { return http_run(&LENET, 1, NULL, bad_images); }

static double metric_now(const struct http_daemon *d, const char *series)
{
    struct http_resp r;
    double v = http_get(d, "/metrics", &r) && r.status == 200 ? http_metric(r.body, series) : -1;
    http_resp_free(&r);
    return v;
}

/* Connections that never bring a request inferd sees (a slow head timed
 * out, a request line libmicrohttpd answers itself) and requests cut off
 * before their answer are counted in /metrics, not invisible. */
static enum test_result unseen_connections_counted(struct http_daemon *d)
{
    const char *unseen = "inferd_connections_without_request_total";
    double before = metric_now(d, unseen);
    ASSERT_TRUE(before >= 0);
    int slow = http_raw_connect(d), garbage = http_raw_connect(d);
    ASSERT_TRUE(slow >= 0 && garbage >= 0);
    ASSERT_TRUE(http_raw_send(slow, "GET /v2/hea", 11));   /* then nothing: --idle-timeout 1 */
    ASSERT_TRUE(http_raw_send(garbage, "\x01\x02 nonsense\r\n\r\n", 15));
    int garbage_status = http_raw_status(garbage, 3000);
    int slow_status = http_raw_status(slow, 4000);   /* closed without an answer */
    close(garbage);
    close(slow);
    /* the close is noticed on the server's side a moment later */
    double after = before;
    for (int i = 0; i < 50 && after < before + 2; i++) {
        usleep(20000);
        after = metric_now(d, unseen);
    }
    printf("  head timed out: status %d; garbage request line: status %d; %s %.0f -> %.0f\n", slow_status,
           garbage_status, unseen, before, after);
    ASSERT_EQ_INT(slow_status, 0);
    ASSERT_EQ_INT((long)(after - before), 2);
    ASSERT_TRUE(metric_now(d, "inferd_requests_cut_total{reason=\"timeout\"}") >= 0);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_unseen_connections_counted)
{
    const char *const args[] = {"--idle-timeout", "1", NULL};
    return http_run(&LENET, 1, args, unseen_connections_counted);
}

/* A series that may be absent yet (a status not answered so far): 0. */
static double counter_now(const struct http_daemon *d, const char *series)
{
    double v = metric_now(d, series);
    return v < 0 ? 0 : v;
}

/* Issue 22 item 7: /metrics counts every status inferd answers, by code
 * (errors included, strict-head 400s too), and the connections open right
 * now: a kept-alive connection held idle is among them until it closes. */
static enum test_result statuses_and_open_connections_counted(struct http_daemon *d)
{
    static const char *const SERIES[] = {"inferd_http_responses_total{code=\"400\"}",
                                         "inferd_http_responses_total{code=\"404\"}",
                                         "inferd_http_responses_total{code=\"405\"}"};
    double before[3];
    for (int i = 0; i < 3; i++)
        before[i] = counter_now(d, SERIES[i]);
    double open_before = metric_now(d, "inferd_open_connections");
    ASSERT_TRUE(open_before >= 1);   /* the scrape's own connection at least */
    /* held: a kept-alive connection that answered once and stays open */
    int held = http_raw_connect(d);
    ASSERT_TRUE(held >= 0);
    static const char LIVE[] = "GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_TRUE(http_raw_send(held, LIVE, sizeof(LIVE) - 1));
    ASSERT_EQ_INT(http_raw_status(held, 3000), 200);
    double open_held = metric_now(d, "inferd_open_connections");
    /* 404, 405 and two 400s (a bad body, a head with two different lengths) */
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/nosuch", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "DELETE", "/v2/health/live", NULL, NULL, 0), 405);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/models/lenet5/infer", "application/json", "{", 1), 400);
    int fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    static const char TWO_LENGTHS[] = "POST /v2/models/lenet5/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                                      "Content-Length: 3\r\n\r\n{}";
    ASSERT_TRUE(http_raw_send(fd, TWO_LENGTHS, sizeof(TWO_LENGTHS) - 1));
    ASSERT_EQ_INT(http_raw_status(fd, 3000), 400);
    close(fd);
    /* the server counts an answer just after queueing it: give the last a moment */
    static const double WANT[3] = {2, 1, 1};
    double after[3] = {0};
    for (int tries = 0; tries < 50; tries++) {
        bool all = true;
        for (int i = 0; i < 3; i++) {
            after[i] = counter_now(d, SERIES[i]);
            all &= after[i] - before[i] >= WANT[i];
        }
        if (all)
            break;
        usleep(20000);
    }
    close(held);
    double open_after = open_held;
    for (int i = 0; i < 50 && open_after >= open_held; i++) {
        usleep(20000);
        open_after = metric_now(d, "inferd_open_connections");
    }
    printf("  400 +%.0f, 404 +%.0f, 405 +%.0f; inferd_open_connections %.0f, %.0f with one held, %.0f after it "
           "closed\n", after[0] - before[0], after[1] - before[1], after[2] - before[2], open_before, open_held,
           open_after);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ_INT((long)(after[i] - before[i]), (long)WANT[i]);
    ASSERT_TRUE(open_held >= 2);   /* the held one and the scrape's */
    ASSERT_TRUE(open_after < open_held);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_statuses_and_open_connections_counted)
{
    return http_run(&LENET, 1, NULL, statuses_and_open_connections_counted);
}

/* A head trickled a byte every 200 ms never trips --idle-timeout; the
 * head deadline (--header-timeout 1) closes it after about a second. The
 * same connection sending whole requests in time is served. */
static enum test_result trickled_head_cut(struct http_daemon *d)
{
    static const char HEAD[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    int fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    double t0 = test_now_ms();
    size_t sent = 0;
    bool open = true;
    while (open && sent < sizeof(HEAD) - 1 && test_now_ms() - t0 < 6000) {
        open = send(fd, HEAD + sent, 1, MSG_NOSIGNAL) == 1;
        sent += open;
        char c;
        struct timeval tv = {0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (recv(fd, &c, 1, 0) == 0)   /* the server closed it */
            open = false;
    }
    double secs = (test_now_ms() - t0) / 1e3;
    close(fd);
    printf("  trickled %zu of %zu head bytes; closed after %.2f s\n", sent, sizeof(HEAD) - 1, secs);
    ASSERT_TRUE(!open);
    ASSERT_TRUE(secs >= 0.9 && secs < 3.0);
    /* keep-alive: two quick requests on one connection, a pause under the deadline between them */
    fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(http_raw_send(fd, HEAD, sizeof(HEAD) - 1));
    int first = http_raw_status(fd, 2000);
    usleep(500000);
    ASSERT_TRUE(http_raw_send(fd, HEAD, sizeof(HEAD) - 1));
    int second = http_raw_status(fd, 2000);
    close(fd);
    ASSERT_EQ_INT(first, 200);
    ASSERT_EQ_INT(second, 200);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_trickled_head_cut)
{
    const char *const args[] = {"--header-timeout", "1", NULL};
    return http_run(&LENET, 1, args, trickled_head_cut);
}

/* A body trickled at 500 bytes/s, with --min-body-rate 2000: closed once
 * it falls behind (2 s of grace, then 2000 bytes/s on average), long
 * before --request-timeout; a body sent at once is served. */
static enum test_result slow_body_cut(struct http_daemon *d)
{
    static const char HEAD[] = "POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               "Content-Length: 100000\r\n\r\n";
    static char chunk[50];
    memset(chunk, ' ', sizeof(chunk));
    int fd = http_raw_connect(d);
    ASSERT_TRUE(fd >= 0 && http_raw_send(fd, HEAD, sizeof(HEAD) - 1));
    double t0 = test_now_ms();
    bool open = true;
    size_t sent = 0;
    while (open && test_now_ms() - t0 < 8000) {
        open = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) == (ssize_t)sizeof(chunk);
        sent += open ? sizeof(chunk) : 0;
        char c;
        struct timeval tv = {0, 100000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (recv(fd, &c, 1, 0) == 0)
            open = false;
    }
    double secs = (test_now_ms() - t0) / 1e3;
    close(fd);
    printf("  trickled %zu body bytes at about 500 bytes/s; closed after %.2f s\n", sent, secs);
    ASSERT_TRUE(!open);
    ASSERT_TRUE(secs >= 2.0 && secs < 5.0);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_bad_slow_body_cut)
{
    const char *const args[] = {"--min-body-rate", "2000", NULL};
    return http_run(&LENET, 1, args, slow_body_cut);
}
