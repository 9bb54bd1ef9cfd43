/*
 * test_int8_model.c - INT8 models through the loader and the executor: a
 * hand-built INT8 model against the same computation spelled out with the
 * reference kernels (bit for bit, under every ISA), every malformed INT8
 * file rejected with a clear message, and the calibrate -> write -> load
 * path of the quantisation tool on the tiny FP32 test model.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_impl.h"
#include "kernels/ref/kref_q8.h"
#include "runtime/precision/calib.h"
#include "runtime/rt_model.h"
#include "runtime/rt_model_impl.h"
#include "runtime/format/model_write.h"
#include "runtime/precision/quant.h"
#include "test.h"
#include "test_model_util.h"

/* conv (I8, fused ReLU) -> max pool -> flatten -> linear (I8, I32 out). */
static const char Q8_JSON[] =
    "{\"format_version\": 1, \"precision\": \"int8\", \"max_batch_size\": 8,"
    " \"inputs\": [{\"name\": \"x\", \"datatype\": \"FP32\", \"shape\": [-1, 1, 6, 6]}],"
    " \"outputs\": [{\"name\": \"y\", \"datatype\": \"FP32\", \"shape\": [-1, 5]}],"
    " \"nodes\": ["
    "  {\"name\": \"conv\", \"op\": \"conv2d\", \"inputs\": [\"x\"], \"outputs\": [\"c\"],"
    "   \"weights\": {\"weight\": \"conv.weight\", \"bias\": \"conv.bias\"}, \"attrs\": {\"padding\": [1, 1]}},"
    "  {\"name\": \"relu\", \"op\": \"relu\", \"inputs\": [\"c\"], \"outputs\": [\"r\"]},"
    "  {\"name\": \"pool\", \"op\": \"max_pool2d\", \"inputs\": [\"r\"], \"outputs\": [\"p\"],"
    "   \"attrs\": {\"kernel\": [2, 2]}},"
    "  {\"name\": \"flat\", \"op\": \"flatten\", \"inputs\": [\"p\"], \"outputs\": [\"f\"]},"
    "  {\"name\": \"fc\", \"op\": \"linear\", \"inputs\": [\"f\"], \"outputs\": [\"y\"],"
    "   \"weights\": {\"weight\": \"fc.weight\", \"bias\": \"fc.bias\"}}"
    " ],"
    " \"quantization\": {\"method\": \"max\", \"calibration_images\": 1,"
    "  \"activation_scales\": {\"x\": 0.02, \"c\": 0.05, \"r\": 0.04, \"p\": 0.04}}}";

/* the scales as the loader holds them: model.json's numbers as floats */
#define S_X ((double)0.02f)
#define S_R ((double)0.04f)

struct q8_weights {
    int8_t conv_w[36], fc_w[5 * 36];
    float conv_s[4], fc_s[5], conv_b[4], fc_b[5];
};

static void q8_weights_init(struct q8_weights *w)
{
    for (int i = 0; i < 36; i++)
        w->conv_w[i] = (int8_t)test_rand_int(-127, 127);
    for (int i = 0; i < 5 * 36; i++)
        w->fc_w[i] = (int8_t)test_rand_int(-127, 127);
    test_rand_fill(w->conv_s, 4, 0.002f, 0.01f);
    test_rand_fill(w->fc_s, 5, 0.002f, 0.01f);
    test_rand_fill(w->conv_b, 4, -0.5f, 0.5f);
    test_rand_fill(w->fc_b, 5, -0.5f, 0.5f);
}

/* Tensor list variants for the malformed-file tests. */
enum variant { V_OK, V_NO_SCALE, V_SCALE_SHAPE, V_SCALE_ZERO, V_SCALE_NEG, V_SCALE_NAN, V_F32_WEIGHT };

