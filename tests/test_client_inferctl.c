/*
 * test_client_inferctl.c - build/inferctl's server commands as a script
 * would use them: output and exit codes against a real inferd (0 ok, 1 the
 * server said no, 2 usage, 3 no server), answers equal to the offline
 * "inferctl run" on the same images and to the offline model on raw data.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_harness.h"
#include "http_harness.h"
#include "test.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

/* Runs "inferctl --url <daemon> ARGS..." (port 0: a closed port). */
static bool ctl(int port, const char *const *args, struct client_run *r)
{
    char url[64];
    const char *argv[32] = {"--url", client_url(port ? port : client_closed_port(), url,
                                                sizeof(url))};
    int n = 2;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return client_run_tool("inferctl", argv, r);
}

#define CTL(port, r, ...) ctl((port), (const char *const[]){__VA_ARGS__, NULL}, (r))

static enum test_result health_models_metadata(struct http_daemon *d)
{
    struct client_run r;
    ASSERT_TRUE(CTL(d->port, &r, "health"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "ready: yes");
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "health", "lenet5"));
    ASSERT_EQ_INT(r.status, 0);
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "models"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "lenet5");
    ASSERT_STR_CONTAINS(r.out, "READY");
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "metadata", "lenet5"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "[-1, 1, 28, 28]");
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "metadata"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "server: inferd");
    client_run_free(&r);
    /* an unknown model: the server's message and status, exit 1 */
    ASSERT_TRUE(CTL(d->port, &r, "metadata", "ghost"));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "unknown model 'ghost'");
    ASSERT_STR_CONTAINS(r.err, "HTTP 404");
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "classify", "ghost", "tests/data/images/gray1.png"));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "HTTP 404");
    client_run_free(&r);
    /* model control is off: 403 */
    ASSERT_TRUE(CTL(d->port, &r, "unload", "lenet5"));
    ASSERT_EQ_INT(r.status, 1);
    ASSERT_STR_CONTAINS(r.err, "HTTP 403");
    client_run_free(&r);
    return TEST_PASS;
}

TEST(client_inferctl_health_metadata) { return http_run(&LENET, 1, NULL, health_models_metadata); }

TEST(client_inferctl_exit_codes)
{
    struct client_run r;
    /* nobody listens: 3, for every server command */
    static const char *const CMDS[][4] = {{"health"}, {"models"}, {"metadata", "lenet5"},
                                          {"classify", "lenet5", "tests/data/images/gray1.png"}};
    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(ctl(0, CMDS[i], &r));
        ASSERT_EQ_INT(r.status, 3);
        ASSERT_STR_CONTAINS(r.err, "cannot connect");
        client_run_free(&r);
    }
    /* usage errors: 2, before any connection */
    ASSERT_TRUE(CTL(0, &r, "classify", "lenet5"));
    ASSERT_EQ_INT(r.status, 2);
    client_run_free(&r);
    ASSERT_TRUE(CTL(0, &r, "infer", "lenet5"));
    ASSERT_EQ_INT(r.status, 2);
    ASSERT_STR_CONTAINS(r.err, "--input");
    client_run_free(&r);
    ASSERT_TRUE(CTL(0, &r, "classify", "lenet5", "x.png", "--top-k", "0"));
    ASSERT_EQ_INT(r.status, 2);
    client_run_free(&r);
    const char *const bad_global[] = {"--bogus", "health", NULL};
    ASSERT_TRUE(client_run_tool("inferctl", bad_global, &r));
    ASSERT_EQ_INT(r.status, 2);
    client_run_free(&r);
    const char *const help[] = {"help", NULL};
    ASSERT_TRUE(client_run_tool("inferctl", help, &r));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "3 cannot connect");
    ASSERT_STR_CONTAINS(r.out, "classify");
    client_run_free(&r);
    return TEST_PASS;
}

/* The class indices inferctl printed ("  0.9117  Trouser (1)"), in order. */
static int indices(const char *out, int *idx, int cap)
{
    int n = 0;
    for (const char *line = out; line && *line && n < cap; line = strchr(line, '\n'),
                    line = line ? line + 1 : NULL) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(line, "\n"), line);
        const char *open = strrchr(buf, '(');
        if (buf[0] == ' ' && open)
            idx[n++] = (int)strtol(open + 1, NULL, 10);
    }
    return n;
}

