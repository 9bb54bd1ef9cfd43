/*
 * bench_gpu.c - the GPU measurements of issue 19 (item 3) in one run
 * (`make bench-gpu`; tests/gpu_check.sh's bench step), each figure beside
 * its peer measured in the same run on the same device. First the device,
 * driver, date and command, then:
 *
 *   1. GEMM (tests/bench/gpu_gemm.c): our FP16 GEMM against cuBLAS, and our
 *      INT8 GEMMs (IMMA, dp4a) against cuBLAS INT8 and our FP16, at 4096^3
 *      and at layer shapes of the four models at batch 256 (convolutions as
 *      implicit GEMMs): TFLOP/s or TOP/s from CUDA events, median of
 *      --repeats loops.
 *   2. The four models (lenet5, resnet-mini, resnet50, mobilenet_v2)
 *      through the CUDA backend at batch 1, 8, 32, 64 and 256: FP32 and FP16 on
 *      our convolutions and on cuDNN's (model.json's conv_engine), and the
 *      INT8 copy (model_repository/<name>-int8 as it is, our kernels). Per
 *      row: images/s and latency host to host (rt_session_run: the input
 *      from host memory, the batch size's CUDA graph replayed, the output
 *      back in host memory; median of --repeats windows of 0.1 s after a
 *      warm-up that captures the graph), and the device time of one call
 *      (rt_session_time_device: CUDA events in the replayed graph, so the
 *      host's launch is not in it): the whole run, input and output copies
 *      included, and its steps alone; medians of --repeats calls. resnet50 and
 *      mobilenet_v2 are not committed: the GPU machine generates them
 *      (models/export_imagenet.py, `inferctl quantize`); a folder without
 *      model.json prints "(not generated: ...)" and its rows are left out.
 *   3. PyTorch on the same models and batches (models/bench_torch_gpu.py:
 *      eager with cudnn.benchmark, CUDA graph replay, and torch.compile
 *      where it compiles within the script's time budget), timed host to
 *      host as ours; then a table of ratios, ours over theirs in images/s.
 *      PyTorch has no INT8 path on CUDA worth comparing: our INT8 rows are
 *      set against its FP16 and against our own FP16.
 *   4. The time each section took, then the goals of issue 19, last, under
 *      "goals (issue 19):" (four lines), each met, MISSED or not measured.
 *
 *   build/bench_gpu [--repeats R] [--python PYTHON] [--no-gemm] [--no-models]
 *                   [--no-torch] [--no-compile] [--time-limit S]
 *
 * --time-limit S (tests/gpu_check.sh passes its step's limit): the PyTorch
 * part is shortened, or left out, so that the goals are printed within S.
 *
 * Exit status: 0 when everything it found ran (PyTorch's absence or failure
 * is reported, not fatal); 1 without a usable device, or when a model
 * variant failed to load or run (its message on stderr; the run goes on);
 * 2 for bad usage. Progress goes to stderr, one line per model variant.
 *
 * Time on an H200 with the default 5 repeats (estimated, no run yet: the
 * program prints what each section took under "time:"):
 *   GEMM     ~15 s: 15 shapes x 2 tables, each under 0.5 s but the
 *            largest (0.8 GB of operands filled and uploaded per table);
 *   models   ~75 s: 80 rows; a lenet5 or resnet-mini row ~0.55 s (3
 *            warm-up calls, 5 windows of 0.1 s, 6 device-timed calls); a
 *            resnet50 or mobilenet_v2 row 0.6 to 1.5 s (batch 256 FP32:
 *            ~80 ms a call), plus 1 to 2 s to load each of their variants;
 *   PyTorch  at most 90 s (the script's --budget: eager and graph for every
 *            model first, torch.compile with what is left), killed at 130 s.
 * About 180 s in all. Only the PyTorch part could run long, and its kill
 * bounds it: about 250 s at worst.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "gpu_gemm.h"
#include "kernels/cuda/kcuda.h"
#include "runtime/rt_model.h"
#include "tests/model_variant.h"

#define PROG "bench_gpu"
#define WINDOW_S 0.1           /* one timed window of host-to-host calls */
#define TORCH_BUDGET_S 90      /* bench_torch_gpu.py --budget */
#define TORCH_KILL_S 130       /* ... and when it is killed regardless */
#define TORCH_LEAST_S 30       /* PyTorch is not started with less of the time limit left */

