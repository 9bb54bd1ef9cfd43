/*
 * bench_server.c - the HTTP benchmark (make bench-server): wrk against
 * inferd and, in the same run on the same machine, against a bare
 * libmicrohttpd server answering a fixed body (the ceiling).
 *
 *   build/bench_server [--duration S] [--repeat N] [--models a,b] [--quick]
 *
 * For each shipped model (LeNet-5, resnet-mini) with dynamic batching on
 * and off (two daemons running at once, their runs interleaved), for
 * classify (PNG body), infer with JSON tensors and infer with binary
 * tensors, at 1, 8 and 64 connections: requests/s and p50/p99 latency, the
 * median of --repeat runs after a warm-up run, then the ratio to the bare
 * server at the same concurrency and of batching on to off (the median of
 * the ratios of runs side by side); last, the
 * server's own time per request (the stats endpoint's request time minus
 * compute_infer) at one connection.
 * inferd is the one beside this program; wrk comes from Debian.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "runtime/rt_model.h"
#include "server_bare.h"

enum { N_CONC = 3, N_ENDPOINTS = 3, HTTP_THREADS = 2 };
static const int CONCURRENCY[N_CONC] = {1, 8, 64};
static const char *const ENDPOINTS[N_ENDPOINTS] = {"classify", "infer JSON", "infer binary"};

struct opts {
    int duration_s, repeat;
    char models[256];
};

struct result {
    double rps, p50_ms, p99_ms;
    long errors;
    double on_off;   /* batching on's row (with two servers): the median of the runs' on/off ratios */
};

static char work_dir[64];
static char bin_dir[512];

/* ------------------------------------------------------------ payloads */

static bool write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f)
        ok = fclose(f) == 0 && ok;
    return ok;
}

/* A wrk script posting the file at body_path (or a GET when NULL) and
 * printing "BENCH requests duration_us p50_us p99_us errors". */
static bool write_script(const char *path, const char *body_path, const char *content_type,
                         long header_len)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    if (body_path) {
        fprintf(f, "wrk.method = \"POST\"\n"
                   "local f = assert(io.open(\"%s\", \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n"
                   "wrk.headers[\"Content-Type\"] = \"%s\"\n",
                body_path, content_type);
        if (header_len >= 0)
            fprintf(f, "wrk.headers[\"Inference-Header-Content-Length\"] = \"%ld\"\n", header_len);
    }
    fprintf(f, "done = function(s, latency, requests)\n"
               "  io.write(string.format(\"BENCH %%d %%d %%d %%d %%d\\n\", s.requests, s.duration,\n"
               "    latency:percentile(50), latency:percentile(99),\n"
               "    s.errors.connect + s.errors.read + s.errors.write + s.errors.status + s.errors.timeout))\n"
               "end\n");
    return fclose(f) == 0;
}

