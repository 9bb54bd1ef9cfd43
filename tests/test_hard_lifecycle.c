/*
 * test_hard_lifecycle.c - lifecycle and faults (issue 10): a reload that
 * fails keeps the old version, a model with missing files is unavailable
 * while the others serve, injected arena OOM answers 503, an injected
 * device error ends the daemon non-zero, SIGTERM while loading and under
 * load drains cleanly, clients that vanish mid-request or mid-response
 * leak nothing (nor while the work pool parses their large bodies), and
 * unloading a model under their orphaned requests is safe.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"

static const char *const CONTROL[] = {"--enable-model-control", NULL};

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static enum test_result reload_keeps_old(struct http_daemon *d)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/repo/%s/model.json", d->dir, d->model);
    write_text(path, "{\"format_version\": 1, \"nodes\": [");
    struct http_resp r;
    ASSERT_TRUE(http_post(d, "/v2/repository/models/lenet5/load", NULL, "", 0, &r));
    ASSERT_EQ_INT(r.status, 500);
    ASSERT_TRUE(strstr(r.body, d->dir) == NULL); /* no host path in the message */
    http_resp_free(&r);
    /* The old version still serves and the daemon stays ready. */
    ASSERT_TRUE(http_still_serves(d));
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/lenet5/ready", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 200);
    return TEST_PASS;
}

TEST(hard_reload_failure_keeps_old_version)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    return http_run(&spec, 1, CONTROL, reload_keeps_old);
}

static enum test_result missing_files(struct http_daemon *d)
{
    /* A second model whose weights are missing: unavailable, the first serves. */
    char dir[400], from[400], to[400];
    snprintf(dir, sizeof(dir), "%s/repo/nofile", d->dir);
    ASSERT_EQ_INT(mkdir(dir, 0755), 0);
    snprintf(from, sizeof(from), "%s/repo/lenet5/model.json", d->dir);
    snprintf(to, sizeof(to), "%s/model.json", dir);
    FILE *in = fopen(from, "rb");
    ASSERT_TRUE(in != NULL);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, in);
    fclose(in);
    text[n] = '\0';
    char *name = strstr(text, "\"lenet5\"");
    ASSERT_TRUE(name != NULL);
    memcpy(name, "\"nofile\"", 8); /* the folder's name, as long as lenet5 */
    write_text(to, text);
    struct http_resp r;
    ASSERT_TRUE(http_post(d, "/v2/repository/models/nofile/load", NULL, "", 0, &r));
    ASSERT_TRUE(r.status >= 400);
    ASSERT_TRUE(strstr(r.body, d->dir) == NULL);
    http_resp_free(&r);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/nofile/ready", NULL, NULL, 0), 503);
    /* the answer says why, as the index does */
    ASSERT_TRUE(http_get(d, "/v2/models/nofile/ready", &r));
    ASSERT_STR_CONTAINS(r.body, "not ready (UNAVAILABLE: ");
    ASSERT_STR_CONTAINS(r.body, "model.safetensors");
    http_resp_free(&r);
    /* a missing model is reported before a missing version of it */
    ASSERT_TRUE(http_get(d, "/v2/models/ghost/versions/2/ready", &r));
    ASSERT_EQ_INT(r.status, 404);
    ASSERT_STR_CONTAINS(r.body, "unknown model 'ghost'");
    http_resp_free(&r);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 503);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_missing_files_unavailable_others_serve)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    return http_run(&spec, 1, CONTROL, missing_files);
}

/* ------------------------------------------------------------ injected faults */

static enum test_result arena_oom(struct http_daemon *d)
{
    float x[784];
    test_rand_fill(x, 784, 0, 1);
    char *body = http_infer_json(x, 1, NULL);
    char path[128];
    snprintf(path, sizeof(path), "/v2/models/%s/infer", d->model);
    for (int i = 0; i < 20; i++)
        ASSERT_EQ_INT(http_status(d, "POST", path, "application/json", body, strlen(body)), 503);
    free(body);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/live", NULL, NULL, 0), 200);
    return TEST_PASS;
}

