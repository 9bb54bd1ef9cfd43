/*
 * test_hard_resources.c - resource control (issue 22): what one request may
 * cost in memory, the budget for request bodies held at once, and work that
 * takes long (image decoding, large JSON bodies' parse, model loading)
 * kept off the HTTP threads so liveness answers while it runs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"
#include "http_images.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

#define INFER "/v2/models/lenet5/infer"

/* A field of /proc/PID/status in kB ("VmHWM", "VmRSS"), or -1. */
static long proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    }
    if (f)
        fclose(f);
    return kb;
}

/* ------------------------------------------------------------ JSON memory */

/* 16 M numbers (32 MB) where no tensor's data is, or in a tensor's data
 * that ends in a non-number (the fast path gives it to cJSON): each used to
 * become a cJSON node, 1.3 GB of RSS kept after the answer. Now refused
 * before cJSON parses them: 413, peak under 200 MB, given back. */
static enum test_result json_memory(struct http_daemon *d)
{
    enum { NUMBERS = 16 << 20 };
    static const char *const HEADS[] = {
        "{\"junk\":[",
        "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":[",
    };
    /* the second ends in 1,"x": one number fewer than the first */
    static const char *const TAILS[] = {"],\"inputs\":[]}", ",\"x\"]}]}"};
    long rss0 = proc_kb(d->pid, "VmRSS");
    for (int k = 0; k < 2; k++) {
        size_t n;
        char *body = http_numbers_json(HEADS[k], NUMBERS - k, TAILS[k], &n);
        ASSERT_TRUE(body != NULL);
        long status = http_status(d, "POST", INFER, "application/json", body, n);
        free(body);
        TEST_FAIL_IF(status != 413, "case %d: status %ld, want 413", k, status);
    }
    /* The body is freed when libmicrohttpd reports the answer sent, just
     * after the client has it. */
    long peak = proc_kb(d->pid, "VmHWM"), rss1 = proc_kb(d->pid, "VmRSS");
    for (int i = 0; i < 100 && rss1 - rss0 > 16L * 1024; i++) {
        usleep(20 * 1000);
        rss1 = proc_kb(d->pid, "VmRSS");
    }
    printf("  RSS %ld kB before, peak %ld kB, %ld kB after\n", rss0, peak, rss1);
    ASSERT_TRUE(rss0 > 0 && peak > 0);
    ASSERT_LE(peak - rss0, 200 * 1024);
#ifndef __SANITIZE_ADDRESS__
    /* given back (ASan keeps freed memory in its quarantine; LeakSanitizer
     * checks the daemon at exit instead) */
    ASSERT_LE(rss1 - rss0, 16 * 1024);
#endif
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_json_memory_bounded) { return http_run(&LENET, 1, NULL, json_memory); }

/* ------------------------------------------------------------ body budget */

/* --max-buffered-bytes: a body that would take the bodies held at once past
 * it is 503 with Retry-After; once the first is answered, room is back. */
static enum test_result body_budget(struct http_daemon *d)
{
    static const char HEAD[] = "POST " INFER " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               "Content-Length: 600000\r\n\r\n";
    int a = http_raw_connect(d);
    ASSERT_TRUE(a >= 0);
    ASSERT_TRUE(http_raw_send(a, HEAD, sizeof(HEAD) - 1) && http_raw_send(a, "{\"x\":", 5));
    usleep(200 * 1000);                   /* the first body is being received */
    struct http_resp r;
    char *small = malloc(600000);
    ASSERT_TRUE(small != NULL);
    memset(small, ' ', 600000);
    small[0] = '{', small[599999] = '}';
    /* the server answers 503 without reading the body and may close the
     * connection while curl still sends it: the answer counts even when
     * curl then reports a send error */
    http_post(d, INFER, "application/json", small, 600000, &r);
    long status = r.status;
    bool retry = r.retry_after[0] != '\0';
    if (status != 503)
        printf("  second body: status %ld, curl code %d\n", status, r.curl_code);
    http_resp_free(&r);
    close(a);                             /* the first gives up: its budget returns */
    usleep(200 * 1000);
    long later = http_status(d, "POST", INFER, "application/json", small, 600000);
    free(small);
    ASSERT_EQ_INT(status, 503);
    ASSERT_TRUE(retry);
    ASSERT_EQ_INT(later, 400);            /* read and parsed: {} has no inputs */
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_buffered_bodies_budget)
{
    static const char *const ARGS[] = {"--max-buffered-bytes", "1M", NULL};
    return http_run(&LENET, 1, ARGS, body_budget);
}

/* ------------------------------------------------------------ liveness */

struct attack {
    const struct http_daemon *d;
    const char *path, *content_type;
    const void *body;
    size_t len;
    atomic_long status;   /* read while the attack may still run */
};

static void *attack_run(void *arg)
{
    struct attack *a = arg;
    struct http_resp r;
    const char *const headers[] = {a->content_type, NULL};
    atomic_store(&a->status, http_request(a->d, "POST", a->path, headers, a->body, a->len, &r)
                                 ? r.status : 0);
    http_resp_free(&r);
    return NULL;
}

/* The slowest of the liveness probes sent every 20 ms while *busy holds. */
static double probe_liveness(const struct http_daemon *d, atomic_bool *busy, int *probes, bool *all_ok)
{
    double worst = 0;
    *probes = 0;
    *all_ok = true;
    while (atomic_load(busy) || *probes < 3) {
        double t0 = test_now_ms();
        *all_ok &= http_status(d, "GET", "/v2/health/live", NULL, NULL, 0) == 200;
        double dt = test_now_ms() - t0;
        worst = dt > worst ? dt : worst;
        (*probes)++;
        usleep(20 * 1000);
    }
    return worst;
}

struct attacks {
    struct attack a[2];
    atomic_bool busy;
};

static void *attacks_run(void *arg)
{
    struct attacks *s = arg;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, attack_run, &s->a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    atomic_store(&s->busy, false);
    return NULL;
}

/* Sends both attacks of s at once and probes liveness until both are
 * answered: the slowest probe's milliseconds (see probe_liveness). */
static double attacks_probed(const struct http_daemon *d, struct attacks *s, int *probes, bool *all_ok)
{
    atomic_init(&s->busy, true);
    pthread_t t;
    pthread_create(&t, NULL, attacks_run, s);
    double worst = probe_liveness(d, &s->busy, probes, all_ok);
    pthread_join(t, NULL);
    return worst;
}

/* Two requests of 64 large PNGs each against one HTTP thread: decoding
 * used to run on it, and /v2/health/live waited seconds. */
static enum test_result images_off_http_threads(struct http_daemon *d)
{
    enum { SIDE = 2560, IMAGES = 64 };
    uint8_t *px = malloc((size_t)SIDE * SIDE);
    ASSERT_TRUE(px != NULL);
    for (int i = 0; i < SIDE * SIDE; i++)
        px[i] = (uint8_t)((i % SIDE + i / SIDE) / 12);   /* a gradient: small PNG, full decode cost */
    uint8_t *png;
    size_t png_len;
    bool encoded = http_encode_png(px, SIDE, SIDE, &png, &png_len);
    free(px);
    ASSERT_TRUE(encoded);
    size_t cap = IMAGES * (png_len + 256) + 64, len = 0;
    char *body = malloc(cap);
    ASSERT_TRUE(body != NULL);
    for (int i = 0; i < IMAGES; i++) {
        len += (size_t)snprintf(body + len, cap - len,
                                "--B0\r\nContent-Disposition: form-data; name=\"image\"; "
                                "filename=\"%d.png\"\r\nContent-Type: image/png\r\n\r\n", i);
        memcpy(body + len, png, png_len);
        len += png_len;
        len += (size_t)snprintf(body + len, cap - len, "\r\n");
    }
    len += (size_t)snprintf(body + len, cap - len, "--B0--\r\n");
    free(png);
    struct attacks s;
    for (int i = 0; i < 2; i++)
        s.a[i] = (struct attack){d, "/v2/models/lenet5/classify",
                                 "Content-Type: multipart/form-data; boundary=B0", body, len, 0};
    double t0 = test_now_ms();
    int probes;
    bool all_ok;
    double worst = attacks_probed(d, &s, &probes, &all_ok);
    free(body);
    printf("  2 x %d PNGs of %dx%d: %.0f ms; %d liveness probes, slowest %.1f ms\n", IMAGES, SIDE,
           SIDE, test_now_ms() - t0, probes, worst);
    ASSERT_EQ_INT(s.a[0].status, 200);
    ASSERT_EQ_INT(s.a[1].status, 200);
    ASSERT_TRUE(all_ok);
    ASSERT_LE(worst, 100);   /* 50 ms is the aim (docs/reliability.md); a shared VM adds noise */
    return TEST_PASS;
}

TEST(hard_images_decoded_off_http_threads)
{
    static const char *const ARGS[] = {"--http-threads", "1", NULL};
    return http_run(&LENET, 1, ARGS, images_off_http_threads);
}

/* A model whose weights file is a FIFO nobody writes: its load blocks in
 * open(). It used to block the HTTP thread (and, under the repository's
 * lock, every later load); liveness, inference and the other model's
 * metadata now answer, and the load answers once the FIFO is closed. */
static enum test_result load_off_http_threads(struct http_daemon *d)
{
    char dir[400], path[500], from[500];
    snprintf(dir, sizeof(dir), "%s/repo/fifo", d->dir);
    ASSERT_EQ_INT(mkdir(dir, 0755), 0);
    snprintf(from, sizeof(from), "%s/repo/lenet5/model.json", d->dir);
    snprintf(path, sizeof(path), "%s/model.json", dir);
    FILE *in = fopen(from, "rb"), *out = fopen(path, "wb");
    char buf[4096];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    ASSERT_EQ_INT(mkfifo(path, 0644), 0);

