/*
 * tune_report.c - what `inferctl tune` prints and writes: the frontier and
 * the recommendation with its model.json lines; PREFIX.csv (every point),
 * PREFIX.json, and a gnuplot script with the PNG it draws (p99 against
 * throughput: every point, the frontier, the budget, the recommendation).
 * The plot goes through inferd-loadgen's gnuplot runner; without gnuplot
 * it is left out with a note, as the data is in the CSV.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "clients/loadgen/lg.h"
#include "tune.h"

static int by_throughput(const void *a, const void *b, void *ctx)
{
    const struct tune_point *p = ctx;
    double x = p[*(const int *)a].throughput, y = p[*(const int *)b].throughput;
    return (x > y) - (x < y);
}

/* Indices of the frontier's points, by throughput; their count. */
static int frontier_order(const struct tune_result *r, int *order)
{
    int m = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->frontier[i])
            order[m++] = i;
    }
    qsort_r(order, (size_t)m, sizeof(*order), by_throughput, (void *)r->points);
    return m;
}

static void config_label(const struct tune_config *c, int concurrency, char *out, size_t cap)
{
    snprintf(out, cap, "b%d i%d d%lld c%d", c->max_batch, c->instances, (long long)c->delay_us, concurrency);
}

void tune_print_frontier(FILE *f, const struct tune_result *r)
{
    int *order = calloc((size_t)r->n + 1, sizeof(*order));
    if (!order)
        return;
    int m = frontier_order(r, order);
    fprintf(f, "\nthroughput/latency frontier of %s (%d of %d points; none does better on both):\n", r->model, m,
            r->n);
    fprintf(f, "  %9s %9s %9s %11s %10s %8s %8s\n", "max_batch", "instances", "delay_us", "concurrency", "req/s",
            "p50 ms", "p99 ms");
    for (int k = 0; k < m; k++) {
        const struct tune_point *p = &r->points[order[k]];
        fprintf(f, "  %9d %9d %9lld %11d %10.1f %8.3f %8.3f  %s%s\n", p->cfg.max_batch, p->cfg.instances,
                (long long)p->cfg.delay_us, p->concurrency, p->throughput, p->p50_ms, p->p99_ms,
                p->p99_ms <= r->budget_ms ? "within" : "over", order[k] == r->recommended ? "  <- recommended" : "");
    }
    free(order);
    if (r->recommended < 0)
        return;
    const struct tune_point *best = &r->points[r->recommended];
    fprintf(f, "\nrecommended for p99 <= %g ms: max_batch_size %d, %d instance%s, max_queue_delay_us %lld, "
               "up to %d requests in flight\n",
            r->budget_ms, best->cfg.max_batch, best->cfg.instances, best->cfg.instances == 1 ? "" : "s",
            (long long)best->cfg.delay_us, best->concurrency);
    fprintf(f, "  sweep:       %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", best->throughput, best->p50_ms, best->p99_ms);
    if (r->verified)
        fprintf(f, "  re-measured: %.1f req/s, p50 %.3f ms, p99 %.3f ms\n", r->verified->throughput,
                r->verified->p50_ms, r->verified->p99_ms);
    fprintf(f, "\nin %s/model.json:\n", r->source_dir);
    tune_print_model_json_lines(f, r->source_json, &best->cfg);
}

/* ------------------------------------------------------------ files */

static bool write_csv(const char *path, const struct tune_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return false;
    }
    fprintf(f, "max_batch_size,instances,max_queue_delay_us,concurrency,throughput_rps,p50_ms,p99_ms,errors,"
               "frontier,within_budget,recommended\n");
    for (int i = 0; i < r->n; i++) {
        const struct tune_point *p = &r->points[i];
        fprintf(f, "%d,%d,%lld,%d,%.2f,%.4f,%.4f,%llu,%d,%d,%d\n", p->cfg.max_batch, p->cfg.instances,
                (long long)p->cfg.delay_us, p->concurrency, p->throughput, p->p50_ms, p->p99_ms,
                (unsigned long long)p->errors, r->frontier[i], p->p99_ms <= r->budget_ms && p->errors == 0,
                i == r->recommended);
    }
    bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        perror(path);
        return false;
    }
    return true;
}

static cJSON *point_json(const struct tune_point *p, bool with_config)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (with_config) {
        cJSON_AddNumberToObject(o, "max_batch_size", p->cfg.max_batch);
        cJSON_AddNumberToObject(o, "instances", p->cfg.instances);
        cJSON_AddNumberToObject(o, "max_queue_delay_us", (double)p->cfg.delay_us);
        cJSON_AddNumberToObject(o, "concurrency", p->concurrency);
    }
    cJSON_AddNumberToObject(o, "throughput_rps", p->throughput);
    cJSON_AddNumberToObject(o, "p50_ms", p->p50_ms);
    cJSON_AddNumberToObject(o, "p99_ms", p->p99_ms);
    cJSON_AddNumberToObject(o, "errors", (double)p->errors);
    return o;
}

