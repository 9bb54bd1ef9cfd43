/* test_backend.c - what a backend is asked rather than named (its device
 * kind and devices), the one parser of --backend, and the backend options
 * that replaced the INFERD_* knobs, with those variables as fallbacks. */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_model.h"
#include "runtime/rt_model_impl.h"
#include "kernel_test_util.h"
#include "test.h"
#include "test_model_util.h"

TEST(backend_kind_parse)
{
    struct rt_error err = {0};
    enum rt_backend_kind kind;
    int n = 0;
    for (int k = 0; rt_backend_kind_name((enum rt_backend_kind)k); k++, n++) {
        kind = RT_BACKEND_KIND_COUNT;
        ASSERT_EQ_INT(rt_backend_kind_parse(rt_backend_kind_name((enum rt_backend_kind)k), &kind, &err), RT_OK);
        ASSERT_EQ_INT(kind, k);
    }
    ASSERT_EQ_INT(n, RT_BACKEND_KIND_COUNT);
    ASSERT_STR_EQ(rt_backend_kind_name(RT_BACKEND_CPU), "cpu");
    ASSERT_STR_EQ(rt_backend_kind_name(RT_BACKEND_CUDA), "cuda");
    ASSERT_EQ_INT(rt_backend_kind_parse("cpu", &kind, &err), RT_OK);
    ASSERT_EQ_INT(kind, RT_BACKEND_CPU);
    static const char *const BAD[] = {"gpu", "", "CPU", "cuda ", "auto1"};
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
        kind = RT_BACKEND_CUDA;
        err.msg[0] = '\0';
        ASSERT_EQ_INT(rt_backend_kind_parse(BAD[i], &kind, &err), RT_ERR_INVALID);
        ASSERT_EQ_INT(kind, RT_BACKEND_CUDA);   /* untouched */
        ASSERT_STR_CONTAINS(err.msg, "unknown backend");
        ASSERT_STR_CONTAINS(err.msg, "(valid: auto, cpu, cuda)");
    }
    ASSERT_STR_EQ(err.msg, "unknown backend 'auto1' (valid: auto, cpu, cuda)");
    return TEST_PASS;
}

TEST(backend_cpu_device_kind)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err), RT_OK);
    enum rt_device_kind kind = rt_backend_device_kind(b);
    int n = rt_backend_device_count(b);
    struct rt_device_info info = {.id = -7};
    bool known = rt_backend_device_info(b, 0, &info);
    rt_backend_free(b);
    ASSERT_EQ_INT(kind, RT_DEVICE_CPU);
    ASSERT_EQ_INT(n, 0);
    ASSERT_FALSE(known);
    ASSERT_EQ_INT(info.id, -7);
    return TEST_PASS;
}

/* The model's passes on backend opt, and the tiny model's answers for a full
 * batch of 8 against the reference forward pass. */
static enum test_result chunked_run(const char *dir, const struct tiny_weights *w, const struct rt_backend_options *opt,
                                    int want_chunk, const char *want_desc)
{
    enum { N = 8 };
    float x[N * TINY_IN_ELEMS], y[N * TINY_CLASSES], ref[N * TINY_CLASSES];
    test_rand_fill(x, (int64_t)N * TINY_IN_ELEMS, -1, 1);
    tiny_forward_ref(w, N, x, ref);
    memset(y, 0xff, sizeof(y));
    struct rt_error err = {0};
    struct rt_backend *b;
    struct rt_model *m;
    struct rt_session *s;
    TEST_FAIL_IF(rt_backend_create(RT_BACKEND_CPU, opt, &b, &err) != RT_OK, "%s", err.msg);
    char desc[160];
    snprintf(desc, sizeof(desc), "%s", rt_backend_describe(b));
    enum rt_status st = rt_model_load(dir, b, &m, &err);
    int chunk = st == RT_OK ? rt_model_batch_chunk(m) : -1;
    if (st == RT_OK && (st = rt_session_create(m, &s, &err)) == RT_OK) {
        const float *in[1] = {x};
        float *out[1] = {y};
        st = rt_session_run(s, N, in, out, &err);
        rt_session_free(s);
    }
    if (chunk >= 0)
        rt_model_free(m);
    rt_backend_free(b);
    TEST_FAIL_IF(st != RT_OK, "%s", err.msg);
    ASSERT_EQ_INT(chunk, want_chunk);
    if (want_desc)
        ASSERT_STR_CONTAINS(desc, want_desc);
    else
        ASSERT_TRUE(strstr(desc, "samples per pass") == NULL);
    ASSERT_LE(test_rel_error(y, ref, (int64_t)N * TINY_CLASSES), 1e-5);
    return TEST_PASS;
}

