/*
 * cmd_tune.c - "inferctl tune MODEL_REPOSITORY/M --latency-p99 MS": which
 * serving configuration of a model gives the most throughput within a p99
 * latency budget (Triton Model Analyzer's question, for inferd).
 *
 * Starts inferd on a private copy of the model (tune_server.c), or measures
 * the server of --url as it is, and sweeps every configuration of the grid
 * (max_batch_size x instances x max_queue_delay_us; a delay only with
 * batches above 1) at closed-loop concurrencies a, 2a, 4a, ... b with
 * inferd-loadgen's engine. A configuration's sweep stops at the first
 * concurrency over the budget or that answers fewer requests than the one
 * before (it is saturated: more clients only queue). Everything fits in
 * --budget seconds: a fifth is kept for re-measuring the best point, which
 * is recommended only when it meets the budget again (else the next best
 * is tried, while the budget lasts; the one it runs out on is recommended
 * as the sweep measured it, and says so); the rest is split evenly between
 * the planned measurements, each 0.3 to 5 s, and configurations the budget
 * does not reach are reported as left out.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/loadgen/lg.h"
#include "inferctl.h"
#include "tune.h"

#define TUNE_MAX_CONFIGS (TUNE_MAX_VALUES * TUNE_MAX_VALUES * TUNE_MAX_VALUES)
#define LEVEL_MIN_S 0.3
#define LEVEL_MAX_S 5.0
#define VERIFY_SHARE 0.2          /* of the budget left after start-up */
#define REQUEST_POOL 256          /* distinct prepared requests */

struct tune_args {
    const char *dir, *url, *kind, *backend, *inferd, *out;
    const char *latency, *budget, *concurrency, *max_batch, *instances, *delays;
    int threads;
    bool no_progress;
};

/* The parsed settings. */
struct tune_plan {
    double budget_ms, budget_s;
    int levels[TUNE_MAX_LEVELS], n_levels;
    struct tune_config configs[TUNE_MAX_CONFIGS];
    int n_configs;
};

/* ------------------------------------------------------------ options */

static bool parse_double(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* "1,4,16": n values in lo..hi, ascending and distinct. */
static int parse_list(const char *text, long lo, long hi, long *out)
{
    int n = 0;
    const char *p = text;
    while (*p && n < TUNE_MAX_VALUES) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < lo || v > hi || (n > 0 && v <= out[n - 1]) || (*end && *end != ','))
            return 0;
        out[n++] = v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return 0;   /* a trailing comma */
    }
    return *p ? 0 : n;
}

/* "A:B" with 1 <= A <= B <= 1024. */
static bool parse_range(const char *text, int *a, int *b)
{
    char *colon, *end;
    errno = 0;
    long lo = strtol(text, &colon, 10);
    if (errno || colon == text || *colon != ':')
        return false;
    long hi = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || lo < 1 || hi < lo || hi > 1024)
        return false;
    *a = (int)lo;
    *b = (int)hi;
    return true;
}

static int usage(const char *why)
{
    fprintf(stderr, "inferctl tune: %s\n", why);
    ctl_print_command_usage(stderr, "tune");
    return CTL_EXIT_USAGE;
}

