/*
 * bench_models_cpu.c - images/s of models on the CPU backend against PyTorch
 * on the same machine, in the same run.
 *
 *   build/bench_models_cpu [--models a,b] [--batches 1,64] [--threads N]
 *                          [--repeats R] [--no-torch]
 *
 * Defaults: lenet5 and resnet-mini at batch 1 and 64 (`make bench`);
 * `make bench-imagenet` passes resnet50,mobilenet_v2 at 1,32. For each model
 * and batch: warm-up, then R timed windows of about 0.3 s (at least one
 * batch); the median images/s is reported. PyTorch then runs the same
 * weights through models/bench_torch.py (eager, same thread count), so the
 * two never compete for the cores; the OPENBLAS_* overrides this machine
 * sets for old OpenBLAS builds are dropped for it, so it runs its best
 * kernels. The table prints inferd / PyTorch ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "runtime/rt_model.h"

#define MAX_REPEATS 31
#define MAX_LIST 8

static void run_or_die(struct rt_session *s, int batch, const float *x, float *y)
{
    const float *in[1] = {x};
    float *out[1] = {y};
    struct rt_error err;
    if (rt_session_run(s, batch, in, out, &err) != RT_OK) {
        fprintf(stderr, "run failed: %s\n", err.msg);
        exit(1);
    }
}

/* Median images/s over `repeats` timed windows of about 0.3 s. */
static double measure(struct rt_session *s, const struct rt_model_config *cfg, int batch, int repeats)
{
    size_t in_n = (size_t)batch * (size_t)cfg->inputs[0].sample_elems;
    size_t out_n = (size_t)batch * (size_t)cfg->outputs[0].sample_elems;
    float *x = malloc(sizeof(float) * in_n), *y = malloc(sizeof(float) * out_n);
    if (!x || !y)
        abort();
    srand(1); // NOLINT(cert-msc32-c,cert-msc51-cpp): the same inputs every run
    for (size_t i = 0; i < in_n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; // NOLINT(cert-msc30-c,cert-msc50-cpp): any numbers do for benchmark inputs
    run_or_die(s, batch, x, y);
    int iters = 1;
    for (double t0 = bench_now_s(); bench_now_s() - t0 < 0.2;) {   /* warm-up and calibrate */
        double t = bench_now_s();
        run_or_die(s, batch, x, y);
        iters = (int)(0.3 / (bench_now_s() - t)) + 1;
    }
    double rates[MAX_REPEATS] = {0};
    for (int r = 0; r < repeats; r++) {
        double t = bench_now_s();
        for (int i = 0; i < iters; i++)
            run_or_die(s, batch, x, y);
        rates[r] = (double)iters * batch / (bench_now_s() - t);
    }
    free(x);
    free(y);
    return bench_median(rates, repeats);
}

/* Reads "model batch images_per_s" lines from the PyTorch benchmark. */
static double torch_rate(const char *lines, const char *model, int batch)
{
    char name[64];
    int b;
    double rate;
    for (const char *p = lines; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (sscanf(p, "%63s %d %lf", name, &b, &rate) == 3 && strcmp(name, model) == 0 && b == batch) // NOLINT(cert-err34-c): the output of our own script
            return rate;
    }
    return 0;
}

/* Splits a comma-separated list in place; returns the count (0 on error). */
static int split_list(char *text, char **items)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_LIST || strlen(tok) > 48)
            return 0;
        items[n++] = tok;
    }
    return n;
}

int main(int argc, char **argv)
{
    int threads = 2, repeats = 7, torch = 1;
    char models_arg[256] = "lenet5,resnet-mini", batches_arg[64] = "1,64";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0)
            threads = bench_arg_int("bench_models_cpu", argc, argv, &i, 1, 256);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = bench_arg_int("bench_models_cpu", argc, argv, &i, 1, MAX_REPEATS);
        else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
            snprintf(models_arg, sizeof(models_arg), "%s", argv[++i]);
        else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
            snprintf(batches_arg, sizeof(batches_arg), "%s", argv[++i]);
        else if (strcmp(argv[i], "--no-torch") == 0)
            torch = 0;
        else {
            fprintf(stderr, "usage: %s [--models a,b] [--batches 1,64] [--threads N] [--repeats R] [--no-torch]\n",
                    argv[0]);
            return 2;
        }
    }
    char models_copy[256], batches_copy[64];
    snprintf(models_copy, sizeof(models_copy), "%s", models_arg);
    snprintf(batches_copy, sizeof(batches_copy), "%s", batches_arg);
    char *models[MAX_LIST], *batch_text[MAX_LIST];
    int n_models = split_list(models_copy, models), n_batches = split_list(batches_copy, batch_text);
    int batches[MAX_LIST];
    for (int i = 0; i < n_batches; i++) {
        char *end;
        const long b = strtol(batch_text[i], &end, 10);
        if (*end || b < 1 || b > RT_MAX_BATCH)
            n_batches = 0;
        batches[i] = (int)b;
    }
    if (!n_models || !n_batches) {
        fprintf(stderr, "bench_models_cpu: --models and --batches take 1 to %d items (batch sizes 1 to %d)\n",
                MAX_LIST, RT_MAX_BATCH);
        return 2;
    }
    double ours[MAX_LIST][MAX_LIST];
    struct rt_error err;
    struct rt_backend *b;
    if (rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = threads}, &b, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "inferd: %s\n", rt_backend_describe(b));
    for (int mi = 0; mi < n_models; mi++) {
        char dir[128];
        snprintf(dir, sizeof(dir), "model_repository/%s", models[mi]);
        struct rt_model *m;
        struct rt_session *s;
        if (rt_model_load(dir, b, &m, &err) != RT_OK || rt_session_create(m, &s, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (int bi = 0; bi < n_batches; bi++) {
            fprintf(stderr, "inferd: %s batch %d ...\n", models[mi], batches[bi]);
            ours[mi][bi] = measure(s, rt_model_config(m), batches[bi], repeats);
        }
        rt_session_free(s);
        rt_model_free(m);
    }
    rt_backend_free(b);

    static char lines[8192];
    if (torch) {
        char cmd[512];
        snprintf(cmd, sizeof(cmd),
                 "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 models/bench_torch.py "
                 "--threads %d --repeats %d --models %s --batches %s", threads, repeats, models_arg, batches_arg);
        fprintf(stderr, "pytorch: %s\n", cmd);
        FILE *p = popen(cmd, "r"); // NOLINT(cert-env33-c): our own script, with our own arguments
        size_t n = p ? fread(lines, 1, sizeof(lines) - 1, p) : 0;
        lines[n] = '\0';
        if (!p || pclose(p) != 0) {
            fprintf(stderr, "the PyTorch benchmark failed; ratios omitted\n");
            torch = 0;
        }
    }
    printf("\n%-13s %5s %14s %14s %8s\n", "model", "batch", "inferd img/s", "pytorch img/s", "ratio");
    for (int mi = 0; mi < n_models; mi++) {
        for (int bi = 0; bi < n_batches; bi++) {
            double t = torch ? torch_rate(lines, models[mi], batches[bi]) : 0;
            if (t > 0)
                printf("%-13s %5d %14.1f %14.1f %7.2fx\n", models[mi], batches[bi], ours[mi][bi], t, ours[mi][bi] / t);
            else
                printf("%-13s %5d %14.1f %14s %8s\n", models[mi], batches[bi], ours[mi][bi], "-", "-");
        }
    }
    printf("(%d threads, median of %d runs)\n", threads, repeats);
    return 0;
}
