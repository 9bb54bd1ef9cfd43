/* test_onnx_robust.c - the ONNX loader against bad input: truncated files,
 * wrong wire types, lengths past the end, absurd and negative dims, missing
 * tensors, cycles, a million nodes, deep nesting, external data, and the
 * refusals that must name the node, its op type and what is missing. Every
 * case must end in a clear error, never a crash (run under
 * SANITIZE=address,undefined for leaks and overflows). */
#include <stdlib.h>
#include <string.h>

#include "onnx/builder.h"
#include "runtime/onnx/onnx_load.h"
#include "test.h"
#include "runtime/rt_model.h"

#define LABEL "m/model.onnx"

/* Parses and finishes the graph as rt_model_load would; err receives why. */
static enum rt_status parse(const uint8_t *buf, size_t len, struct rt_model_config *cfg, struct rt_error *err)
{
    struct rt_graph g = {0};
    memset(cfg, 0, sizeof(*cfg));
    enum rt_status s = rt_onnx_parse(buf, len, LABEL, cfg, &g, err);
    if (s == RT_OK)
        s = rt_graph_finish(&g, cfg, LABEL, err);
    rt_graph_free(&g);
    return s;
}

static enum rt_status parse_model(struct ob *m, struct rt_model_config *cfg, struct rt_error *err)
{
    size_t len;
    uint8_t *buf = ob_pack(m, &len);
    ob_free(m);
    enum rt_status s = parse(buf, len, cfg, err);
    free(buf);
    return s;
}

/* x [N, 1, 6, 6] -> Conv 2x1x3x3 (pads 1) -> Relu -> GlobalAveragePool ->
 * Flatten -> Gemm (transB, [3, 2]) -> y [N, 3] */
static struct ob *tiny(void)
{
    static float w[18], b[2], fw[6], fb[3];
    for (int i = 0; i < 18; i++)
        w[i] = (float)(i % 5) * 0.25f - 0.5f;
    for (int i = 0; i < 6; i++)
        fw[i] = (float)i * 0.1f - 0.2f;
    b[0] = 0.1f, b[1] = -0.2f, fb[0] = 0.5f, fb[1] = 0, fb[2] = -0.5f;
    struct ob *m = ob_new(13);
    ob_input(m, "x", 4, (int64_t[]){-1, 1, 6, 6});
    ob_init(m, "w", 4, (int64_t[]){2, 1, 3, 3}, w);
    ob_init(m, "b", 1, (int64_t[]){2}, b);
    ob_init(m, "fw", 2, (int64_t[]){3, 2}, fw);
    ob_init(m, "fb", 1, (int64_t[]){3}, fb);
    struct ob_node *conv = ob_node(m, "Conv", "conv", "x,w,b", "c");
    ob_attr_ints(m, conv, "pads", 4, (int64_t[]){1, 1, 1, 1});
    ob_node(m, "Relu", "relu", "c", "r");
    ob_node(m, "GlobalAveragePool", "gap", "r", "p");
    ob_node(m, "Flatten", "flat", "p", "f");
    struct ob_node *gemm = ob_node(m, "Gemm", "fc", "f,fw,fb", "y");
    ob_attr_int(m, gemm, "transB", 1);
    ob_output(m, "y");
    return m;
}

TEST(onnx_tiny_model_maps_to_runtime_shapes)
{
    struct rt_model_config cfg;
    struct rt_error err = {0};
    ASSERT_EQ_INT(parse_model(tiny(), &cfg, &err), RT_OK);
    ASSERT_EQ_INT(cfg.n_inputs, 1);
    ASSERT_STR_EQ(cfg.inputs[0].name, "x");
    ASSERT_EQ_INT(cfg.inputs[0].shape.rank, 4);
    ASSERT_EQ_INT(cfg.inputs[0].shape.dims[0], -1);
    ASSERT_EQ_INT(cfg.inputs[0].sample_elems, 36);
    ASSERT_EQ_INT(cfg.outputs[0].shape.rank, 2);
    ASSERT_EQ_INT(cfg.outputs[0].sample_elems, 3);
    return TEST_PASS;
}

TEST(onnx_truncated_files_fail_cleanly)
{
    size_t len;
    struct ob *m = tiny();
    uint8_t *buf = ob_pack(m, &len);
    ob_free(m);
    for (size_t cut = 0; cut < len; cut++) {
        struct rt_model_config cfg;
        struct rt_error err = {0};
        uint8_t *part = malloc(cut + 1);   /* exactly cut bytes for ASan to guard */
        memcpy(part, buf, cut);
        enum rt_status s = parse(part, cut, &cfg, &err);
        free(part);
        TEST_FAIL_IF(s == RT_OK, "a file cut to %zu of %zu bytes loaded", cut, len);
        ASSERT_STR_CONTAINS(err.msg, LABEL);
    }
    free(buf);
    return TEST_PASS;
}

