/*
 * bench_int8_cpu.c - images/s of the shipped INT8 models against their FP32
 * originals on the CPU backend, in the same run.
 *
 *   build/bench_int8_cpu [--threads N] [--repeats R] [--batch B]
 *
 * For each pair (lenet5, resnet-mini): warm-up, then R rounds; each round
 * times one window of about 0.3 s of FP32 and one of INT8, back to back,
 * so both see the same machine load. Reported: the median images/s of each
 * and the median of the per-round ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cpu/kcpu_q8.h"
#include "runtime/rt_model.h"

#define MAX_REPEATS 31

struct runner {
    struct rt_model *m;
    struct rt_session *s;
    float *x, *y;
    int iters;
};

static void run_once(struct runner *r, int batch)
{
    const float *in[1] = {r->x};
    float *out[1] = {r->y};
    struct rt_error err;
    if (rt_session_run(r->s, batch, in, out, &err) != RT_OK) {
        fprintf(stderr, "run failed: %s\n", err.msg);
        exit(1);
    }
}

static void open_runner(struct runner *r, struct rt_backend *b, const char *dir, int batch)
{
    struct rt_error err;
    if (rt_model_load(dir, b, &r->m, &err) != RT_OK || rt_session_create(r->m, &r->s, &err) != RT_OK) {
        fprintf(stderr, "%s: %s\n", dir, err.msg);
        exit(1);
    }
    const struct rt_model_config *cfg = rt_model_config(r->m);
    size_t in_n = (size_t)batch * (size_t)cfg->inputs[0].sample_elems;
    r->x = malloc(sizeof(float) * in_n);
    r->y = malloc(sizeof(float) * (size_t)batch * (size_t)cfg->outputs[0].sample_elems);
    if (!r->x || !r->y)
        abort();
    srand(1); // NOLINT(cert-msc32-c,cert-msc51-cpp): the same inputs every run
    for (size_t i = 0; i < in_n; i++)
        r->x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 1.0f; // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    /* warm-up, and iterations for a window of about 0.3 s */
    r->iters = 1;
    for (double t0 = bench_now_s(); bench_now_s() - t0 < 0.2;) {
        double t = bench_now_s();
        run_once(r, batch);
        double dt = bench_now_s() - t;
        r->iters = dt > 0 ? (int)(0.3 / dt) + 1 : 1000;
    }
}

static double window(struct runner *r, int batch)
{
    double t = bench_now_s();
    for (int i = 0; i < r->iters; i++)
        run_once(r, batch);
    return (double)r->iters * batch / (bench_now_s() - t);
}

static void close_runner(struct runner *r)
{
    rt_session_free(r->s);
    rt_model_free(r->m);
    free(r->x);
    free(r->y);
}

int main(int argc, char **argv)
{
    int threads = 2, repeats = 9, batch = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0)
            threads = bench_arg_int("bench_int8_cpu", argc, argv, &i, 1, 256);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = bench_arg_int("bench_int8_cpu", argc, argv, &i, 1, MAX_REPEATS);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = bench_arg_int("bench_int8_cpu", argc, argv, &i, 1, 64);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--repeats R] [--batch B]\n", argv[0]);
            return 2;
        }
    }
    static const char *const MODELS[] = {"lenet5", "resnet-mini"};
    struct rt_error err;
    struct rt_backend *b;
    if (rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = threads}, &b, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s, INT8 kernel %s\n\n", rt_backend_describe(b), kcpu_q8_kernel_name());
    printf("%-12s %5s %12s %12s %8s\n", "model", "batch", "fp32 img/s", "int8 img/s", "int8/fp32");
    for (int mi = 0; mi < 2; mi++) {
        char dir[128], dir8[128];
        snprintf(dir, sizeof(dir), "model_repository/%s", MODELS[mi]);
        snprintf(dir8, sizeof(dir8), "model_repository/%s-int8", MODELS[mi]);
        struct runner f32, i8;
        open_runner(&f32, b, dir, batch);
        open_runner(&i8, b, dir8, batch);
        double rf[MAX_REPEATS] = {0}, ri[MAX_REPEATS] = {0}, ratio[MAX_REPEATS] = {0};
        for (int r = 0; r < repeats; r++) {
            rf[r] = window(&f32, batch);
            ri[r] = window(&i8, batch);
            ratio[r] = ri[r] / rf[r];
        }
        printf("%-12s %5d %12.0f %12.0f %7.2fx\n", MODELS[mi], batch, bench_median(rf, repeats),
               bench_median(ri, repeats), bench_median(ratio, repeats));
        close_runner(&f32);
        close_runner(&i8);
    }
    printf("(%d threads, medians of %d interleaved rounds)\n", threads, repeats);
    rt_backend_free(b);
    return 0;
}
