/*
 * test_http_parsers.c - unit tests of the daemon's request parsers, which
 * see untrusted bytes: the JSON number fast path (bit-identical to strtod),
 * the tensor data it takes out of a request, the JSON depth check and the
 * multipart/form-data splitter.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_buf.h"
#include "server/srv_float_text.h"
#include "server/srv_json.h"
#include "server/srv_json_numbers.h"
#include "server/srv_multipart.h"
#include "test.h"

static bool same_bits(double a, double b) { return test_same_bits(&a, &b, sizeof(a)); }

TEST(http_parser_json_number_equals_strtod)
{
    static const char *const FIXED[] = {
        "0", "-0", "1", "-1", "0.1", "1e10", "1E-10", "123456789012345", "1234567890123456789",
        "0.000001234", "3.4028234663852886e38", "1e-320", "2.2250738585072014e-308", "1e308",
        "9007199254740993", "0.30000000000000004", "1.00000000000000000000001", "1e22", "1e23",
        "4.9406564584124654e-324", "123.456e-7", "-1e-400"};
    for (size_t i = 0; i < sizeof(FIXED) / sizeof(FIXED[0]); i++) {
        double got;
        ASSERT_TRUE(srv_json_number(FIXED[i], strlen(FIXED[i]), &got));
        TEST_FAIL_IF(!same_bits(got, strtod(FIXED[i], NULL)), "%s: %.17g vs strtod %.17g",
                     FIXED[i], got, strtod(FIXED[i], NULL));
    }
    /* Random floats printed the ways clients print them. */
    for (int i = 0; i < 200000; i++) {
        char text[64];
        double f = (double)(test_rand_float(-3, 3) * powf(10.0f, (float)test_rand_int(-12, 12)));
        switch (i % 6) {
        case 0: snprintf(text, sizeof(text), "%.9g", f); break;
        case 1: snprintf(text, sizeof(text), "%.7g", f); break;
        case 2: snprintf(text, sizeof(text), "%.17g", f); break;
        case 3: snprintf(text, sizeof(text), "%f", f); break;
        case 4: snprintf(text, sizeof(text), "%.3e", f); break;
        default: snprintf(text, sizeof(text), "%.12f", f); break;
        }
        double got;
        ASSERT_TRUE(srv_json_number(text, strlen(text), &got));
        TEST_FAIL_IF(!same_bits(got, strtod(text, NULL)), "%s: %.17g vs strtod %.17g", text, got,
                     strtod(text, NULL));
    }
    /* Mantissas of 16 to 19 digits (the 128-bit path), as Python and numpy
     * print float32 data (%.17g), and halfway cases that must tie to even. */
    static const char *const LONG[] = {"9007199254740993", "9007199254740995", "18014398509481985",
                                       "1234567890123456789", "0.30000001192092896",
                                       "1.0000000000000002220446049250313", "4.35072e-05",
                                       "0.1000000000000000055511151231257827", "9999999999999999999",
                                       "9.999999999999999999e-23", "1.2345678901234567e19",
                                       /* exact ties in a 64-bit quotient: the 128-bit path decides */
                                       "4503599627370496.5", "4503599627370497.5", "-2251799813685248.25"};
    for (size_t i = 0; i < sizeof(LONG) / sizeof(LONG[0]); i++) {
        double got;
        ASSERT_TRUE(srv_json_number(LONG[i], strlen(LONG[i]), &got));
        TEST_FAIL_IF(!same_bits(got, strtod(LONG[i], NULL)), "%s: %.17g vs strtod %.17g", LONG[i],
                     got, strtod(LONG[i], NULL));
    }
    for (int i = 0; i < 300000; i++) {
        char text[64];
        uint64_t mant = ((uint64_t)test_rand_int(0, 1 << 30) << 33) ^ ((uint64_t)test_rand_int(0, 1 << 30) << 3) ^
                        (uint64_t)test_rand_int(0, 7);
        int digits = snprintf(text, sizeof(text), "%llu", (unsigned long long)mant);
        int e = test_rand_int(-22 - digits, 19);
        snprintf(text + digits, sizeof(text) - (size_t)digits, "e%d", e);
        double got;
        ASSERT_TRUE(srv_json_number(text, strlen(text), &got));
        TEST_FAIL_IF(!same_bits(got, strtod(text, NULL)), "%s: %.17g vs strtod %.17g", text, got,
                     strtod(text, NULL));
    }
    static const char *const NOT_NUMBERS[] = {"", "-", "+1", ".5", "1.", "01", "1e", "1e+",
                                              "0x10", "nan", "inf", "1 ", "--1", "1.2.3", "true",
                                              /* past a double: left to cJSON, whose infinity is refused */
                                              "1e400", "-1e400",
                                              /* RapidJSON's tokens are case- and spelling-exact */
                                              "NAN", "Infinit", "Infinityy", "+Inf", "NaNa", "-inf"};
    for (size_t i = 0; i < sizeof(NOT_NUMBERS) / sizeof(NOT_NUMBERS[0]); i++) {
        double v;
        TEST_FAIL_IF(srv_json_number(NOT_NUMBERS[i], strlen(NOT_NUMBERS[i]), &v),
                     "'%s' taken as a number", NOT_NUMBERS[i]);
    }
    return TEST_PASS;
}