static int repeats = 5;
static double t_start;         /* bench_now_s() at the start, for progress lines */
static double t_limit;         /* bench_now_s() by which the goals must be out; 0: none */

/* Progress for a person watching: "bench_gpu [ 42 s] ..." on stderr,
 * after the tables so far (a log of both streams keeps their order). */
static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    va_start(ap, fmt);
    fprintf(stderr, "%s [%3.0f s] ", PROG, bench_now_s() - t_start);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------------ the record's header */

/* The NVIDIA kernel module's release ("570.86.15") from /proc, or "unknown"
 * (a container may not show it; nvidia-smi in the device step does). */
static const char *driver_release(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[256] = "";
    bool ok = f && fgets(line, sizeof(line), f);
    if (f)
        fclose(f);
    snprintf(buf, cap, "unknown");
    /* "NVRM version: NVIDIA UNIX [Open ]Kernel Module[ for x86_64]  570.86.15  Release Build ..." */
    for (const char *p = ok ? strstr(line, "Module") : NULL; p && *p; p += strcspn(p, " \t\n")) {
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (isdigit((unsigned char)*p) && memchr(p, '.', len)) {
            snprintf(buf, cap, "%.*s", (int)len, p);
            break;
        }
    }
    return buf;
}

static void print_header(const struct cudaDeviceProp *prop, int argc, char **argv)
{
    int drv = 0, rtv = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rtv);
    char release[32], date[32];
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M", gmtime(&now));
    printf("device: %s (sm_%d%d, %d SMs, %.0f MiB L2, %.0f GiB)\n", prop->name, prop->major, prop->minor,
           prop->multiProcessorCount, prop->l2CacheSize / 1048576.0, (double)prop->totalGlobalMem / 1073741824.0);
    printf("driver: %s (CUDA %d.%d), runtime: CUDA %d.%d, date: %s UTC, repeats: %d\n",
           driver_release(release, sizeof(release)), drv / 1000, drv % 1000 / 10, rtv / 1000, rtv % 1000 / 10, date,
           repeats);
    printf("command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
}

/* ------------------------------------------------------------------ models */

enum { LENET5, RESNET_MINI, RESNET50, MOBILENET_V2, N_MODELS };
static const char *const MODELS[N_MODELS] = {"lenet5", "resnet-mini", "resnet50", "mobilenet_v2"};
/* 32: the smallest whose 224x224 input (19 MB) kcpu_copy splits over threads */
static const int BATCHES[] = {1, 8, 32, 64, 256};
enum { N_BATCHES = sizeof(BATCHES) / sizeof(BATCHES[0]), MAX_BATCH = 256 };
enum { B1 = 0, B256 = N_BATCHES - 1 };   /* the goals' batches: BATCHES' first and last */

/* What runs a model: FP32 or FP16 on our convolutions or cuDNN's, or the
 * INT8 copy on our kernels. */
enum variant { FP32_OURS, FP32_CUDNN, FP16_OURS, FP16_CUDNN, INT8_OURS, N_VARIANTS };
static const struct {
    const char *prec, *conv;           /* as the tables print them */
    const char *precision, *engine;    /* the model.json values set (JSON text) */
    const char *folder;                /* appended to the model's folder name */
} VARIANTS[N_VARIANTS] = {
    [FP32_OURS] = {"fp32", "ours", "\"fp32\"", "\"custom\"", ""},
    [FP32_CUDNN] = {"fp32", "cudnn", "\"fp32\"", "\"cudnn\"", ""},
    [FP16_OURS] = {"fp16", "ours", "\"fp16\"", "\"custom\"", ""},
    [FP16_CUDNN] = {"fp16", "cudnn", "\"fp16\"", "\"cudnn\"", ""},
    [INT8_OURS] = {"int8", "ours", "\"int8\"", "\"custom\"", "-int8"},
};