static bool valid_model_name(const char *name)
{
    if (!name[0] || strlen(name) >= RT_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (const char *p = name; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            return false;
    }
    return true;
}

/* The grid: instances, then max_batch_size, then delay (a delay only where
 * a batch can grow past one). */
static int make_plan(const struct tune_args *a, struct tune_plan *pl)
{
    long batches[TUNE_MAX_VALUES], insts[TUNE_MAX_VALUES], delays[TUNE_MAX_VALUES];
    int lo, hi, nb, ni, nd;
    if (!parse_double(a->latency, 1e-3, 3.6e6, &pl->budget_ms))
        return usage("--latency-p99 must be milliseconds in [0.001, 3600000]");
    if (!parse_double(a->budget, 2, 86400, &pl->budget_s))
        return usage("--budget must be seconds in [2, 86400]");
    if (!parse_range(a->concurrency, &lo, &hi))
        return usage("--concurrency must be A:B with 1 <= A <= B <= 1024");
    if (!(nb = parse_list(a->max_batch, 1, RT_MAX_BATCH, batches)))
        return usage("--max-batch must be ascending sizes in 1..4096, comma-separated");
    if (!(ni = parse_list(a->instances, 1, 64, insts)))
        return usage("--instances must be ascending counts in 1..64, comma-separated");
    if (!(nd = parse_list(a->delays, 0, 10000000, delays)))
        return usage("--queue-delay must be ascending microseconds in 0..10000000, comma-separated");
    if (strcmp(a->kind, "classify") != 0 && strcmp(a->kind, "infer-json") != 0 &&
        strcmp(a->kind, "infer-binary") != 0)
        return usage("--kind must be classify, infer-json or infer-binary");
    pl->n_levels = tune_levels(lo, hi, pl->levels, TUNE_MAX_LEVELS);
    pl->n_configs = 0;
    for (int i = 0; i < ni; i++)
        for (int b = 0; b < nb; b++)
            for (int d = 0; d < nd; d++) {
                if (batches[b] == 1 && delays[d] > 0)
                    continue;
                pl->configs[pl->n_configs++] =
                    (struct tune_config){.max_batch = (int)batches[b], .instances = (int)insts[i], .delay_us = delays[d]};
            }
    if (pl->n_configs == 0)
        return usage("no configuration to measure (a queue delay needs a max batch above 1)");
    return CTL_EXIT_OK;
}

/* ------------------------------------------------------------ measuring */

struct sweep {
    const struct tune_args *a;
    struct tune_plan *plan;
    struct tune_server server;
    struct lg_config lg;
    struct lg_workload work;
    struct lg_stats *stats;           /* one level's (large: kept off the stack) */
    double t0, level_s;
    struct tune_point *points;
    int n_points;
    bool tty;
    struct tune_config loaded;        /* what the server runs now */
};

static double elapsed(const struct sweep *s) { return ctl_now() - s->t0; }

/* One level of seconds: a fifth warm-up, the rest measured. */
static bool measure(struct sweep *s, const struct tune_config *cfg, int concurrency, double seconds,
                    struct tune_point *p)
{
    s->lg.warmup_s = seconds * 0.2;
    s->lg.duration_s = seconds - s->lg.warmup_s;
    if (!lg_run_level(&s->lg, &s->work, concurrency, NULL, s->stats))
        return false;
    double t = lg_stats_elapsed_s(s->stats);
    *p = (struct tune_point){
        .cfg = *cfg,
        .concurrency = concurrency,
        .throughput = t > 0 ? (double)s->stats->ok / t : 0,
        .p50_ms = (double)lg_hist_percentile(&s->stats->hist, 50) / 1e6,
        .p99_ms = (double)lg_hist_percentile(&s->stats->hist, 99) / 1e6,
        .errors = lg_stats_errors(s->stats),
    };
    return true;
}

static bool load(struct sweep *s, const struct tune_config *cfg)
{
    if (memcmp(cfg, &s->loaded, sizeof(*cfg)) == 0)
        return true;
    if (!tune_server_apply(&s->server, cfg))
        return false;
    s->loaded = *cfg;
    return true;
}

static void progress(const struct sweep *s, int config, const struct tune_point *p)
{
    if (!s->tty)
        return;
    const int width = 24;
    double frac = fmin(1.0, elapsed(s) / s->plan->budget_s);
    char bar[32];
    int filled = (int)(frac * width);
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r  [%s] %5.1f/%.0f s  configuration %d/%d  c%d: %.0f req/s, p99 %.2f ms   ", bar, elapsed(s),
            s->plan->budget_s, config + 1, s->plan->n_configs, p->concurrency, p->throughput, p->p99_ms);
}

static void print_point(const struct tune_point *p, double budget_ms, const char *note)
{
    printf("  b%-5d i%-3d d%-8lld c%-5d %10.1f req/s  p50 %8.3f ms  p99 %8.3f ms%s%s\n", p->cfg.max_batch,
           p->cfg.instances, (long long)p->cfg.delay_us, p->concurrency, p->throughput, p->p50_ms, p->p99_ms,
           p->errors ? "  errors" : p->p99_ms > budget_ms ? "  over" : "", note);
    fflush(stdout);
}

/* Every configuration the budget reaches; false when the engine or a
 * reload failed. */