TEST(backend_cpu_batch_chunk_option)
{
    char dir[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    struct tiny_weights w;
    tiny_weights_init(&w);
    RT_ASSERT(tiny_model_write(dir, TINY_MODEL_JSON, &w));
    unsetenv("INFERD_CPU_BATCH_CHUNK");
    /* The tiny model's activations fit in L2 many times over: one pass of 8. */
    enum test_result r[5];
    r[0] = chunked_run(dir, &w, &(struct rt_backend_options){.threads = 2}, 8, NULL);
    r[1] = chunked_run(dir, &w, &(struct rt_backend_options){.threads = 2, .cpu_batch_chunk = 3}, 3,
                       ", 3 samples per pass");
    setenv("INFERD_CPU_BATCH_CHUNK", "2", 1);
    r[2] = chunked_run(dir, &w, &(struct rt_backend_options){.threads = 1}, 2, ", 2 samples per pass");
    r[3] = chunked_run(dir, &w, &(struct rt_backend_options){.threads = 1, .cpu_batch_chunk = 5}, 5,
                       ", 5 samples per pass");   /* the option wins over the variable */
    /* Larger than the model's batch: the executor caps it, the backend keeps it. */
    unsetenv("INFERD_CPU_BATCH_CHUNK");
    r[4] = chunked_run(dir, &w, &(struct rt_backend_options){.threads = 1, .cpu_batch_chunk = 100}, 8,
                       ", 100 samples per pass");

    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    enum rt_status too_big = rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.cpu_batch_chunk = 5000},
                                               &b, &err);
    char too_big_msg[RT_ERROR_MSG_MAX];
    snprintf(too_big_msg, sizeof(too_big_msg), "%s", err.msg);
    setenv("INFERD_CPU_BATCH_CHUNK", "lots", 1);
    enum rt_status bad_env = rt_backend_create(RT_BACKEND_AUTO, NULL, &b, &err);
    unsetenv("INFERD_CPU_BATCH_CHUNK");
    tmp_dir_remove(dir);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ_INT(r[i], TEST_PASS);
    ASSERT_EQ_INT(too_big, RT_ERR_INVALID);
    ASSERT_STR_CONTAINS(too_big_msg, "batch chunk 5000 is not in 0..4096");
    ASSERT_EQ_INT(bad_env, RT_ERR_INVALID);
    ASSERT_STR_CONTAINS(err.msg, "INFERD_CPU_BATCH_CHUNK 'lots'");
    return TEST_PASS;
}

