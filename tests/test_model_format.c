/* test_model_format.c - safetensors and model.json validation, graph checks,
 * batch-norm folding and the executor on a tiny model. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt_model.h"
#include "runtime/format/safetensors.h"
#include "test.h"
#include "test_model_util.h"

/* A safetensors buffer from a header text (padded with spaces to a multiple
 * of 8, so the data starts aligned) and n_data bytes of data. */
static size_t make_st(uint8_t *buf, size_t cap, const char *header, size_t n_data)
{
    size_t h = strlen(header), padded = (h + 7) & ~(size_t)7;
    RT_ASSERT(8 + padded + n_data <= cap);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(buf + 8, header, h); // NOLINT(bugprone-not-null-terminated-result): padded with spaces below, by the format
    memset(buf + 8 + h, ' ', padded - h);
    for (size_t i = 0; i < n_data; i++)
        buf[8 + padded + i] = (uint8_t)i;
    return 8 + padded + n_data;
}

/* Parses header+data and expects RT_ERR_BAD_MODEL with msg containing want. */
static enum test_result expect_st_error(const char *header, size_t n_data, const char *want)
{
    static uint8_t buf[4096];
    size_t len = make_st(buf, sizeof(buf), header, n_data);
    struct rt_safetensors st;
    struct rt_error err = {0};
    enum rt_status s = rt_safetensors_parse(buf, len, "m/model.safetensors", &st, &err);
    ASSERT_EQ_INT(s, RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "m/model.safetensors");
    ASSERT_STR_CONTAINS(err.msg, want);
    return TEST_PASS;
}

TEST(safetensors_valid)
{
    uint8_t buf[512];
    size_t len = make_st(buf, sizeof(buf),
                         "{\"__metadata__\":{\"k\":\"v\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                         "\"b\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[16,19]}}",
                         24);
    struct rt_safetensors st;
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_safetensors_parse(buf, len, "t", &st, &err), RT_OK);
    ASSERT_EQ_INT(st.n_tensors, 2);
    const struct rt_st_tensor *a = rt_safetensors_find(&st, "a");
    ASSERT_TRUE(a != NULL);
    ASSERT_EQ_INT(a->elems, 4);
    ASSERT_EQ_INT(a->nbytes, 16);
    ASSERT_STR_EQ(rt_safetensors_meta(&st, "k"), "v");
    ASSERT_TRUE(rt_safetensors_find(&st, "zz") == NULL);
    rt_safetensors_close(&st);
    return TEST_PASS;
}

TEST(safetensors_truncated)
{
    uint8_t buf[4] = {1, 0, 0, 0};
    struct rt_safetensors st;
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_safetensors_parse(buf, sizeof(buf), "m/model.safetensors", &st, &err), RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "too short");
    return TEST_PASS;
}

TEST(safetensors_header_past_end)
{
    uint8_t buf[64];
    size_t len = make_st(buf, sizeof(buf), "{}", 0);
    buf[0] = 0xff;   /* claims 255 header bytes in a 10-byte file */
    buf[7] = 0x7f;
    struct rt_safetensors st;
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_safetensors_parse(buf, len, "m/model.safetensors", &st, &err), RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "past the end");
    return TEST_PASS;
}

TEST(safetensors_header_not_json)
{
    return expect_st_error("{\"a\": [1, 2", 0, "not valid JSON");
}

TEST(safetensors_header_not_object)
{
    return expect_st_error("[1, 2, 3]", 0, "not a JSON object");
}

TEST(safetensors_offsets_out_of_range)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "'w': data_offsets out of range");
}

TEST(safetensors_offsets_reversed)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 16, "'w': data_offsets out of range");
}

TEST(safetensors_overlap)
{
    return expect_st_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                           16, "overlaps");
}

TEST(safetensors_unaligned)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}", 8,
                           "'w': data is not aligned");
}

TEST(safetensors_length_mismatch)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16,
                           "'w': byte length does not match");
}

TEST(safetensors_unknown_dtype)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16, "'w': missing or unknown dtype");
}

TEST(safetensors_negative_dim)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1,4],\"data_offsets\":[0,16]}}", 16, "'w': dimension");
}

TEST(safetensors_fractional_dim)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 16, "'w': dimension");
}

TEST(safetensors_dims_overflow)
{
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,0]}}", 16,
                           "'w': shape overflows");
}

TEST(safetensors_size_t_overflow)
{
    /* elements fit int64 but times 4 bytes overflow size_t */
    return expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,1073741824],\"data_offsets\":[0,0]}}", 16,
                           "'w': shape overflows");
}

TEST(safetensors_duplicate_name)
{
    return expect_st_error("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                           "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                           8, "duplicate");
}

