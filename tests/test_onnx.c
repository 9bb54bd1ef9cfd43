/* test_onnx.c - ONNX models end to end: the ONNX backend test suite and
 * our own cases on the CPU backend (every case passes or is refused as
 * unsupported), a whole-mode graph against the reference kernels, the shipped
 * models exported by torch.onnx.export giving the outputs of their
 * safetensors form, a model folder holding model.onnx with a serving-only
 * model.json, and the refusal to write an ONNX-only graph as model.json. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/ref/kref.h"
#include "onnx/builder.h"
#include "onnx/suite.h"
#include "runtime/format/model_write.h"
#include "runtime/rt_model.h"
#include "runtime/rt_model_impl.h"
#include "test.h"
#include "test_model_util.h"

TEST(onnx_suite_cpu)
{
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err), RT_OK);
    struct onnx_suite_counts total = {0};
    for (int i = 0; ONNX_SUITE_DIRS[i]; i++) {
        struct onnx_suite_counts c;
        bool read = onnx_suite_run_dir(b, ONNX_SUITE_ROOT, ONNX_SUITE_DIRS[i], &(struct onnx_suite_opts){0}, &c);
        TEST_FAIL_IF(!read, "cannot read %s/%s: is libonnx-testdata installed (make deps)?", ONNX_SUITE_ROOT,
                     ONNX_SUITE_DIRS[i]);
        printf("  %-18s %3d passed, %d failed, %3d unsupported, %2d passed bound\n", ONNX_SUITE_DIRS[i], c.passed,
               c.failed, c.unsupported, c.bound);
        total.passed += c.passed;
        total.failed += c.failed;
        total.unsupported += c.unsupported;
        total.bound += c.bound;
    }
    rt_backend_free(b);
    ASSERT_EQ_INT(total.failed, 0);
    /* a loader that refused everything would fail nothing: hold the coverage
     * (bound: Reshape, Slice, Resize, ... with their parameters constant) */
    ASSERT_GE(total.passed, 365);
    ASSERT_GE(total.bound, 90);
    return TEST_PASS;
}

/* tests/data/onnx/cases (make_cases.py): what the ONNX suite leaves out,
 * with a symbolic batch dimension; one case must be refused. */
TEST(onnx_extra_cases_cpu)
{
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err), RT_OK);
    struct onnx_suite_counts c;
    bool read = onnx_suite_run_dir(b, "tests/data/onnx", "cases", &(struct onnx_suite_opts){0}, &c);
    rt_backend_free(b);
    ASSERT_TRUE(read);
    printf("  %d passed, %d failed, %d unsupported\n", c.passed, c.failed, c.unsupported);
    ASSERT_EQ_INT(c.failed, 0);
    ASSERT_EQ_INT(c.unsupported, 1);
    ASSERT_GE(c.passed, 63);
    return TEST_PASS;
}

/* Live nodes of op in a loaded model's graph; *last the last of them. */
static int live_nodes(const struct rt_model *m, enum rt_op op, const struct rt_node **last)
{
    const struct rt_graph *g = rt_model_graph(m);
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].removed && g->nodes[i].op == op) {
            count++;
            *last = &g->nodes[i];
        }
    return count;
}

/* A layer norm as opset 13 writes it out (ReduceMean, Sub, Pow, ReduceMean,
 * Add, Sqrt, Div, then Mul and Add of its weight and bias) runs as one
 * layer_norm holding both; where the normalised tensor is read twice, the
 * Mul and Add stay (make_cases.py's cases; their outputs are checked by
 * onnx_extra_cases_cpu). */