TEST(onnx_flipped_bytes_never_crash)
{
    size_t len;
    struct ob *m = tiny();
    uint8_t *buf = ob_pack(m, &len);
    ob_free(m);
    int refused = 0;
    for (size_t i = 0; i < len; i++) {
        for (int v = 0; v < 3; v++) {
            /* wire types 6 and 7, a varint continuation, a random byte */
            uint8_t saved = buf[i];
            buf[i] = v == 0 ? (uint8_t)(saved | 0x07) : v == 1 ? (uint8_t)(saved | 0x80) : (uint8_t)test_rand_u64();
            struct rt_model_config cfg;
            struct rt_error err = {0};
            if (parse(buf, len, &cfg, &err) != RT_OK) {
                refused++;
                TEST_FAIL_IF(err.msg[0] == '\0', "error without a message at byte %zu", i);
            }
            buf[i] = saved;
        }
    }
    printf("  %d of %zu altered files refused\n", refused, 3 * len);
    ASSERT_GE(refused, (double)len);
    free(buf);
    return TEST_PASS;
}

static enum test_result expect(const uint8_t *buf, size_t len, enum rt_status want, const char *msg)
{
    struct rt_model_config cfg;
    struct rt_error err = {0};
    ASSERT_EQ_INT(parse(buf, len, &cfg, &err), want);
    ASSERT_STR_CONTAINS(err.msg, msg);
    return TEST_PASS;
}

static enum test_result expect_model(struct ob *m, enum rt_status want, const char *msg)
{
    struct rt_model_config cfg;
    struct rt_error err = {0};
    enum rt_status got = parse_model(m, &cfg, &err);
    TEST_FAIL_IF(got != want, "status %d, not %d: \"%s\"", got, want, err.msg);
    ASSERT_STR_CONTAINS(err.msg, msg);
    return TEST_PASS;
}