/* Starts inferd on lenet5 with INFERD_FAULT=fault (read once at load). */
static bool start_with_fault(struct http_daemon *d, const char *fault, const char *const *args)
{
    setenv("INFERD_FAULT", fault, 1);
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    bool started = http_daemon_start(d, &spec, 1, args);
    unsetenv("INFERD_FAULT");
    return started;
}

/* http_run with a fault injected: fn must pass and the daemon exit 0. */
static enum test_result run_with_fault(const char *fault, const char *const *args, http_test_fn fn)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct http_daemon d;
    ASSERT_TRUE(start_with_fault(&d, fault, args));
    enum test_result r = fn(&d);
    ASSERT_EQ_INT(http_daemon_stop(&d), 0);
    return r;
}

TEST(hard_fault_arena_oom_gives_503) { return run_with_fault("arena-oom", NULL, arena_oom); }

TEST(hard_fault_device_error_exits_nonzero)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct http_daemon d;
    ASSERT_TRUE(start_with_fault(&d, "device-error", NULL));
    float x[784];
    test_rand_fill(x, 784, 0, 1);
    char *body = http_infer_json(x, 1, NULL);
    long st = http_status(&d, "POST", "/v2/models/lenet5/infer", "application/json", body,
                          strlen(body));
    free(body);
    ASSERT_EQ_INT(st, 500);
    /* Not ready from then on (or already gone), and it ends by itself, non-zero. */
    long ready = http_status(&d, "GET", "/v2/health/ready", NULL, NULL, 0);
    ASSERT_TRUE(ready == 503 || ready == 0);
    int status = http_daemon_wait(&d, 20000);
    ASSERT_EQ_INT(status, 1);
    http_daemon_stop(&d);
    return TEST_PASS;
}

/* ------------------------------------------------------------ SIGTERM */

TEST(hard_sigterm_while_loading)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct http_model_spec specs[6] = {HTTP_MODEL_SPEC("m0"), HTTP_MODEL_SPEC("m1"),
                                       HTTP_MODEL_SPEC("m2"), HTTP_MODEL_SPEC("m3"),
                                       HTTP_MODEL_SPEC("m4"), HTTP_MODEL_SPEC("m5")};
    struct http_daemon d;
    ASSERT_TRUE(http_daemon_start(&d, specs, 6, NULL));
    /* The repository is written; run a second daemon on it and stop it as
     * soon as it listens (its port file appears): it is loading models then. */
    char bin[512], repo[400], port_file[450];
    http_inferd_path(bin, sizeof(bin));
    snprintf(repo, sizeof(repo), "%s/repo", d.dir);
    snprintf(port_file, sizeof(port_file), "%s/port2", d.dir);
    for (int delay_ms = 0; delay_ms <= 4; delay_ms += 2) {
        unlink(port_file);
        fflush(stdout);
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0)
                dup2(null, STDERR_FILENO);
            execl(bin, bin, "--model-repository", repo, "--http-port", "0", "--threads", "1",
                  "--port-file", port_file, (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 3000 && access(port_file, F_OK) != 0; i++)
            usleep(1000);
        usleep((useconds_t)delay_ms * 1000);
        kill(pid, SIGTERM);
        int status = 0;
        for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
            if (waited > 2000) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                TEST_FAIL_IF(true, "inferd did not stop within 20 s of SIGTERM while loading");
            }
            usleep(10000);
        }
        TEST_FAIL_IF(!WIFEXITED(status), "inferd died from signal %d",
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
    }
    ASSERT_EQ_INT(http_daemon_stop(&d), 0);
    return TEST_PASS;
}

struct load_thread {
    const struct http_daemon *d;
    const char *body;
    atomic_int *stop;
    int ok, refused, bad;
};