/* Writes model's three payloads and scripts: <model>-{classify,json,binary}.lua. */
static bool make_payloads(const char *model, const struct rt_dataset *ds)
{
    char dir[600], path[700], body[700];
    snprintf(dir, sizeof(dir), "model_repository/%s", model);
    struct rt_error err = {RT_OK, ""};
    struct rt_backend *be;
    struct rt_model *m;
    const struct rt_backend_options bo = {.threads = 1, .device = -1};
    if (rt_backend_create(RT_BACKEND_CPU, &bo, &be, &err) != RT_OK)
        return false;
    if (rt_model_load(dir, be, &m, &err) != RT_OK) {
        fprintf(stderr, "bench_server: %s: %s\n", model, err.msg);
        rt_backend_free(be);
        return false;
    }
    const struct rt_model_config *cfg = rt_model_config(m);
    struct rt_image img = {ds->cols, ds->rows, 1, ds->images};
    size_t elems = (size_t)cfg->inputs[0].sample_elems;
    float *x = malloc(elems * sizeof(float));
    uint8_t *png = NULL;
    size_t png_len = 0;
    bool ok = x && rt_image_preprocess(&img, &cfg->pre, x, &err) == RT_OK &&
              rt_image_encode_png(&img, &png, &png_len, &err) == RT_OK;
    /* classify: the PNG */
    snprintf(body, sizeof(body), "%s/%s.png", work_dir, model);
    snprintf(path, sizeof(path), "%s/%s-classify.lua", work_dir, model);
    ok = ok && write_bytes(body, png, png_len) && write_script(path, body, "image/png", -1);
    /* infer JSON */
    char *json = NULL;
    size_t json_len = 0;
    FILE *mf = ok ? open_memstream(&json, &json_len) : NULL;
    if (mf) {
        fprintf(mf, "{\"inputs\":[{\"name\":\"%s\",\"datatype\":\"FP32\",\"shape\":[1",
                cfg->inputs[0].name);
        for (int d = 1; d < cfg->inputs[0].shape.rank; d++)
            fprintf(mf, ",%lld", (long long)cfg->inputs[0].shape.dims[d]);
        fprintf(mf, "],\"data\":[");
        for (size_t i = 0; i < elems; i++)
            fprintf(mf, "%s%.7g", i ? "," : "", (double)x[i]);
        fprintf(mf, "]}]}");
        fclose(mf);
    }
    snprintf(body, sizeof(body), "%s/%s.json", work_dir, model);
    snprintf(path, sizeof(path), "%s/%s-json.lua", work_dir, model);
    ok = ok && json && write_bytes(body, json, json_len) &&
         write_script(path, body, "application/json", -1);
    free(json);
    /* infer binary, binary output */
    char header[512];
    int hl = snprintf(header, sizeof(header),
                      "{\"inputs\":[{\"name\":\"%s\",\"datatype\":\"FP32\",\"shape\":[1,%lld,%lld,%lld],"
                      "\"parameters\":{\"binary_data_size\":%zu}}],"
                      "\"outputs\":[{\"name\":\"%s\",\"parameters\":{\"binary_data\":true}}]}",
                      cfg->inputs[0].name, (long long)cfg->inputs[0].shape.dims[1],
                      (long long)cfg->inputs[0].shape.dims[2], (long long)cfg->inputs[0].shape.dims[3],
                      elems * sizeof(float), cfg->outputs[0].name);
    char *bin = ok ? malloc((size_t)hl + elems * sizeof(float)) : NULL;
    if (bin) {
        memcpy(bin, header, (size_t)hl);
        memcpy(bin + hl, x, elems * sizeof(float));
    }
    snprintf(body, sizeof(body), "%s/%s.bin", work_dir, model);
    snprintf(path, sizeof(path), "%s/%s-binary.lua", work_dir, model);
    ok = ok && bin && write_bytes(body, bin, (size_t)hl + elems * sizeof(float)) &&
         write_script(path, body, "application/octet-stream", hl);
    free(bin);
    free(png);
    free(x);
    rt_model_free(m);
    rt_backend_free(be);
    return ok;
}

/* ------------------------------------------------------------ processes */