/* The NaN and infinity tokens of RapidJSON's kParseNanAndInfFlag, as
 * Triton accepts them. */
TEST(http_parser_json_nan_and_infinity)
{
    static const struct { const char *text; double value; } CASES[] = {
        {"Inf", INFINITY}, {"-Inf", -INFINITY}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        double v = 0;
        ASSERT_TRUE(srv_json_number(CASES[i].text, strlen(CASES[i].text), &v));
        TEST_FAIL_IF(v != CASES[i].value, "%s: %g", CASES[i].text, v);
    }
    double v = 0;
    ASSERT_TRUE(srv_json_number("NaN", 3, &v) && isnan(v));
    ASSERT_TRUE(srv_json_number("-NaN", 4, &v) && isnan(v));
    return TEST_PASS;
}

/* Takes numbers from text (a copy) and returns what cJSON sees afterwards. */
static char *take(const char *text, struct srv_json_numbers *n)
{
    char *copy = strdup(text);
    copy[srv_json_numbers_take(copy, strlen(copy), 1000, n)] = '\0';
    return copy;
}

/* Inside an array a number's digits are read several at a time up to the
 * first non-digit that follows (srv_json_numbers.c): every length of digit
 * run, before each byte that may end it, still gives strtod's value. */
TEST(http_parser_json_numbers_in_arrays_equal_strtod)
{
    enum { N = 1000, TEXT_MAX = 48 };
    static const char *const SEPARATORS[] = {",", ", ", " ,", "\n,\t"};
    static char text[N][TEXT_MAX];
    static char body[N * (TEXT_MAX + 4) + 64];
    size_t len = (size_t)snprintf(body, sizeof(body), "{\"inputs\":[{\"data\":[");
    for (int i = 0; i < N; i++) {
        double f = (double)(test_rand_float(-3, 3) * powf(10.0f, (float)test_rand_int(-9, 9)));
        switch (test_rand_int(0, 7)) {   /* digit runs of every length, before '.', 'e' and separators */
        case 0: snprintf(text[i], TEXT_MAX, "%.7g", f); break;
        case 1: snprintf(text[i], TEXT_MAX, "%.9g", f); break;
        case 2: snprintf(text[i], TEXT_MAX, "%.3g", f); break;
        case 3: snprintf(text[i], TEXT_MAX, "%.17g", f); break;
        case 4: snprintf(text[i], TEXT_MAX, "%.1f", f); break;
        case 5: snprintf(text[i], TEXT_MAX, "%.12f", f); break;
        case 6: snprintf(text[i], TEXT_MAX, "%.4e", f); break;
        default: snprintf(text[i], TEXT_MAX, "%.0f", f); break;
        }
        len += (size_t)snprintf(body + len, sizeof(body) - len, "%s%s", i ? SEPARATORS[test_rand_int(0, 3)] : "",
                                text[i]);
    }
    snprintf(body + len, sizeof(body) - len, "]}]}");
    struct srv_json_numbers n;
    char *t = take(body, &n);
    free(t);
    ASSERT_TRUE(n.complete);
    ASSERT_EQ_INT(n.count[0], N);
    for (int i = 0; i < N; i++)
        TEST_FAIL_IF(!same_bits(n.doubles[0][i], strtod(text[i], NULL)), "%s: %.17g vs strtod %.17g", text[i],
                     n.doubles[0][i], strtod(text[i], NULL));
    srv_json_numbers_free(&n);
    return TEST_PASS;
}