static void *send_loop(void *arg)
{
    struct load_thread *t = arg;
    while (!atomic_load(t->stop)) {
        long st = http_status(t->d, "POST", "/v2/models/lenet5/infer", "application/json",
                              t->body, strlen(t->body));
        if (st == 200)
            t->ok++;
        else if (st == 503 || st == 0) /* draining, or the listener closed */
            t->refused++;
        else
            t->bad++;
        if (st == 0)
            break;
    }
    return NULL;
}

TEST(hard_sigterm_under_load)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    struct http_daemon d;
    ASSERT_TRUE(http_daemon_start(&d, &spec, 1, NULL));
    float x[784];
    test_rand_fill(x, 784, 0, 1);
    char *body = http_infer_json(x, 1, NULL);
    atomic_int stop = 0;
    struct load_thread t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct load_thread){&d, body, &stop, 0, 0, 0};
        pthread_create(&th[i], NULL, send_loop, &t[i]);
    }
    usleep(500 * 1000);
    http_daemon_signal(&d);
    int status = http_daemon_wait(&d, 20000);
    atomic_store(&stop, 1);
    int ok = 0, bad = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ok += t[i].ok;
        bad += t[i].bad;
    }
    free(body);
    http_daemon_stop(&d);
    printf("  %d answered 200 before the drain, %d other answers\n", ok, bad);
    ASSERT_EQ_INT(status, 0);
    ASSERT_GE(ok, 1);
    ASSERT_EQ_INT(bad, 0);
    return TEST_PASS;
}

/* ------------------------------------------------------------ vanishing clients */

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    }
    if (f)
        fclose(f);
    return kb;
}

/* Sockets the process holds open (the listener and live connections). */
static int open_sockets(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char path[400], target[64];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && strncmp(target, "socket:", 7) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* A POST of body to lenet5's infer route (headers and body) as raw bytes,
 * for clients that send it themselves; NULL when out of memory. */
static char *raw_infer_post(const char *body, size_t blen, size_t *len)
{
    char *req = malloc(blen + 256);
    if (req) {
        int hl = snprintf(req, 256,
                          "POST /v2/models/lenet5/infer HTTP/1.1\r\nHost: t\r\n"
                          "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                          blen);
        memcpy(req + hl, body, blen);
        req[hl + blen] = '\0';
        *len = (size_t)hl + blen;
    }
    return req;
}

/* A whole lenet5 infer request of rows random rows, as raw bytes. */
static char *raw_infer_request(int rows, size_t *len)
{
    float *x = malloc((size_t)rows * 784 * sizeof(float));
    if (!x)
        return NULL;
    test_rand_fill(x, (int64_t)rows * 784, 0, 1);
    char *body = http_infer_json(x, rows, NULL);
    char *req = body ? raw_infer_post(body, strlen(body), len) : NULL;
    free(body);
    free(x);
    return req;
}

/* One client that goes away: half-way through its body, or right after
 * sending a whole request (before the answer). */
static void vanish(const struct http_daemon *d, const char *req, size_t len, bool mid_request)
{
    int fd = http_raw_connect(d);
    if (fd < 0)
        return;
    http_raw_send(fd, req, mid_request ? len / 2 : len);
    close(fd);
}

static enum test_result disconnects(struct http_daemon *d)
{
    enum { TOTAL = 10000, WARMUP = 2000 };   /* the allocator settles in the first few thousand */
    const double budget_s = 120;
    size_t len;
    char *req = raw_infer_request(1, &len);
    ASSERT_TRUE(req != NULL);
    long rss0 = 0;
    double t0 = (test_now_ms() / 1e3);
    int done = 0;
    for (; done < TOTAL && (test_now_ms() / 1e3) - t0 < budget_s; done++) {
        vanish(d, req, len, done % 2 == 0);
        if (done == WARMUP) {
            usleep(200 * 1000);
            rss0 = rss_kb(d->pid);
        }
    }
    free(req);
    /* Every vanished client's socket is closed promptly, not at the idle
     * timeout (libmicrohttpd on epoll missed a FIN that came with the last
     * bytes: docs/reliability.md). */
    usleep(500 * 1000);
    int sockets = open_sockets(d->pid);
    long rss1 = rss_kb(d->pid);
    printf("  %d vanishing clients in %.1f s; daemon RSS %ld kB after %d, %ld kB at the end;"
           " %d sockets open\n", done, (test_now_ms() / 1e3) - t0, rss0, WARMUP, rss1, sockets);
    ASSERT_TRUE(sockets >= 1 && sockets <= 4); /* the listener, and no lingering clients */
    ASSERT_TRUE(http_still_serves(d));
    ASSERT_GE(done, 2 * WARMUP);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* The sanitizers' quarantine grows RSS on its own; LeakSanitizer checks
     * the daemon at exit instead (http_run fails on a non-zero status). */
    (void)rss1;
#else
    ASSERT_TRUE(rss0 > 0 && rss1 > 0);
    /* Flat: within 4 MB + 2%. The heap's high-water mark moves with how
     * many vanished clients' buffers happen to overlap: 0.01 to 2.5 MB of
     * growth across seven runs of the same build on one Intel VM
     * (2026-12-01), where the bound was 2 MB. A leak of 1 KiB a client
     * would still exceed it nearly twice over. */
    ASSERT_LE(rss1 - rss0, 4096 + rss0 / 50.0);
#endif
    return TEST_PASS;
}

TEST(hard_disconnects_leak_nothing)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--max-connections-per-ip", "0",
                                       NULL};
    return http_run(&spec, 1, ARGS, disconnects);
}

