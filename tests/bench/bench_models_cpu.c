/*
 * bench_models_cpu.c - images/s of the shipped models on the CPU backend
 * against PyTorch on the same machine, in the same run.
 *
 *   build/bench_models_cpu [--threads N] [--repeats R] [--no-torch]
 *
 * For each model and batch size (1 and 64): warm-up, then R timed runs of
 * about 0.3 s each; the median images/s is reported. PyTorch runs the same
 * weights through models/bench_torch.py (python3-torch, same thread count),
 * and the table prints inferd / PyTorch ratios. The OPENBLAS_* overrides this
 * machine sets for old OpenBLAS builds are dropped for PyTorch, so it runs
 * its best kernels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_model.h"

#define MAX_REPEATS 31

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median images/s over `repeats` timed windows of about 0.3 s. */
static double measure(struct rt_session *s, const struct rt_model_config *cfg, int batch, int repeats)
{
    size_t in_n = (size_t)(batch * cfg->inputs[0].sample_elems), out_n = (size_t)(batch * cfg->outputs[0].sample_elems);
    float *x = malloc(sizeof(float) * in_n), *y = malloc(sizeof(float) * out_n);
    if (!x || !y)
        abort();
    srand(1);
    for (size_t i = 0; i < in_n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    const float *in[1] = {x};
    float *out[1] = {y};
    struct rt_error err;
    int iters = 1;
    for (double t0 = now_s(); now_s() - t0 < 0.2;) {   /* warm-up and calibrate */
        double t = now_s();
        if (rt_session_run(s, batch, in, out, &err) != RT_OK) {
            fprintf(stderr, "run failed: %s\n", err.msg);
            exit(1);
        }
        double dt = now_s() - t;
        iters = dt > 0 ? (int)(0.3 / dt) + 1 : 1000;
    }
    double rates[MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        double t = now_s();
        for (int i = 0; i < iters; i++)
            rt_session_run(s, batch, in, out, &err);
        rates[r] = (double)iters * batch / (now_s() - t);
    }
    qsort(rates, (size_t)repeats, sizeof(double), compare_doubles);
    free(x);
    free(y);
    return rates[repeats / 2];
}

/* Reads "model batch images_per_s" lines from the PyTorch benchmark. */
static double torch_rate(const char *lines, const char *model, int batch)
{
    char name[64];
    int b;
    double rate;
    for (const char *p = lines; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (sscanf(p, "%63s %d %lf", name, &b, &rate) == 3 && strcmp(name, model) == 0 && b == batch)
            return rate;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 2, repeats = 7;
    int torch = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            repeats = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-torch") == 0)
            torch = 0;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--repeats R] [--no-torch]\n", argv[0]);
            return 2;
        }
    }
    if (repeats < 1 || repeats > MAX_REPEATS || threads < 1 || threads > 256) {
        fprintf(stderr, "repeats must be 1..%d and threads 1..256\n", MAX_REPEATS);
        return 2;
    }
    static const char *const MODELS[] = {"lenet5", "resnet-mini"};
    static const int BATCHES[] = {1, 64};
    double ours[2][2];
    struct rt_error err;
    struct rt_backend *b;
    if (rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = threads}, &b, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "inferd: %s\n", rt_backend_describe(b));
    for (int mi = 0; mi < 2; mi++) {
        char dir[128];
        snprintf(dir, sizeof(dir), "model_repository/%s", MODELS[mi]);
        struct rt_model *m;
        struct rt_session *s;
        if (rt_model_load(dir, b, &m, &err) != RT_OK || rt_session_create(m, &s, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (int bi = 0; bi < 2; bi++) {
            fprintf(stderr, "inferd: %s batch %d ...\n", MODELS[mi], BATCHES[bi]);
            ours[mi][bi] = measure(s, rt_model_config(m), BATCHES[bi], repeats);
        }
        rt_session_free(s);
        rt_model_free(m);
    }
    rt_backend_free(b);

    static char lines[4096];
    if (torch) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 models/bench_torch.py --threads %d --repeats %d", threads, repeats);
        fprintf(stderr, "pytorch: %s\n", cmd);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(lines, 1, sizeof(lines) - 1, p) : 0;
        lines[n] = '\0';
        if (!p || pclose(p) != 0) {
            fprintf(stderr, "the PyTorch benchmark failed; ratios omitted\n");
            torch = 0;
        }
    }
    printf("\n%-12s %5s %14s %14s %8s\n", "model", "batch", "inferd img/s", "pytorch img/s", "ratio");
    for (int mi = 0; mi < 2; mi++) {
        for (int bi = 0; bi < 2; bi++) {
            double t = torch ? torch_rate(lines, MODELS[mi], BATCHES[bi]) : 0;
            if (t > 0)
                printf("%-12s %5d %14.0f %14.0f %7.2fx\n", MODELS[mi], BATCHES[bi], ours[mi][bi], t, ours[mi][bi] / t);
            else
                printf("%-12s %5d %14.0f %14s %8s\n", MODELS[mi], BATCHES[bi], ours[mi][bi], "-", "-");
        }
    }
    printf("(%d threads, median of %d runs)\n", threads, repeats);
    return 0;
}
