/*
 * cmd_profile.c - "inferctl profile MODEL_DIR": where a forward pass spends
 * its time (trtexec --dumpProfile's table, for inferd's plan).
 *
 * Loads the model on a backend, runs it --warmup times and then --runs
 * times with step timing on (rt_session_profile: the host's monotonic
 * clock on the CPU, CUDA events on a GPU), and prints one row per plan
 * step: op, fused epilogue, shapes, the backend's kernel, median time,
 * share of the steps' total, GFLOP/s and GB/s, and those as a fraction of
 * what the backend reaches on a large GEMM and on a streaming kernel
 * (rt_backend_measure_rates). Then the steps' total against the median
 * rt_session_run, timed around the call. --trace FILE writes every timed
 * step as a Chrome trace (profile_trace.c). A --precision other than the
 * model's own profiles a converted copy in a temporary folder.
 * --floors TFLOPS,TBS runs nothing: it prints each step's arithmetic and
 * least memory traffic and the least time they take at a device's peaks.
 */
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "quant_tools.h"

#define PROFILE_MAX_RUNS 100000
#define PROFILE_CALIB_IMAGES 256   /* INT8 copies: timing does not need the best scales */

struct profile_args {
    const char *dir, *backend, *precision, *trace, *calib_data;
    const char *floors;            /* "TFLOPS,TBS": print each step's floor instead of timing */
    int threads, batch, runs, warmup;
};

/* What the timing callback fills. */
struct recorder {
    int n_steps;
    int run;                       /* the timed run in progress; -1 while warming up */
    int64_t *step_ns;              /* [runs][n_steps]: each step's time, its passes summed */
    bool keep_events;              /* --trace */
    struct ctl_step_event *events;
    int n_events, cap_events;
    bool out_of_memory;
};

static void on_step(void *user, const struct rt_step_timing *t)
{
    struct recorder *r = user;
    if (r->run < 0)
        return;
    r->step_ns[(size_t)r->run * (size_t)r->n_steps + (size_t)t->step] += t->dur_ns;
    if (!r->keep_events || r->out_of_memory)
        return;
    if (r->n_events == r->cap_events) {
        int cap = r->cap_events ? r->cap_events * 2 : 1024;
        struct ctl_step_event *e = realloc(r->events, (size_t)cap * sizeof(*e));
        if (!e) {
            r->out_of_memory = true;
            return;
        }
        r->events = e;
        r->cap_events = cap;
    }
    r->events[r->n_events++] = (struct ctl_step_event){t->step, r->run, t->batch, t->begin_ns, t->dur_ns};
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorted in place). */
static double median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    int mid = n / 2;
    return n % 2 ? (double)v[mid] : ((double)v[mid - 1] + (double)v[mid]) / 2.0;
}

static int64_t now_ns(void) { return (int64_t)(ctl_now() * 1e9); }

/* ------------------------------------------------------------ the model */

static bool parse_precision(const char *text, enum rt_precision *out)
{
    static const enum rt_precision ALL[] = {RT_PRECISION_FP32, RT_PRECISION_FP16, RT_PRECISION_INT8};
    for (size_t i = 0; i < sizeof(ALL) / sizeof(ALL[0]); i++) {
        if (strcmp(text, rt_precision_name(ALL[i])) == 0) {
            *out = ALL[i];
            return true;
        }
    }
    return false;
}

/* Writes dir at precision want into tmp/NAME (FP16 or FP32 as inferctl
 * convert does; INT8 calibrated with the max method on calib_data's images,
 * or Fashion-MNIST's when NULL); its path in out. */
static bool convert_copy(const char *dir, enum rt_precision want, const char *tmp, const char *calib_data, int threads,
                         char *out, size_t cap)
{
    char name[RT_NAME_MAX];
    snprintf(out, cap, "%s/%s", tmp, ctl_dir_name(dir, name, sizeof(name)));
    if (want != RT_PRECISION_INT8)
        return ctl_convert(dir, want, out);
    struct ctl_calibration c;
    if (!ctl_calibrate(dir, PROFILE_CALIB_IMAGES, calib_data, threads, &c))
        return false;
    bool ok = ctl_write_int8(&c, RT_CALIB_MAX, 100.0, out);
    ctl_calibration_free(&c);
    return ok;
}