TEST(onnx_lengths_past_the_end)
{
    /* graph field claiming 127 bytes of 3 */
    static const uint8_t top[] = {0x08, 0x08, 0x3a, 0x7f, 0x0a, 0x01, 0x00};
    /* inside the graph: a node claiming 16 bytes of 3 */
    static const uint8_t inner[] = {0x08, 0x08, 0x3a, 0x05, 0x0a, 0x10, 'a', 'b', 'c'};
    /* a 10-byte varint length (past 2^64) */
    static const uint8_t huge[] = {0x3a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    if (expect(top, sizeof(top), RT_ERR_BAD_MODEL, "bad framing") != TEST_PASS ||
        expect(inner, sizeof(inner), RT_ERR_BAD_MODEL, "bad framing") != TEST_PASS ||
        expect(huge, sizeof(huge), RT_ERR_BAD_MODEL, "bad framing") != TEST_PASS)
        return TEST_FAIL;
    return expect((const uint8_t *)"hello, world", 12, RT_ERR_BAD_MODEL, LABEL);
}

TEST(onnx_absurd_and_negative_dims)
{
    static const float one[4] = {1, 2, 3, 4};
    struct { int64_t dims[2]; int rank; const char *msg; } cases[] = {
        {{(int64_t)1 << 40, (int64_t)1 << 40}, 2, "absurd"},
        {{-3, 0}, 1, "negative"},
        {{1 << 20, 1 << 20}, 2, "absurd"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct ob *m = ob_new(13);
        ob_input(m, "x", 2, (int64_t[]){-1, 4});
        ob_init(m, "b", 1, (int64_t[]){4}, one);
        ob_init(m, "w", cases[k].rank, cases[k].dims, NULL);
        ob_node(m, "Add", "add", "x,b", "y");
        ob_output(m, "y");
        size_t len;
        uint8_t *buf = ob_pack(m, &len);
        ob_free(m);
        enum test_result r = expect(buf, len, RT_ERR_BAD_MODEL, cases[k].msg);
        free(buf);
        if (r != TEST_PASS)
            return r;
    }
    struct ob *m = ob_new(13);   /* a negative input dim */
    ob_input(m, "x", 2, (int64_t[]){-1, -5});
    ob_node(m, "Relu", "r", "x", "y");
    ob_output(m, "y");
    return expect_model(m, RT_ERR_BAD_MODEL, "dimension 1 is -5");
}

TEST(onnx_graph_structure_errors)
{
    struct ob *m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Relu", "r", "nope", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_BAD_MODEL, "input 'nope' is produced by no node") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Add", "a1", "x,b", "a");
    ob_node(m, "Relu", "a2", "a", "b");
    ob_output(m, "b");
    if (expect_model(m, RT_ERR_BAD_MODEL, "cycle") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Relu", "r1", "x", "y");
    ob_node(m, "Relu", "r2", "x", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_BAD_MODEL, "produced twice") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Relu", "r", "x", "y");
    ob_output(m, "z");
    return expect_model(m, RT_ERR_BAD_MODEL, "graph output 'z' is produced by no node");
}

/* Appends a varint. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

TEST(onnx_a_million_nodes_is_refused)
{
    /* NodeProto {input "x", output "y", op_type "Relu"}, 10^6 times */
    static const uint8_t node[] = {0x0a, 0x0e, 0x0a, 0x01, 'x', 0x12, 0x01, 'y', 0x22, 0x04, 'R', 'e', 'l', 'u',
                                   0x2a, 0x00};
    const size_t count = 1000000, graph_len = count * sizeof(node);
    uint8_t *buf = malloc(graph_len + 64);
    size_t n = 0;
    buf[n++] = 0x08, buf[n++] = 0x08;                   /* ir_version 8 */
    buf[n++] = 0x42, buf[n++] = 0x02, buf[n++] = 0x10, buf[n++] = 13;   /* opset 13 */
    buf[n++] = 0x3a;                                    /* graph */
    n += put_varint(buf + n, graph_len);
    for (size_t i = 0; i < count; i++, n += sizeof(node))
        memcpy(buf + n, node, sizeof(node));
    struct rt_model_config cfg;
    struct rt_error err = {0};
    enum rt_status s = parse(buf, n, &cfg, &err);
    free(buf);
    printf("  %s\n", err.msg);
    ASSERT_EQ_INT(s, RT_ERR_TOO_LARGE);
    ASSERT_STR_CONTAINS(err.msg, LABEL);
    return TEST_PASS;
}

TEST(onnx_deep_nesting_is_refused)
{
    /* graph { node { attribute { g: graph { node { ... } } } } }, 2000 deep */
    size_t cap = 1 << 16, len = 0;
    uint8_t *inner = calloc(1, cap), *outer = calloc(1, cap);
    static const uint8_t tags[3] = {0x32, 0x2a, 0x0a};   /* AttributeProto.g, NodeProto.attribute, GraphProto.node */
    for (int level = 0; level < 2000; level++) {
        for (int t = 0; t < 3; t++) {
            size_t n = 0;
            outer[n++] = tags[t];
            n += put_varint(outer + n, len);
            RT_ASSERT(n + len <= cap);
            memcpy(outer + n, inner, len);
            len += n;
            uint8_t *swap = inner;
            inner = outer;
            outer = swap;
        }
    }
    size_t n = 0;
    outer[n++] = 0x3a;
    n += put_varint(outer + n, len);
    memcpy(outer + n, inner, len);
    enum test_result r = expect(outer, n + len, RT_ERR_BAD_MODEL, "nested too deeply");
    free(inner);
    free(outer);
    return r;
}

TEST(onnx_refusals_name_node_op_and_reason)
{
    static const float w[4] = {1, 2, 3, 4};
    struct ob *m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Hardmax", "hm", "x", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'hm' (Hardmax, opset 13): op type 'Hardmax' is not "
                                            "supported") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_attr_float(m, ob_node(m, "Relu", "r", "x", "y"), "alpha", 0.5f);
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'r' (Relu, opset 13): attribute 'alpha'") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(18);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_node(m, "Relu", "r", "x", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "opset 18") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_init(m, "w", 2, (int64_t[]){4, 1}, w);
    ob_init_external(m, "w");
    ob_node(m, "MatMul", "mm", "x,w", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "external data") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 4, (int64_t[]){-1, 1, 4, 4});
    ob_input(m, "w", 4, (int64_t[]){-1, 1, 3, 3});
    ob_node(m, "Conv", "conv", "x,w", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'conv' (Conv, opset 13): takes its weight from a computed tensor") !=
        TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 4, (int64_t[]){-1, 1, 4, 4});
    ob_attr_string(m, ob_node(m, "MaxPool", "pool", "x", "y"), "auto_pad", "SAME_MIDDLE");
    ob_output(m, "y");
    return expect_model(m, RT_ERR_UNSUPPORTED, "auto_pad='SAME_MIDDLE'");
}

/* x [-1, 4] (rank 2) through one node of op with inputs "x" plus extra
 * (comma-separated, may be empty), at opset; the node is named "n". */