static bool q8_model_write(const char *dir, const char *json, const struct q8_weights *w, enum variant v)
{
    float bad[5], f32w[5 * 36];
    memcpy(bad, w->fc_s, sizeof(bad));
    bad[2] = v == V_SCALE_ZERO ? 0.0f : v == V_SCALE_NEG ? -0.01f : NAN;
    for (int i = 0; i < 5 * 36; i++)
        f32w[i] = (float)w->fc_w[i] * 0.01f;
    struct rt_st_write t[] = {
        {"conv.weight", RT_DTYPE_I8, {4, {4, 1, 3, 3}}, w->conv_w},
        {"conv.weight_scale", RT_DTYPE_F32, {1, {4}}, w->conv_s},
        {"conv.bias", RT_DTYPE_F32, {1, {4}}, w->conv_b},
        {"fc.bias", RT_DTYPE_F32, {1, {5}}, w->fc_b},
        v == V_F32_WEIGHT ? (struct rt_st_write){"fc.weight", RT_DTYPE_F32, {2, {5, 36}}, f32w}
                          : (struct rt_st_write){"fc.weight", RT_DTYPE_I8, {2, {5, 36}}, w->fc_w},
        v == V_SCALE_SHAPE ? (struct rt_st_write){"fc.weight_scale", RT_DTYPE_F32, {1, {4}}, w->fc_s}
        : v >= V_SCALE_ZERO && v <= V_SCALE_NAN ? (struct rt_st_write){"fc.weight_scale", RT_DTYPE_F32, {1, {5}}, bad}
                                                 : (struct rt_st_write){"fc.weight_scale", RT_DTYPE_F32, {1, {5}}, w->fc_s},
    };
    char path[1024];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    struct rt_error err;
    int n = v == V_NO_SCALE ? 5 : 6;
    return rt_safetensors_write(path, t, n, NULL, 0, &err) == RT_OK && write_file(dir, "model.json", json, strlen(json));
}

/* The model's computation spelled out with the reference kernels. */
static void q8_forward_ref(const struct q8_weights *w, int n, const float *x, float *y)
{
    int8_t *xq = malloc((size_t)n * 36), *r = malloc((size_t)n * 144), *p = malloc((size_t)n * 36);
    int32_t *acc = malloc(sizeof(int32_t) * (size_t)n * 5);
    RT_ASSERT(xq && r && p && acc);
    kref_quantize_q8((int64_t)n * 36, x, (float)(1.0 / S_X), xq);
    int32_t cb[4], fb[5];
    struct k_q8_mult cm[4], fm[5];
    float ds[5];
    for (int o = 0; o < 4; o++) {
        cb[o] = rt_q8_bias(w->conv_b[o], S_X * w->conv_s[o]);
        cm[o] = rt_q8_mult(S_X * w->conv_s[o] / S_R);   /* ReLU fused: the ReLU output's scale */
    }
    for (int o = 0; o < 5; o++) {
        fb[o] = rt_q8_bias(w->fc_b[o], S_R * w->fc_s[o]);
        fm[o] = rt_q8_mult(1);
        ds[o] = (float)(S_R * w->fc_s[o]);
    }
    struct k_conv2d cv = {.n = n, .c = 1, .h = 6, .w = 6, .oc = 4, .oh = 6, .ow = 6, .kh = 3, .kw = 3,
                          .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1, .dil_h = 1, .dil_w = 1, .groups = 1};
    struct k_q8_epilogue ce = {.bias = cb, .mult = cm, .lo = 0, .hi = K_Q8_MAX};
    kref_conv2d_q8(&cv, xq, w->conv_w, &ce, NULL, r);
    struct k_pool2d pl = {.n = n, .c = 4, .h = 6, .w = 6, .oh = 3, .ow = 3, .kh = 2, .kw = 2,
                          .stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1};
    kref_max_pool2d_q8(&pl, r, p);
    struct k_linear ln = {.n = n, .k = 36, .m = 5};
    struct k_q8_epilogue fe = {.bias = fb, .mult = fm, .lo = K_Q8_MIN, .hi = K_Q8_MAX, .out_i32 = 1};
    kref_linear_q8(&ln, p, w->fc_w, &fe, NULL, acc);
    kref_dequantize_i32(n, 5, 1, acc, ds, y);
    free(xq), free(r), free(p), free(acc);
}

static void restore_isa(int *saved)
{
    kcpu_isa_set((enum kcpu_isa)*saved);
}

