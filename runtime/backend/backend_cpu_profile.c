/*
 * backend_cpu_profile.c - the CPU backend's answers to a profiler: which
 * kernel a step runs, and the rates its GEMM and a streaming kernel reach
 * on this machine (rt_backend_measure_rates). The step timing itself is
 * the host clock (rt_backend_host_mark).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_q8.h"
#include "runtime/backend/backend_cpu_impl.h"

void rt_cpu_describe_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s, int batch,
                          char *out, size_t cap)
{
    const char *isa = kcpu_isa_name(kcpu_isa());
    union rt_step_params k = rt_step_params(s, batch);
    if (s->chain)
        snprintf(out, cap, "1x1+depthwise in bands, %s", isa);
    else if (s->op == RT_OP_CONV2D && !s->q8)
        snprintf(out, cap, "%s, %s", kcpu_conv2d_method(&k.conv), isa);
    else if (s->op == RT_OP_CONV2D && rt_cpu_q8_layouts(s)[0])
        snprintf(out, cap, "int8 channels-last direct, %s%s", kcpu_conv2d_q8_nhwc_on_amx(&k.conv) ? "amx" : isa,
                 rt_cpu_q8_layouts(s));
    else if (s->op == RT_OP_CONV2D)
        snprintf(out, cap, "int8 %s, %s", kcpu_conv2d_q8_method(&k.conv), isa);
    else if (rt_op_has(s->op, RT_T_GEMM))
        snprintf(out, cap, "%sgemm, %s", s->q8 ? "int8 " : "", isa);
    else
        snprintf(out, cap, "%s%s%s", s->q8 ? "int8, " : "", isa, s->q8 ? rt_cpu_q8_layouts(s) : "");
}

/* The work measured: a GEMM of 0.54 GFLOP whose operands (9 MiB) mostly
 * stay in cache, and relu from one 64 MiB buffer into another, far larger
 * than any cache. */
#define RATE_N 256
#define RATE_K 1024
#define RATE_M 1024
#define RATE_STREAM_FLOATS ((int64_t)16 << 20)
#define RATE_REPEATS 5

static void *alloc_floats(int64_t n) { return aligned_alloc(64, (size_t)n * sizeof(float)); }

struct rate_bufs {
    float *x, *w, *packed, *y, *a, *b;
    void *scratch;
};

static void rate_bufs_free(struct rate_bufs *r)
{
    free(r->x);
    free(r->w);
    free(r->packed);
    free(r->y);
    free(r->a);
    free(r->b);
    free(r->scratch);
}

/* Best seconds of RATE_REPEATS calls of the GEMM (gemm) or the stream,
 * after one untimed call (page faults, packing caches). */
static double best_seconds(struct kcpu_threads *th, const struct k_linear *lin, const struct rate_bufs *r, bool gemm)
{
    double best = 1e30;
    for (int i = 0; i <= RATE_REPEATS; i++) {
        int64_t t0 = rt_clock_ns();
        if (gemm)
            kcpu_linear_f32(th, lin, r->x, r->packed, NULL, NULL, r->y, r->scratch);
        else
            kcpu_act_f32(th, K_ACT_RELU, RATE_STREAM_FLOATS, r->a, r->b);
        double s = (double)(rt_clock_ns() - t0) * 1e-9;
        if (i > 0 && s < best)
            best = s;
    }
    return best;
}

enum rt_status rt_cpu_measure_rates(int threads, struct rt_backend_rates *out, struct rt_error *err)
{
    const struct k_linear lin = {.n = RATE_N, .k = RATE_K, .m = RATE_M, .act = K_ACT_NONE};
    struct rate_bufs r = {
        .x = alloc_floats((int64_t)RATE_N * RATE_K),
        .w = alloc_floats((int64_t)RATE_M * RATE_K),
        .packed = alloc_floats((int64_t)kcpu_linear_packed_floats(&lin)),
        .y = alloc_floats((int64_t)RATE_N * RATE_M),
        .a = alloc_floats(RATE_STREAM_FLOATS),
        .b = alloc_floats(RATE_STREAM_FLOATS),
        .scratch = aligned_alloc(64, (kcpu_linear_scratch_bytes(&lin, threads) + 63) & ~(size_t)63),
    };
    struct kcpu_threads *th = threads > 1 ? kcpu_threads_create(threads) : NULL;
    if (!r.x || !r.w || !r.packed || !r.y || !r.a || !r.b || !r.scratch || (threads > 1 && !th)) {
        rate_bufs_free(&r);
        kcpu_threads_free(th);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the rate measurement");
    }
    /* values of both signs, so relu writes zeros and copies alike */
    for (int64_t i = 0; i < (int64_t)RATE_N * RATE_K; i++)
        r.x[i] = (float)(i % 17 - 8) * 0.01f;
    for (int64_t i = 0; i < (int64_t)RATE_M * RATE_K; i++)
        r.w[i] = (float)(i % 13 - 6) * 0.01f;
    for (int64_t i = 0; i < RATE_STREAM_FLOATS; i++)
        r.a[i] = (float)(i % 5 - 2);
    kcpu_linear_pack(&lin, r.w, r.packed);
    double gemm_s = best_seconds(th, &lin, &r, true);
    double stream_s = best_seconds(th, &lin, &r, false);
    out->gemm_gflops = 2.0 * RATE_N * RATE_K * RATE_M / gemm_s * 1e-9;
    out->stream_gbs = 2.0 * (double)RATE_STREAM_FLOATS * sizeof(float) / stream_s * 1e-9;
    out->peak_gflops = kcpu_peak_gflops(th);
    snprintf(out->what, sizeof(out->what), "FP32 GEMM %dx%dx%d and relu over 64 MiB, %s, %d thread%s", RATE_N,
             RATE_K, RATE_M, kcpu_isa_name(kcpu_isa()), threads, threads == 1 ? "" : "s");
    rate_bufs_free(&r);
    kcpu_threads_free(th);
    return RT_OK;
}