/* Loads a.dir (or its copy at --precision) into *b and *m. */
static int open_model(const struct profile_args *a, const char *tmp, struct rt_backend **b, struct rt_model **m)
{
    enum rt_backend_kind kind;
    enum rt_precision want = RT_PRECISION_FP32;
    if (!ctl_parse_backend(a->backend, &kind))
        return CTL_EXIT_USAGE;
    if (a->precision && !parse_precision(a->precision, &want)) {
        fprintf(stderr, "inferctl profile: --precision must be fp32, fp16 or int8\n");
        return CTL_EXIT_USAGE;
    }
    struct rt_error err = {0};
    struct rt_backend_options bo = {.threads = a->threads, .device = -1};
    if (rt_backend_create(kind, &bo, b, &err) != RT_OK) {
        fprintf(stderr, "inferctl profile: backend: %s\n", err.msg);
        return CTL_EXIT_ERROR;
    }
    if (rt_model_load(a->dir, *b, m, &err) != RT_OK) {
        fprintf(stderr, "inferctl profile: %s: %s\n", a->dir, err.msg);
        return CTL_EXIT_ERROR;
    }
    enum rt_precision have = rt_model_config(*m)->precision;
    if (!a->precision || want == have)
        return CTL_EXIT_OK;
    rt_model_free(*m);
    *m = NULL;
    if (have == RT_PRECISION_INT8) {
        fprintf(stderr, "inferctl profile: %s is INT8; profile its float source for %s\n", a->dir, a->precision);
        return CTL_EXIT_ERROR;
    }
    char copy[4096];
    if (!convert_copy(a->dir, want, tmp, a->calib_data, a->threads, copy, sizeof(copy)))
        return CTL_EXIT_ERROR;
    if (want == RT_PRECISION_INT8)
        printf("profiling a %s copy of %s (max calibration over at most %d images of %s)\n", a->precision, a->dir,
               PROFILE_CALIB_IMAGES, a->calib_data ? a->calib_data : "Fashion-MNIST's training set");
    else
        printf("profiling a %s copy of %s\n", a->precision, a->dir);
    if (rt_model_load(copy, *b, m, &err) != RT_OK) {
        fprintf(stderr, "inferctl profile: %s copy: %s\n", a->precision, err.msg);
        return CTL_EXIT_ERROR;
    }
    return CTL_EXIT_OK;
}

/* ------------------------------------------------------------ the runs */

/* batch samples of every input, values in [0, 1) from a fixed LCG, and
 * room for every output. */
static bool make_buffers(const struct rt_model_config *cfg, int batch, float **in, float **out)
{
    uint32_t state = 12345;
    for (int i = 0; i < cfg->n_inputs; i++) {
        size_t n = (size_t)cfg->inputs[i].sample_elems * (size_t)batch;
        if (!(in[i] = malloc(n * sizeof(float))))
            return false;
        for (size_t k = 0; k < n; k++) {
            state = state * 1664525u + 1013904223u;
            in[i][k] = (float)(state >> 8) / 16777216.0f;
        }
    }
    for (int o = 0; o < cfg->n_outputs; o++) {
        if (!(out[o] = malloc((size_t)cfg->outputs[o].sample_elems * (size_t)batch * sizeof(float))))
            return false;
    }
    return true;
}

/* Warm-up, then the timed runs, each also timed around rt_session_run. */
static bool run_all(struct rt_session *s, const struct profile_args *a, float **in, float **out, struct recorder *rec,
                    struct ctl_run_span *spans)
{
    struct rt_error err = {0};
    if (rt_session_profile(s, on_step, rec, &err) != RT_OK) {
        fprintf(stderr, "inferctl profile: %s\n", err.msg);
        return false;
    }
    bool ok = true;
    for (int r = -a->warmup; ok && r < a->runs; r++) {
        rec->run = r;
        int64_t t0 = now_ns();
        ok = rt_session_run(s, a->batch, (const float *const *)in, out, &err) == RT_OK;
        if (r >= 0)
            spans[r] = (struct ctl_run_span){t0, now_ns() - t0};
    }
    rt_session_profile(s, NULL, NULL, &err);
    if (!ok)
        fprintf(stderr, "inferctl profile: inference failed: %s\n", err.msg);
    if (rec->out_of_memory) {
        fprintf(stderr, "inferctl profile: out of memory for the trace's events\n");
        ok = false;
    }
    return ok;
}

/* ------------------------------------------------------------ the table */