    struct attack load = {d, "/v2/repository/models/fifo/load", "Content-Type: application/json",
                          "", 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, attack_run, &load);
    usleep(300 * 1000);                           /* the load is stuck in open() */
    atomic_bool busy;
    atomic_init(&busy, false);
    int probes;
    bool all_ok;
    double worst = probe_liveness(d, &busy, &probes, &all_ok);
    bool serves = http_still_serves(d);
    long meta = http_status(d, "GET", "/v2/models/lenet5", NULL, NULL, 0);
    long status_while_stuck = atomic_load(&load.status);
    /* Open the FIFO's other end and close it: the loader reads nothing. */
    int fd = open(path, O_WRONLY | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    pthread_join(t, NULL);
    printf("  liveness while a load is stuck: slowest of %d probes %.1f ms; the load then answered %ld\n",
           probes, worst, load.status);
    ASSERT_EQ_INT(status_while_stuck, 0);
    ASSERT_TRUE(all_ok && serves);
    ASSERT_EQ_INT(meta, 200);
    ASSERT_LE(worst, 100);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(load.status >= 400);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_model_load_off_http_threads)
{
    static const char *const ARGS[] = {"--http-threads", "1", "--enable-model-control", NULL};
    return http_run(&LENET, 1, ARGS, load_off_http_threads);
}

/* A body over 64 KiB is parsed on the work pool (srv_api_infer.c), a small
 * one on the HTTP thread: the same answers (the offline run's logits, the
 * request's id) and the same errors either way. */
static enum test_result large_json_same_answers(struct http_daemon *d)
{
    enum { ROWS = 24 };
    static float x[ROWS * 784], want[ROWS * 10], got[ROWS * 10];
    test_rand_fill(x, (int64_t)ROWS * 784, 0, 1);
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    bool ran = http_offline_run(&off, ROWS, x, want);
    http_offline_close(&off);
    ASSERT_TRUE(ran);
    char *big = http_infer_json(x, ROWS, ",\"id\":\"big-1\"");
    char *small = http_infer_json(x, 1, ",\"id\":\"small-1\"");
    ASSERT_TRUE(big != NULL && small != NULL);
    ASSERT_TRUE(strlen(big) > (size_t)64 * 1024 && strlen(small) < (size_t)64 * 1024);
    struct http_resp r;
    http_post(d, INFER, "application/json", big, strlen(big), &r);
    bool parsed = r.status == 200 && http_parse_logits(r.body, got, ROWS * 10);
    bool has_id = r.body && strstr(r.body, "\"id\":\"big-1\"");
    http_resp_free(&r);
    ASSERT_TRUE(parsed && has_id);
    ASSERT_LE(test_rel_error(got, want, (int64_t)ROWS * 10), 1e-5);