/* Bodies over 64 KiB are parsed on the work pool while their connection
 * is suspended (srv_api_infer.c). Clients that vanish right after sending
 * one, while its parse is queued or running or its batch runs, leave
 * nothing behind: every request is freed (inflight back to the /metrics
 * request alone), every body's bytes are given back to the budget, every
 * socket is closed. Half are 16-row requests (200 had the client stayed),
 * half 1 MB of numbers under an unknown key (413 from the parse). */
static enum test_result disconnects_during_parses(struct http_daemon *d)
{
    enum { TOTAL = 400, NUMBERS = 512 * 1024 };
    size_t n;
    char *junk = http_numbers_json("{\"junk\":[", NUMBERS, "],\"inputs\":[]}", &n);
    ASSERT_TRUE(junk != NULL);
    size_t len[2];
    char *req[2] = {raw_infer_request(16, &len[0]), raw_infer_post(junk, n, &len[1])};
    free(junk);
    if (!req[0] || !req[1] || len[0] <= (size_t)64 * 1024) {
        free(req[0]);
        free(req[1]);
        TEST_FAIL_IF(true, "the requests: out of memory, or the 16-row one not over 64 KiB");
    }
    double t0 = test_now_ms();
    for (int i = 0; i < TOTAL; i++)
        vanish(d, req[i % 2], len[i % 2], false);
    free(req[0]);
    free(req[1]);
    double inflight = -1, buffered = -1;
    for (int i = 0; i < 200 && !(inflight == 1 && buffered == 0); i++) {
        usleep(i ? 50 * 1000 : 0);
        struct http_resp m;
        if (http_get(d, "/metrics", &m) && m.status == 200) {
            inflight = http_metric(m.body, "inferd_inflight_requests");
            buffered = http_metric(m.body, "inferd_buffered_request_bytes");
        }
        http_resp_free(&m);
    }
    usleep(200 * 1000);
    int sockets = open_sockets(d->pid);
    printf("  %d vanishing clients with large bodies in %.0f ms; then %g requests in flight"
           " (the /metrics one), %g body bytes held, %d sockets open\n",
           TOTAL, test_now_ms() - t0, inflight, buffered, sockets);
    ASSERT_TRUE(inflight == 1);
    ASSERT_TRUE(buffered == 0);
    ASSERT_TRUE(sockets >= 1 && sockets <= 4); /* the listener, and no lingering clients */
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_disconnects_during_parses_leak_nothing)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--max-connections-per-ip", "0", NULL};
    return http_run(&spec, 1, ARGS, disconnects_during_parses);
}