TEST(http_parser_json_numbers_take)
{
    struct srv_json_numbers n;
    char *t = take("{\"id\":\"x\",\"inputs\":[{\"name\":\"a\",\"data\":[[1,2],[3,4.5e1]]},"
                   "{\"data\":[true]},7,{\"data\":[-0.25],\"data\":[9]}]}", &n);
    ASSERT_EQ_INT(n.count[0], 4);
    ASSERT_TRUE(n.doubles[0][1] == 2 && n.doubles[0][3] == 45);
    ASSERT_TRUE(n.doubles[1] == NULL);                 /* booleans stay for cJSON */
    ASSERT_TRUE(n.doubles[2] == NULL);
    ASSERT_EQ_INT(n.count[3], 1);                     /* the first "data", as cJSON picks */
    ASSERT_TRUE(n.doubles[3][0] == -0.25);
    ASSERT_FALSE(n.complete);                         /* [true] is left for cJSON */
    struct rt_error err;
    cJSON *root = srv_json_parse(t, strlen(t), 32, &err);
    ASSERT_TRUE(root != NULL);                        /* still valid JSON */
    const cJSON *in0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "inputs"), 0);
    ASSERT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(in0, "data")), 0);
    cJSON_Delete(root);
    free(t);
    srv_json_numbers_free(&n);

    /* complete: every tensor's data taken, so cJSON sees only the small change. */
    t = take("{\"inputs\":[{\"name\":\"a\",\"data\":[1,NaN,-Infinity]},{\"binary\":1}],\"x\":[1,2]}", &n);
    ASSERT_TRUE(n.complete && n.count[0] == 3 && isnan(n.doubles[0][1]) && n.doubles[0][2] == -INFINITY);
    ASSERT_STR_EQ(t, "{\"inputs\":[{\"name\":\"a\",\"data\":[]},{\"binary\":1}],\"x\":[1,2]}");
    free(t);
    srv_json_numbers_free(&n);

    /* Two arrays cut out; cJSON's error offsets name bytes of the text as sent. */
    static const char SENT[] = "{\"inputs\":[{\"data\":[1, 2, 3]},{\"data\":[[4],[5]]}],\"x\":tru}";
    t = take(SENT, &n);
    ASSERT_STR_EQ(t, "{\"inputs\":[{\"data\":[]},{\"data\":[]}],\"x\":tru}");
    ASSERT_TRUE(n.cuts.n == 2 && n.count[0] == 3 && n.count[1] == 2 && n.doubles[1][1] == 5);
    ASSERT_EQ_INT(n.depth, 5);                        /* {"inputs":[{"data":[[ */
    ASSERT_TRUE(srv_json_parse_checked(t, strlen(t), &n.cuts, &err) == NULL);
    char want[64];
    snprintf(want, sizeof(want), "near byte %zu", strlen(SENT) - 4);  /* the "tru}" */
    ASSERT_STR_CONTAINS(err.msg, want);
    free(t);
    srv_json_numbers_free(&n);
    t = take("{\"inputs\":[{\"d\\u0061ta\":[1]}]}", &n);   /* may decode to "data" */
    ASSERT_FALSE(n.complete);
    free(t);
    t = take("{\"inputs\":[{\"data\":[1,\"x\"]}]}", &n);
    ASSERT_FALSE(n.complete);
    free(t);

    /* An escaped key that cJSON could read as "inputs" or "data" disables the take. */
    t = take("{\"\\u0069nputs\":[{\"data\":[1]}],\"inputs\":[{\"data\":[2]}]}", &n);
    ASSERT_TRUE(n.doubles[0] == NULL);
    free(t);
    t = take("{\"inputs\":[{\"d\\u0061ta\":[1],\"data\":[2]}]}", &n);
    ASSERT_TRUE(n.doubles[0] == NULL);
    free(t);
    /* Over the element budget: left to the normal path. */
    char big[8192];
    int len = snprintf(big, sizeof(big), "{\"inputs\":[{\"data\":[");
    for (int i = 0; i < 1001; i++)
        len += snprintf(big + len, sizeof(big) - (size_t)len, "%s1", i ? "," : "");
    snprintf(big + len, sizeof(big) - (size_t)len, "]}]}");
    t = take(big, &n);
    ASSERT_TRUE(n.doubles[0] == NULL);
    free(t);
    /* Malformed documents are left alone and never read past their end. */
    static const char *const BROKEN[] = {"{\"inputs\":[{\"data\":[1,2", "{\"inputs\":[{\"data\"",
                                         "{\"inputs\"", "{", "[", "{\"inputs\":[{\"data\":[1,]}]}",
                                         "{\"inputs\":[{\"data\":[1 2]}]}"};
    for (size_t i = 0; i < sizeof(BROKEN) / sizeof(BROKEN[0]); i++) {
        t = take(BROKEN[i], &n);
        ASSERT_TRUE(n.doubles[0] == NULL);
        ASSERT_STR_EQ(t, BROKEN[i]);
        free(t);
    }
    return TEST_PASS;
}