TEST(safetensors_write_read_roundtrip)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    float a[6];
    int8_t b[5] = {-128, -1, 0, 1, 127};
    test_rand_fill(a, 6, -1, 1);
    struct rt_st_write t[2] = {{"a", RT_DTYPE_F32, {2, {2, 3}}, a}, {"b", RT_DTYPE_I8, {1, {5}}, b}};
    struct rt_st_meta meta = {"scale", "0.5"};
    char path[128];
    snprintf(path, sizeof(path), "%s/x.safetensors", dir);
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_safetensors_write(path, t, 2, &meta, 1, &err), RT_OK);
    struct rt_safetensors st;
    ASSERT_EQ_INT(rt_safetensors_open(path, "x", &st, &err), RT_OK);
    const struct rt_st_tensor *ra = rt_safetensors_find(&st, "a"), *rb = rt_safetensors_find(&st, "b");
    ASSERT_TRUE(ra && rb);
    ASSERT_TRUE(test_same_bits(ra->data, a, sizeof(a)));
    ASSERT_EQ_INT(memcmp(rb->data, b, sizeof(b)), 0);
    ASSERT_EQ_INT(rb->dtype, RT_DTYPE_I8);
    ASSERT_STR_EQ(rt_safetensors_meta(&st, "scale"), "0.5");
    rt_safetensors_close(&st);
    tmp_dir_remove(dir);
    return TEST_PASS;
}

/* ------------------------------------------------------------ model folders */

static struct rt_backend *cpu_backend(void)
{
    struct rt_backend *b = NULL;
    struct rt_error err;
    RT_ASSERT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err) == RT_OK);
    return b;
}

/* Writes the tiny model with json, loads it, expects status and a message
 * containing want1 and want2. */
static enum test_result expect_load_error(const char *json, enum rt_status want, const char *want1, const char *want2)
{
    char dir[64];
    struct tiny_weights w;
    tiny_weights_init(&w);
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_model_write(dir, json, &w));
    struct rt_backend *b = cpu_backend();
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    rt_model_free(s == RT_OK ? m : NULL);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    ASSERT_EQ_INT(s, want);
    ASSERT_STR_CONTAINS(err.msg, want1);
    if (want2)
        ASSERT_STR_CONTAINS(err.msg, want2);
    ASSERT_TRUE(strstr(err.msg, "/tmp") == NULL);   /* names the file, not the host path */
    return TEST_PASS;
}

static enum test_result expect_json_error(const char *from, const char *to, const char *want1, const char *want2)
{
    char *json = str_replace_once(TINY_MODEL_JSON, from, to);
    enum test_result r = expect_load_error(json, RT_ERR_BAD_MODEL, want1, want2);
    free(json);
    return r;
}

TEST(model_tiny_runs_and_matches_reference)
{
    char dir[64];
    struct tiny_weights w;
    tiny_weights_init(&w);
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_model_write(dir, TINY_MODEL_JSON, &w));
    struct rt_backend *b = cpu_backend();
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    tmp_dir_remove(dir);
    TEST_FAIL_IF(s != RT_OK, "load: %s", err.msg);
    /* conv+bn+relu fuse into one step, flatten is a view: conv, pool, fc */
    ASSERT_EQ_INT(rt_model_plan_steps(m), 3);
    const struct rt_model_config *cfg = rt_model_config(m);
    ASSERT_EQ_INT(cfg->max_batch_size, 8);
    ASSERT_EQ_INT(cfg->inputs[0].sample_elems, TINY_IN_ELEMS);
    struct rt_session *sess;
    ASSERT_EQ_INT(rt_session_create(m, &sess, &err), RT_OK);
    enum test_result r = TEST_PASS;
    for (int batch = 1; batch <= 8 && r == TEST_PASS; batch += 3) {
        float x[8 * TINY_IN_ELEMS], y[8 * TINY_CLASSES], ref[8 * TINY_CLASSES];
        test_rand_fill(x, (int64_t)batch * TINY_IN_ELEMS, -2, 2);
        for (int i = 0; i < 8 * TINY_CLASSES; i++)
            y[i] = NAN;
        const float *in[1] = {x};
        float *out[1] = {y};
        if (rt_session_run(sess, batch, in, out, &err) != RT_OK) {
            test_fail_msg(__FILE__, __LINE__, "run: %s", err.msg);
            r = TEST_FAIL;
            break;
        }
        tiny_forward_ref(&w, batch, x, ref);
        double e = test_rel_error(y, ref, (int64_t)batch * TINY_CLASSES);
        if (e > 1e-5) {
            test_fail_msg(__FILE__, __LINE__, "batch %d: relative error %g", batch, e);
            r = TEST_FAIL;
        }
    }
    float x[9 * TINY_IN_ELEMS], y[9 * TINY_CLASSES];
    const float *in[1] = {x};
    float *out[1] = {y};
    if (r == TEST_PASS && rt_session_run(sess, 9, in, out, &err) != RT_ERR_INVALID)
        r = TEST_FAIL;
    rt_session_free(sess);
    rt_model_free(m);
    rt_backend_free(b);
    return r;
}