TEST(int8_model_matches_reference_kernels)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct q8_weights w;
    q8_weights_init(&w);
    ASSERT_TRUE(q8_model_write(dir, Q8_JSON, &w, V_OK));
    enum { N = 7 };
    float x[N * 36], want[N * 5], got[N * 5];
    test_rand_fill(x, (int64_t)N * 36, -2.5f, 2.5f);   /* some beyond 127 * S_X: saturating inputs */
    q8_forward_ref(&w, N, x, want);
    struct rt_error err = {0};
    struct rt_backend *b;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &b, &err), RT_OK);
    int saved __attribute__((cleanup(restore_isa))) = (int)kcpu_isa(); // NOLINT(clang-analyzer-deadcode.DeadStores): restore_isa reads it at scope exit
    enum test_result r = TEST_PASS;
    for (int isa = KCPU_ISA_SCALAR; isa <= (int)kcpu_isa_hardware() && r == TEST_PASS; isa++) {
        kcpu_isa_set((enum kcpu_isa)isa);
        struct rt_model *m;
        struct rt_session *s;
        TEST_FAIL_IF(rt_model_load(dir, b, &m, &err) != RT_OK, "%s", err.msg);
        ASSERT_EQ_INT(rt_model_config(m)->precision, RT_PRECISION_INT8);
        /* quantize, conv+relu, pool, linear, dequantize: flatten is a view */
        ASSERT_EQ_INT(rt_model_plan_steps(m), 5);
        ASSERT_EQ_INT(rt_session_create(m, &s, &err), RT_OK);
        const float *in[1] = {x};
        float *out[1] = {got};
        ASSERT_EQ_INT(rt_session_run(s, N, in, out, &err), RT_OK);
        // cppcheck-suppress legacyUninitvar ; rt_session_run writes got through out
        if (!test_same_bits(got, want, sizeof(got))) {
            test_fail_msg(__FILE__, __LINE__, "%s: outputs differ from the reference kernels (%g vs %g)",
                          kcpu_isa_name((enum kcpu_isa)isa), (double)got[0], (double)want[0]);
            r = TEST_FAIL;
        }
        rt_session_free(s);
        rt_model_free(m);
    }
    rt_backend_free(b);
    tmp_dir_remove(dir);
    return r;
}

/* Writes the model with json edited (from -> to, when from) and tensors per
 * v, and expects a load error containing both strings. */
static enum test_result expect_q8_error(const char *from, const char *to, enum variant v, const char *want1,
                                        const char *want2)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct q8_weights w;
    q8_weights_init(&w);
    char *json = from ? str_replace_once(Q8_JSON, from, to) : strdup(Q8_JSON);
    bool written = q8_model_write(dir, json, &w, v);
    free(json);
    ASSERT_TRUE(written);
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err), RT_OK);
    enum rt_status s = rt_model_load(dir, b, &m, &err);
    rt_model_free(m);
    rt_backend_free(b);
    tmp_dir_remove(dir);
    ASSERT_EQ_INT(s, RT_ERR_BAD_MODEL);
    ASSERT_STR_CONTAINS(err.msg, want1);
    ASSERT_STR_CONTAINS(err.msg, want2);
    return TEST_PASS;
}

TEST(int8_rejects_missing_weight_scale)
{
    return expect_q8_error(NULL, NULL, V_NO_SCALE, "'fc.weight_scale' is missing", "per-output-channel F32 scales");
}

TEST(int8_rejects_wrong_scale_shape)
{
    return expect_q8_error(NULL, NULL, V_SCALE_SHAPE, "fc.weight_scale", "shape must be [5]");
}