static enum test_result classify_matches_run(struct http_daemon *d)
{
    static const char *const IMAGES[] = {"tests/data/images/gray1.png",
                                         "tests/data/images/rgba.png",
                                         "tests/data/images/progressive.jpg"};
    struct client_run off, on;
    const char *const run_args[] = {"run", HTTP_SOURCE_MODEL, IMAGES[0], IMAGES[1], IMAGES[2],
                                    "--top-k", "3", "--backend", "cpu", NULL};
    ASSERT_TRUE(client_run_tool("inferctl", run_args, &off));
    ASSERT_EQ_INT(off.status, 0);
    int want[9], got[9];
    ASSERT_EQ_INT(indices(off.out, want, 9), 9);
    client_run_free(&off);
    /* several images: one multipart request; then two requests of at most 2 */
    for (int batch = 16; batch >= 2; batch -= 14) {
        char b[8];
        snprintf(b, sizeof(b), "%d", batch);
        ASSERT_TRUE(CTL(d->port, &on, "classify", "lenet5", IMAGES[0], IMAGES[1], IMAGES[2],
                        "--top-k", "3", "--batch", b));
        ASSERT_EQ_INT(on.status, 0);
        ASSERT_EQ_INT(indices(on.out, got, 9), 9);
        ASSERT_TRUE(strstr(on.out, IMAGES[2]) > strstr(on.out, IMAGES[1]));
        client_run_free(&on);
        for (int i = 0; i < 9; i++)
            ASSERT_EQ_INT(got[i], want[i]);
    }
    ASSERT_TRUE(CTL(d->port, &on, "classify", "lenet5", IMAGES[0], "--top-k", "1", "--multipart"));
    ASSERT_EQ_INT(on.status, 0);
    ASSERT_EQ_INT(indices(on.out, got, 9), 1);
    ASSERT_EQ_INT(got[0], want[0]);
    client_run_free(&on);
    return TEST_PASS;
}

TEST(client_inferctl_classify) { return http_run(&LENET, 1, NULL, classify_matches_run); }

static enum test_result infer_raw_and_json(struct http_daemon *d)
{
    enum { ROWS = 2 };
    static float x[ROWS * 784], want[ROWS * 10];
    test_rand_fill(x, (int64_t)ROWS * 784, -0.8f, 2.8f);
    /* raw rows whose first byte is '{' are still raw rows (they were sent
     * as a malformed JSON body once in 256 runs) */
    uint32_t bits;
    memcpy(&bits, &x[0], sizeof(bits));
    bits = (bits & ~0xFFu) | '{';
    memcpy(&x[0], &bits, sizeof(bits));
    struct http_offline off;
    ASSERT_TRUE(http_offline_open(&off, HTTP_SOURCE_MODEL));
    bool ran = http_offline_run(&off, ROWS, x, want);
    http_offline_close(&off);
    ASSERT_TRUE(ran);
    char raw[] = "/tmp/inferctl-raw-XXXXXX", json[] = "/tmp/inferctl-json-XXXXXX";
    int fr = mkstemp(raw), fj = mkstemp(json);
    ASSERT_TRUE(fr >= 0 && fj >= 0);
    bool wrote = write(fr, x, sizeof(x)) == (ssize_t)sizeof(x);
    char *body = http_infer_json(x, 1, NULL);
    wrote = wrote && body && write(fj, body, strlen(body)) == (ssize_t)strlen(body);
    free(body);
    close(fr);
    close(fj);
    enum test_result result = wrote ? TEST_PASS : TEST_FAIL;
    for (int mode = 0; mode < 3 && result == TEST_PASS; mode++) {
        struct client_run r;
        bool ok = mode == 0   ? CTL(d->port, &r, "infer", "lenet5", "--input", raw)
                  : mode == 1 ? CTL(d->port, &r, "infer", "lenet5", "--input", raw, "--binary")
                              : CTL(d->port, &r, "infer", "lenet5", "--input", json);
        int rows = mode == 2 ? 1 : ROWS;
        float got[ROWS * 10];
        int n = 0;
        const char *p = ok && r.status == 0 ? strstr(r.out, "logits FP32 [") : NULL;
        p = p ? strchr(p, '\n') : NULL;
        for (char *end; p && n < rows * 10; p = end) {
            got[n] = strtof(p, &end);
            if (end == p)
                break;
            n++;
        }
        if (n != rows * 10 || test_rel_error(got, want, (int64_t)rows * 10) > 1e-5) {
            printf("  mode %d: status %d, %d values, output:\n%s\n  stderr:\n%s\n", mode, r.status, n,
                   r.out ? r.out : "", r.err ? r.err : "");
            result = TEST_FAIL;
        }
        client_run_free(&r);
    }
    struct client_run r;
    if (result == TEST_PASS && CTL(d->port, &r, "infer", "lenet5", "--input", raw,
                                   "--classification", "1")) {
        char want_idx[16];
        snprintf(want_idx, sizeof(want_idx), ":%d:", http_argmax(want, 10));
        if (r.status != 0 || !strstr(r.out, "logits BYTES [2, 1]") || !strstr(r.out, want_idx))
            result = TEST_FAIL;
        client_run_free(&r);
    }
    /* a request file cut short is neither JSON nor whole rows: said so */
    static const char CUT[] = "{\"inputs\": [{\"name\": \"input\", \"shape\": [1, 784]";
    FILE *f = result == TEST_PASS ? fopen(json, "w") : NULL;
    if (!f) {
        result = TEST_FAIL;
    } else {
        bool cut = fputs(CUT, f) >= 0;
        cut = fclose(f) == 0 && cut;
        if (!cut || !CTL(d->port, &r, "infer", "lenet5", "--input", json)) {
            result = TEST_FAIL;
        } else {
            if (r.status != 1 || !strstr(r.err, "nor a JSON request (it does not parse)")) {
                printf("  cut-short JSON: status %d, stderr:\n%s\n", r.status, r.err ? r.err : "");
                result = TEST_FAIL;
            }
            client_run_free(&r);
        }
    }
    unlink(raw);
    unlink(json);
    return result;
}