static bool sweep_all(struct sweep *s, double sweep_end)
{
    const struct tune_plan *pl = s->plan;
    int c = 0;
    for (; c < pl->n_configs; c++) {
        if (elapsed(s) + s->level_s > sweep_end)
            break;
        if (!load(s, &pl->configs[c]))
            return false;
        double prev = 0;
        for (int l = 0; l < pl->n_levels && elapsed(s) + s->level_s <= sweep_end; l++) {
            struct tune_point *p = &s->points[s->n_points];
            if (!measure(s, &pl->configs[c], pl->levels[l], s->level_s, p))
                return false;
            s->n_points++;
            progress(s, c, p);
            if (s->tty)
                fprintf(stderr, "\r%120s\r", "");
            print_point(p, pl->budget_ms, "");
            if (p->errors || p->p99_ms > pl->budget_ms || p->throughput < prev)
                break;
            prev = p->throughput;
        }
    }
    if (c < pl->n_configs)
        printf("  the budget ran out: %d of %d configurations measured (raise --budget for the rest)\n", c,
               pl->n_configs);
    return true;
}

/* Re-measures the feasible points best first, twice as long as the sweep
 * did, until one meets the budget again; its index, or -1. *again holds
 * the re-measurement when *remeasured. */
static int verify(struct sweep *s, const int *order, int n_feasible, struct tune_point *again, bool *remeasured)
{
    *remeasured = false;
    for (int k = 0; k < n_feasible; k++) {
        const struct tune_point *p = &s->points[order[k]];
        double seconds = fmin(2 * s->level_s, s->plan->budget_s - elapsed(s));
        if (seconds < LEVEL_MIN_S) {
            printf("  no budget left to re-measure: recommending the next point as the sweep measured it\n");
            return order[k];
        }
        if (!load(s, &p->cfg) || !measure(s, &p->cfg, p->concurrency, seconds, again))
            return -1;
        bool ok = again->errors == 0 && again->p99_ms <= s->plan->budget_ms;
        print_point(again, s->plan->budget_ms, ok ? "  (re-measured: holds)" : "  (re-measured: does not hold)");
        if (ok) {
            *remeasured = true;
            return order[k];
        }
    }
    return -1;
}

/* ------------------------------------------------------------ the command */

static int run(struct sweep *s)
{
    const struct tune_args *a = s->a;
    struct tune_plan *pl = s->plan;
    const char *url = a->url ? a->url : ctl_server_url();
    char model[RT_NAME_MAX];
    ctl_dir_name(a->dir, model, sizeof(model));
    if (!valid_model_name(model))
        return usage("the model folder's name must be letters, digits, '.', '_' or '-'");
    if (url) {
        if (!tune_server_attach(&s->server, url, model, &pl->configs[0]))
            return CTL_EXIT_ERROR;
        pl->n_configs = 1;
        printf("measuring %s on %s as it is configured (--url: nothing is changed)\n", model, url);
    } else if (!tune_server_start(&s->server, a->dir, a->inferd, a->backend, a->threads, &pl->configs[0])) {
        return CTL_EXIT_ERROR;
    }
    s->loaded = pl->configs[0];
    lg_config_parse(0, NULL, &s->lg, stdout, stderr);   /* the load generator's defaults */
    s->lg.url = s->server.url;
    s->lg.model = s->server.model;
    s->lg.pool = REQUEST_POOL;
    s->lg.progress = false;
    s->lg.kind = strcmp(a->kind, "classify") == 0     ? LG_KIND_CLASSIFY
                 : strcmp(a->kind, "infer-json") == 0 ? LG_KIND_INFER_JSON
                                                      : LG_KIND_INFER_BINARY;
    int rc = lg_workload_build(&s->lg, &s->work);
    if (rc != 0)
        return rc;
    double left = pl->budget_s - elapsed(s), sweep_s = left * (1 - VERIFY_SHARE);
    s->level_s = fmax(LEVEL_MIN_S, fmin(LEVEL_MAX_S, sweep_s / (pl->n_configs * pl->n_levels)));
    printf("%s: %d configuration%s x up to %d concurrencies (%d..%d), %.2f s each, p99 budget %g ms, %s requests\n",
           model, pl->n_configs, pl->n_configs == 1 ? "" : "s", pl->n_levels, pl->levels[0],
           pl->levels[pl->n_levels - 1], s->level_s, pl->budget_ms, a->kind);
    if (!sweep_all(s, elapsed(s) + sweep_s))
        return CTL_EXIT_ERROR;

    bool *frontier = calloc((size_t)s->n_points + 1, sizeof(*frontier));
    int *order = calloc((size_t)s->n_points + 1, sizeof(*order));
    if (!frontier || !order) {
        free(frontier);
        free(order);
        fprintf(stderr, "inferctl tune: out of memory\n");
        return CTL_EXIT_ERROR;
    }
    tune_frontier(s->points, s->n_points, frontier);
    int n_feasible = tune_rank(s->points, s->n_points, pl->budget_ms, order);
    struct tune_point again;
    bool remeasured;
    int best = verify(s, order, n_feasible, &again, &remeasured);
    struct tune_result r = {
        .model = model, .source_dir = a->dir, .kind = a->kind, .budget_ms = pl->budget_ms, .budget_s = pl->budget_s,
        .elapsed_s = elapsed(s), .points = s->points, .n = s->n_points, .frontier = frontier, .recommended = best,
        .verified = remeasured ? &again : NULL, .source_json = s->server.source_json,
    };
    tune_print_frontier(stdout, &r);
    rc = best >= 0 ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    if (best < 0)
        fprintf(stderr, "inferctl tune: no configuration %s p99 <= %g ms at any measured concurrency\n",
                n_feasible ? "held" : "met", pl->budget_ms);
    if (a->out && !tune_write_reports(a->out, &r))
        rc = CTL_EXIT_ERROR;
    printf("tuned in %.1f s of a %.0f s budget\n", elapsed(s), pl->budget_s);
    free(frontier);
    free(order);
    return rc;
}