static struct ob *one_node(int opset, const char *op, const char *inputs, struct ob_node **n)
{
    struct ob *m = ob_new(opset);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    *n = ob_node(m, op, "n", inputs, "y");
    ob_output(m, "y");
    return m;
}

/* The element-wise functions, PRelu, the variadic ops, Squeeze, Unsqueeze,
 * Transpose, the reductions, Slice, Split and Pad refuse what they cannot
 * compute with the node and the reason. */
TEST(onnx_math_and_squeeze_refusals)
{
    struct ob_node *n;
    struct ob *m = one_node(14, "HardSwish", "x", &n);   /* HardSwish takes no attribute (was a crash) */
    ob_attr_float(m, n, "alpha", 0.5f);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'n' (HardSwish, opset 14): attribute 'alpha'") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Celu", "x", &n);
    ob_attr_float(m, n, "alpha", 0.0f);
    if (expect_model(m, RT_ERR_BAD_MODEL, "'alpha' must not be 0") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "PRelu", "x,s", &n);
    ob_init(m, "s", 1, (int64_t[]){3}, (const float[]){1, 2, 3});
    if (expect_model(m, RT_ERR_BAD_MODEL, "the slope does not broadcast") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(6, "Mean", "x,k", &n);
    ob_init(m, "k", 1, (int64_t[]){4}, (const float[]){1, 2, 3, 4});
    if (expect_model(m, RT_ERR_BAD_MODEL, "broadcasting needs opset 8") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(11, "Squeeze", "x", &n);
    ob_attr_ints(m, n, "axes", 1, (int64_t[]){1});
    if (expect_model(m, RT_ERR_BAD_MODEL, "axis 1 has size 4, not 1") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Squeeze", "x,a", &n);
    ob_init_i64(m, "a", 1, (int64_t[]){2}, (const int64_t[]){-1, 1});
    if (expect_model(m, RT_ERR_BAD_MODEL, "given twice") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Squeeze", "x,a", &n);
    ob_init_i64(m, "a", 1, (int64_t[]){1}, (const int64_t[]){5});
    if (expect_model(m, RT_ERR_BAD_MODEL, "axis") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Unsqueeze", "x", &n);
    if (expect_model(m, RT_ERR_BAD_MODEL, "'axes' is required") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Unsqueeze", "x,a", &n);   /* before the batch of a symbolic first dim */
    ob_init_i64(m, "a", 1, (int64_t[]){1}, (const int64_t[]){0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "inserts an axis before the first") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Transpose", "x", &n);
    ob_attr_ints(m, n, "perm", 3, (int64_t[]){0, 1, 2});
    if (expect_model(m, RT_ERR_BAD_MODEL, "'perm' has 3 entries for 2 dimensions") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Transpose", "x", &n);
    ob_attr_ints(m, n, "perm", 2, (int64_t[]){1, 1});
    if (expect_model(m, RT_ERR_BAD_MODEL, "not a permutation") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 3, (int64_t[]){-1, 4, 5});
    ob_attr_ints(m, ob_node(m, "ReduceMean", "n", "x", "y"), "axes", 2, (int64_t[]){0, 2});
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "reduces axes that are not adjacent") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "ReduceMax", "x", &n);   /* all axes, the symbolic batch among them */
    if (expect_model(m, RT_ERR_UNSUPPORTED, "reduces along the first axis") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "ReduceSum", "x,a", &n);
    ob_init_i64(m, "a", 1, (int64_t[]){2}, (const int64_t[]){1, -1});
    if (expect_model(m, RT_ERR_BAD_MODEL, "given twice") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Slice", "x,s,e", &n);
    ob_init_i64(m, "s", 1, (int64_t[]){2}, (const int64_t[]){0, 0});
    ob_init_i64(m, "e", 1, (int64_t[]){1}, (const int64_t[]){2});
    if (expect_model(m, RT_ERR_BAD_MODEL, "must have the same (non-zero) length") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Slice", "x,s,e,a", &n);   /* an empty slice of axis 1 */
    ob_init_i64(m, "s", 1, (int64_t[]){1}, (const int64_t[]){3});
    ob_init_i64(m, "e", 1, (int64_t[]){1}, (const int64_t[]){1});
    ob_init_i64(m, "a", 1, (int64_t[]){1}, (const int64_t[]){1});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "is empty") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Slice", "x,s,e,a,st", &n);
    ob_init_i64(m, "s", 1, (int64_t[]){1}, (const int64_t[]){0});
    ob_init_i64(m, "e", 1, (int64_t[]){1}, (const int64_t[]){4});
    ob_init_i64(m, "a", 1, (int64_t[]){1}, (const int64_t[]){1});
    ob_init_i64(m, "st", 1, (int64_t[]){1}, (const int64_t[]){0});
    if (expect_model(m, RT_ERR_BAD_MODEL, "a step of 0") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Slice", "x,s,e", &n);   /* part of a symbolic batch */
    ob_init_i64(m, "s", 1, (int64_t[]){1}, (const int64_t[]){1});
    ob_init_i64(m, "e", 1, (int64_t[]){1}, (const int64_t[]){3});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "slices the first axis") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_init_i64(m, "p", 1, (int64_t[]){2}, (const int64_t[]){1, 2});
    ob_attr_int(m, ob_node(m, "Split", "n", "x,p", "y,z"), "axis", 1);
    ob_output(m, "y");
    ob_output(m, "z");
    if (expect_model(m, RT_ERR_BAD_MODEL, "do not add up to 4") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(11);
    ob_input(m, "x", 2, (int64_t[]){-1, 5});
    ob_attr_int(m, ob_node(m, "Split", "n", "x", "y,z"), "axis", 1);
    ob_output(m, "y");
    ob_output(m, "z");
    if (expect_model(m, RT_ERR_BAD_MODEL, "5 does not split into 2 equal parts") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Pad", "x,p", &n);
    ob_init_i64(m, "p", 1, (int64_t[]){3}, (const int64_t[]){0, 1, 0});
    if (expect_model(m, RT_ERR_BAD_MODEL, "'pads' has 3 values for 2 dimensions") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Pad", "x,p", &n);
    ob_init_i64(m, "p", 1, (int64_t[]){4}, (const int64_t[]){0, -1, 0, 0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "negative pads") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Pad", "x,p", &n);
    ob_attr_string(m, n, "mode", "reflect");
    ob_init_i64(m, "p", 1, (int64_t[]){4}, (const int64_t[]){0, 4, 0, 0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "reflect pads as wide as the dim (4)") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Pad", "x,p", &n);
    ob_attr_string(m, n, "mode", "wrap");
    ob_init_i64(m, "p", 1, (int64_t[]){4}, (const int64_t[]){0, 1, 0, 0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "mode") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Pad", "x,p", &n);
    ob_init_i64(m, "p", 1, (int64_t[]){4}, (const int64_t[]){1, 0, 0, 0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "pads the first axis") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Transpose", "x", &n);   /* the default perm moves a symbolic batch */
    if (expect_model(m, RT_ERR_UNSUPPORTED, "moves the first axis") != TEST_PASS)
        return TEST_FAIL;
    struct rt_model_config cfg;
    struct rt_error err = {0};
    m = one_node(13, "Unsqueeze", "x,a", &n);   /* [-1, 4] -> [-1, 1, 4, 1] */
    ob_init_i64(m, "a", 1, (int64_t[]){2}, (const int64_t[]){-1, 1});
    ASSERT_EQ_INT(parse_model(m, &cfg, &err), RT_OK);
    ASSERT_EQ_INT(cfg.outputs[0].shape.rank, 4);
    ASSERT_EQ_INT(cfg.outputs[0].shape.dims[1], 1);
    ASSERT_EQ_INT(cfg.outputs[0].shape.dims[2], 4);
    ASSERT_EQ_INT(cfg.outputs[0].shape.dims[3], 1);
    return TEST_PASS;
}

/* x [N, 4] with s = Shape(x) and n = Gather(s, 0) (the batch size, unknown
 * in batch mode) defined; the caller adds the rest. */
static struct ob *shape_of_x(void)
{
    struct ob *m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_init_i64(m, "zero", 0, NULL, (const int64_t[]){0});
    ob_init_i64(m, "one", 0, NULL, (const int64_t[]){1});
    ob_init_i64(m, "ax0", 1, (int64_t[]){1}, (const int64_t[]){0});
    ob_node(m, "Shape", "shape", "x", "s");
    ob_node(m, "Gather", "batch", "s,zero", "n");
    ob_node(m, "Gather", "width", "s,one", "w");
    return m;
}

/* Shape computations folded at load refuse what they cannot fold: the
 * batch size of batch mode in arithmetic or attributes, bad indices,
 * division by zero, constants too large to make, computed inputs. */
TEST(onnx_fold_refusals)
{
    struct ob_node *n;
    struct ob *m = shape_of_x();   /* x.reshape(2 * N, 2): arithmetic on the batch size */
    ob_init_i64(m, "two", 0, NULL, (const int64_t[]){2});
    ob_init_i64(m, "two1", 1, (int64_t[]){1}, (const int64_t[]){2});
    ob_node(m, "Mul", "double", "n,two", "n2");
    ob_node(m, "Unsqueeze", "u", "n2,ax0", "u");
    ob_attr_int(m, ob_node(m, "Concat", "cat", "u,two1", "shape2"), "axis", 0);
    ob_node(m, "Reshape", "r", "x,shape2", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'double' (Mul, opset 13): computes with the batch size") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();   /* the batch size moved after the first axis: x.reshape(4, N) */
    ob_init_i64(m, "swap", 1, (int64_t[]){2}, (const int64_t[]){1, 0});
    ob_node(m, "Gather", "g", "s,swap", "ws");
    ob_node(m, "Reshape", "r", "x,ws", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "reshapes with the batch size after the first axis") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();   /* the batch size as a Slice bound */
    ob_init_i64(m, "axes", 1, (int64_t[]){1}, (const int64_t[]){1});
    ob_node(m, "Unsqueeze", "u", "n,ax0", "end");
    ob_node(m, "Slice", "sl", "x,ax0,end,axes", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "takes an attribute from the batch size") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();   /* a mark copied past the 64 elements a constant records */
    ob_init_i64(m, "len", 1, (int64_t[]){1}, (const int64_t[]){100});
    ob_node(m, "Unsqueeze", "u", "n,ax0", "n1");
    ob_node(m, "Expand", "e", "n1,len", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "beyond element 64") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Concat", "k,x", &n);   /* one constant row beside a symbolic batch */
    ob_attr_int(m, n, "axis", 1);
    ob_init(m, "k", 2, (int64_t[]){1, 2}, (const float[]){1, 2});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "concatenates a constant with a batch") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Concat", "x,k,x", &n);   /* constants only before and after the computed run */
    ob_attr_int(m, n, "axis", 1);
    ob_init(m, "k", 2, (int64_t[]){1, 2}, (const float[]){1, 2});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "input 'k' is a constant") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "MatMul", "x,x", &n);   /* [N, 4] . [N, 4]: the batch would be a matrix dim */
    if (expect_model(m, RT_ERR_UNSUPPORTED, "do not share a leading batch dim") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Size", "x", &n);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "computes with the batch size") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();
    ob_node(m, "Div", "d", "w,zero", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_BAD_MODEL, "integer division by zero") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();
    ob_init_i64(m, "five", 0, NULL, (const int64_t[]){5});
    ob_node(m, "Gather", "g", "s,five", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_BAD_MODEL, "index 5 is out of range for a dim of 2") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Gather", "x,i", &n);   /* a computed tensor at uneven indices */
    ob_init_i64(m, "i", 1, (int64_t[]){3}, (const int64_t[]){0, 1, 3});
    ob_attr_int(m, n, "axis", 1);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "do not step evenly") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Gather", "x,i", &n);
    ob_init_i64(m, "i", 0, NULL, (const int64_t[]){0});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "gathers along the first axis") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Cast", "x", &n);
    ob_attr_int(m, n, "to", 7);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "casts a computed tensor to INT64") != TEST_PASS)
        return TEST_FAIL;
    m = one_node(13, "Equal", "x,x", &n);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "runs on constants only") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();   /* 2^21 elements */
    ob_init_i64(m, "big", 1, (int64_t[]){2}, (const int64_t[]){1 << 20, 2});
    ob_node(m, "ConstantOfShape", "c", "big", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "more than 1048576 elements") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();
    ob_init_i64(m, "limit", 0, NULL, (const int64_t[]){1000000000});
    ob_node(m, "Range", "rg", "zero,limit,one", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "a range of more than") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();
    ob_init(m, "cond", 1, (int64_t[]){2}, (const float[]){1, 0});
    ob_node(m, "Where", "wh", "cond,s,s", "y");
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_BAD_MODEL, "needs a BOOL condition") != TEST_PASS)
        return TEST_FAIL;
    m = shape_of_x();
    ob_init_i64(m, "k", 1, (int64_t[]){3}, (const int64_t[]){1, 2, 3});
    ob_init_i64(m, "to", 1, (int64_t[]){1}, (const int64_t[]){2});
    ob_node(m, "Expand", "e", "k,to", "y");
    ob_output(m, "y");
    return expect_model(m, RT_ERR_BAD_MODEL, "constant shapes do not broadcast (3 against 2 on axis 0)");
}

/* Resize or Upsample named "rs" on x [N, 2, 3, 4] with the given inputs
 * (the caller adds their constants). */
static struct ob *resize_of_x(int opset, const char *op, const char *inputs, struct ob_node **n)
{
    struct ob *m = ob_new(opset);
    ob_input(m, "x", 4, (int64_t[]){-1, 2, 3, 4});
    *n = ob_node(m, op, "rs", inputs, "y");
    ob_output(m, "y");
    return m;
}

/* Resize and Upsample refuse what they cannot compute: cropping, axes
 * other than the last two, the batch axis, bad scales and sizes, both or
 * neither given, computed scales, unknown modes. */
TEST(onnx_resize_refusals)
{
    static const float up2[] = {1, 1, 2, 2}, channels[] = {1, 2, 1, 1}, batch[] = {2, 1, 1, 1},
                       zero[] = {1, 1, 0, 1}, three[] = {1, 2, 2}, roi[] = {0, 0, 0, 0, 1, 1, 1, 1};
    struct ob_node *n;
    struct ob *m = resize_of_x(13, "Resize", "x,roi,sc", &n);
    ob_init(m, "roi", 1, (int64_t[]){8}, roi);
    ob_init(m, "sc", 1, (int64_t[]){4}, up2);
    ob_attr_string(m, n, "coordinate_transformation_mode", "tf_crop_and_resize");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'rs' (Resize, opset 13): coordinate_transformation_mode "
                                            "'tf_crop_and_resize' is not supported") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, channels);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "resizes axis 1: only the last two axes") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, batch);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "resizing the batch axis is not supported") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, zero);
    if (expect_model(m, RT_ERR_BAD_MODEL, "scales must be positive") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){3}, three);
    if (expect_model(m, RT_ERR_BAD_MODEL, "'scales' has 3 values for 4 dimensions") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc,sz", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, up2);
    ob_init_i64(m, "sz", 1, (int64_t[]){4}, (const int64_t[]){1, 2, 6, 8});
    if (expect_model(m, RT_ERR_BAD_MODEL, "exactly one of 'scales' and 'sizes'") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x", &n);
    if (expect_model(m, RT_ERR_BAD_MODEL, "exactly one of 'scales' and 'sizes'") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,,sz", &n);   /* a size of 0 (and a batch of 5 where the input's is free) */
    ob_init_i64(m, "sz", 1, (int64_t[]){4}, (const int64_t[]){5, 2, 0, 8});
    if (expect_model(m, RT_ERR_UNSUPPORTED, "resizing the batch axis") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);   /* x of a fixed batch of 1, which a size of 1 keeps */
    ob_input(m, "x", 4, (int64_t[]){1, 2, 3, 4});
    ob_node(m, "Resize", "rs", "x,,,sz", "y");
    ob_output(m, "y");
    ob_init_i64(m, "sz", 1, (int64_t[]){4}, (const int64_t[]){1, 2, 0, 8});
    if (expect_model(m, RT_ERR_BAD_MODEL, "invalid size 0") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,x", &n);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "input 'x' must be a constant") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, up2);
    ob_attr_string(m, n, "mode", "area");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "attribute mode='area' is not supported") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(13, "Resize", "x,,sc", &n);
    ob_init(m, "sc", 1, (int64_t[]){4}, up2);
    ob_attr_int(m, n, "exclude_outside", 2);
    if (expect_model(m, RT_ERR_BAD_MODEL, "exclude_outside must be 0 or 1") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(7, "Upsample", "x", &n);
    if (expect_model(m, RT_ERR_BAD_MODEL, "attribute 'scales' must be a list of floats") != TEST_PASS)
        return TEST_FAIL;
    m = resize_of_x(10, "Resize", "x,sc", &n);   /* Resize-10 knows no cubic */
    ob_init(m, "sc", 1, (int64_t[]){4}, up2);
    ob_attr_string(m, n, "mode", "cubic");
    return expect_model(m, RT_ERR_UNSUPPORTED, "attribute mode='cubic' is not supported");
}

/* x [N, 3, 4] normalised over its last dim by LayerNormalization (opset
 * 17) with the given inputs; scale s [4] and bias b [4] ones and zeros. */
static struct ob *layer_norm_of_x(const char *inputs, const char *outputs, struct ob_node **n)
{
    static const float ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
    struct ob *m = ob_new(17);
    ob_input(m, "x", 3, (int64_t[]){-1, 3, 4});
    ob_init(m, "s", 1, (int64_t[]){4}, ones);
    ob_init(m, "b", 1, (int64_t[]){4}, zeros);
    *n = ob_node(m, "LayerNormalization", "ln", inputs, outputs);
    ob_output(m, "y");
    return m;
}

/* LayerNormalization refuses what it cannot compute, naming the node. */
TEST(onnx_layer_norm_refusals)
{
    static const float five[] = {1, 2, 3, 4, 5};
    struct ob_node *n;
    struct ob *m = layer_norm_of_x("x,x", "y", &n);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "node 'ln' (LayerNormalization, opset 17): input 'x' must be a "
                                            "constant") != TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s,b", "y", &n);
    ob_attr_int(m, n, "stash_type", 11);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "stash_type 11 (only 1, float)") != TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s", "y", &n);
    ob_attr_float(m, n, "epsilon", -1e-5f);
    if (expect_model(m, RT_ERR_BAD_MODEL, "epsilon must be finite and not negative") != TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s", "y", &n);
    ob_attr_int(m, n, "axis", 3);
    if (expect_model(m, RT_ERR_BAD_MODEL, "axis out of range for rank 3") != TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s5", "y", &n);
    ob_init(m, "s5", 1, (int64_t[]){5}, five);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "Scale must be a float constant broadcast over the normalised dims only") !=
        TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s,s5", "y", &n);   /* a bias varying along a dim before the axis */
    ob_init(m, "s5", 2, (int64_t[]){3, 1}, five);
    if (expect_model(m, RT_ERR_UNSUPPORTED, "B must be a float constant broadcast") != TEST_PASS)
        return TEST_FAIL;
    m = layer_norm_of_x("x,s,b", "y,mean,inv,extra", &n);
    return expect_model(m, RT_ERR_BAD_MODEL, "takes 1 to 3 outputs, not 4");
}

TEST(onnx_batch_or_whole_mode)
{
    struct rt_model_config cfg;
    struct rt_error err = {0};
    struct ob *m = ob_new(13);   /* [2, 3] concatenated along axis 0: whole mode */
    ob_input(m, "x", 2, (int64_t[]){2, 3});
    ob_attr_int(m, ob_node(m, "Concat", "cat", "x,x", "y"), "axis", 0);
    ob_output(m, "y");
    ASSERT_EQ_INT(parse_model(m, &cfg, &err), RT_OK);
    ASSERT_EQ_INT(cfg.inputs[0].shape.rank, 3);
    ASSERT_EQ_INT(cfg.outputs[0].shape.rank, 3);
    ASSERT_EQ_INT(cfg.outputs[0].shape.dims[1], 4);
    m = ob_new(13);   /* the same with a symbolic first dim cannot run whole */
    ob_input(m, "x", 2, (int64_t[]){-1, 3});
    ob_attr_int(m, ob_node(m, "Concat", "cat", "x,x", "y"), "axis", 0);
    ob_output(m, "y");
    if (expect_model(m, RT_ERR_UNSUPPORTED, "first axis") != TEST_PASS)
        return TEST_FAIL;
    m = ob_new(13);   /* along axis 1: batch mode */
    ob_input(m, "x", 2, (int64_t[]){-1, 3});
    ob_attr_int(m, ob_node(m, "Concat", "cat", "x,x", "y"), "axis", 1);
    ob_output(m, "y");
    ASSERT_EQ_INT(parse_model(m, &cfg, &err), RT_OK);
    ASSERT_EQ_INT(cfg.inputs[0].shape.rank, 2);
    ASSERT_EQ_INT(cfg.outputs[0].sample_elems, 6);
    return TEST_PASS;
}

TEST(onnx_tensor_file_errors)
{
    struct rt_onnx_tensor t;
    struct rt_error err = {0};
    /* TensorProto {dims: 4, data_type: FLOAT, raw_data: 3 bytes} */
    static const uint8_t short_raw[] = {0x08, 0x04, 0x10, 0x01, 0x4a, 0x03, 1, 2, 3};
    ASSERT_EQ_INT(rt_onnx_tensor_parse(short_raw, sizeof(short_raw), "t.pb", &t, &err), RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "raw_data");
    /* dims: 2, data_type: INT64, int64_data: [7, 8] */
    static const uint8_t ints[] = {0x08, 0x02, 0x10, 0x07, 0x3a, 0x02, 7, 8};
    ASSERT_EQ_INT(rt_onnx_tensor_parse(ints, sizeof(ints), "t.pb", &t, &err), RT_ERR_UNSUPPORTED);
    /* dims: 2, data_type: FLOAT, float_data: [1.5, -2] (packed) */
    static const uint8_t floats[] = {0x08, 0x02, 0x10, 0x01, 0x22, 0x08, 0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0};
    ASSERT_EQ_INT(rt_onnx_tensor_parse(floats, sizeof(floats), "t.pb", &t, &err), RT_OK);
    ASSERT_EQ_INT(t.elems, 2);
    ASSERT_NEAR(t.data[0], 1.5, 0);
    ASSERT_NEAR(t.data[1], -2, 0);
    rt_onnx_tensor_free(&t);
    return TEST_PASS;
}