/* One row of figures; 0 where not measured. */
struct figures {
    double ips;                /* images/s, host to host */
    double latency_s;          /* per call, host to host */
    double device_s;           /* per call, on the device: copies and steps */
    double steps_s;            /* per call, on the device: the steps alone */
};

static struct figures ours[N_MODELS][N_VARIANTS][N_BATCHES];

/* One model's inputs at MAX_BATCH, filled once for all its variants, and
 * room for its outputs. */
struct model_io {
    float *x, *y;
    int64_t in_elems, out_elems;       /* per sample */
};

/* Whether folder src holds a model; if not, the line saying so. */
static bool generated(const char *src)
{
    char path[192];
    snprintf(path, sizeof(path), "%s/model.json", src);
    if (access(path, R_OK) == 0)
        return true;
    printf("%-12s (not generated: %s is missing)\n", strrchr(src, '/') + 1, path);
    return false;
}

/* A session on model folder src with variant v's fields set and max batch
 * MAX_BATCH; NULL (the message on stderr) when it cannot be had. *m
 * receives the model, which the caller frees after the session. */
static struct rt_session *variant_open(struct rt_backend *b, const char *src, enum variant v, struct rt_model **m)
{
    char dir[64];
    struct rt_error err = {0};
    struct rt_session *s = NULL;
    *m = NULL;
    if (!model_variant_make(src, dir, sizeof(dir), VARIANTS[v].precision, VARIANTS[v].engine, MAX_BATCH)) {
        fprintf(stderr, "%s: %s: cannot write a model variant under /tmp\n", PROG, src);
        return NULL;
    }
    if (rt_model_load(dir, b, m, &err) != RT_OK || rt_session_create(*m, &s, &err) != RT_OK) {
        fprintf(stderr, "%s: %s %s %s: %s\n", PROG, src, VARIANTS[v].prec, VARIANTS[v].conv, err.msg);
        rt_model_free(*m);
        *m = NULL;
    }
    model_variant_remove(dir);
    return s;
}

/* Sizes (on first use) and fills io for cfg; false when cfg is not one
 * input and one output of the sizes io already has. */
static bool io_ready(struct model_io *io, const struct rt_model_config *cfg, const char *what)
{
    if (cfg->n_inputs != 1 || cfg->n_outputs != 1) {
        fprintf(stderr, "%s: %s: one input and one output expected\n", PROG, what);
        return false;
    }
    if (!io->x) {
        io->in_elems = cfg->inputs[0].sample_elems;
        io->out_elems = cfg->outputs[0].sample_elems;
        io->x = bench_alloc(PROG, sizeof(float) * (size_t)(MAX_BATCH * io->in_elems));
        io->y = bench_alloc(PROG, sizeof(float) * (size_t)(MAX_BATCH * io->out_elems));
        bench_fill_uniform(io->x, (size_t)(MAX_BATCH * io->in_elems), 1, -1.0f, 1.0f);
    }
    if (io->in_elems != cfg->inputs[0].sample_elems || io->out_elems != cfg->outputs[0].sample_elems) {
        fprintf(stderr, "%s: %s: input or output size differs from the model's other variants\n", PROG, what);
        return false;
    }
    return true;
}

static bool run_once(struct rt_session *s, int batch, const struct model_io *io, const char *what)
{
    const float *in[1] = {io->x};
    float *out[1] = {io->y};
    struct rt_error err = {0};
    if (rt_session_run(s, batch, in, out, &err) == RT_OK)
        return true;
    fprintf(stderr, "%s: %s batch %d: %s\n", PROG, what, batch, err.msg);
    return false;
}

/* Host-to-host images/s and seconds per call: median of repeats windows of
 * WINDOW_S after a warm-up (eager, captured, replayed). */
