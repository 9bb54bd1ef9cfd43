/*
 * tune.h - `inferctl tune`: the serving configurations of one model swept
 * under load, the throughput/latency frontier, and the recommendation.
 *
 *   tune_frontier.c  the choice: frontier, feasible points best first,
 *                    concurrency levels (pure functions, unit-tested)
 *   tune_server.c    the inferd it drives: a private repository holding a
 *                    copy of the model, model.json per configuration, start,
 *                    reload, stop; or the running server of --url
 *   tune_report.c    the tables, the model.json lines, CSV, JSON, the plot
 *   cmd_tune.c       options, the sweep within --budget, verification
 *
 * A point is one configuration at one closed-loop concurrency of
 * inferd-loadgen's engine (clients/loadgen, linked in as a library).
 */
#ifndef CTL_TUNE_H
#define CTL_TUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define TUNE_MAX_VALUES 16   /* values per swept setting */
#define TUNE_MAX_LEVELS 24   /* concurrency levels */

/* The settings swept: model.json's max_batch_size, instances.count and
 * dynamic_batching.max_queue_delay_us. */
struct tune_config {
    int max_batch;
    int instances;
    int64_t delay_us;
};

struct tune_point {
    struct tune_config cfg;
    int concurrency;
    double throughput;               /* 2xx answers per second */
    double p50_ms, p99_ms;
    uint64_t errors;                 /* non-2xx answers, timeouts, connection failures */
};

/* ------------------------------------------------------------ tune_frontier.c */

/* Concurrencies from a to b: a, 2a, 4a, ... below b, then b; the count
 * (at most cap). */
int tune_levels(int a, int b, int *out, int cap);

/* A point counts when it answered without errors. frontier[i] is true when
 * point i counts and no other counting point has at least its throughput
 * and at most its p99, one of them strictly better. */
void tune_frontier(const struct tune_point *p, int n, bool *frontier);

/* Indices of the counting points with p99 <= budget_ms, best first: higher
 * throughput, then lower p99, then the cheaper configuration (fewer
 * instances, smaller max_batch_size, shorter delay). Returns their count. */
int tune_rank(const struct tune_point *p, int n, double budget_ms, int *order);

/* ------------------------------------------------------------ tune_server.c */

/* The inferd tune runs: a child process on a private repository, or a
 * server given by URL whose configuration stays as it is. */
struct tune_server {
    char url[128];
    char model[128];
    bool external;                   /* --url: nothing is started or reloaded */
    pid_t pid;
    char tmp[64];                    /* the private folder: repo/MODEL, port, inferd.log */
    char *source_json;               /* the model's model.json ({} for an ONNX model without one) */
};

/* Copies the model folder src into a private repository and starts inferd
 * (the binary at inferd, with --backend backend and threads per instance
 * when > 0) on a free loopback port with the model at cfg. Prints why and
 * returns false on failure (after stopping what it started). */
bool tune_server_start(struct tune_server *s, const char *src, const char *inferd, const char *backend, int threads,
                       const struct tune_config *cfg);
/* A server already running at url (--url): reads model's configuration
 * from GET /v2/models/{model}/config into *cfg. */
bool tune_server_attach(struct tune_server *s, const char *url, const char *model, struct tune_config *cfg);
/* Writes model.json at cfg and reloads the model (not on an external server). */
bool tune_server_apply(struct tune_server *s, const struct tune_config *cfg);
/* Stops the child (SIGTERM, then SIGKILL after 10 s) and removes the folder. */
void tune_server_stop(struct tune_server *s);

/* The model's model.json text at cfg (malloc'd; NULL when out of memory). */
char *tune_model_json(const char *source_json, const struct tune_config *cfg);
/* The three lines of model.json that set cfg, for the user to copy. */
void tune_print_model_json_lines(FILE *f, const char *source_json, const struct tune_config *cfg);

/* ------------------------------------------------------------ tune_report.c */

struct tune_result {
    const char *model, *source_dir, *kind;
    double budget_ms, budget_s, elapsed_s;
    const struct tune_point *points;
    int n;
    const bool *frontier;
    int recommended;                 /* index into points, or -1 */
    const struct tune_point *verified;   /* its re-measurement, or NULL */
    const char *source_json;         /* for the model.json lines */
};

void tune_print_frontier(FILE *f, const struct tune_result *r);
/* PREFIX.csv (every point), PREFIX.json (settings, points, the
 * recommendation), and PREFIX.gp drawn by gnuplot into PREFIX.png; without
 * gnuplot the plot is left out with a note. False when a file could not
 * be written or gnuplot failed. */
bool tune_write_reports(const char *prefix, const struct tune_result *r);

#endif /* CTL_TUNE_H */
