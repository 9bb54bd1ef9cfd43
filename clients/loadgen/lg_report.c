/*
 * lg_report.c - what inferd-loadgen writes: a summary per level on stdout,
 * a JSON report and a CSV table (one row per level), and for a sweep a
 * gnuplot script and the PNG it draws of latency percentiles against
 * throughput.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lg.h"

static const struct {
    const char *name;        /* JSON key */
    double p;
} PERCENTILES[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}};
#define N_PERCENTILES 4

static double ms(int64_t ns) { return (double)ns / 1e6; }

static double rate(uint64_t n, const struct lg_stats *s)
{
    double t = lg_stats_elapsed_s(s);
    return t > 0 ? (double)n / t : 0.0;
}

static const char *level_name(const struct lg_config *cfg)
{
    return cfg->mode == LG_MODE_CLOSED ? "concurrency" : "rate";
}

void lg_report_text(FILE *f, const struct lg_config *cfg, const struct lg_workload *w,
                    const struct lg_level_report *r)
{
    const struct lg_stats *s = &r->stats;
    const struct lg_hist *h = &s->hist;
    fprintf(f, "%s loop, %s %g%s: %s\n", lg_mode_name(cfg->mode), level_name(cfg), r->level,
            cfg->mode == LG_MODE_OPEN ? " req/s" : "", w->description);
    fprintf(f, "  requests    %llu sent, %llu answered, %llu ok, %llu errors "
               "(warm-up: %llu more, not counted)\n",
            (unsigned long long)s->sent, (unsigned long long)s->completed,
            (unsigned long long)s->ok, (unsigned long long)lg_stats_errors(s),
            (unsigned long long)s->warm_completed);
    fprintf(f, "  throughput  %.1f req/s (%.1f ok/s) over %.2f s\n", rate(s->completed, s),
            rate(s->ok, s), lg_stats_elapsed_s(s));
    fprintf(f, "  latency ms  (2xx answers) mean %.3f", h->count ? ms((int64_t)(h->sum / (double)h->count)) : 0);
    for (int i = 0; i < N_PERCENTILES; i++)
        fprintf(f, "  %s %.3f", PERCENTILES[i].name, ms(lg_hist_percentile(h, PERCENTILES[i].p)));
    fprintf(f, "  max %.3f\n", ms(h->count ? h->max : 0));
    if (lg_stats_errors(s)) {
        fprintf(f, "  errors     ");
        for (int c = 0; c < LG_MAX_STATUS; c++)
            if ((c < 200 || c > 299) && s->status[c])
                fprintf(f, " HTTP %d: %llu", c, (unsigned long long)s->status[c]);
        if (s->connect_errors)
            fprintf(f, " connect: %llu", (unsigned long long)s->connect_errors);
        if (s->timeouts)
            fprintf(f, " timeout: %llu", (unsigned long long)s->timeouts);
        if (s->transport_errors)
            fprintf(f, " transport: %llu", (unsigned long long)s->transport_errors);
        fprintf(f, "\n");
    }
    if (s->late_sends)
        fprintf(f, "  note        %llu sends were over 1 ms behind schedule (their wait is in "
                   "the latency)\n", (unsigned long long)s->late_sends);
}

static cJSON *level_json(const struct lg_config *cfg, const struct lg_level_report *r)
{
    const struct lg_stats *s = &r->stats;
    const struct lg_hist *h = &s->hist;
    cJSON *o = cJSON_CreateObject(), *lat, *err, *codes, *warm;
    cJSON_AddNumberToObject(o, level_name(cfg), r->level);
    cJSON_AddNumberToObject(o, "elapsed_s", lg_stats_elapsed_s(s));
    cJSON_AddNumberToObject(o, "sent", (double)s->sent);
    cJSON_AddNumberToObject(o, "completed", (double)s->completed);
    cJSON_AddNumberToObject(o, "ok", (double)s->ok);
    cJSON_AddNumberToObject(o, "errors", (double)lg_stats_errors(s));
    cJSON_AddNumberToObject(o, "throughput_rps", rate(s->completed, s));
    cJSON_AddNumberToObject(o, "ok_rps", rate(s->ok, s));
    cJSON_AddItemToObject(o, "latency_ms", lat = cJSON_CreateObject());
    cJSON_AddNumberToObject(lat, "mean", h->count ? ms((int64_t)(h->sum / (double)h->count)) : 0);
    cJSON_AddNumberToObject(lat, "min", h->count ? ms(h->min) : 0);
    for (int i = 0; i < N_PERCENTILES; i++)
        cJSON_AddNumberToObject(lat, PERCENTILES[i].name,
                                ms(lg_hist_percentile(h, PERCENTILES[i].p)));
    cJSON_AddNumberToObject(lat, "max", h->count ? ms(h->max) : 0);
    cJSON_AddItemToObject(o, "status_counts", codes = cJSON_CreateObject());
    cJSON_AddItemToObject(o, "errors_by_status", err = cJSON_CreateObject());
    for (int c = 0; c < LG_MAX_STATUS; c++) {
        char key[16];
        snprintf(key, sizeof(key), "%d", c);
        if (s->status[c])
            cJSON_AddNumberToObject(codes, key, (double)s->status[c]);
        if ((c < 200 || c > 299) && s->status[c])
            cJSON_AddNumberToObject(err, key, (double)s->status[c]);
    }
    cJSON_AddNumberToObject(err, "connect", (double)s->connect_errors);
    cJSON_AddNumberToObject(err, "timeout", (double)s->timeouts);
    cJSON_AddNumberToObject(err, "transport", (double)s->transport_errors);
    cJSON_AddItemToObject(o, "warmup", warm = cJSON_CreateObject());
    cJSON_AddNumberToObject(warm, "sent", (double)s->warm_sent);
    cJSON_AddNumberToObject(warm, "completed", (double)s->warm_completed);
    cJSON_AddNumberToObject(warm, "ok", (double)s->warm_ok);
    cJSON_AddNumberToObject(o, "late_sends", (double)s->late_sends);
    cJSON_AddNumberToObject(o, "bytes_received", (double)s->bytes_received);
    return o;
}