static bool host_to_host(struct rt_session *s, int batch, const struct model_io *io, const char *what,
                         struct figures *f)
{
    for (int i = 0; i < 3; i++) {
        if (!run_once(s, batch, io, what))
            return false;
    }
    double rates[GPU_MAX_REPEATS] = {0}, lats[GPU_MAX_REPEATS] = {0};
    for (int r = 0; r < repeats; r++) {
        int calls = 0;
        double t0 = bench_now_s(), t;
        do {
            if (!run_once(s, batch, io, what))
                return false;
            calls++;
        } while ((t = bench_now_s() - t0) < WINDOW_S);
        rates[r] = calls * batch / t;
        lats[r] = t / calls;
    }
    f->ips = bench_median(rates, repeats);
    f->latency_s = bench_median(lats, repeats);
    return true;
}

/* Device seconds per call, whole and steps alone: medians of repeats calls
 * with device timing on, after one that recaptures the graph with the
 * timing events. */
static bool device_time(struct rt_session *s, int batch, const struct model_io *io, const char *what,
                        struct figures *f)
{
    struct rt_error err = {0};
    double run[GPU_MAX_REPEATS] = {0}, steps[GPU_MAX_REPEATS] = {0};
    bool ok = rt_session_time_device(s, true, &err) == RT_OK && run_once(s, batch, io, what);
    for (int r = 0; ok && r < repeats; r++) {
        struct rt_device_time t = {0};
        ok = run_once(s, batch, io, what) && rt_session_device_time(s, &t, &err) == RT_OK;
        run[r] = (double)t.run_ns * 1e-9;
        steps[r] = (double)t.steps_ns * 1e-9;
    }
    if (err.status != RT_OK)
        fprintf(stderr, "%s: %s batch %d: device time: %s\n", PROG, what, batch, err.msg);
    rt_session_time_device(s, false, &err);
    if (ok) {
        f->device_s = bench_median(run, repeats);
        f->steps_s = bench_median(steps, repeats);
    }
    return ok;
}

/* Every batch of one variant, a table row each; false when a run failed. */
static bool bench_variant(int mi, enum variant v, struct rt_session *s, const struct model_io *io)
{
    char what[64];
    snprintf(what, sizeof(what), "%s %s %s", MODELS[mi], VARIANTS[v].prec, VARIANTS[v].conv);
    for (int bi = 0; bi < N_BATCHES; bi++) {
        struct figures *f = &ours[mi][v][bi];
        if (!host_to_host(s, BATCHES[bi], io, what, f) || !device_time(s, BATCHES[bi], io, what, f))
            return false;
        printf("%-12s %-5s %-6s %6d %12.0f %11.4f %10.4f %10.4f\n", MODELS[mi], VARIANTS[v].prec,
               VARIANTS[v].conv, BATCHES[bi], f->ips, f->latency_s * 1e3, f->device_s * 1e3, f->steps_s * 1e3);
        fflush(stdout);
    }
    return true;
}

/* Every variant of model mi; false when one failed to load or run. */
static bool bench_model(struct rt_backend *b, int mi)
{
    char src[160];
    snprintf(src, sizeof(src), "model_repository/%s", MODELS[mi]);
    if (!generated(src))
        return true;
    struct model_io io = {0};
    bool ok = true;
    for (int v = 0; v < N_VARIANTS; v++) {
        snprintf(src, sizeof(src), "model_repository/%s%s", MODELS[mi], VARIANTS[v].folder);
        if (v == INT8_OURS && !generated(src))
            continue;
        progress("%s %s %s", MODELS[mi], VARIANTS[v].prec, VARIANTS[v].conv);
        struct rt_model *m;
        struct rt_session *s = variant_open(b, src, (enum variant)v, &m);
        bool ran = s && io_ready(&io, rt_model_config(m), src) && bench_variant(mi, (enum variant)v, s, &io);
        ok = ok && ran;
        rt_session_free(s);
        rt_model_free(m);
    }
    free(io.x);
    free(io.y);
    return ok;
}