static int run_wrk(const char *script, int port, const char *path, int conc, int seconds,
                   struct result *out)
{
    char url[256], threads[8], conns[8], dur[16];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    snprintf(threads, sizeof(threads), "%d", conc < HTTP_THREADS ? conc : HTTP_THREADS);
    snprintf(conns, sizeof(conns), "%d", conc);
    snprintf(dur, sizeof(dur), "%ds", seconds);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("wrk", "wrk", "-t", threads, "-c", conns, "-d", dur, "--timeout", "10s", "-s",
               script, url, (char *)NULL);
        fprintf(stderr, "bench_server: cannot run wrk: %s (make bench-server installs it)\n",
                strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[8192];
    size_t have = 0;
    ssize_t n;
    while ((n = read(fds[0], buf + have, sizeof(buf) - 1 - have)) > 0)
        have += (size_t)n;
    buf[have] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    const char *line = strstr(buf, "BENCH ");
    long long reqs, dur_us, p50, p99, errors;
    if (!line || sscanf(line, "BENCH %lld %lld %lld %lld %lld", &reqs, &dur_us, &p50, &p99, &errors) != 5) // NOLINT(cert-err34-c): the output of our own client
        return -1;
    *out = (struct result){(double)reqs / ((double)dur_us / 1e6), (double)p50 / 1e3,
                           (double)p99 / 1e3, (long)errors, 0};
    return 0;
}

/* The median of each statistic on its own. */
static void take_median(const struct result *r, int n, struct result *out)
{
    double rps[16] = {0}, p50[16] = {0}, p99[16] = {0};
    out->errors = 0;
    for (int i = 0; i < n; i++) {
        rps[i] = r[i].rps, p50[i] = r[i].p50_ms, p99[i] = r[i].p99_ms;
        out->errors += r[i].errors;
    }
    out->rps = bench_median(rps, n), out->p50_ms = bench_median(p50, n), out->p99_ms = bench_median(p99, n);
}

/* Median of repeat runs (each statistic on its own) after a warm-up run, on
 * each of n_ports servers, their runs interleaved (a, b, b, a, a, b, ...) so
 * that a change in the machine's load between windows touches every server
 * alike. With two servers, out[0].on_off is the median of the ratios of
 * runs side by side: a slow spell that spans a pair moves both halves, so
 * the ratio of each pair varies less than the ratio of two medians. */
static int measure(const struct opts *o, const char *script, const int *ports, int n_ports, const char *path,
                   int conc, struct result *out)
{
    struct result r[2][16];
    int n = o->repeat < 16 ? o->repeat : 16;
    for (int k = 0; k < n_ports; k++) {
        if (run_wrk(script, ports[k], path, conc, 1, &r[k][0]) != 0)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n_ports; j++) {
            int k = i % 2 ? n_ports - 1 - j : j;
            if (run_wrk(script, ports[k], path, conc, o->duration_s, &r[k][i]) != 0)
                return -1;
        }
    }
    double ratios[16] = {0};
    for (int i = 0; n_ports == 2 && i < n; i++)
        ratios[i] = r[0][i].rps / r[1][i].rps;
    const double on_off = n_ports == 2 ? bench_median(ratios, n) : 0;
    for (int k = 0; k < n_ports; k++) {
        take_median(r[k], n, &out[k]);
        out[k].on_off = on_off;
        fprintf(stderr, "  %-40s %3d conn%s: %8.0f req/s  p50 %.3f ms  p99 %.3f ms\n", path, conc,
                n_ports == 1 ? "" : k == 0 ? ", on " : ", off", out[k].rps, out[k].p50_ms, out[k].p99_ms);
    }
    return 0;
}

/* The model's request and compute totals from GET /v2/models/M/stats
 * (Triton's shape): requests, their nanoseconds from the request's arrival
 * to its answer, and the nanoseconds of compute_infer. */
struct stats_totals {
    double count, request_ns, infer_ns;
};

static bool fetch_stats(int port, const char *model, struct stats_totals *t)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    char req[256];
    int len = snprintf(req, sizeof(req), "GET /v2/models/%s/stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", model);
    bool ok = write(fd, req, (size_t)len) == len;
    static char buf[1 << 16];
    size_t have = 0;
    ssize_t n;
    while (ok && have < sizeof(buf) - 1 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
        have += (size_t)n;
    close(fd);
    buf[have] = '\0';
    const char *body = strstr(buf, "\r\n\r\n");
    cJSON *root = ok && body ? cJSON_Parse(body + 4) : NULL;
    cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "model_stats"), 0);
    cJSON *inf = cJSON_GetObjectItem(st, "inference_stats");
    cJSON *succ = cJSON_GetObjectItem(inf, "success"), *infer = cJSON_GetObjectItem(inf, "compute_infer");
    ok = succ && infer;
    if (ok)
        *t = (struct stats_totals){cJSON_GetNumberValue(cJSON_GetObjectItem(succ, "count")),
                                   cJSON_GetNumberValue(cJSON_GetObjectItem(succ, "ns")),
                                   cJSON_GetNumberValue(cJSON_GetObjectItem(infer, "ns"))};
    cJSON_Delete(root);
    return ok;
}

/* The 1-minute load average: other work on the machine skews every figure. */
static double load_average(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) // NOLINT(cert-err34-c): the kernel's own file
            l = -1;
        fclose(f);
    }
    return l;
}

static pid_t start_inferd(bool batching, int *port)
{
    char bin[600], port_file[128];
    snprintf(bin, sizeof(bin), "%s/inferd", bin_dir);
    snprintf(port_file, sizeof(port_file), "%s/port", work_dir);
    unlink(port_file);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char threads[8];
        snprintf(threads, sizeof(threads), "%d", HTTP_THREADS);
        execl(bin, bin, "--model-repository", "model_repository", "--http-port", "0",
              "--port-file", port_file, "--http-threads", threads, "--log-level", "warn",
              "--batching", batching ? "true" : "false", (char *)NULL);
        fprintf(stderr, "bench_server: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", port); // NOLINT(cert-err34-c): the daemon's own port file
            fclose(f);
            if (ok == 1) {
                usleep(300 * 1000); /* models load after the port is bound */
                return pid;
            }
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        usleep(10 * 1000);
    }
    kill(pid, SIGKILL);
    return -1;
}