int ctl_cmd_tune(int argc, char **argv)
{
    struct tune_args a = {.kind = "infer-binary", .backend = "auto", .budget = "60", .concurrency = "1:16",
                          .max_batch = "1,4,16,64", .delays = "0,500"};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a.instances = cores >= 4 ? "1,2,4" : cores >= 2 ? "1,2" : "1";
    const struct ctl_option opts[] = {
        {"latency-p99", CTL_OPT_STRING, &a.latency, 0, 0},
        {"budget", CTL_OPT_STRING, &a.budget, 0, 0},
        {"concurrency", CTL_OPT_STRING, &a.concurrency, 0, 0},
        {"max-batch", CTL_OPT_STRING, &a.max_batch, 0, 0},
        {"instances", CTL_OPT_STRING, &a.instances, 0, 0},
        {"queue-delay", CTL_OPT_STRING, &a.delays, 0, 0},
        {"kind", CTL_OPT_STRING, &a.kind, 0, 0},
        {"backend", CTL_OPT_STRING, &a.backend, 0, 0},
        {"threads", CTL_OPT_INT, &a.threads, 0, 1024},
        {"inferd", CTL_OPT_STRING, &a.inferd, 0, 0},
        {"url", CTL_OPT_STRING, &a.url, 0, 0},
        {"out", CTL_OPT_STRING, &a.out, 0, 0},
        {"no-progress", CTL_OPT_FLAG, &a.no_progress, 0, 0},
    };
    char **pos = NULL;
    int npos = 0;
    int rc = ctl_positional("tune", argc, argv, opts, (int)(sizeof(opts) / sizeof(opts[0])), 1, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    a.dir = pos[0];
    free(pos);
    enum rt_backend_kind kind;
    if (!a.latency)
        return usage("--latency-p99 MS is required");
    if (!ctl_parse_backend(a.backend, &kind))
        return CTL_EXIT_USAGE;
    struct tune_plan *plan = calloc(1, sizeof(*plan));
    struct sweep s = {.a = &a, .plan = plan, .t0 = ctl_now(), .tty = !a.no_progress && isatty(STDERR_FILENO)};
    s.stats = malloc(sizeof(*s.stats));
    if (!plan || !s.stats) {
        free(plan);
        free(s.stats);
        fprintf(stderr, "inferctl tune: out of memory\n");
        return CTL_EXIT_ERROR;
    }
    rc = make_plan(&a, plan);
    if (rc == CTL_EXIT_OK && !(s.points = calloc((size_t)plan->n_configs * (size_t)plan->n_levels + 1,
                                                  sizeof(*s.points)))) {
        fprintf(stderr, "inferctl tune: out of memory\n");
        rc = CTL_EXIT_ERROR;
    }
    if (rc == CTL_EXIT_OK)
        rc = run(&s);
    lg_workload_free(&s.work);
    tune_server_stop(&s.server);
    free(s.points);
    free(s.stats);
    free(plan);
    return rc;
}