/* An input whose datatype, before its data, says FP32 or BF16 is taken as
 * floats - each (float) of strtod's double, the tensor the server keeps -
 * and any other as doubles; a number past FP32 is left for cJSON. */
TEST(http_parser_json_numbers_floats_by_datatype)
{
    struct srv_json_numbers n;
    char *t = take("{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"data\":[0.1,-2.5e-3,NaN,1e-46]},"
                   "{\"datatype\":\"BF16\",\"data\":[[3.4028235e38]]},"
                   "{\"datatype\":\"UINT8\",\"data\":[7]},"
                   "{\"data\":[0.1],\"datatype\":\"FP32\"},"
                   "{\"datatype\":\"FP32\",\"datatype\":\"INT8\",\"data\":[1]},"
                   "{\"datatype\":\"FP\\u0033\\u0032\",\"data\":[1]}]}", &n);
    ASSERT_TRUE(n.complete);
    ASSERT_TRUE(n.floats[0] && !n.doubles[0] && n.count[0] == 4);
    ASSERT_TRUE(n.floats[0][0] == (float)0.1 && n.floats[0][1] == (float)-2.5e-3);
    ASSERT_TRUE(isnan(n.floats[0][2]) && n.floats[0][3] == 0.0f);
    ASSERT_TRUE(n.floats[1] && n.floats[1][0] == FLT_MAX);
    ASSERT_TRUE(n.doubles[2] && !n.floats[2] && n.doubles[2][0] == 7);
    ASSERT_TRUE(n.doubles[3] && n.doubles[3][0] == 0.1);   /* datatype after data: unknown then */
    ASSERT_TRUE(n.floats[4] != NULL);                       /* cJSON too reads the first key */
    ASSERT_TRUE(n.doubles[5] != NULL);                      /* an escaped value might be "FP32" */
    free(t);
    srv_json_numbers_free(&n);

    /* Past FP32's range (2^128 less half an ulp rounds up to infinity): not
     * taken, so cJSON's path names the number; an FP64 input takes it. */
    t = take("{\"inputs\":[{\"datatype\":\"FP32\",\"data\":[1,3.4028236e38]},"
             "{\"datatype\":\"FP32\",\"data\":[-Infinity]},"
             "{\"datatype\":\"FP64\",\"data\":[1e39]}]}", &n);
    ASSERT_FALSE(n.complete);
    ASSERT_TRUE(!n.floats[0] && !n.doubles[0]);
    ASSERT_TRUE(n.floats[1] && n.floats[1][0] == -INFINITY);
    ASSERT_TRUE(n.doubles[2] && n.doubles[2][0] == 1e39);
    ASSERT_STR_CONTAINS(t, "[1,3.4028236e38]");
    free(t);
    srv_json_numbers_free(&n);

    /* Every float of the strtod test's kinds of text is strtod's, rounded once. */
    enum { N = 500 };
    static char body[N * 32 + 64];
    static double want[N];
    size_t len = (size_t)snprintf(body, sizeof(body), "{\"inputs\":[{\"datatype\":\"FP32\",\"data\":[");
    for (int i = 0; i < N; i++) {
        char text[32];
        snprintf(text, sizeof(text), test_rand_int(0, 1) ? "%.9g" : "%.17g",
                 (double)test_rand_float(-3, 3) * pow(10.0, test_rand_int(-30, 30)));
        want[i] = strtod(text, NULL);
        len += (size_t)snprintf(body + len, sizeof(body) - len, "%s%s", i ? "," : "", text);
    }
    snprintf(body + len, sizeof(body) - len, "]}]}");
    free(take(body, &n));
    ASSERT_TRUE(n.floats[0] && n.count[0] == N);
    for (int i = 0; i < N; i++)
        TEST_FAIL_IF(n.floats[0][i] != (float)want[i], "%.17g: %.9g", want[i], (double)n.floats[0][i]);
    srv_json_numbers_free(&n);
    return TEST_PASS;
}