TEST(onnx_written_out_layer_norm_runs_as_one)
{
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m = NULL, *twice = NULL;
    const struct rt_node *ln = NULL, *other = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    enum rt_status s = rt_model_load("tests/data/onnx/cases/layer_norm_exported", b, &m, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    s = rt_model_load("tests/data/onnx/cases/layer_norm_read_twice", b, &twice, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(live_nodes(m, RT_OP_LAYER_NORM, &ln), 1);
    ASSERT_TRUE(ln->w[RT_W_WEIGHT].data && ln->w[RT_W_BIAS].data);
    ASSERT_EQ_INT(ln->w[RT_W_WEIGHT].shape.dims[0], 16);
    ASSERT_NEAR(ln->a.layer_norm.eps, 1e-5, 1e-12);
    ASSERT_EQ_INT(live_nodes(m, RT_OP_REDUCE, &other), 0);
    ASSERT_EQ_INT(live_nodes(m, RT_OP_UNARY, &other), 0);
    ASSERT_EQ_INT(live_nodes(m, RT_OP_BINARY, &other), 0);
    ASSERT_EQ_INT(live_nodes(twice, RT_OP_LAYER_NORM, &ln), 1);
    ASSERT_TRUE(!ln->w[RT_W_WEIGHT].data && !ln->w[RT_W_BIAS].data);
    ASSERT_EQ_INT(live_nodes(twice, RT_OP_BINARY, &other), 1);   /* n * w; n + that is an add */
    ASSERT_EQ_INT(live_nodes(twice, RT_OP_ADD, &other), 1);
    rt_model_free(m);
    rt_model_free(twice);
    rt_backend_free(b);
    return TEST_PASS;
}

/* Logits of the same random batch through both folders. */
static enum test_result same_outputs(const char *safetensors_dir, const char *onnx_dir)
{
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err), RT_OK);
    struct rt_model *m[2] = {NULL, NULL};
    enum rt_status s0 = rt_model_load(safetensors_dir, b, &m[0], &err);
    TEST_FAIL_IF(s0 != RT_OK, "%s", err.msg);
    enum rt_status s1 = rt_model_load(onnx_dir, b, &m[1], &err);
    TEST_FAIL_IF(s1 != RT_OK, "%s", err.msg);
    const struct rt_model_config *c0 = rt_model_config(m[0]), *c1 = rt_model_config(m[1]);
    ASSERT_EQ_INT(c1->inputs[0].sample_elems, c0->inputs[0].sample_elems);
    ASSERT_EQ_INT(c1->outputs[0].sample_elems, c0->outputs[0].sample_elems);
    ASSERT_STR_EQ(c1->inputs[0].name, c0->inputs[0].name);
    ASSERT_EQ_INT(c1->n_labels, c0->n_labels);
    ASSERT_EQ_INT(c1->pre.present, c0->pre.present);
    const int batch = 7;
    int64_t n_in = c0->inputs[0].sample_elems * batch, n_out = c0->outputs[0].sample_elems * batch;
    float *x = malloc(sizeof(float) * (size_t)n_in);
    float *y[2] = {malloc(sizeof(float) * (size_t)n_out), malloc(sizeof(float) * (size_t)n_out)};
    RT_ASSERT(x && y[0] && y[1]);
    test_rand_fill(x, n_in, -2, 2);
    enum rt_status st = RT_OK;
    for (int k = 0; k < 2 && st == RT_OK; k++) {
        struct rt_session *s;
        st = rt_session_create(m[k], &s, &err);
        if (st == RT_OK) {
            st = rt_session_run(s, batch, (const float *const[]){x}, (float *const[]){y[k]}, &err);
            rt_session_free(s);
        }
    }
    double rel = st == RT_OK ? test_rel_error(y[1], y[0], n_out) : INFINITY;
    free(x), free(y[0]), free(y[1]);
    rt_model_free(m[0]), rt_model_free(m[1]);
    rt_backend_free(b);
    TEST_FAIL_IF(st != RT_OK, "%s: %s", rt_status_name(st), err.msg);
    printf("  %s: max relative difference %.3g over %d images\n", onnx_dir, rel, batch);
    ASSERT_LE(rel, 1e-5);
    return TEST_PASS;
}

TEST(onnx_shipped_models_match_safetensors)
{
    if (same_outputs("model_repository/lenet5", "tests/data/onnx/lenet5") != TEST_PASS)
        return TEST_FAIL;
    return same_outputs("model_repository/resnet-mini", "tests/data/onnx/resnet-mini");
}