TEST(model_missing_tensor)
{
    return expect_json_error("\"conv.weight\"", "\"conv.weight_x\"", "model.json", "'conv.weight_x' is not in model.safetensors");
}

TEST(model_unknown_op)
{
    return expect_json_error("\"op\": \"relu\"", "\"op\": \"swish\"", "unknown op 'swish'", "relu");
}

/* ops the ONNX loader emits for weights computed at run time are internal */
TEST(model_internal_ops_refused)
{
    static const char *const OPS[] = {"matmul", "conv2d_dyn", "batch_norm_dyn", "binary"};
    for (int i = 0; i < 4; i++) {
        char to[64], want[64];
        snprintf(to, sizeof(to), "\"op\": \"%s\"", OPS[i]);
        snprintf(want, sizeof(want), "unknown op '%s'", OPS[i]);
        enum test_result r = expect_json_error("\"op\": \"relu\"", to, want, "relu");
        if (r != TEST_PASS)
            return r;
    }
    return TEST_PASS;
}

TEST(model_shapes_do_not_chain)
{
    /* 3x3 pooling leaves 4*2*2 = 16 features; fc expects 36 */
    return expect_json_error("\"kernel\": [2, 2]", "\"kernel\": [3, 3]", "node 'fc' (linear)", "weight must be [M, K]");
}

TEST(model_cycle)
{
    return expect_json_error("\"inputs\": [\"b\"]", "\"inputs\": [\"p\"]", "cycle", NULL);
}

TEST(model_dangling_tensor)
{
    return expect_json_error("\"inputs\": [\"r\"]", "\"inputs\": [\"nowhere\"]", "'nowhere' is produced by no node", "pool");
}

TEST(model_output_not_produced)
{
    return expect_json_error("{\"name\": \"y\"", "{\"name\": \"z\"", "z: output is produced by no node", NULL);
}

TEST(model_tensor_produced_twice)
{
    return expect_json_error("\"outputs\": [\"r\"]", "\"outputs\": [\"c\"]", "produced twice", NULL);
}

TEST(model_input_dim_negative)
{
    return expect_json_error("[-1, 1, 6, 6]", "[-1, 1, -6, 6]", "x: 'shape'", NULL);
}

TEST(model_input_dim_zero)
{
    return expect_json_error("[-1, 1, 6, 6]", "[-1, 1, 0, 6]", "x: 'shape'", NULL);
}

TEST(model_input_dims_overflow)
{
    return expect_json_error("[-1, 1, 6, 6]", "[-1, 1000000000, 1000000000, 1000000000]", "x: 'shape'", NULL);
}

TEST(model_batch_dim_missing)
{
    return expect_json_error("[-1, 1, 6, 6]", "[1, 1, 6, 6]", "x: 'shape'", NULL);
}

TEST(model_bad_version)
{
    return expect_json_error("\"format_version\": 1", "\"format_version\": 2", "format_version", NULL);
}

TEST(model_not_json)
{
    return expect_load_error("{\"format_version\": 1, ", RT_ERR_BAD_MODEL, "model.json", "not valid JSON");
}

/* A parse error says where: line and column of the first bad character. */
TEST(model_not_json_names_line_and_column)
{
    enum test_result r = expect_load_error("{\"format_version\": 1,\n \"max_batch_size\": 8,\n \"name\": tiny}",
                                           RT_ERR_BAD_MODEL, "not valid JSON", "(line 3, column 10)");
    if (r == TEST_PASS)
        r = expect_load_error("{\"format_version\": 1,\n\n  \"inputs\": [1, 2,]}", RT_ERR_BAD_MODEL, "not valid JSON",
                              "(line 3, column 19)");
    return r;
}

/* Every object of model.json refuses keys it does not know, naming the
 * nearest known one: a typo is an error, never a setting silently dropped. */