static void stop_inferd(pid_t pid)
{
    int status;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
}

/* ------------------------------------------------------------ main */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_work_dir(void)
{
    nftw(work_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void usage(const char *prog)
{
    printf("usage: %s [--duration S] [--repeat N] [--models lenet5,resnet-mini] [--quick]\n", prog);
}

static bool parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.duration_s = 2, .repeat = 5};
    snprintf(o->models, sizeof(o->models), "lenet5,resnet-mini");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o->duration_s = 1, o->repeat = 1;
        } else if (strcmp(argv[i], "--duration") == 0 && i + 1 < argc) {
            o->duration_s = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            o->repeat = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
            snprintf(o->models, sizeof(o->models), "%s", argv[++i]);
        } else {
            usage(argv[0]);
            return false;
        }
    }
    return o->duration_s > 0 && o->repeat > 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (!parse_args(argc, argv, &o))
        return 2;
    signal(SIGPIPE, SIG_IGN);
    snprintf(bin_dir, sizeof(bin_dir), "%s", argv[0]);
    char *slash = strrchr(bin_dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(bin_dir, sizeof(bin_dir), ".");
    snprintf(work_dir, sizeof(work_dir), "/tmp/inferd-bench-XXXXXX");
    if (!mkdtemp(work_dir))
        return 1;
    atexit(remove_work_dir);

    struct rt_dataset ds;
    struct rt_error err = {RT_OK, ""};
    if (rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK) {
        fprintf(stderr, "bench_server: %s\n", err.msg);
        return 1;
    }
    char models[8][64];
    int n_models = 0;
    for (char *tok = strtok(o.models, ","); tok && n_models < 8; tok = strtok(NULL, ",")) {
        char check[600];
        snprintf(check, sizeof(check), "model_repository/%s/model.json", tok);
        if (access(check, R_OK) != 0) {
            printf("skipping %s: model_repository/%s is missing\n", tok, tok);
            continue;
        }
        if (!make_payloads(tok, &ds))
            return 1;
        snprintf(models[n_models++], sizeof(models[0]), "%s", tok);
    }
    rt_dataset_free(&ds);

    double load_before = load_average();
    char bare_script[128];
    snprintf(bare_script, sizeof(bare_script), "%s/bare.lua", work_dir);
    struct server_bare *bare = server_bare_start(HTTP_THREADS);
    struct result bare_r[N_CONC];
    if (!bare || !write_script(bare_script, NULL, NULL, -1))
        return 1;
    int bare_port = bare ? server_bare_port(bare) : 0;
    for (int c = 0; c < N_CONC; c++) {
        if (measure(&o, bare_script, &bare_port, 1, "/", CONCURRENCY[c], &bare_r[c]) != 0) {
            fprintf(stderr, "bench_server: wrk failed against the bare server\n");
            return 1;
        }
    }
    server_bare_stop(bare);

    /* results[model][batching on=0/off=1][endpoint][conc]; both daemons run
     * at once and every row alternates between them */
    static struct result res[8][2][N_ENDPOINTS][N_CONC];
    static const char *const SCRIPT_SUFFIX[N_ENDPOINTS] = {"classify", "json", "binary"};
    /* per model: the server's own time per request (request minus compute),
     * in us, over the binary infer runs at one connection with batching on */
    double overhead_us[8] = {-1, -1, -1, -1, -1, -1, -1, -1};   /* < 0: the stats could not be read */
    int ports[2];
    pid_t pids[2] = {start_inferd(true, &ports[0]), -1};
    if (pids[0] > 0)
        pids[1] = start_inferd(false, &ports[1]);
    if (pids[0] < 0 || pids[1] < 0) {
        fprintf(stderr, "bench_server: inferd did not start\n");
        return 1;
    }
    int rc = 0;
    for (int m = 0; m < n_models && rc == 0; m++) {
        for (int e = 0; e < N_ENDPOINTS && rc == 0; e++) {
            char script[256], path[128];
            snprintf(script, sizeof(script), "%s/%s-%s.lua", work_dir, models[m], SCRIPT_SUFFIX[e]);
            snprintf(path, sizeof(path), "/v2/models/%s/%s", models[m], e == 0 ? "classify" : "infer");
            for (int c = 0; c < N_CONC && rc == 0; c++) {
                struct stats_totals before = {0}, after = {0};
                bool timed = e == 2 && CONCURRENCY[c] == 1 && fetch_stats(ports[0], models[m], &before);
                struct result pair[2];
                rc = measure(&o, script, ports, 2, path, CONCURRENCY[c], pair);
                res[m][0][e][c] = pair[0];
                res[m][1][e][c] = pair[1];
                if (timed && fetch_stats(ports[0], models[m], &after) && after.count > before.count)
                    overhead_us[m] = (after.request_ns - before.request_ns - (after.infer_ns - before.infer_ns)) /
                                     (after.count - before.count) / 1e3;
                if (rc != 0)
                    fprintf(stderr, "bench_server: wrk failed on %s\n", path);
            }
        }
    }
    stop_inferd(pids[0]);
    stop_inferd(pids[1]);
    if (rc != 0)
        return 1;

    printf("HTTP benchmark: wrk, %d s per run, median of %d runs after a 1 s warm-up, batching on and off "
           "interleaved (on/off: the median of the ratios of runs side by side); "
           "%d HTTP threads on %ld cores shared with wrk; load average %.2f before, %.2f after\n\n",
           o.duration_s, o.repeat, HTTP_THREADS, sysconf(_SC_NPROCESSORS_ONLN), load_before,
           load_average());
    printf("| server | endpoint | batching | conn | req/s | p50 ms | p99 ms | of bare | on/off |\n");
    printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int c = 0; c < N_CONC; c++)
        printf("| bare libmicrohttpd | fixed body | - | %d | %.0f | %.3f | %.3f | 100%% | - |\n",
               CONCURRENCY[c], bare_r[c].rps, bare_r[c].p50_ms, bare_r[c].p99_ms);
    long errors = 0;
    for (int m = 0; m < n_models; m++) {
        for (int e = 0; e < N_ENDPOINTS; e++) {
            for (int b = 0; b < 2; b++) {
                for (int c = 0; c < N_CONC; c++) {
                    const struct result *r = &res[m][b][e][c];
                    errors += r->errors;
                    printf("| inferd %s | %s | %s | %d | %.0f | %.3f | %.3f | %.1f%% | ",
                           models[m], ENDPOINTS[e], b ? "off" : "on", CONCURRENCY[c], r->rps,
                           r->p50_ms, r->p99_ms, 100.0 * r->rps / bare_r[c].rps);
                    if (b == 0)
                        printf("%.2fx |%s\n", r->on_off, r->errors ? " errors" : "");
                    else
                        printf("- |%s\n", r->errors ? " errors" : "");
                }
            }
        }
    }
    printf("\n");
    double lowest = 1e9;
    for (int m = 0; m < n_models; m++) {
        for (int e = 0; e < N_ENDPOINTS; e++) {
            for (int c = 0; c < N_CONC; c++) {
                double ratio = res[m][0][e][c].on_off;
                lowest = ratio < lowest ? ratio : lowest;
            }
        }
    }
    printf("batching on/off, lowest of all rows: %.2fx\n", lowest);
    for (int m = 0; m < n_models; m++) {
        const struct result *bin = res[m][0][2];
        char server_time[32] = "not measured (stats unreadable)";
        if (overhead_us[m] >= 0)
            snprintf(server_time, sizeof(server_time), "%.1f us", overhead_us[m]);
        printf("%s: binary infer at 1 connection, batching on: p50 %.0f us, p99 %.0f us; server time per "
               "request (stats: request minus compute_infer, mean) %s\n",
               models[m], bin[0].p50_ms * 1e3, bin[0].p99_ms * 1e3, server_time);
    }
    for (int m = 0; m < n_models; m++) {
        const struct result *on = res[m][0][1];
        printf("%s: JSON infer at 64 connections: %.1f%% of bare; batching on/off %.2fx "
               "(classify %.2fx, binary %.2fx)\n",
               models[m], 100.0 * on[2].rps / bare_r[2].rps, on[2].on_off, res[m][0][0][2].on_off,
               res[m][0][2][2].on_off);
    }
    if (errors)
        printf("warning: %ld requests failed (non-2xx or socket errors)\n", errors);
    return errors ? 1 : 0;
}