TEST(client_inferctl_infer) { return http_run(&LENET, 1, NULL, infer_raw_and_json); }

static enum test_result load_unload(struct http_daemon *d)
{
    struct client_run r;
    ASSERT_TRUE(CTL(d->port, &r, "unload", "lenet5"));
    ASSERT_EQ_INT(r.status, 0);
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "health", "lenet5"));
    ASSERT_EQ_INT(r.status, 1); /* answered "not ready" */
    ASSERT_STR_CONTAINS(r.out, "lenet5: no");
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "models"));
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_TRUE(strstr(r.out, "lenet5") && !strstr(r.out, "READY"));
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "load", "lenet5"));
    ASSERT_EQ_INT(r.status, 0);
    client_run_free(&r);
    ASSERT_TRUE(CTL(d->port, &r, "health", "lenet5"));
    ASSERT_EQ_INT(r.status, 0);
    client_run_free(&r);
    return TEST_PASS;
}

TEST(client_inferctl_load_unload)
{
    static const char *const ARGS[] = {"--enable-model-control", NULL};
    return http_run(&LENET, 1, ARGS, load_unload);
}

/* Issue 23 item 3: "inferctl models" lists each model that failed to load
 * with its state and the reason (the repository index answers with model
 * control off too), beside the one that serves; the log names every failure,
 * not only the first. */
static enum test_result models_with_failure(struct http_daemon *d)
{
    for (int i = 0; i < 200 && http_status(d, "GET", "/v2/models/lenet5/ready", NULL, NULL, 0) != 200; i++)
        usleep(10 * 1000);
    struct client_run r;
    ASSERT_TRUE(CTL(d->port, &r, "models"));
    ASSERT_EQ_INT(r.status, 0);
    const char *bad = strstr(r.out, "\nbroken ");
    const char *good = strstr(r.out, "\nlenet5 ");
    if (!bad || !good)
        printf("  inferctl models:\n%s", r.out);
    ASSERT_TRUE(bad && good);
    const char *bad_end = strchr(bad + 1, '\n');
    const char *good_end = strchr(good + 1, '\n');
    ASSERT_TRUE(bad_end && good_end);
    char line[512];
    snprintf(line, sizeof(line), "%.*s", (int)(bad_end - bad - 1), bad + 1);
    printf("  %s\n", line);
    ASSERT_STR_CONTAINS(line, "UNAVAILABLE");
    ASSERT_STR_CONTAINS(line, "UNAVAILABLE  broken/"); /* the reason, naming the file that failed */
    snprintf(line, sizeof(line), "%.*s", (int)(good_end - good - 1), good + 1);
    ASSERT_STR_CONTAINS(line, "READY");
    ASSERT_STR_CONTAINS(r.out, "\nbroken2 ");
    client_run_free(&r);
    static char log[65536];
    ASSERT_TRUE(http_daemon_log(d, log, sizeof(log)));
    ASSERT_STR_CONTAINS(log, "model broken failed to load: broken/");
    ASSERT_STR_CONTAINS(log, "model broken2 failed to load: broken2/");
    return TEST_PASS;
}

TEST(client_inferctl_models_lists_failed_with_reason)
{
    struct http_model_spec specs[3] = {HTTP_MODEL_SPEC("lenet5"), HTTP_MODEL_SPEC("broken"),
                                       HTTP_MODEL_SPEC("broken2")};
    specs[1].broken = specs[2].broken = true;
    static const char *const KEEP_GOING[] = {"--exit-on-error", "false", NULL};
    return http_run(specs, 3, KEEP_GOING, models_with_failure);
}
