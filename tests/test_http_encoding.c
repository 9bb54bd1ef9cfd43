/*
 * test_http_encoding.c - compressed request bodies (Content-Encoding: gzip
 * or deflate, as tritonclient's request_compression_algorithm sends them):
 * decoded to the same answer as the plain body, under the same size limit
 * (a small body that inflates past --max-body-bytes is 413, not memory),
 * corrupt data 400, an encoding the server lacks 415.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "http_harness.h"
#include "test.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

/* in compressed with zlib's window_bits (31 gzip, 15 zlib, -15 raw deflate). */
static uint8_t *compress_with(const void *in, size_t n, int window_bits, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)n);
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    bool ok = out && deflate(&z, Z_FINISH) == Z_STREAM_END;
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static long post_encoded(struct http_daemon *d, const char *encoding, const void *body, size_t len,
                         float *logits)
{
    char header[64];
    snprintf(header, sizeof(header), "Content-Encoding: %s", encoding);
    const char *const headers[] = {"Content-Type: application/json", header, NULL};
    struct http_resp r;
    if (!http_request(d, "POST", "/v2/models/lenet5/infer", headers, body, len, &r))
        return -1;
    long status = r.status;
    if (status == 200 && logits && !http_parse_logits(r.body, logits, 10))
        status = -3;
    if (status != 200)
        printf("  %s: %ld %s\n", encoding, status, r.body ? r.body : "");
    http_resp_free(&r);
    return status;
}

static enum test_result compressed_bodies(struct http_daemon *d)
{
    float x[784 * 2], plain[10], got[10];
    test_rand_fill(x, (int64_t)784 * 2, -1, 1);
    char *json = http_infer_json(x, 1, NULL);
    ASSERT_TRUE(json != NULL);
    size_t n = strlen(json);
    ASSERT_EQ_INT(post_encoded(d, "identity", json, n, plain), 200);
    static const struct {
        const char *encoding;
        int window_bits;
    } OK[] = {{"gzip", 31}, {"x-gzip", 31}, {"deflate", 15}, {"deflate", -15}, {" GZIP ", 31}};
    for (size_t i = 0; i < sizeof(OK) / sizeof(OK[0]); i++) {
        size_t len;
        uint8_t *z = compress_with(json, n, OK[i].window_bits, &len);
        ASSERT_TRUE(z != NULL);
        long st = post_encoded(d, OK[i].encoding, z, len, got);
        free(z);
        ASSERT_EQ_INT(st, 200);
        ASSERT_TRUE(test_same_bits(got, plain, sizeof(got)));
    }
    /* corrupt, truncated, trailing bytes: 400; brotli: 415 */
    size_t len;
    uint8_t *z = compress_with(json, n, 31, &len);
    ASSERT_TRUE(z != NULL && len > 40);
    long truncated = post_encoded(d, "gzip", z, len / 2, NULL);
    z[len / 2] ^= 0x55;
    long corrupt = post_encoded(d, "gzip", z, len, NULL);
    z[len / 2] ^= 0x55;
    uint8_t *longer = malloc(len + 3);
    ASSERT_TRUE(longer != NULL);
    memcpy(longer, z, len);
    longer[len] = 'x', longer[len + 1] = 'y', longer[len + 2] = 'z';
    long trailing = post_encoded(d, "gzip", longer, len + 3, NULL);
    long brotli = post_encoded(d, "br", z, len, NULL);
    free(longer);
    free(z);
    free(json);
    ASSERT_EQ_INT(truncated, 400);
    ASSERT_EQ_INT(corrupt, 400);
    ASSERT_EQ_INT(trailing, 400);
    ASSERT_EQ_INT(brotli, 415);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_compressed_request_bodies) { return http_run(&LENET, 1, NULL, compressed_bodies); }

/* 8 MB of zeros gzip to about 8 KB; the server's limit is 1 MB. */
static enum test_result compression_bomb(struct http_daemon *d)
{
    size_t n = (size_t)8 << 20, len;
    char *zeros = calloc(n, 1);
    ASSERT_TRUE(zeros != NULL);
    uint8_t *z = compress_with(zeros, n, 31, &len);
    free(zeros);
    ASSERT_TRUE(z != NULL && len < (size_t)64 * 1024);
    long st = post_encoded(d, "gzip", z, len, NULL);
    free(z);
    ASSERT_EQ_INT(st, 413);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(http_compressed_body_limit)
{
    const char *const args[] = {"--max-body-bytes", "1048576", NULL};
    return http_run(&LENET, 1, args, compression_bomb);
}