static bool bench_models(void)
{
    struct rt_error err = {0};
    struct rt_backend *b;
    if (rt_backend_create(RT_BACKEND_CUDA, &(struct rt_backend_options){.device = -1}, &b, &err) != RT_OK) {
        fprintf(stderr, "%s: the CUDA backend: %s\n", PROG, err.msg);
        return false;
    }
    printf("\nmodels through the CUDA backend: host to host (images/s, latency per call) and on the device "
           "(CUDA events in the replayed graph: the whole run, copies included, and its steps alone)\n"
           "%-12s %-5s %-6s %6s %12s %11s %10s %10s\n",
           "model", "prec", "conv", "batch", "images/s", "latency ms", "device ms", "steps ms");
    bool ok = true;
    for (int mi = 0; mi < N_MODELS; mi++)
        ok = bench_model(b, mi) && ok;
    rt_backend_free(b);
    return ok;
}

/* ------------------------------------------------------------------ PyTorch */

enum { EAGER, GRAPH, COMPILE, N_MODES };
static const char *const MODES[N_MODES] = {"eager", "graph", "compile"};

/* [model][fp16][mode][batch]; device_s and steps_s unused */
static struct figures theirs[N_MODELS][2][N_MODES][N_BATCHES];

static int index_of(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0)
            return i;
    }
    return -1;
}

/* Keeps one line of the script's output when it is a measurement. */
static void torch_line(const char *line)
{
    char model[64], prec[16], mode[16];
    int batch;
    double ips, ms;
    if (sscanf(line, "%63s %15s %15s %d %lf %lf", model, prec, mode, &batch, &ips, &ms) != 6) // NOLINT(cert-err34-c): the output of our own script
        return;
    int mi = index_of(model, MODELS, N_MODELS), md = index_of(mode, MODES, N_MODES);
    int f16 = strcmp(prec, "fp16") == 0;
    for (int bi = 0; bi < N_BATCHES && mi >= 0 && md >= 0; bi++) {
        if (BATCHES[bi] == batch)
            theirs[mi][f16][md][bi] = (struct figures){.ips = ips, .latency_s = ms * 1e-3};
    }
}

/* Whether one of our variants ran model mi. */
static bool measured(int mi)
{
    for (int v = 0; v < N_VARIANTS; v++) {
        if (ours[mi][v][B1].ips > 0)
            return true;
    }
    return false;
}

/* Runs models/bench_torch_gpu.py on the models we measured (its progress
 * on stderr) and keeps its figures; says so when it failed or was killed
 * (the figures it printed before stand). Within the time limit: its
 * budget and kill come forward to leave 15 s for the tables and goals,
 * and it is not started with under TORCH_LEAST_S left. */
static void bench_torch(const char *python, bool compile)
{
    int budget = TORCH_BUDGET_S, kill_s = TORCH_KILL_S;
    if (t_limit > 0) {
        int left = (int)(t_limit - bench_now_s()) - 15;
        if (left < TORCH_LEAST_S) {
            printf("\nPyTorch: not run, %d s left of the time limit\n", left + 15);
            return;
        }
        kill_s = left < kill_s ? left : kill_s;
        budget = kill_s - 10 < budget ? kill_s - 10 : budget;
    }
    char models[128] = "", batches[64] = "", cmd[640];
    for (int mi = 0; mi < N_MODELS; mi++) {
        size_t at = strlen(models);
        if (measured(mi))
            snprintf(models + at, sizeof(models) - at, "%s%s", at ? "," : "", MODELS[mi]);
    }
    for (int bi = 0; bi < N_BATCHES; bi++)
        snprintf(batches + strlen(batches), sizeof(batches) - strlen(batches), "%s%d", bi ? "," : "", BATCHES[bi]);
    if (!models[0]) {
        printf("\nPyTorch: not run, none of our models ran\n");
        return;
    }
    /* --foreground: timeout stays in our process group, so a kill of the
     * step (gpu_check.sh's timeout signals its group) reaches the script */
    snprintf(cmd, sizeof(cmd),
             "timeout --foreground -k 5 %d %s models/bench_torch_gpu.py --models %s --batches %s --repeats %d "
             "--window %g --budget %d%s",
             kill_s, python, models, batches, repeats, WINDOW_S, budget, compile ? "" : " --no-compile");
    progress("PyTorch: %s", cmd);
    FILE *p = popen(cmd, "r"); // NOLINT(cert-env33-c): our own script, with our own arguments
    char line[256];
    while (p && fgets(line, sizeof(line), p))
        torch_line(line);
    int status = p ? pclose(p) : -1;
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        printf("\nthe PyTorch benchmark %s (its messages are on stderr): ratios against it are missing where it "
               "printed nothing\n",
               status == -1                                ? "could not be started"
               : !WIFEXITED(status)                        ? "was killed by a signal"
               : WEXITSTATUS(status) == 124                ? "ran out of time (killed by timeout)"
                                                           : "failed");
}