TEST(model_unknown_keys_refused_with_suggestion)
{
    static const struct {
        const char *from, *to, *want1, *want2;
    } cases[] = {
        {"\"max_batch_size\": 8", "\"max_batch\": 8", "top level: unknown key 'max_batch'",
         "did you mean 'max_batch_size'?"},
        {"\"max_batch_size\": 8", "\"max_batch_size\": 8, \"dynamic_batching\": {\"max_queue_delay\": 100}",
         "dynamic_batching: unknown key 'max_queue_delay'", "'max_queue_delay_us'"},
        {"\"max_batch_size\": 8", "\"max_batch_size\": 8, \"instances\": {\"cout\": 2}",
         "instances: unknown key 'cout'", "'count'"},
        {"\"datatype\": \"FP32\", \"shape\": [-1, 1, 6, 6]", "\"datatype\": \"FP32\", \"shap\": 1, \"shape\": [-1, 1, 6, 6]",
         "x: unknown key 'shap'", "'shape'"},
        {"\"op\": \"relu\",", "\"op\": \"relu\", \"attr\": {},", "relu: unknown key 'attr'", "'attrs'"},
        {"\"attrs\": {\"padding\": [1, 1]}", "\"attrs\": {\"padding\": [1, 1], \"strides\": [1, 1]}",
         "conv: unknown key 'strides'", "'stride'"},
        {"\"attrs\": {\"kernel\": [2, 2]}", "\"attrs\": {\"kernel\": [2, 2], \"colour\": 1}", "pool: unknown key 'colour'",
         NULL},
        {"\"weights\": {\"weight\": \"conv.weight\"}", "\"weights\": {\"weight\": \"conv.weight\", \"biass\": \"fc.bias\"}",
         "conv: unknown key 'biass'", "'bias'"},
        {"\"outputs\": [\"r\"]}", "\"outputs\": [\"r\"], \"attrs\": {\"inplace\": true}}", "relu: unknown key 'inplace'",
         NULL},
        {"\"max_batch_size\": 8", "\"max_batch_size\": 8, \"preprocessing\": {\"colour\": \"gray\"}",
         "preprocessing: unknown key 'colour'", "did you mean 'color'?"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum test_result r = expect_json_error(cases[i].from, cases[i].to, cases[i].want1, cases[i].want2);
        if (r != TEST_PASS) {
            printf("  case %zu: %s\n", i, cases[i].to);
            return r;
        }
    }
    return TEST_PASS;
}

TEST(model_bad_attr)
{
    return expect_json_error("\"padding\": [1, 1]", "\"padding\": [1, \"x\"]", "conv", "'padding'");
}

TEST(model_weight_shape_mismatch)
{
    /* bn parameters bound to the fc bias ([5]) instead of [4] */
    return expect_json_error("\"bn.running_mean\"", "\"fc.bias\"", "node 'bn' (batch_norm)", "[C]");
}

TEST(model_missing_files)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct rt_backend *b = cpu_backend();
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    ASSERT_EQ_INT(s, RT_ERR_NOT_FOUND);
    ASSERT_STR_CONTAINS(err.msg, "model.safetensors");
    return TEST_PASS;
}

TEST(model_truncated_safetensors)
{
    char dir[64];
    struct tiny_weights w;
    tiny_weights_init(&w);
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_model_write(dir, TINY_MODEL_JSON, &w));
    char path[128];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    ASSERT_EQ_INT(truncate(path, 300), 0);   /* inside the data: ranges now run past the end */
    struct rt_backend *b = cpu_backend();
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    ASSERT_EQ_INT(s, RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "model.safetensors");
    return TEST_PASS;
}

TEST(model_labels_count_mismatch)
{
    char *json = str_replace_once(TINY_MODEL_JSON, "\"max_batch_size\": 8,", "\"max_batch_size\": 8, \"labels\": \"labels.txt\",");
    char dir[64];
    struct tiny_weights w;
    tiny_weights_init(&w);
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tiny_model_write(dir, json, &w));
    free(json);
    ASSERT_TRUE(write_file(dir, "labels.txt", "a\nb\nc\n", 6));
    struct rt_backend *b = cpu_backend();
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    ASSERT_EQ_INT(s, RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "3 labels");
    ASSERT_TRUE(write_file(dir, "labels.txt", "a\nb\nc\nd\ne\n", 10));
    s = rt_model_load(dir, b, &m, &err);
    tmp_dir_remove(dir);
    TEST_FAIL_IF(s != RT_OK, "load: %s", err.msg);
    ASSERT_EQ_INT(rt_model_config(m)->n_labels, 5);
    ASSERT_STR_EQ(rt_model_config(m)->labels[4], "e");
    rt_model_free(m);
    rt_backend_free(b);
    return TEST_PASS;
}

TEST(model_labels_path_escape)
{
    return expect_json_error("\"max_batch_size\": 8,", "\"max_batch_size\": 8, \"labels\": \"../labels.txt\",", "labels", NULL);
}