/* x [N, 4] -> MatMul w [4, 3] -> Add b -> Softmax -> y [N, 3] */
static uint8_t *small_onnx(size_t *len)
{
    static const float w[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, b[3] = {0.5f, 0, -0.5f};
    struct ob *m = ob_new(13);
    ob_input(m, "x", 2, (int64_t[]){-1, 4});
    ob_init(m, "w", 2, (int64_t[]){4, 3}, w);
    ob_init(m, "b", 1, (int64_t[]){3}, b);
    ob_node(m, "MatMul", "mm", "x,w", "h");
    ob_node(m, "Add", "add", "h,b", "z");
    ob_node(m, "Softmax", "sm", "z", "y");
    ob_output(m, "y");
    uint8_t *buf = ob_pack(m, len);
    ob_free(m);
    return buf;
}

/* A new temporary folder holding small_onnx() as model.onnx. */
static bool small_onnx_folder(char *dir, size_t cap)
{
    size_t len;
    uint8_t *onnx = NULL;
    bool ok = tmp_dir_make(dir, cap) && (onnx = small_onnx(&len)) && write_file(dir, "model.onnx", onnx, len);
    free(onnx);
    return ok;
}

TEST(onnx_model_folder_with_serving_json)
{
    char dir[256];
    ASSERT_TRUE(small_onnx_folder(dir, sizeof(dir)));
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    /* no model.json: defaults */
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(rt_model_config(m)->max_batch_size, 64);
    rt_model_free(m);
    /* serving settings and labels */
    static const char JSON[] = "{\"format_version\": 1, \"max_batch_size\": 8, \"labels\": \"labels.txt\","
                               " \"dynamic_batching\": {\"max_queue_delay_us\": 100}}";
    ASSERT_TRUE(write_file(dir, "model.json", JSON, strlen(JSON)));
    ASSERT_TRUE(write_file(dir, "labels.txt", "a\nb\nc\n", 6));
    s = rt_model_load(dir, b, &m, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    const struct rt_model_config *cfg = rt_model_config(m);
    ASSERT_EQ_INT(cfg->max_batch_size, 8);
    ASSERT_EQ_INT(cfg->batching.max_queue_delay_us, 100);
    ASSERT_EQ_INT(cfg->n_labels, 3);
    ASSERT_STR_EQ(cfg->outputs[0].name, "y");
    struct rt_session *sess;
    float x[8] = {1, 2, 3, 4, -1, 0, 1, 0}, y[6];
    ASSERT_EQ_INT(rt_session_create(m, &sess, &err), RT_OK);
    // cppcheck-suppress legacyUninitvar ; rt_session_run writes y through the outputs array
    ASSERT_EQ_INT(rt_session_run(sess, 2, (const float *const[]){x}, (float *const[]){y}, &err), RT_OK);
    rt_session_free(sess);
    rt_model_free(m);
    /* by hand: z = x . w + b, then softmax per row */
    for (size_t r = 0; r < 2; r++) {
        double z[3] = {x[4 * r] + x[4 * r + 3] + 0.5, x[4 * r + 1] + x[4 * r + 3], x[4 * r + 2] + x[4 * r + 3] - 0.5};
        double mx = fmax(z[0], fmax(z[1], z[2])), sum = 0;
        for (int j = 0; j < 3; j++)
            sum += exp(z[j] - mx);
        for (int j = 0; j < 3; j++)
            ASSERT_NEAR(y[3 * r + j], exp(z[j] - mx) / sum, 1e-6);
    }
    /* a graph in model.json beside model.onnx is refused */
    static const char BAD[] = "{\"format_version\": 1, \"nodes\": []}";
    ASSERT_TRUE(write_file(dir, "model.json", BAD, strlen(BAD)));
    ASSERT_EQ_INT(rt_model_load(dir, b, &m, &err), RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, "comes from model.onnx");
    tmp_dir_remove(dir);
    rt_backend_free(b);
    return TEST_PASS;
}

/* The small ONNX folder loaded, written as model.json spliced into source
 * json, and loaded back: y[0] and y[1] receive the two models' outputs for
 * the same two samples, *back_cfg the written model's configuration. */
/* The first cap - 1 bytes of dir/model.json into text. */
static bool read_model_json(const char *dir, char *text, size_t cap)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, cap - 1, f);
    text[n] = '\0';
    fclose(f);
    return n > 0;
}