static cJSON *result_json(const struct tune_result *r)
{
    cJSON *root = cJSON_CreateObject(), *points = cJSON_CreateArray();
    if (!root || !points) {
        cJSON_Delete(root);
        cJSON_Delete(points);
        return NULL;
    }
    cJSON_AddStringToObject(root, "tool", "inferctl tune");
    cJSON_AddStringToObject(root, "model", r->model);
    cJSON_AddStringToObject(root, "kind", r->kind);
    cJSON_AddNumberToObject(root, "latency_p99_ms", r->budget_ms);
    cJSON_AddNumberToObject(root, "budget_s", r->budget_s);
    cJSON_AddNumberToObject(root, "elapsed_s", r->elapsed_s);
    cJSON_AddItemToObject(root, "points", points);
    bool ok = true;
    for (int i = 0; ok && i < r->n; i++) {
        cJSON *p = point_json(&r->points[i], true);
        ok = p && cJSON_AddBoolToObject(p, "frontier", r->frontier[i]) && cJSON_AddItemToArray(points, p);
    }
    cJSON *rec = r->recommended >= 0 ? point_json(&r->points[r->recommended], true) : cJSON_CreateNull();
    ok = ok && rec && cJSON_AddItemToObject(root, "recommendation", rec);
    if (ok && r->recommended >= 0 && r->verified)
        ok = cJSON_AddItemToObject(rec, "remeasured", point_json(r->verified, false));
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static bool write_json(const char *path, const struct tune_result *r)
{
    cJSON *root = result_json(r);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "inferctl tune: cannot write %s\n", path);
    free(text);
    return ok;
}

/* The frontier and the recommendation as inline data blocks, the budget
 * as a line; every point read from the CSV. */
static bool write_gp(const char *gp, const char *png, const char *csv, const struct tune_result *r)
{
    int *order = calloc((size_t)r->n + 1, sizeof(*order));
    FILE *f = order ? fopen(gp, "w") : NULL;
    if (!f) {
        free(order);
        perror(gp);
        return false;
    }
    fprintf(f, "# drawn by inferctl tune; rerun with: gnuplot %s\n"
               "set terminal pngcairo size 1000,640 noenhanced font ',11'\nset output ", gp);
    lg_gnuplot_string(f, png);
    fprintf(f, "\nset title '%s (%s): p99 latency against throughput, each configuration at each concurrency'\n"
               "set datafile separator ','\nset grid\nset key top left\nset logscale y\n"
               "set xlabel 'throughput (requests/s)'\nset ylabel 'p99 latency (ms)'\nset xrange [0:*]\n"
               "set offsets 0, graph 0.05, 0, 0\n"
               "set arrow from graph 0, first %g to graph 1, first %g nohead dt 2 lw 2 lc rgb '#d62728'\n",
            r->model, r->kind, r->budget_ms, r->budget_ms);
    fprintf(f, "$frontier << EOD\n");
    int m = frontier_order(r, order);
    for (int k = 0; k < m; k++) {
        const struct tune_point *p = &r->points[order[k]];
        char label[64];
        config_label(&p->cfg, p->concurrency, label, sizeof(label));
        fprintf(f, "%.2f,%.4f,%s\n", p->throughput, p->p99_ms, label);
    }
    fprintf(f, "EOD\nf = ");
    lg_gnuplot_string(f, csv);
    fprintf(f, "\nplot f skip 1 using 5:($7 > 0 && $8 == 0 ? $7 : 1/0) with points pt 7 ps 0.8 lc rgb '#9a9ab0' "
               "title 'measured', \\\n"
               "     $frontier using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'frontier', \\\n"
               "     $frontier using 1:2:3 with labels offset 0,1 font ',8' notitle, \\\n"
               "     1/0 with lines dt 2 lw 2 lc rgb '#d62728' title 'p99 budget %g ms'",
            r->budget_ms);
    if (r->recommended >= 0)
        fprintf(f, ", \\\n     '-' using 1:2 with points pt 6 ps 3 lw 2 lc rgb '#2ca02c' title 'recommended'\n"
                   "%.2f,%.4f\ne\n",
                r->points[r->recommended].throughput, r->points[r->recommended].p99_ms);
    else
        fprintf(f, "\n");
    free(order);
    if (fclose(f) != 0) {
        perror(gp);
        return false;
    }
    return true;
}

bool tune_write_reports(const char *prefix, const struct tune_result *r)
{
    char csv[4096], json[4096], gp[4096], png[4096];
    snprintf(csv, sizeof(csv), "%s.csv", prefix);
    snprintf(json, sizeof(json), "%s.json", prefix);
    snprintf(gp, sizeof(gp), "%s.gp", prefix);
    snprintf(png, sizeof(png), "%s.png", prefix);
    if (!write_csv(csv, r) || !write_json(json, r))
        return false;
    fprintf(stderr, "wrote %s and %s\n", csv, json);
    bool drawable = false;
    for (int i = 0; i < r->n; i++)
        drawable |= r->frontier[i];   /* a frontier point has throughput and a p99 */
    if (!drawable)
        return true;
    if (!write_gp(gp, png, csv, r))
        return false;
    int status = lg_gnuplot(gp);
    if (status == LG_GNUPLOT_MISSING) {
        fprintf(stderr, "inferctl tune: no plot: gnuplot is not installed (Debian's gnuplot-nox); %s is ready "
                        "for it\n", gp);
        return true;
    }
    if (status != 0) {
        fprintf(stderr, "inferctl tune: gnuplot %s failed (status %d)\n", gp, status);
        return false;
    }
    fprintf(stderr, "wrote %s\n", png);
    return true;
}
