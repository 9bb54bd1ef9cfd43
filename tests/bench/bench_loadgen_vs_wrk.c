/*
 * bench_loadgen_vs_wrk.c - "check the checker": is inferd-loadgen fast
 * enough not to be the bottleneck it measures? Starts build/inferd on a
 * free loopback port, then runs wrk and inferd-loadgen --kind live against
 * the same trivial endpoint (GET /v2/health/live) with the same threads,
 * connections and duration, alternating which goes first, and prints both
 * request rates (medians over the rounds) and their ratio. The goal is a
 * ratio of at least 0.8; the exit status is 1 below it.
 *
 *   build/bench_loadgen_vs_wrk [--duration S] [--connections N] [--threads N] [--rounds N]
 *
 * The programs are the ones beside this one (build/), the peer is wrk
 * from PATH (Debian's wrk; make bench-loadgen installs it).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_ROUNDS 15
#define GOAL 0.8

static char dir[PATH_MAX];   /* where this program and its siblings live */

/* Runs argv with stdout and stderr to out_path; its exit status. */
static int run(const char *const *argv, const char *out_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "cannot run %s\n", argv[0]);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Starts inferd on a free port; its pid, the port in *port. */
static pid_t start_inferd(const char *tmp, int *port)
{
    char bin[PATH_MAX + 16], port_file[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(bin, sizeof(bin), "%s/inferd", dir);
    snprintf(port_file, sizeof(port_file), "%s/port", tmp);
    snprintf(log, sizeof(log), "%s/inferd.log", tmp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr))
            _exit(126);
        execl(bin, bin, "--model-repository", "model_repository", "--http-port", "0",
              "--port-file", port_file, "--log-level", "error", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; pid > 0 && i < 3000; i++) {
        const char *text = slurp(port_file);
        if (text && sscanf(text, "%d", port) == 1 && *port > 0) // NOLINT(cert-err34-c): the daemon's own port file
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    fprintf(stderr, "inferd did not start; see %s\n", log);
    return -1;
}

/* wrk's "Requests/sec:" figure, or -1. */
static double wrk_rate(const char *url, int threads, int conns, int seconds, const char *out)
{
    char t[16], c[16], d[16];
    snprintf(t, sizeof(t), "-t%d", threads);
    snprintf(c, sizeof(c), "-c%d", conns);
    snprintf(d, sizeof(d), "-d%ds", seconds);
    const char *argv[] = {"wrk", t, c, d, url, NULL};
    const char *text = run(argv, out) == 0 ? slurp(out) : NULL;
    const char *p = text ? strstr(text, "Requests/sec:") : NULL;
    return p ? strtod(p + 13, NULL) : -1;
}

/* inferd-loadgen's measured requests per second, or -1. */
static double loadgen_rate(const char *url, int threads, int conns, int seconds, const char *tmp)
{
    char bin[PATH_MAX + 16], t[16], c[16], d[16], prefix[PATH_MAX + 16], json[PATH_MAX + 24];
    snprintf(bin, sizeof(bin), "%s/inferd-loadgen", dir);
    snprintf(t, sizeof(t), "%d", threads);
    snprintf(c, sizeof(c), "%d", conns);
    snprintf(d, sizeof(d), "%d", seconds);
    snprintf(prefix, sizeof(prefix), "%s/loadgen", tmp);
    snprintf(json, sizeof(json), "%s.json", prefix);
    /* no warm-up, as wrk has none: both measure the same stretch */
    const char *argv[] = {bin, "--url", url, "--kind", "live", "--threads", t, "--concurrency",
                          c, "--duration", d, "--warmup", "0", "--out", prefix, "--no-progress",
                          NULL};
    if (run(argv, "/dev/null") != 0)
        return -1;
    const char *text = slurp(json);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "levels"), 0);
    const cJSON *rps = cJSON_GetObjectItem(l, "ok_rps");
    double v = cJSON_IsNumber(rps) ? rps->valuedouble : -1;
    cJSON_Delete(root);
    return v;
}

int main(int argc, char **argv)
{
    int seconds = 5, conns = 32, threads = 2, rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = (int)strtol(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--duration") == 0 && v > 0)
            seconds = v;
        else if (strcmp(argv[i], "--connections") == 0 && v > 0)
            conns = v;
        else if (strcmp(argv[i], "--threads") == 0 && v > 0)
            threads = v;
        else if (strcmp(argv[i], "--rounds") == 0 && v > 0 && v <= MAX_ROUNDS)
            rounds = v;
        else {
            fprintf(stderr, "usage: %s [--duration S] [--connections N] [--threads N] "
                            "[--rounds N<=%d]\n", argv[0], MAX_ROUNDS);
            return 2;
        }
    }
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    dir[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    char tmp[] = "/tmp/bench-loadgen-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    int port = 0;
    pid_t server = start_inferd(tmp, &port);
    if (server < 0)
        return 1;
    char url[64], wrk_out[PATH_MAX];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/health/live", port);
    snprintf(wrk_out, sizeof(wrk_out), "%s/wrk.txt", tmp);
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
    printf("GET /v2/health/live, %d threads, %d connections, %d s per run, %d rounds\n",
           threads, conns, seconds, rounds);
    printf("%-6s %14s %14s\n", "round", "wrk req/s", "loadgen req/s");
    double w[MAX_ROUNDS] = {0}, l[MAX_ROUNDS] = {0};
    bool ok = true;
    for (int r = 0; r < rounds && ok; r++) {
        /* alternate the order, so neither always meets a warmer server */
        if (r % 2 == 0) {
            w[r] = wrk_rate(url, threads, conns, seconds, wrk_out);
            l[r] = loadgen_rate(base, threads, conns, seconds, tmp);
        } else {
            l[r] = loadgen_rate(base, threads, conns, seconds, tmp);
            w[r] = wrk_rate(url, threads, conns, seconds, wrk_out);
        }
        ok = w[r] > 0 && l[r] > 0;
        printf("%-6d %14.0f %14.0f\n", r + 1, w[r], l[r]);
    }
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    char cleanup[PATH_MAX + 16];
    snprintf(cleanup, sizeof(cleanup), "%s/loadgen.json", tmp);
    unlink(cleanup);
    snprintf(cleanup, sizeof(cleanup), "%s/loadgen.csv", tmp);
    unlink(cleanup);
    snprintf(cleanup, sizeof(cleanup), "%s/port", tmp);
    unlink(cleanup);
    if (!ok) {
        fprintf(stderr, "a run failed (is wrk installed? see %s)\n", tmp);
        return 1;
    }
    unlink(wrk_out);
    snprintf(cleanup, sizeof(cleanup), "%s/inferd.log", tmp);
    unlink(cleanup);
    rmdir(tmp);
    double mw = bench_median(w, rounds), ml = bench_median(l, rounds);
    printf("median %14.0f %14.0f\nloadgen / wrk = %.2f (goal >= %.2f): %s\n", mw, ml, ml / mw,
           GOAL, ml / mw >= GOAL ? "ok" : "BELOW GOAL");
    return ml / mw >= GOAL ? 0 : 1;
}