    /* An input the model lacks: the same 400 and message from either path. */
    struct http_resp e[2];
    char *req[2] = {big, small};
    for (int i = 0; i < 2; i++) {
        char *name = strstr(req[i], "\"name\":\"input\"");
        ASSERT_TRUE(name != NULL);
        name[sizeof("\"name\":\"inpu") - 1] = 'X';
        http_post(d, INFER, "application/json", req[i], strlen(req[i]), &e[i]);
    }
    free(big);
    free(small);
    bool same = e[0].body && e[1].body && strcmp(e[0].body, e[1].body) == 0;
    printf("  %d rows parsed off the HTTP thread: 200; unknown input: %ld and %ld, %s\n", ROWS,
           e[0].status, e[1].status, e[0].body ? e[0].body : "(no body)");
    long status[2] = {e[0].status, e[1].status};
    http_resp_free(&e[0]);
    http_resp_free(&e[1]);
    ASSERT_EQ_INT(status[0], 400);
    ASSERT_EQ_INT(status[1], 400);
    ASSERT_TRUE(same);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_large_json_parsed_off_http_threads_same_answers)
{
    static const char *const ARGS[] = {"--http-threads", "1", NULL};
    return http_run(&LENET, 1, ARGS, large_json_same_answers);
}

/* The rest of issue 22's attacks with liveness probed while they run: two
 * 32 MB JSON bodies of 16 M numbers under an unknown key (413 after a byte
 * scan, never a cJSON node each; the scan runs on the work pool, not on the
 * one HTTP thread), then every connection slot held by heads trickled and
 * left unfinished (health is answered past the limit). */
static enum test_result liveness_under_attacks(struct http_daemon *d)
{
    enum { NUMBERS = 16 << 20, HELD = 8 };
    size_t n;
    char *body = http_numbers_json("{\"junk\":[", NUMBERS, "],\"inputs\":[]}", &n);
    ASSERT_TRUE(body != NULL);
    struct attacks s;
    for (int i = 0; i < 2; i++)
        s.a[i] = (struct attack){d, INFER, "Content-Type: application/json", body, n, 0};
    int probes;
    bool json_ok;
    double json_worst = attacks_probed(d, &s, &probes, &json_ok);
    free(body);
    printf("  two 32 MB JSON bodies: answered %ld and %ld; %d liveness probes, slowest %.1f ms\n",
           atomic_load(&s.a[0].status), atomic_load(&s.a[1].status), probes, json_worst);
    ASSERT_EQ_INT(atomic_load(&s.a[0].status), 413);
    ASSERT_EQ_INT(atomic_load(&s.a[1].status), 413);
    ASSERT_TRUE(json_ok);