/* " %12.2f" of a / b, or "-" when either is missing. */
static void put_ratio(double a, double b)
{
    if (a > 0 && b > 0)
        printf(" %12.2f", a / b);
    else
        printf(" %12s", "-");
}

/* Ours over PyTorch's, per model, precision and batch: FP32 and FP16 rows
 * set our convolutions (and cuDNN's) against PyTorch in the same precision,
 * INT8 rows our INT8 against PyTorch FP16 and against our FP16. */
static void print_comparison(void)
{
    static const struct { const char *name; enum variant mine; int cudnn, torch_f16; } ROWS[] = {
        {"fp32", FP32_OURS, FP32_CUDNN, 0}, {"fp16", FP16_OURS, FP16_CUDNN, 1}, {"int8", INT8_OURS, -1, 1}};
    printf("\nagainst PyTorch, host to host, images/s ours over theirs (int8 rows: against PyTorch FP16, "
           "and against our FP16)\n%-12s %-5s %6s %12s %12s %12s %12s %12s %12s\n",
           "model", "prec", "batch", "ours/eager", "ours/graph", "ours/compile", "cudnn/eager", "int8/fp16",
           "eager img/s");
    for (int mi = 0; mi < N_MODELS; mi++)
        for (size_t r = 0; r < sizeof(ROWS) / sizeof(ROWS[0]); r++)
            for (int bi = 0; bi < N_BATCHES; bi++) {
                double mine = ours[mi][ROWS[r].mine][bi].ips;
                const struct figures(*t)[N_BATCHES] = theirs[mi][ROWS[r].torch_f16];   /* [mode][batch] */
                if (mine <= 0)
                    continue;
                printf("%-12s %-5s %6d", MODELS[mi], ROWS[r].name, BATCHES[bi]);
                for (int md = 0; md < N_MODES; md++)
                    put_ratio(mine, t[md][bi].ips);
                put_ratio(ROWS[r].cudnn >= 0 ? ours[mi][ROWS[r].cudnn][bi].ips : 0, t[EAGER][bi].ips);
                put_ratio(ROWS[r].mine == INT8_OURS ? mine : 0, ours[mi][FP16_OURS][bi].ips);
                if (t[EAGER][bi].ips > 0)
                    printf(" %12.0f\n", t[EAGER][bi].ips);
                else
                    printf(" %12s\n", "-");
            }
}

/* ------------------------------------------------------------------ goals */

/* One goal's line: what, the figures (NULL: not measured), met or MISSED. */
static void goal(const char *what, const char *figures, bool met)
{
    printf("  %-52s %s  %s\n", what, figures ? figures : "-", !figures ? "not measured" : met ? "met" : "MISSED");
}

/* The four goals of issue 19, last; at most 6 lines after the header
 * (tests/gpu_check.sh shows them with grep -A6). */