/* ------------------------------------------------------------ unload with orphans */

/* Unloading a model while requests whose clients are gone still wait in its
 * queue (INFERD_FAULT=slow holds them there): they finish or fail without
 * harm, and the daemon serves on, reloads the model and exits 0 (under ASan:
 * with nothing used after free). test_srv_model.c covers the same unload
 * when the last reference drops on the model's own batcher thread. */
static enum test_result unload_orphans(struct http_daemon *d)
{
    enum { CLIENTS = 48 };
    size_t len;
    char *req = raw_infer_request(1, &len);
    ASSERT_TRUE(req != NULL);
    for (int i = 0; i < CLIENTS; i++)
        vanish(d, req, len, false);
    free(req);
    usleep(20 * 1000);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/unload", NULL, "", 0), 200);
    /* The queue drains (about one 50 ms batch at a time), then everything
     * must still work. */
    usleep(1500 * 1000);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/live", NULL, NULL, 0), 200);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/load", NULL, "", 0), 200);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_unload_with_orphaned_requests)
{
    return run_with_fault("slow", CONTROL, unload_orphans);
}

/* ------------------------------------------------------------ SIGHUP, SIGINT */

struct one_request {
    const struct http_daemon *d;
    long status;
};

static void *one_request_main(void *arg)
{
    struct one_request *r = arg;
    static const float x[784];
    char *body = http_infer_json(x, 1, NULL);
    r->status = http_status(r->d, "POST", "/v2/models/lenet5/infer", "application/json", body, strlen(body));
    free(body);
    return NULL;
}

/* SIGHUP and SIGINT drain as SIGTERM does: a request in flight (a 300 ms
 * batch) is answered, the daemon says which signal it got and exits 0. */
TEST(hard_sighup_sigint_drain)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    static const int SIGNALS[] = {SIGHUP, SIGINT};
    static const char *const NAMES[] = {"SIGHUP received", "SIGINT received"};
    for (int i = 0; i < 2; i++) {
        struct http_daemon d;
        ASSERT_TRUE(start_with_fault(&d, "slow:300", NULL));
        struct one_request r = {&d, 0};
        pthread_t t;
        ASSERT_EQ_INT(pthread_create(&t, NULL, one_request_main, &r), 0);
        usleep(100 * 1000);   /* the request is in its batch */
        ASSERT_EQ_INT(kill(d.pid, SIGNALS[i]), 0);
        int status = http_daemon_wait(&d, 20000);
        pthread_join(t, NULL);
        char log[8192];
        http_daemon_log(&d, log, sizeof(log));
        http_daemon_stop(&d);
        printf("  %s: the request in flight got %ld, exit status %d\n", NAMES[i], r.status, status);
        ASSERT_EQ_INT(r.status, 200);
        ASSERT_EQ_INT(status, 0);
        ASSERT_STR_CONTAINS(log, NAMES[i]);
    }
    return TEST_PASS;
}

/* Requests sent before a signal are served even when they still wait in the
 * listen backlog: with the daemon stopped (SIGSTOP) the kernel accepts the
 * handshakes and holds the requests; SIGTERM then SIGCONT. Each must get
 * its 200, not a 503 or a reset at exit. */