TEST(int8_rejects_zero_negative_nan_scales)
{
    enum test_result r = expect_q8_error(NULL, NULL, V_SCALE_ZERO, "fc.weight_scale", "scale 2 is 0; scales must be positive");
    if (r == TEST_PASS)
        r = expect_q8_error(NULL, NULL, V_SCALE_NEG, "scale 2 is -0.01", "positive and finite");
    if (r == TEST_PASS)
        r = expect_q8_error(NULL, NULL, V_SCALE_NAN, "scale 2 is nan", "positive and finite");
    if (r == TEST_PASS)
        r = expect_q8_error("\"r\": 0.04", "\"r\": 0", V_OK, "activation scale of tensor 'r'", "positive finite");
    if (r == TEST_PASS)
        r = expect_q8_error("\"x\": 0.02", "\"x\": -0.02", V_OK, "activation scale of tensor 'x'", "positive finite");
    if (r == TEST_PASS)
        r = expect_q8_error("\"x\": 0.02", "\"x\": 1e999", V_OK, "activation scale of tensor 'x'", "positive finite");
    return r;
}

TEST(int8_rejects_dtype_mismatches)
{
    enum test_result r = expect_q8_error(NULL, NULL, V_F32_WEIGHT, "tensor 'fc.weight': dtype F32, expected I8",
                                         "precision int8");
    if (r == TEST_PASS)   /* I8 weights where F32 is expected */
        r = expect_q8_error("\"precision\": \"int8\"", "\"precision\": \"fp32\"", V_OK,
                            "tensor 'conv.weight': dtype I8, expected F32", "precision fp32");
    return r;
}

TEST(int8_rejects_bad_activation_scales)
{
    enum test_result r = expect_q8_error(", \"r\": 0.04", "", V_OK, "no activation scale for tensor 'r'", "relu");
    if (r == TEST_PASS)
        r = expect_q8_error(", \"quantization\": {\"method\": \"max\", \"calibration_images\": 1,  "
                            "\"activation_scales\": {\"x\": 0.02, \"c\": 0.05, \"r\": 0.04, \"p\": 0.04}}",
                            "", V_OK, "quantization", "required for precision");
    if (r == TEST_PASS)   /* a misspelt key is refused, not ignored */
        r = expect_q8_error("\"quantization\"", "\"quantisation\"", V_OK, "unknown key 'quantisation'",
                            "did you mean 'quantization'?");
    if (r == TEST_PASS)
        r = expect_q8_error("\"x\": 0.02", "\"x\": 0.02, \"zz\": 1", V_OK, "'zz' names no tensor", "activation_scales");
    if (r == TEST_PASS)   /* max pooling keeps its input's scale */
        r = expect_q8_error("\"p\": 0.04", "\"p\": 0.05", V_OK, "activation scale of 'p' must equal its input's",
                            "max_pool2d");
    if (r == TEST_PASS)
        r = expect_q8_error("\"activation_scales\": {", "\"activation_scales\": [", V_OK, "model.json", "");
    if (r == TEST_PASS)   /* the runtime's own ops are not for model files */
        r = expect_q8_error("\"op\": \"relu\"", "\"op\": \"quantize\"", V_OK, "unknown op 'quantize'", "relu");
    return r;
}

struct calib_ctx {
    struct rt_calib c;
    const struct rt_graph *g;
};

static void observe(void *user, int t, const float *data, int batch)
{
    struct calib_ctx *cc = user;
    rt_calib_add(&cc->c, t, data, cc->g->tensors[t].sample_elems * batch);
}

/* Outputs of the model folder dir for n samples x. */
static bool run_folder(struct rt_backend *b, const char *dir, int n, const float *x, float *y, struct rt_error *err)
{
    struct rt_model *m;
    struct rt_session *s;
    if (rt_model_load(dir, b, &m, err) != RT_OK)
        return false;
    bool ok = rt_session_create(m, &s, err) == RT_OK;
    const float *in[1] = {x};
    float *out[1] = {y};
    ok = ok && rt_session_run(s, n, in, out, err) == RT_OK;
    if (ok)
        rt_session_free(s);
    rt_model_free(m);
    return ok;
}

/* The quantisation tool's path on the tiny FP32 model (conv, batch norm,
 * relu, pool, flatten, linear): calibrate through the observer, write the
 * folder at each precision, load it back. */