static void print_goals(const char *device, double gemm_ratio)
{
    char text[160];
    printf("\ngoals (issue 19):\n");
    snprintf(text, sizeof(text), "%.2f", gemm_ratio);
    goal("FP16 GEMM 4096^3 >= 0.85 x cuBLAS", gemm_ratio > 0 ? text : NULL, gemm_ratio >= 0.85);

    double mine = ours[RESNET_MINI][FP16_OURS][B256].ips, eager = theirs[RESNET_MINI][1][EAGER][B256].ips;
    snprintf(text, sizeof(text), "%.2f", mine > 0 && eager > 0 ? mine / eager : 0);
    goal("resnet-mini FP16 b256 >= 1.5 x PyTorch eager FP16", mine > 0 && eager > 0 ? text : NULL,
         mine >= 1.5 * eager);

    const struct figures *l32 = &ours[LENET5][FP32_OURS][B1], *l16 = &ours[LENET5][FP16_OURS][B1];
    double d32 = l32->device_s * 1e6, d16 = l16->device_s * 1e6;
    snprintf(text, sizeof(text), "%.1f, %.1f us (replayed graph, copies included; steps %.1f, %.1f)", d32, d16,
             l32->steps_s * 1e6, l16->steps_s * 1e6);
    goal("lenet5 b1 device time <= 20 us (FP32, FP16)", d32 > 0 && d16 > 0 ? text : NULL, d32 <= 20 && d16 <= 20);

    /* the steps alone: copying 154 MB of FP32 images in takes ~3 ms over
     * PCIe, more than half of the goal's 5.7 ms a batch */
    const struct figures *q8 = &ours[RESNET50][INT8_OURS][B256];
    double steps = q8->steps_s > 0 ? BATCHES[B256] / q8->steps_s : 0;
    double whole = q8->device_s > 0 ? BATCHES[B256] / q8->device_s : 0;
    snprintf(text, sizeof(text), "%.0f (steps; with copies %.0f, host to host %.0f; here: %s)", steps, whole, q8->ips,
             device);
    goal("ResNet-50 INT8 b256 >= 45000 images/s (H100 goal)", steps > 0 ? text : NULL, steps >= 45000);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    t_start = bench_now_s();
    const char *python = getenv("INFERD_PYTHON") ? getenv("INFERD_PYTHON") : "python3";
    bool gemm = true, models = true, torch = true, compile = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeats") == 0)
            repeats = bench_arg_int(PROG, argc, argv, &i, 1, GPU_MAX_REPEATS);
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc)
            python = argv[++i];
        else if (strcmp(argv[i], "--no-gemm") == 0)
            gemm = false;
        else if (strcmp(argv[i], "--no-models") == 0)
            models = false;
        else if (strcmp(argv[i], "--no-torch") == 0)
            torch = false;
        else if (strcmp(argv[i], "--no-compile") == 0)
            compile = false;
        else if (strcmp(argv[i], "--time-limit") == 0)
            t_limit = t_start + bench_arg_int(PROG, argc, argv, &i, 60, 3600);
        else {
            fprintf(stderr, "usage: %s [--repeats R] [--python PYTHON] [--no-gemm] [--no-models] [--no-torch] "
                            "[--no-compile] [--time-limit S]\n", argv[0]);
            return 2;
        }
    }
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices < 1) {
        printf("no usable CUDA device (%s): nothing to measure\n", e != cudaSuccess ? cudaGetErrorString(e) : "none");
        return 1;
    }
    struct cudaDeviceProp prop;
    GPU_CHECK(cudaSetDevice(0));
    GPU_CHECK(cudaGetDeviceProperties(&prop, 0));
    GPU_CHECK(kcuda_init());
    print_header(&prop, argc, argv);

    double t0 = bench_now_s(), gemm_ratio = 0;
    if (gemm) {
        progress("GEMM tables");
        gemm_ratio = gpu_gemm_tables(&prop, repeats);
    }
    double t1 = bench_now_s();
    bool ok = !models || bench_models();
    double t2 = bench_now_s();
    if (models && torch) {
        bench_torch(python, compile);
        print_comparison();
    }
    double t3 = bench_now_s();
    printf("\ntime: GEMM %.0f s, models %.0f s, PyTorch %.0f s, in all %.0f s\n", t1 - t0, t2 - t1, t3 - t2,
           t3 - t_start);
    print_goals(prop.name, gemm_ratio);
    return ok ? 0 : 1;
}