/* The reply's float text is the printf loop's ("%.6g" .. "%.9g", the first
 * that strtof reads back), byte for byte: on every float of random bit
 * patterns (all exponents, subnormals too), on logits-like values, and at
 * the edges (powers of two and ten, ties, the extremes). */
TEST(http_float_text_matches_printf)
{
    int checked = 0;
    for (int i = 0; i < 1200000; i++) {
        float v;
        uint32_t bits = (uint32_t)test_rand_u64();
        switch (i % 4) {
        case 0: memcpy(&v, &bits, sizeof(v)); break;
        case 1: v = test_rand_float(-30, 30); break;
        case 2: v = ldexpf(1.0f, test_rand_int(-149, 127)) * (i & 8 ? -1.0f : 1.0f); break;
        default: v = (float)pow(10.0, test_rand_int(-45, 38)) * (float)test_rand_int(1, 99); break;
        }
        if (!isfinite(v))
            continue;
        char got[SRV_FLOAT_TEXT_MAX], want[SRV_FLOAT_TEXT_MAX];
        int n = srv_float_text(got, v), w = srv_float_text_printf(want, v);
        TEST_FAIL_IF(n != w || strcmp(got, want) != 0, "bits %08x: '%s', printf '%s'",
                     (unsigned)bits, got, want);
        TEST_FAIL_IF(strtof(got, NULL) != v && !(v == 0 && strtof(got, NULL) == 0),
                     "'%s' does not read back", got);
        checked++;
    }
    static const float EDGES[] = {0.0f, -0.0f, 1.0f, 0.1f, 0.3f, 1e-5f, 1e-4f, 123456.0f, 1234567.0f,
                                  16777216.0f, 16777217.0f, 3.4028235e38f, 1.17549435e-38f, 1e-45f,
                                  9.99999944e-11f, 0.00010000001f, 100000.0f, 999999.5f, 8388608.5f};
    for (size_t i = 0; i < sizeof(EDGES) / sizeof(EDGES[0]); i++) {
        char got[SRV_FLOAT_TEXT_MAX], want[SRV_FLOAT_TEXT_MAX];
        srv_float_text(got, EDGES[i]);
        srv_float_text_printf(want, EDGES[i]);
        TEST_FAIL_IF(strcmp(got, want) != 0, "%.9g: '%s', printf '%s'", (double)EDGES[i], got, want);
    }
    printf("  %d floats written as printf writes them\n", checked);
    return TEST_PASS;
}

TEST(http_parser_json_depth)
{
    ASSERT_TRUE(srv_json_depth_ok("{\"a\":[[1]]}", 11, 3));
    ASSERT_FALSE(srv_json_depth_ok("{\"a\":[[1]]}", 11, 2));
    ASSERT_TRUE(srv_json_depth_ok("{\"a\":\"[[[[[\"}", 13, 1));      /* brackets in strings */
    ASSERT_TRUE(srv_json_depth_ok("{\"a\\\"[[[\":1}", 13, 1));       /* escaped quote */
    struct rt_error err;
    ASSERT_TRUE(srv_json_parse("[[[[1]]]]", 9, 3, &err) == NULL);
    ASSERT_STR_CONTAINS(err.msg, "nested deeper");
    ASSERT_TRUE(srv_json_parse("{} x", 4, 3, &err) == NULL);
    ASSERT_TRUE(srv_json_parse("", 0, 3, &err) == NULL);
    return TEST_PASS;
}

static enum rt_status split(const char *ct, const char *body, struct srv_part *parts, int *n)
{
    char boundary[SRV_MULTIPART_BOUNDARY_MAX + 1];
    struct rt_error err;
    enum rt_status st = srv_multipart_boundary(ct, boundary, &err);
    if (st != RT_OK)
        return st;
    return srv_multipart_parse((const uint8_t *)body, strlen(body), boundary, parts, 4, n, &err);
}