TEST(backend_cpu_isa_option)
{
    int saved __attribute__((cleanup(restore_isa))) = (int)kcpu_isa(); // NOLINT(clang-analyzer-deadcode.DeadStores): restore_isa reads it at scope exit
    unsetenv("INFERD_CPU_ISA");
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    /* An unknown name is refused whatever the kind, before any backend is tried. */
    for (int k = 0; k < RT_BACKEND_KIND_COUNT; k++) {
        err.msg[0] = '\0';
        ASSERT_EQ_INT(rt_backend_create((enum rt_backend_kind)k, &(struct rt_backend_options){.cpu_isa = "bogus"}, &b,
                                        &err),
                      RT_ERR_INVALID);
        ASSERT_STR_EQ(err.msg, "unknown CPU instruction set 'bogus' (valid: scalar, avx2, avx512)");
    }
    ASSERT_TRUE(b == NULL);
    ASSERT_EQ_INT(kcpu_isa(), saved);

    /* Each ISA the CPU has becomes the kernels' choice and the description's. */
    for (int isa = KCPU_ISA_SCALAR; isa <= (int)kcpu_isa_hardware(); isa++) {
        const char *name = kcpu_isa_name((enum kcpu_isa)isa);
        TEST_FAIL_IF(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1, .cpu_isa = name}, &b,
                                       &err) != RT_OK,
                     "%s: %s", name, err.msg);
        char want[32];
        snprintf(want, sizeof(want), "cpu (%s,", name);
        char desc[160];
        snprintf(desc, sizeof(desc), "%s", rt_backend_describe(b));
        rt_backend_free(b);
        ASSERT_EQ_INT(kcpu_isa(), isa);
        ASSERT_STR_CONTAINS(desc, want);
    }
    if (kcpu_isa_hardware() < KCPU_ISA_AVX512) {
        ASSERT_EQ_INT(rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.cpu_isa = "avx512"}, &b, &err),
                      RT_ERR_UNSUPPORTED);
        ASSERT_STR_CONTAINS(err.msg, "this CPU lacks the avx512 instruction set");
    } else {
        printf("  this CPU has avx512: the unsupported-ISA refusal is not reachable here\n");
    }

    /* The variable is the fallback; the option wins over it. */
    setenv("INFERD_CPU_ISA", "scalar", 1);
    kcpu_isa_set(kcpu_isa_hardware());
    enum rt_status from_env = rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err);
    if (from_env == RT_OK)
        rt_backend_free(b);
    enum kcpu_isa env_isa = kcpu_isa();
    enum rt_status with_opt = rt_backend_create(
        RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1, .cpu_isa = kcpu_isa_name(kcpu_isa_hardware())}, &b,
        &err);
    if (with_opt == RT_OK)
        rt_backend_free(b);
    unsetenv("INFERD_CPU_ISA");
    ASSERT_EQ_INT(from_env, RT_OK);
    ASSERT_EQ_INT(env_isa, KCPU_ISA_SCALAR);
    ASSERT_EQ_INT(with_opt, RT_OK);
    ASSERT_EQ_INT(kcpu_isa(), kcpu_isa_hardware());
    return TEST_PASS;
}

/* The cuda_kernels option and $INFERD_CUDA_KERNELS, its fallback: checked
 * whatever backend the kind picks (no GPU needed). */
TEST(backend_cuda_kernels_option)
{
    struct rt_error err = {0};
    struct rt_backend *b = NULL;
    setenv("INFERD_CUDA_KERNELS", "fastest", 1);
    enum rt_status bad_env = rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err);
    char bad_env_msg[RT_ERROR_MSG_MAX];
    snprintf(bad_env_msg, sizeof(bad_env_msg), "%s", err.msg);
    /* the option wins over the variable: a bad variable is not read */
    enum rt_status opt_wins = rt_backend_create(
        RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1, .cuda_kernels = RT_CUDA_KERNELS_BASELINE}, &b, &err);
    if (opt_wins == RT_OK)
        rt_backend_free(b);
    setenv("INFERD_CUDA_KERNELS", "baseline", 1);
    enum rt_status good_env = rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1}, &b, &err);
    if (good_env == RT_OK)
        rt_backend_free(b);
    unsetenv("INFERD_CUDA_KERNELS");
    enum rt_status bad_opt = rt_backend_create(
        RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 1, .cuda_kernels = RT_CUDA_KERNELS_COUNT}, &b, &err);
    ASSERT_EQ_INT(bad_env, RT_ERR_INVALID);
    ASSERT_STR_CONTAINS(bad_env_msg, "INFERD_CUDA_KERNELS 'fastest' is not auto, new or baseline");
    ASSERT_EQ_INT(opt_wins, RT_OK);
    ASSERT_EQ_INT(good_env, RT_OK);
    ASSERT_EQ_INT(bad_opt, RT_ERR_INVALID);
    ASSERT_STR_CONTAINS(err.msg, "CUDA kernel set 3 is not auto, new or baseline");
    return TEST_PASS;
}