TEST(int8_calibrate_write_load_pipeline)
{
    char src[64], q8[64], f16[64], f32[64];
    ASSERT_TRUE(tmp_dir_make(src, sizeof(src)) && tmp_dir_make(q8, sizeof(q8)) && tmp_dir_make(f16, sizeof(f16)) &&
                tmp_dir_make(f32, sizeof(f32)));
    struct tiny_weights tw;
    tiny_weights_init(&tw);
    ASSERT_TRUE(tiny_model_write(src, TINY_MODEL_JSON, &tw));
    enum { N = 8 };
    float x[N * TINY_IN_ELEMS], ref[N * TINY_CLASSES], y[N * TINY_CLASSES], y2[N * TINY_CLASSES];
    test_rand_fill(x, (int64_t)N * TINY_IN_ELEMS, -1, 1);
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m;
    struct rt_session *s;
    struct rt_load_options lo = {.unfused = true};
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err), RT_OK);
    TEST_FAIL_IF(rt_model_load_ex(src, b, &lo, &m, &err) != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(rt_session_create(m, &s, &err), RT_OK);
    struct calib_ctx cc = {.g = rt_model_graph(m)};
    ASSERT_TRUE(rt_calib_init(&cc.c, cc.g->n_tensors));
    const float *in[1] = {x};
    float *out[1] = {ref};
    for (int pass = 0; pass < 2; pass++) {
        ASSERT_EQ_INT(rt_session_run_observed(s, N, in, out, observe, &cc, &err), RT_OK);
        rt_calib_next_pass(&cc.c);
    }
    float *scales = calloc((size_t)cc.g->n_tensors, sizeof(float));
    RT_ASSERT(scales);
    rt_calib_scales(&cc.c, cc.g, RT_CALIB_MAX, 0, scales);
    const char *dirs[3] = {q8, f16, f32};
    const enum rt_precision precs[3] = {RT_PRECISION_INT8, RT_PRECISION_FP16, RT_PRECISION_FP32};
    for (int i = 0; i < 3; i++) {
        struct rt_write_options wo = {.name = strrchr(dirs[i], '/') + 1, .precision = precs[i],
                                      .act_scales = scales, .method = "max", .calibration_images = N};
        TEST_FAIL_IF(rt_model_write(dirs[i], TINY_MODEL_JSON, strlen(TINY_MODEL_JSON), rt_model_config(m), cc.g, &wo,
                                    &err) != RT_OK, "%s", err.msg);
    }
    free(scales);
    rt_calib_free(&cc.c);
    rt_session_free(s);
    rt_model_free(m);

    /* fp32 written back: batch norm folded, the same numbers exactly */
    TEST_FAIL_IF(!run_folder(b, f32, N, x, y, &err), "%s", err.msg);
    ASSERT_TRUE(test_same_bits(y, ref, sizeof(y)));
    /* fp16: close to fp32, and every value representable in half */
    TEST_FAIL_IF(!run_folder(b, f16, N, x, y, &err), "%s", err.msg);
    ASSERT_LE(test_rel_error(y, ref, (int64_t)N * TINY_CLASSES), 2e-3);
    for (int i = 0; i < N * TINY_CLASSES; i++)
        ASSERT_EQ_INT(k_f32_bits(k_f16_round(y[i])), k_f32_bits(y[i]));
    /* the fp32 folder marked fp16 rounds its weights at load: same result */
    char *json = str_replace_once(TINY_MODEL_JSON, "\"format_version\": 1,", "\"format_version\": 1, \"precision\": \"fp16\",");
    ASSERT_TRUE(write_file(src, "model.json", json, strlen(json)));
    free(json);
    TEST_FAIL_IF(!run_folder(b, src, N, x, y2, &err), "%s", err.msg);
    ASSERT_TRUE(test_same_bits(y, y2, sizeof(y)));
    /* int8: within a few quantisation steps of fp32 */
    TEST_FAIL_IF(!run_folder(b, q8, N, x, y, &err), "%s", err.msg);
    double e = test_rel_error(y, ref, (int64_t)N * TINY_CLASSES);
    printf("  int8 vs fp32: relative error %.3g\n", e);
    ASSERT_LE(e, 0.05);
    rt_backend_free(b);
    tmp_dir_remove(src), tmp_dir_remove(q8), tmp_dir_remove(f16), tmp_dir_remove(f32);
    return TEST_PASS;
}