bool lg_report_json(FILE *f, const struct lg_config *cfg, const struct lg_workload *w,
                    const struct lg_level_report *r, int n)
{
    cJSON *root = cJSON_CreateObject(), *levels;
    cJSON_AddStringToObject(root, "tool", "inferd-loadgen");
    cJSON_AddStringToObject(root, "url", cfg->url);
    cJSON_AddStringToObject(root, "model", cfg->model);
    cJSON_AddStringToObject(root, "kind", lg_kind_name(cfg->kind));
    cJSON_AddStringToObject(root, "request", w->description);
    cJSON_AddStringToObject(root, "mode", lg_mode_name(cfg->mode));
    cJSON_AddNumberToObject(root, "batch", cfg->batch);
    cJSON_AddNumberToObject(root, "duration_s", cfg->duration_s);
    cJSON_AddNumberToObject(root, "warmup_s", cfg->warmup_s);
    cJSON_AddNumberToObject(root, "requests_per_level", (double)cfg->requests);
    cJSON_AddNumberToObject(root, "seed", (double)cfg->seed);
    cJSON_AddItemToObject(root, "levels", levels = cJSON_CreateArray());
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(levels, level_json(cfg, &r[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    bool ok = text && fprintf(f, "%s\n", text) > 0;
    free(text);
    return ok;
}

bool lg_report_csv(FILE *f, const struct lg_config *cfg, const struct lg_level_report *r, int n)
{
    bool ok = fprintf(f, "mode,%s,elapsed_s,sent,completed,ok,errors,throughput_rps,ok_rps,"
                         "mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms\n", level_name(cfg)) > 0;
    for (int i = 0; ok && i < n; i++) {
        const struct lg_stats *s = &r[i].stats;
        const struct lg_hist *h = &s->hist;
        ok = fprintf(f, "%s,%g,%.3f,%llu,%llu,%llu,%llu,%.2f,%.2f,%.4f", lg_mode_name(cfg->mode),
                     r[i].level, lg_stats_elapsed_s(s), (unsigned long long)s->sent,
                     (unsigned long long)s->completed, (unsigned long long)s->ok,
                     (unsigned long long)lg_stats_errors(s), rate(s->completed, s),
                     rate(s->ok, s), h->count ? ms((int64_t)(h->sum / (double)h->count)) : 0) > 0;
        for (int p = 0; ok && p < N_PERCENTILES; p++)
            ok = fprintf(f, ",%.4f", ms(lg_hist_percentile(h, PERCENTILES[p].p))) > 0;
        ok = ok && fprintf(f, ",%.4f\n", ms(h->count ? h->max : 0)) > 0;
    }
    return ok;
}

void lg_gnuplot_string(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

bool lg_report_plot(const struct lg_config *cfg, const struct lg_workload *w)
{
    char gp[4096], png[4096], csv[4096];
    snprintf(gp, sizeof(gp), "%s.gp", cfg->out);
    snprintf(png, sizeof(png), "%s.png", cfg->out);
    snprintf(csv, sizeof(csv), "%s.csv", cfg->out);
    FILE *f = fopen(gp, "w");
    if (!f) {
        perror(gp);
        return false;
    }
    /* columns of the CSV: 8 throughput, 11..14 p50..p99.9, 2 the level */
    fprintf(f, "# drawn by inferd-loadgen; rerun with: gnuplot %s\n"
               "set terminal pngcairo size 1000,640 noenhanced font ',11'\nset output ", gp);
    lg_gnuplot_string(f, png);
    fprintf(f, "\nset title '%s, %s loop (labels: %s)'\n", w->description,
            lg_mode_name(cfg->mode), cfg->mode == LG_MODE_CLOSED ? "concurrency" : "offered req/s");
    fprintf(f, "set datafile separator ','\nset grid\nset key top left\nset logscale y\n"
               "set xlabel 'throughput (requests/s)'\nset ylabel 'latency (ms)'\n"
               "set xrange [0:*]\nset offsets 0, graph 0.05, 0, 0\nf = ");
    lg_gnuplot_string(f, csv);
    fprintf(f, "\nplot f skip 1 using 8:14 with linespoints lw 2 pt 7 title 'p99.9', \\\n"
               "     f skip 1 using 8:13 with linespoints lw 2 pt 7 title 'p99', \\\n"
               "     f skip 1 using 8:12 with linespoints lw 2 pt 7 title 'p90', \\\n"
               "     f skip 1 using 8:11 with linespoints lw 2 pt 7 title 'p50', \\\n"
               "     f skip 1 using 8:11:(sprintf('%%g', $2)) with labels offset 0,-1 notitle\n");
    if (fclose(f) != 0) {
        perror(gp);
        return false;
    }
    int status = lg_gnuplot(gp);
    if (status != 0) {
        fprintf(stderr, "inferd-loadgen: gnuplot %s failed%s; the data is in %s\n", gp,
                status == LG_GNUPLOT_MISSING ? " (not installed: Debian's gnuplot-nox)" : "", csv);
        return false;
    }
    return true;
}

int lg_gnuplot(const char *script)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(LG_GNUPLOT_MISSING);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}
