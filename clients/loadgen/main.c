/*
 * main.c - inferd-loadgen's entry point: parse the options, prepare the
 * requests, measure each level in turn (with a status line on a terminal),
 * then print and write the reports.
 *
 *   build/inferd-loadgen --model lenet5 --concurrency 16 --duration 10
 *   build/inferd-loadgen --kind infer-binary --rate 2000 --duration 30
 *   build/inferd-loadgen --sweep 1,2,4,8,16,32 --duration 5 --out sweep
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lg.h"

struct progress {
    pthread_t tid;
    struct lg_live live;
    const struct lg_config *cfg;
    double level;
    atomic_bool quit;
};

/* Redraws one status line on stderr five times a second until quit. */
static void *progress_main(void *arg)
{
    struct progress *p = arg;
    struct timespec t0, now, tick = {0, 200000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double total = p->cfg->warmup_s + p->cfg->duration_s;
    uint64_t last = 0;
    while (!atomic_load(&p->quit)) {
        nanosleep(&tick, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double t = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        uint64_t done = atomic_load(&p->live.completed);
        fprintf(stderr, "\r  %s %g  %5.1f/%.1f s%s  %llu answered  %.0f req/s  %llu errors   ",
                p->cfg->mode == LG_MODE_CLOSED ? "concurrency" : "rate", p->level,
                t < total ? t : total, total, t < p->cfg->warmup_s ? " (warm-up)" : "",
                (unsigned long long)done, (double)(done - last) * 5,
                (unsigned long long)atomic_load(&p->live.errors));
        last = done;
    }
    fprintf(stderr, "\r%100s\r", "");
    return NULL;
}

static bool write_reports(const struct lg_config *cfg, const struct lg_workload *w,
                          const struct lg_level_report *r, int n)
{
    char path[4096];
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof(path), "%s.%s", cfg->out, k ? "csv" : "json");
        FILE *f = fopen(path, "w");
        bool wrote = f && (k ? lg_report_csv(f, cfg, r, n) : lg_report_json(f, cfg, w, r, n));
        if (!f || fclose(f) != 0 || !wrote) {
            perror(path);
            ok = false;
        } else {
            fprintf(stderr, "wrote %s\n", path);
        }
    }
    if (ok && n > 1) {
        ok = lg_report_plot(cfg, w);
        if (ok)
            fprintf(stderr, "wrote %s.png\n", cfg->out);
    }
    return ok;
}

int main(int argc, char **argv)
{
    struct lg_config cfg;
    int rc = lg_config_parse(argc - 1, argv + 1, &cfg, stdout, stderr);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* one descriptor per connection: the usual soft limit of 1024 is too few
     * for large --concurrency or --max-inflight */
    struct rlimit fds;
    if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < fds.rlim_max) {
        fds.rlim_cur = fds.rlim_max;
        setrlimit(RLIMIT_NOFILE, &fds);
    }
    struct lg_workload w;
    if ((rc = lg_workload_build(&cfg, &w)) != 0)
        return rc;
    struct lg_level_report *reports = calloc((size_t)cfg.n_levels, sizeof(*reports));
    bool tty = cfg.progress && isatty(STDERR_FILENO);
    int done = 0;
    for (; reports && done < cfg.n_levels; done++) {
        struct progress p = {.cfg = &cfg, .level = cfg.levels[done]};
        atomic_init(&p.quit, false);
        bool drawing = tty && pthread_create(&p.tid, NULL, progress_main, &p) == 0;
        reports[done].level = cfg.levels[done];
        bool ran = lg_run_level(&cfg, &w, cfg.levels[done], &p.live, &reports[done].stats);
        if (drawing) {
            atomic_store(&p.quit, true);
            pthread_join(p.tid, NULL);
        }
        if (!ran)
            break;
        lg_report_text(stdout, &cfg, &w, &reports[done]);
        fflush(stdout);
    }
    rc = reports && done == cfg.n_levels ? 0 : 1;
    if (done > 0 && cfg.out && !write_reports(&cfg, &w, reports, done))
        rc = 1;
    for (int i = 0; rc == 0 && i < done; i++)
        if (reports[i].stats.completed > 0 && reports[i].stats.ok == 0)
            rc = 1; /* nothing succeeded: the numbers describe errors, not the server */
    free(reports);
    lg_workload_free(&w);
    curl_global_cleanup();
    return rc;
}