TEST(hard_signal_serves_listen_backlog)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    enum { CLIENTS = 200 };
    static const char REQUEST[] = "GET /v2/models/lenet5 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    struct http_daemon d;
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    ASSERT_TRUE(http_daemon_start(&d, &spec, 1, NULL));
    int fds[CLIENTS];
    int sent = 0;
    ASSERT_EQ_INT(kill(d.pid, SIGSTOP), 0);
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = http_raw_connect(&d);
        sent += fds[i] >= 0 && http_raw_send(fds[i], REQUEST, sizeof(REQUEST) - 1);
    }
    ASSERT_EQ_INT(kill(d.pid, SIGTERM), 0);
    ASSERT_EQ_INT(kill(d.pid, SIGCONT), 0);
    int ok = 0, refused = 0, reset = 0;
    for (int i = 0; i < CLIENTS; i++) {
        int st = fds[i] >= 0 ? http_raw_status(fds[i], 10000) : -1;
        ok += st == 200;
        refused += st == 503;
        reset += st <= 0;
        if (fds[i] >= 0)
            close(fds[i]);
    }
    int status = http_daemon_wait(&d, 20000);
    char log[8192];
    http_daemon_log(&d, log, sizeof(log));
    http_daemon_stop(&d);
    printf("  %d requests sent while stopped: %d answered 200, %d 503, %d reset; exit status %d\n", sent,
           ok, refused, reset, status);
    ASSERT_EQ_INT(sent, CLIENTS);
    ASSERT_EQ_INT(ok, CLIENTS);
    ASSERT_EQ_INT(status, 0);
    ASSERT_STR_CONTAINS(log, "SIGTERM received");
    return TEST_PASS;
}

/* lenet5's nv_inference_count from /metrics, its inference_count from the
 * statistics endpoint; both must agree. */
static double inference_count(const struct http_daemon *d)
{
    struct http_resp m, s;
    bool got = http_get(d, "/metrics", &m) && http_get(d, "/v2/models/lenet5/stats", &s);
    double metric = got && m.status == 200 ? http_metric(m.body, "nv_inference_count{model=\"lenet5\",version=\"1\"}")
                                           : -1;
    cJSON *j = got && s.status == 200 ? cJSON_Parse(s.body) : NULL;
    const cJSON *stats = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "model_stats"), 0);
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(stats, "inference_count");
    double v = cJSON_IsNumber(count) && count->valuedouble == metric ? metric : -2;
    cJSON_Delete(j);
    http_resp_free(&m);
    http_resp_free(&s);
    return v;
}

/* A model's counters survive a reload and an unload + load (as Triton's do). */
static enum test_result counters_across_reloads(struct http_daemon *d)
{
    struct http_resp r;
    for (int i = 0; i < 3; i++)
        ASSERT_TRUE(http_still_serves(d));
    ASSERT_EQ_INT((long)inference_count(d), 3);
    ASSERT_TRUE(http_post(d, "/v2/repository/models/lenet5/load", NULL, "", 0, &r));
    ASSERT_EQ_INT(r.status, 200);
    http_resp_free(&r);
    ASSERT_EQ_INT((long)inference_count(d), 3);
    ASSERT_TRUE(http_still_serves(d));
    ASSERT_EQ_INT((long)inference_count(d), 4);
    ASSERT_TRUE(http_post(d, "/v2/repository/models/lenet5/unload", NULL, "", 0, &r));
    ASSERT_EQ_INT(r.status, 200);
    http_resp_free(&r);
    ASSERT_TRUE(http_post(d, "/v2/repository/models/lenet5/load", NULL, "", 0, &r));
    ASSERT_EQ_INT(r.status, 200);
    http_resp_free(&r);
    ASSERT_EQ_INT((long)inference_count(d), 4);
    ASSERT_TRUE(http_still_serves(d));
    ASSERT_EQ_INT((long)inference_count(d), 5);
    return TEST_PASS;
}

TEST(hard_counters_survive_reloads)
{
    static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");
    return http_run(&LENET, 1, CONTROL, counters_across_reloads);
}