/* text (NULL: not wanted) receives up to cap bytes of the written model.json. */
static enum test_result written_and_back(const char *json, float y[2][6], struct rt_model_config *back_cfg,
                                         char *text, size_t cap)
{
    char dir[256], out[256];
    ASSERT_TRUE(small_onnx_folder(dir, sizeof(dir)));
    ASSERT_TRUE(tmp_dir_make(out, sizeof(out)));
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m = NULL, *back = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    const char *slash = strrchr(out, '/');
    struct rt_write_options wo = {.name = slash ? slash + 1 : out, .precision = RT_PRECISION_FP32};
    s = rt_model_write(out, json, strlen(json), rt_model_config(m), rt_model_graph(m), &wo, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    if (text)
        ASSERT_TRUE(read_model_json(out, text, cap));
    s = rt_model_load(out, b, &back, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    *back_cfg = *rt_model_config(back);
    back_cfg->labels = NULL;   /* owned by the model, freed below */
    float x[8] = {1, 2, 3, 4, -1, 0, 1, 0};
    struct rt_model *both[2] = {m, back};
    for (int k = 0; k < 2; k++) {
        struct rt_session *sess;
        ASSERT_EQ_INT(rt_session_create(both[k], &sess, &err), RT_OK);
        ASSERT_EQ_INT(rt_session_run(sess, 2, (const float *const[]){x}, (float *const[]){y[k]}, &err), RT_OK);
        rt_session_free(sess);
    }
    rt_model_free(m);
    rt_model_free(back);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    tmp_dir_remove(out);
    return TEST_PASS;
}

/* MatMul then Add of a constant row loads as one linear with a bias, which
 * model.json can hold: written and read back, the model computes the same. */
TEST(onnx_linear_bias_written_as_model_json)
{
    /* the source model.json declares the tensors (as a hand-written one would) */
    static const char JSON[] = "{\"format_version\": 1, \"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", "
                               "\"shape\": [-1, 4]}], \"outputs\": [{\"name\": \"y\", \"datatype\": \"FP32\", "
                               "\"shape\": [-1, 3]}]}";
    float y[2][6] = {{0}};
    struct rt_model_config cfg;
    if (written_and_back(JSON, y, &cfg, NULL, 0) != TEST_PASS)
        return TEST_FAIL;
    for (int i = 0; i < 6; i++)
        ASSERT_NEAR(y[1][i], y[0][i], 1e-7);
    /* softmax(x . w + b) of the first row, by hand */
    double z[3] = {1 + 0.5, 2, 3 - 0.5}, sum = exp(z[0]) + exp(z[1]) + exp(z[2]);
    ASSERT_NEAR(y[1][0], exp(z[0]) / sum, 1e-6);
    return TEST_PASS;
}

/* An ONNX folder without model.json (inferctl convert passes "{}" then):
 * the written model.json declares the ONNX graph's inputs and outputs,
 * where model.json files have them (format_version first, inputs and
 * outputs before the nodes), and loads back computing the same. */
TEST(onnx_written_as_model_json_without_a_source)
{
    float y[2][6] = {{0}};
    struct rt_model_config cfg;
    char text[4096];
    if (written_and_back("{}", y, &cfg, text, sizeof(text)) != TEST_PASS)
        return TEST_FAIL;
    const char *version = strstr(text, "\"format_version\""), *name = strstr(text, "\"name\"");
    const char *inputs = strstr(text, "\"inputs\""), *outputs = strstr(text, "\"outputs\"");
    const char *nodes = strstr(text, "\"nodes\"");
    TEST_FAIL_IF(!version || !name || !inputs || !outputs || !nodes || version > name || name > inputs ||
                     inputs > outputs || outputs > nodes,
                 "keys out of order in the written model.json:\n%.600s", text);
    ASSERT_EQ_INT(cfg.n_inputs, 1);
    ASSERT_STR_EQ(cfg.inputs[0].name, "x");
    ASSERT_EQ_INT(cfg.inputs[0].shape.rank, 2);
    ASSERT_EQ_INT(cfg.inputs[0].shape.dims[1], 4);
    ASSERT_STR_EQ(cfg.outputs[0].name, "y");
    ASSERT_EQ_INT(cfg.outputs[0].shape.dims[1], 3);
    for (int i = 0; i < 6; i++)
        ASSERT_NEAR(y[1][i], y[0][i], 1e-7);
    return TEST_PASS;
}

/* An ONNX graph that uses ops model.json cannot name (here binary: a Mul
 * by a constant row) is not written as model.json + safetensors (inferctl
 * quantize and convert write that way): a clear refusal, nothing written. */
TEST(onnx_only_ops_are_not_written_as_model_json)
{
    static const float k[3] = {0.5f, 2, -1};
    char dir[256], out[256];
    size_t len;
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tmp_dir_make(out, sizeof(out)));
    struct ob *g = ob_new(13);
    ob_input(g, "x", 2, (int64_t[]){-1, 3});
    ob_init(g, "k", 1, (int64_t[]){3}, k);
    ob_node(g, "Mul", "scale", "x,k", "y");
    ob_output(g, "y");
    uint8_t *onnx = ob_pack(g, &len);
    ob_free(g);
    bool written = onnx && write_file(dir, "model.onnx", onnx, len);
    free(onnx);
    ASSERT_TRUE(written);
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    static const char JSON[] = "{\"format_version\": 1}";
    struct rt_write_options wo = {.name = "out", .precision = RT_PRECISION_FP32};
    s = rt_model_write(out, JSON, strlen(JSON), rt_model_config(m), rt_model_graph(m), &wo, &err);
    rt_model_free(m);
    rt_backend_free(b);
    ASSERT_EQ_INT(s, RT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(err.msg, "op 'binary' has no model.json form");
    char path[512];
    snprintf(path, sizeof(path), "%s/model.json", out);
    ASSERT_FALSE(access(path, F_OK) == 0);
    tmp_dir_remove(dir);
    tmp_dir_remove(out);
    return TEST_PASS;
}

/* A whole-mode graph (Concat along axis 0) with a Conv inside, which runs
 * through views on its ONNX first dim of 1: against kref's convolution. */
TEST(onnx_whole_mode_conv_matches_reference)
{
    float w[18], x[25];
    test_rand_fill(w, 18, -1, 1);
    test_rand_fill(x, 25, -1, 1);
    struct ob *m = ob_new(13);
    ob_input(m, "x", 4, (int64_t[]){1, 1, 5, 5});
    ob_init(m, "w", 4, (int64_t[]){2, 1, 3, 3}, w);
    ob_attr_ints(m, ob_node(m, "Conv", "conv", "x,w", "c"), "pads", 4, (int64_t[]){1, 1, 1, 2});
    ob_attr_int(m, ob_node(m, "Concat", "cat", "c,c", "y"), "axis", 0);
    ob_output(m, "y");
    size_t len;
    uint8_t *onnx = ob_pack(m, &len);
    ob_free(m);
    char dir[256];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(write_file(dir, "model.onnx", onnx, len));
    free(onnx);
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *model;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    enum rt_status s = rt_model_load(dir, b, &model, &err);
    TEST_FAIL_IF(s != RT_OK, "%s", err.msg);
    const struct rt_model_config *cfg = rt_model_config(model);
    ASSERT_EQ_INT(cfg->inputs[0].shape.rank, 5);    /* [-1, 1, 1, 5, 5] */
    ASSERT_EQ_INT(cfg->outputs[0].shape.rank, 5);   /* [-1, 2, 2, 5, 6] */
    ASSERT_EQ_INT(cfg->outputs[0].sample_elems, 2 * 2 * 5 * 6);
    float xs[50], y[240];
    memcpy(xs, x, sizeof(x));
    memcpy(xs + 25, x, sizeof(x));   /* two samples: the same image twice */
    struct rt_session *sess;
    ASSERT_EQ_INT(rt_session_create(model, &sess, &err), RT_OK);
    // cppcheck-suppress legacyUninitvar ; rt_session_run writes y through the outputs array
    ASSERT_EQ_INT(rt_session_run(sess, 2, (const float *const[]){xs}, (float *const[]){y}, &err), RT_OK);
    rt_session_free(sess);
    rt_model_free(model);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    struct k_conv2d k = {.n = 1, .c = 1, .h = 5, .w = 5, .oc = 2, .oh = 5, .ow = 6, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    float full[60];
    kref_conv2d_f32(&k, x, w, NULL, NULL, full);
    for (int i = 0; i < 240; i++)
        ASSERT_NEAR(y[i], full[i % 60], 1e-5);
    return TEST_PASS;
}