static void format_shape(const struct rt_shape *s, char *out, size_t cap)
{
    out[0] = '\0';
    for (int d = 0; d < s->rank; d++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%lld", d ? "x" : "", (long long)s->dims[d]);
}

/* "-" when the ceiling is unknown. */
static void format_fraction(double value, double ceiling, char *out, size_t cap)
{
    if (ceiling > 0)
        snprintf(out, cap, "%.0f%%", 100.0 * value / ceiling);
    else
        snprintf(out, cap, "-");
}

static void print_table(const struct ctl_profile_data *d, const double *med_ns, const struct rt_backend_rates *rates)
{
    int name_w = 4;
    double total = 0;
    for (int i = 0; i < d->n_steps; i++) {
        int len = (int)strlen(d->steps[i].name);
        name_w = len > name_w ? (len < 40 ? len : 40) : name_w;
        total += med_ns[i];
    }
    printf("%3s  %-*s  %-15s  %-16s  %-16s  %-14s  %-26s %10s %7s %8s %7s %6s %6s %6s\n", "#", name_w, "step",
           "op", "epilogue", "input", "output", "kernel", "median us", "share", "GFLOP/s", "GB/s", "%peak", "%gemm",
           "%bw");
    for (int i = 0; i < d->n_steps; i++) {
        const struct rt_step_desc *s = &d->steps[i];
        char in[48], out[48], f_peak[16], f_gemm[16], f_bw[16];
        format_shape(&s->in[0], in, sizeof(in));
        if (s->n_in > 1)
            snprintf(in + strlen(in), sizeof(in) - strlen(in), " +%d", s->n_in - 1);
        format_shape(&s->out, out, sizeof(out));
        double sec = med_ns[i] * 1e-9, gflops = sec > 0 ? s->flops / sec * 1e-9 : 0;
        double gbs = sec > 0 ? s->bytes / sec * 1e-9 : 0;
        format_fraction(gflops, rates->peak_gflops, f_peak, sizeof(f_peak));
        format_fraction(gflops, rates->gemm_gflops, f_gemm, sizeof(f_gemm));
        format_fraction(gbs, rates->stream_gbs, f_bw, sizeof(f_bw));
        printf("%3d  %-*.*s  %-15s  %-16s  %-16s  %-14s  %-26s %10.1f %6.1f%% %8.2f %7.2f %6s %6s %6s\n", i,
               name_w, name_w, s->name, s->op, s->epilogue[0] ? s->epilogue : "-", in, out,
               s->kernel[0] ? s->kernel : "-", med_ns[i] / 1e3, total > 0 ? 100.0 * med_ns[i] / total : 0, gflops,
               gbs, f_peak, f_gemm, f_bw);
    }
}

static void print_summary(const struct ctl_profile_data *d, const double *med_ns, double run_med_ns)
{
    double total = 0;
    for (int i = 0; i < d->n_steps; i++)
        total += med_ns[i];
    printf("\nsteps: %.1f us (sum of the medians); rt_session_run: %.1f us (median, host clock around the call): "
           "the steps are %.1f%% of it\n",
           total / 1e3, run_med_ns / 1e3, run_med_ns > 0 ? 100.0 * total / run_med_ns : 0);
    printf("per sample: %.2f us, %.0f samples/s at batch %d\n", run_med_ns / 1e3 / d->batch,
           run_med_ns > 0 ? d->batch * 1e9 / run_med_ns : 0, d->batch);
}

/* ------------------------------------------------------------ floors */

/* --floors "TFLOPS,TBS": a device's peak arithmetic (TFLOP/s, or TOP/s for
 * INT8) and memory bandwidth (TB/s), both positive. */
static bool parse_floors(const char *text, double *tflops, double *tbs)
{
    char *end = NULL;
    *tflops = strtod(text, &end);
    if (end == text || *end != ',' || !(*tflops > 0))
        return false;
    const char *second = end + 1;
    *tbs = strtod(second, &end);
    return end != second && *end == '\0' && *tbs > 0;
}

/* Each step's least time on a device of the given peaks: its arithmetic at
 * the peak rate or its least memory traffic at the peak bandwidth, the
 * larger (a roofline floor; caches ignored, so it is pessimistic where
 * activations stay in a large L2). Nothing runs. */
static void print_floors(const struct rt_model_config *cfg, const struct rt_step_desc *steps, int n_steps,
                         int batch, double tflops, double tbs)
{
    printf("%s: %s, %d steps, batch %d; floors at %.4g TFLOP/s and %.4g TB/s\n\n", cfg->name,
           rt_precision_name(cfg->precision), n_steps, batch, tflops, tbs);
    printf("%3s  %-28s  %-15s  %-16s %10s %9s %10s %10s %10s  %s\n", "#", "step", "op", "output", "MFLOP", "MB",
           "compute us", "memory us", "floor us", "bound");
    double sum_flops = 0, sum_bytes = 0, sum_floor = 0, sum_compute = 0, sum_memory = 0;
    for (int i = 0; i < n_steps; i++) {
        const struct rt_step_desc *s = &steps[i];
        char out[48];
        format_shape(&s->out, out, sizeof(out));
        double compute = s->flops / (tflops * 1e12) * 1e6, memory = s->bytes / (tbs * 1e12) * 1e6;
        double floor = compute > memory ? compute : memory;
        printf("%3d  %-28.28s  %-15s  %-16s %10.2f %9.3f %10.3f %10.3f %10.3f  %s\n", i, s->name, s->op, out,
               s->flops / 1e6, s->bytes / 1e6, compute, memory, floor, compute > memory ? "compute" : "memory");
        sum_flops += s->flops;
        sum_bytes += s->bytes;
        sum_compute += compute;
        sum_memory += memory;
        sum_floor += floor;
    }
    printf("\ntotal: %.1f MFLOP, %.2f MB; floors: compute %.2f us, memory %.2f us, per step summed %.2f us "
           "(%.0f samples/s at batch %d)\n",
           sum_flops / 1e6, sum_bytes / 1e6, sum_compute, sum_memory, sum_floor,
           sum_floor > 0 ? batch / (sum_floor * 1e-6) : 0, batch);
}

/* ------------------------------------------------------------ the command */

/* Profiles the loaded model m on b; prints the table and writes the trace. */
static int profile(const struct profile_args *a, struct rt_backend *b, struct rt_model *m)
{
    const struct rt_model_config *cfg = rt_model_config(m);
    struct rt_error err = {0};
    if (a->batch > cfg->max_batch_size) {
        fprintf(stderr, "inferctl profile: --batch %d is over %s's max_batch_size %d\n", a->batch, cfg->name,
                cfg->max_batch_size);
        return CTL_EXIT_USAGE;
    }
    int n_steps = rt_model_plan_steps(m);
    struct rt_session *s = NULL;
    float *in[RT_MAX_IO] = {0}, *out[RT_MAX_IO] = {0};
    struct rt_step_desc *steps = calloc((size_t)n_steps + 1, sizeof(*steps));
    struct ctl_run_span *spans = calloc((size_t)a->runs, sizeof(*spans));
    int64_t *run_ns = calloc((size_t)a->runs, sizeof(*run_ns)), *col = calloc((size_t)a->runs, sizeof(*col));
    double *med = calloc((size_t)n_steps + 1, sizeof(*med));
    struct recorder rec = {.n_steps = n_steps, .keep_events = a->trace != NULL,
                           .step_ns = calloc((size_t)a->runs * (size_t)n_steps + 1, sizeof(int64_t))};
    int rc = CTL_EXIT_ERROR;
    if (!steps || !spans || !run_ns || !col || !med || !rec.step_ns || !make_buffers(cfg, a->batch, in, out)) {
        fprintf(stderr, "inferctl profile: out of memory\n");
        goto done;
    }
    for (int i = 0; i < n_steps; i++)
        rt_model_step_desc(m, i, a->batch, &steps[i], &err);   /* step and batch are in range */
    double tflops, tbs;
    if (a->floors && parse_floors(a->floors, &tflops, &tbs)) {
        print_floors(cfg, steps, n_steps, a->batch, tflops, tbs);
        rc = CTL_EXIT_OK;
        goto done;
    }
    if (rt_session_create(m, &s, &err) != RT_OK) {
        fprintf(stderr, "inferctl profile: %s\n", err.msg);
        goto done;
    }
    struct rt_backend_rates rates;
    if (rt_backend_measure_rates(b, cfg->precision, &rates, &err) != RT_OK)
        fprintf(stderr, "inferctl profile: no ceilings: %s\n", err.msg);
    if (!run_all(s, a, in, out, &rec, spans))
        goto done;

    for (int r = 0; r < a->runs; r++)
        run_ns[r] = spans[r].dur_ns;
    for (int i = 0; i < n_steps; i++) {
        for (int r = 0; r < a->runs; r++)
            col[r] = rec.step_ns[(size_t)r * (size_t)n_steps + (size_t)i];
        med[i] = median(col, a->runs);
    }
    struct ctl_profile_data d = {
        .model = cfg->name, .backend = rt_backend_describe(b),
        .device_clock = rt_backend_device_kind(b) == RT_DEVICE_GPU, .batch = a->batch, .n_steps = n_steps,
        .steps = steps, .runs = a->runs, .run_spans = spans, .n_events = rec.n_events, .events = rec.events,
    };
    printf("%s: %s, %d steps, batch %d, %s; %d timed runs after %d warm-up\n", cfg->name,
           rt_precision_name(cfg->precision), n_steps, a->batch, d.backend, a->runs, a->warmup);
    if (cfg->precision != RT_PRECISION_FP32)
        rates.peak_gflops = 0;   /* an FP32 FMA peak says nothing of FP16 or INT8 steps */
    if (rates.gemm_gflops > 0)
        printf("ceilings: %.1f GFLOP/s, %.1f GB/s (%s)\n", rates.gemm_gflops, rates.stream_gbs, rates.what);
    if (rates.peak_gflops > 0)
        printf("peak: %.1f GFLOP/s FP32 (an FMA loop on every thread at once, timed by thread CPU clocks)\n",
               rates.peak_gflops);
    printf("\n");
    print_table(&d, med, &rates);
    print_summary(&d, med, median(run_ns, a->runs));
    rc = CTL_EXIT_OK;
    if (a->trace) {
        rc = ctl_profile_write_trace(a->trace, &d) ? CTL_EXIT_OK : CTL_EXIT_ERROR;
        if (rc == CTL_EXIT_OK)
            printf("wrote %s (%d step events): open it in ui.perfetto.dev or chrome://tracing\n", a->trace,
                   rec.n_events);
    }
done:
    rt_session_free(s);
    for (int i = 0; i < RT_MAX_IO; i++) {
        free(in[i]);
        free(out[i]);
    }
    free(steps);
    free(spans);
    free(run_ns);
    free(col);
    free(med);
    free(rec.step_ns);
    free(rec.events);
    return rc;
}

int ctl_cmd_profile(int argc, char **argv)
{
    struct profile_args a = {.backend = "auto", .batch = 1, .runs = 100, .warmup = 10};
    const struct ctl_option opts[] = {
        {"backend", CTL_OPT_STRING, &a.backend, 0, 0},
        {"threads", CTL_OPT_INT, &a.threads, 0, 4096},
        {"batch", CTL_OPT_INT, &a.batch, 1, RT_MAX_BATCH},
        {"precision", CTL_OPT_STRING, &a.precision, 0, 0},
        {"runs", CTL_OPT_INT, &a.runs, 1, PROFILE_MAX_RUNS},
        {"warmup", CTL_OPT_INT, &a.warmup, 0, PROFILE_MAX_RUNS},
        {"trace", CTL_OPT_STRING, &a.trace, 0, 0},
        {"calib-data", CTL_OPT_STRING, &a.calib_data, 0, 0},
        {"floors", CTL_OPT_STRING, &a.floors, 0, 0},
    };
    char **pos = NULL;
    int npos = 0;
    int rc = ctl_positional("profile", argc, argv, opts, (int)(sizeof(opts) / sizeof(opts[0])), 1, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    a.dir = pos[0];
    free(pos);
    double tflops, tbs;
    if (a.floors && !parse_floors(a.floors, &tflops, &tbs)) {
        fprintf(stderr, "inferctl profile: --floors takes TFLOPS,TBS (two positive numbers: 989,3.35 for an H100's "
                        "dense FP16 and its HBM3)\n");
        return CTL_EXIT_USAGE;
    }
    char tmp[] = "/tmp/inferctl-profile-XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("inferctl profile: temporary folder");
        return CTL_EXIT_ERROR;
    }
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    rc = open_model(&a, tmp, &b, &m);
    if (rc == CTL_EXIT_OK)
        rc = profile(&a, b, m);
    rt_model_free(m);
    rt_backend_free(b);
    ctl_remove_tree(tmp);
    return rc;
}