TEST(http_parser_multipart)
{
    struct srv_part p[4];
    int n;
    const char *two = "preamble\r\n--AaB03x\r\n"
                      "Content-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
                      "Content-Type: image/png\r\n\r\nPNGDATA\r\n"
                      "--AaB03x  \r\n\r\n\r\n--x\r\n"
                      "--AaB03x--\r\nepilogue";
    ASSERT_EQ_INT(split("multipart/form-data; boundary=AaB03x", two, p, &n), RT_OK);
    ASSERT_EQ_INT(n, 2);
    ASSERT_TRUE(p[0].len == 7 && memcmp(p[0].data, "PNGDATA", 7) == 0);
    ASSERT_STR_EQ(p[0].name, "image");
    ASSERT_STR_EQ(p[0].content_type, "image/png");
    ASSERT_TRUE(p[1].len == 5 && memcmp(p[1].data, "\r\n--x", 5) == 0); /* no headers */
    ASSERT_EQ_INT(split("multipart/form-data; charset=x; boundary=\"Aa B\"",
                        "--Aa B\r\n\r\nz\r\n--Aa B--", p, &n), RT_OK);
    ASSERT_TRUE(n == 1 && p[0].len == 1);

    static const struct { const char *ct, *body; enum rt_status want; } BAD[] = {
        {"multipart/form-data", "--b\r\n\r\nx\r\n--b--", RT_ERR_INVALID},        /* no boundary */
        {"multipart/form-data; boundary=", "--\r\n", RT_ERR_INVALID},
        {"multipart/form-data; boundary=\"b", "--b\r\n", RT_ERR_INVALID},
        {"multipart/form-data; boundary=b", "--b\r\n\r\nnever ends", RT_ERR_INVALID},
        {"multipart/form-data; boundary=b", "--b\r\nheaders never end", RT_ERR_INVALID},
        {"multipart/form-data; boundary=b", "--b--", RT_ERR_INVALID},          /* no parts */
        {"multipart/form-data; boundary=b", "no delimiter", RT_ERR_INVALID},
        {"multipart/form-data; boundary=b", "--bX\r\n\r\nx\r\n--b--", RT_ERR_INVALID},
        {"multipart/form-data; boundary=b",
         "--b\r\n\r\n1\r\n--b\r\n\r\n2\r\n--b\r\n\r\n3\r\n--b\r\n\r\n4\r\n--b\r\n\r\n5\r\n--b--",
         RT_ERR_TOO_LARGE},
    };
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++)
        TEST_FAIL_IF(split(BAD[i].ct, BAD[i].body, p, &n) != BAD[i].want, "case %zu", i);
    /* Every truncation of a valid body fails cleanly (no reads past the end). */
    size_t len = strlen(two);
    for (size_t cut = 0; cut + 10 < len; cut++) {
        char *t = malloc(cut + 1);
        memcpy(t, two, cut);
        t[cut] = '\0';
        struct rt_error err;
        int k;
        enum rt_status st = srv_multipart_parse((const uint8_t *)t, cut, "AaB03x", p, 4, &k, &err);
        free(t);
        TEST_FAIL_IF(st == RT_OK, "truncated at %zu accepted", cut);
    }
    return TEST_PASS;
}

/* Every reply is valid UTF-8: JSON strings keep well-formed sequences and
 * put U+FFFD for bytes that are not (a client's name echoed in an error, a
 * message cut mid-character). */
TEST(http_json_strings_are_utf8)
{
    static const struct { const char *in; size_t len; const char *want; } CASES[] = {
        {"plain", 5, "\"plain\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"a\xff" "b", 3, "\"a\xef\xbf\xbd" "b\""},                   /* not UTF-8 at all */
        {"x\xe2\x82", 3, "\"x\xef\xbf\xbd\xef\xbf\xbd\""},            /* cut mid-character */
        {"\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\""},                /* overlong '/' */
        {"\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* a surrogate */
        {"\xf4\x90\x80\x80", 4, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* past U+10FFFF */
        {"q\"\\\n\x01", 5, "\"q\\\"\\\\\\n\\u0001\""},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        struct srv_buf b = {0};
        srv_buf_json_strn(&b, CASES[i].in, CASES[i].len);
        srv_buf_putc(&b, '\0');
        TEST_FAIL_IF(b.failed || strcmp(b.data, CASES[i].want) != 0, "case %zu: got %s", i,
                     b.data ? b.data : "(null)");
        srv_buf_free(&b);
    }
    return TEST_PASS;
}