    /* every slot (--max-connections HELD) taken by a head that never ends */
    int held[HELD];
    static const char PART[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: a";
    for (int i = 0; i < HELD; i++) {
        held[i] = http_raw_connect(d);
        ASSERT_TRUE(held[i] >= 0);
        ASSERT_TRUE(http_raw_send(held[i], PART, sizeof(PART) - 1));
    }
    usleep(100 * 1000);
    double slow_worst = 0;
    bool slow_ok = true;
    for (int i = 0; i < 10; i++) {
        double t0 = test_now_ms();
        slow_ok &= http_status(d, "GET", "/v2/health/live", NULL, NULL, 0) == 200;
        double dt = test_now_ms() - t0;
        slow_worst = dt > slow_worst ? dt : slow_worst;
        usleep(20 * 1000);
    }
    long refused = http_status(d, "GET", "/v2/models/lenet5", NULL, NULL, 0);
    for (int i = 0; i < HELD; i++)
        close(held[i]);
    /* the slots come back once the server has seen the closes */
    for (int i = 0; i < 100 && http_status(d, "GET", "/v2/models/lenet5", NULL, NULL, 0) != 200; i++)
        usleep(10 * 1000);
    printf("  %d slots held by unfinished heads: 10 liveness probes, slowest %.1f ms; metadata %ld\n", HELD,
           slow_worst, refused);
    ASSERT_TRUE(slow_ok);
    ASSERT_EQ_INT(refused, 503);
    /* Issue 22's bound. When the HTTP thread scanned the bodies a probe
     * waited 50-67 ms behind each scan here; now the work pool scans them
     * and the slowest probe of 40 runs on the 2-core VM was 19 ms (24 ms
     * with both cores also spinning; docs/reliability.md). */
#ifdef __SANITIZE_ADDRESS__
    ASSERT_LE(json_worst, 100);   /* 6 ms in the ASan build */
#else
    ASSERT_LE(json_worst, 50);
#endif
    ASSERT_LE(slow_worst, 100);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_liveness_under_json_and_slow_head_attacks)
{
    static const char *const ARGS[] = {"--http-threads", "1", "--max-connections", "8", NULL};
    return http_run(&LENET, 1, ARGS, liveness_under_attacks);
}

/* ------------------------------------------------------------ descriptors */

/* The status line and body of the answer on fd (at most cap - 1 bytes). */
static long raw_answer(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssize_t k;
    while (n + 1 < cap && (k = recv(fd, buf + n, cap - 1 - n, 0)) > 0)
        n += (size_t)k;
    buf[n] = '\0';
    /* "HTTP/1.x NNN ..." */
    if (n < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return 0;
    char *end;
    long status = strtol(buf + 9, &end, 10);
    return end == buf + 12 ? status : 0;
}

/* The lowest descriptor number pid has free. */
static int lowest_free_fd(pid_t pid)
{
    for (int fd = 0;; fd++) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
        if (lstat(path, &st) != 0)
            return fd;
    }
}

/* With every descriptor taken, a model (re)load says so, 503, where it
 * used to say that "a file links outside the model repository". */
static enum test_result fd_exhaustion(struct http_daemon *d)
{
    static const char LOAD[] = "POST /v2/repository/models/lenet5/load HTTP/1.1\r\nHost: x\r\n"
                               "Content-Length: 0\r\nConnection: close\r\n\r\n";
    int c = http_raw_connect(d);
    ASSERT_TRUE(c >= 0);
    usleep(100 * 1000);                   /* accepted: its descriptor is taken */
    struct rlimit old, low;
    ASSERT_EQ_INT(prlimit(d->pid, RLIMIT_NOFILE, NULL, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)lowest_free_fd(d->pid);
    ASSERT_EQ_INT(prlimit(d->pid, RLIMIT_NOFILE, &low, NULL), 0);
    bool sent = http_raw_send(c, LOAD, sizeof(LOAD) - 1);
    char answer[2048];
    long status = raw_answer(c, answer, sizeof(answer));
    close(c);
    ASSERT_EQ_INT(prlimit(d->pid, RLIMIT_NOFILE, &old, NULL), 0);
    ASSERT_TRUE(sent);
    ASSERT_EQ_INT(status, 503);
    ASSERT_STR_CONTAINS(answer, "too many files open");
    ASSERT_TRUE(strstr(answer, "links outside") == NULL);
    ASSERT_TRUE(http_still_serves(d));    /* the loaded version kept serving */
    return TEST_PASS;
}

TEST(hard_fd_exhaustion_says_so)
{
    static const char *const ARGS[] = {"--enable-model-control", NULL};
    return http_run(&LENET, 1, ARGS, fd_exhaustion);
}

/* --max-connections beyond the descriptor limit is held to what it allows
 * (and says so), so the connection past it is a 503, not a hang in the
 * listen backlog while accept() fails with EMFILE. */
static enum test_result connections_held_to_fd_limit(struct http_daemon *d)
{
    char log[16384];
    ASSERT_TRUE(http_daemon_log(d, log, sizeof(log)));
    ASSERT_STR_CONTAINS(log, "--max-connections 100000 is more than the descriptor limit (ulimit -n 400)");
    ASSERT_STR_CONTAINS(log, "using 208");
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_max_connections_held_to_fd_limit)
{
    static const char *const ARGS[] = {"--max-connections", "100000", NULL};
    struct rlimit old, low;
    ASSERT_EQ_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 400;   /* inherited by the daemon: 400 - 128 kept - 64 reserved = 208 */
    ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
    enum test_result r = http_run(&LENET, 1, ARGS, connections_held_to_fd_limit);
    setrlimit(RLIMIT_NOFILE, &old);
    return r;
}
