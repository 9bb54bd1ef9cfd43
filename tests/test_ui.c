/*
 * test_ui.c - inferd's web page: its assets and their headers over HTTP,
 * --no-ui, and the page itself in a headless chromium (driven over the
 * WebDriver protocol, webdriver.h) against a live inferd: upload
 * Fashion-MNIST test pictures written as PNG, read each top label against
 * the offline prediction, see the live panel count the requests, and save a
 * screenshot to tests/artifacts/ui.png.
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http_harness.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "test.h"
#include "webdriver.h"

static const struct http_model_spec LENET = HTTP_MODEL_SPEC("lenet5");

/* The browser part's budget: chromium starts in a few seconds, the page
 * polls /metrics every 2 s; everything else is milliseconds. With one
 * WebDriver command that hangs to its own limit (webdriver.c) past this,
 * the test still ends within 60 s. */
enum { N_PICTURES = 3, BROWSER_BUDGET_MS = 40000, POLL_MS = 100 };

static bool get(const struct http_daemon *d, const char *path, const char *const *headers,
                struct wd_http_resp *r)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", d->port, path);
    return wd_http("GET", url, headers, NULL, r);
}

/* The value of one header in raw header lines ("" when absent). */
static const char *header(const char *lines, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    out[0] = '\0';
    for (const char *p = lines; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1 + strspn(p + n + 1, " ");
            size_t len = strcspn(v, "\r\n");
            snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), v);
            break;
        }
    }
    return out;
}

/* ------------------------------------------------------------ over HTTP */

static enum test_result assets(struct http_daemon *d)
{
    struct wd_http_resp r;
    char v[512], etag[64];
    ASSERT_TRUE(get(d, "/", NULL, &r));
    ASSERT_EQ_INT(r.status, 200);
    ASSERT_STR_EQ(header(r.headers, "Content-Type", v, sizeof(v)), "text/html; charset=utf-8");
    ASSERT_STR_EQ(header(r.headers, "Cache-Control", v, sizeof(v)), "no-cache");
    ASSERT_STR_EQ(header(r.headers, "X-Content-Type-Options", v, sizeof(v)), "nosniff");
    ASSERT_STR_CONTAINS(header(r.headers, "Content-Security-Policy", v, sizeof(v)),
                        "default-src 'none'");
    ASSERT_STR_CONTAINS(v, "connect-src 'self'");
    ASSERT_TRUE(header(r.headers, "ETag", etag, sizeof(etag))[0] == '"');
    /* Offline: everything the page loads comes from this server. */
    ASSERT_STR_CONTAINS(r.body, "src=\"/ui/app.js\"");
    ASSERT_STR_CONTAINS(r.body, "href=\"/ui/style.css\"");
    ASSERT_TRUE(!strstr(r.body, "://"));
    wd_http_free(&r);

    char inm[96];
    snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
    const char *const conditional[] = {inm, NULL};
    ASSERT_TRUE(get(d, "/", conditional, &r));
    ASSERT_EQ_INT(r.status, 304);
    ASSERT_EQ_INT(r.len, 0);
    wd_http_free(&r);

    static const struct {
        const char *path, *type;
    } FILES[] = {
        {"/ui/index.html", "text/html; charset=utf-8"},
        {"/ui/app.js", "text/javascript; charset=utf-8"},
        {"/ui/style.css", "text/css; charset=utf-8"},
        {"/ui/favicon.svg", "image/svg+xml"},
    };
    for (size_t i = 0; i < sizeof(FILES) / sizeof(FILES[0]); i++) {
        ASSERT_TRUE(get(d, FILES[i].path, NULL, &r));
        ASSERT_EQ_INT(r.status, 200);
        ASSERT_STR_EQ(header(r.headers, "Content-Type", v, sizeof(v)), FILES[i].type);
        ASSERT_STR_CONTAINS(header(r.headers, "Content-Security-Policy", v, sizeof(v)),
                            "default-src 'none'");
        if (strstr(FILES[i].path, ".js")) {
            ASSERT_TRUE(!strstr(r.body, "://"));
            ASSERT_TRUE(!strstr(r.body, "/v2/repository")); /* never model control */
            ASSERT_STR_CONTAINS(r.body, "/classify?top_k=");
        }
        wd_http_free(&r);
    }
    ASSERT_EQ_INT(http_status(d, "GET", "/ui/nope.js", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/ui/", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/index.html", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "POST", "/", "text/plain", "x", 1), 405);
    return TEST_PASS;
}

TEST(ui_assets_and_headers) { return http_run(&LENET, 1, NULL, assets); }

static enum test_result disabled(struct http_daemon *d)
{
    ASSERT_EQ_INT(http_status(d, "GET", "/", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/ui/app.js", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/ui/index.html", NULL, NULL, 0), 404);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/health/ready", NULL, NULL, 0), 200);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(ui_disabled_by_no_ui)
{
    static const char *const args[] = {"--no-ui", NULL};
    return http_run(&LENET, 1, args, disabled);
}

/* ------------------------------------------------------------ in a browser */

struct picture {
    char path[PATH_MAX];
    char name[32];
    char label[64];               /* the offline model's top label */
};

/* Writes the first N_PICTURES test images as PNG files in dir, each with
 * its offline prediction. */
static bool write_pictures(const char *dir, struct picture *pics)
{
    struct rt_error err = {RT_OK, ""};
    struct rt_dataset ds;
    if (rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK) {
        printf("  %s\n", err.msg);
        return false;
    }
    struct http_offline off;
    bool ok = http_offline_open(&off, HTTP_SOURCE_MODEL);
    int64_t in_elems = ok ? off.cfg->inputs[0].sample_elems : 0;
    int classes = ok ? (int)off.cfg->outputs[0].sample_elems : 0;
    float *x = malloc((size_t)(N_PICTURES * in_elems + 1) * sizeof(float));
    float *y = malloc((size_t)(N_PICTURES * classes + 1) * sizeof(float));
    ok = ok && x && y && off.cfg->labels;
    for (int i = 0; ok && i < N_PICTURES; i++) {
        struct rt_image img = {ds.cols, ds.rows, 1, ds.images + (size_t)i * ds.rows * ds.cols};
        ok = rt_image_preprocess(&img, &off.cfg->pre, x + i * in_elems, &err) == RT_OK;
        uint8_t *png = NULL;
        size_t len = 0;
        ok = ok && rt_image_encode_png(&img, &png, &len, &err) == RT_OK;
        snprintf(pics[i].name, sizeof(pics[i].name), "fashion-%d.png", i);
        snprintf(pics[i].path, sizeof(pics[i].path), "%s/%s", dir, pics[i].name);
        FILE *f = ok ? fopen(pics[i].path, "wb") : NULL;
        ok = f && fwrite(png, 1, len, f) == len;
        if (f && fclose(f) != 0)
            ok = false;
        free(png);
    }
    ok = ok && http_offline_run(&off, N_PICTURES, x, y);
    for (int i = 0; ok && i < N_PICTURES; i++)
        snprintf(pics[i].label, sizeof(pics[i].label), "%s",
                 off.cfg->labels[http_argmax(y + (size_t)i * classes, classes)]);
    if (!ok)
        printf("  cannot prepare the test pictures%s%s\n", err.msg[0] ? ": " : "", err.msg);
    free(x);
    free(y);
    http_offline_close(&off);
    rt_dataset_free(&ds);
    return ok;
}


static void sleep_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls until at least `want` elements match css; their count (possibly
 * fewer at the deadline), or -1 when the page shows an error (printed) and
 * the error is not what is awaited (it may appear between the two queries). */
static int wait_for(struct wd *w, const char *css, int want, long long deadline,
                    char ids[][WD_ID_MAX], int max)
{
    char err_id[1][WD_ID_MAX], text[512];
    for (;;) {
        int n = wd_find_all(w, NULL, css, ids, max);
        if (n >= want || (long long)test_now_ms() > deadline)
            return n;
        if (strcmp(css, "#error:not([hidden])") != 0 && wd_find_all(w, NULL, "#error:not([hidden])", err_id, 1) == 1) {
            printf("  the page shows an error: %s\n",
                   wd_text(w, err_id[0], text, sizeof(text)) ? text : w->error);
            return -1;
        }
        sleep_ms(POLL_MS);
    }
}

static const char NOT_AN_IMAGE[] = "plain text, not a picture\n";

static enum test_result drive(struct wd *w, const struct http_daemon *d,
                              const struct picture *pics, const char *bad_path,
                              long long deadline)
{
    char expected[256];
    char url[64], ids[N_PICTURES + 1][WD_ID_MAX], sub[1][WD_ID_MAX], rows[8][WD_ID_MAX];
    char text[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", d->port);
    TEST_FAIL_IF(!wd_navigate(w, url), "%s", w->error);
    /* The page lists the models itself; the drop zone is a real button. */
    ASSERT_EQ_INT(wait_for(w, "#model option[value='lenet5']", 1, deadline, ids, 1), 1);
    ASSERT_EQ_INT(wd_find_all(w, NULL, "button#drop", ids, 1), 1);

    char paths[N_PICTURES * PATH_MAX];
    paths[0] = '\0';
    for (int i = 0; i < N_PICTURES; i++)
        snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths), "%s%s", i ? "\n" : "",
                 pics[i].path);
    ASSERT_EQ_INT(wd_find_all(w, NULL, "input#file[type='file']", ids, 1), 1);
    TEST_FAIL_IF(!wd_send_keys(w, ids[0], paths), "%s", w->error);

    int n = wait_for(w, "#results .result", N_PICTURES, deadline, ids, N_PICTURES + 1);
    ASSERT_EQ_INT(n, N_PICTURES);
    for (int i = 0; i < N_PICTURES; i++) {
        ASSERT_EQ_INT(wd_find_all(w, ids[i], "h3", sub, 1), 1);
        ASSERT_TRUE(wd_text(w, sub[0], text, sizeof(text)));
        ASSERT_STR_EQ(text, pics[i].name);
        ASSERT_EQ_INT(wd_find_all(w, ids[i], ".preds li .label", sub, 1), 1);
        ASSERT_TRUE(wd_text(w, sub[0], text, sizeof(text)));
        printf("  %s: the page says \"%s\", offline \"%s\"\n", pics[i].name, text, pics[i].label);
        ASSERT_STR_EQ(text, pics[i].label);
        ASSERT_EQ_INT(wd_find_all(w, ids[i], ".preds li", rows, 8), 5); /* top_k=5 */
        ASSERT_EQ_INT(wd_find_all(w, ids[i], ".timing", sub, 1), 1);
        ASSERT_TRUE(wd_text(w, sub[0], text, sizeof(text)));
        ASSERT_STR_CONTAINS(text, "compute");
    }

    /* The live panel polls /metrics every 2 s: wait for it to count them. */
    long requests = 0;
    ASSERT_EQ_INT(wd_find_all(w, NULL, "#m-requests", ids, 1), 1);
    while (requests <= 0 && (long long)test_now_ms() < deadline) {
        ASSERT_TRUE(wd_text(w, ids[0], text, sizeof(text)));
        requests = strtol(text, NULL, 10);
        if (requests <= 0)
            sleep_ms(POLL_MS * 5);
    }
    printf("  live panel: %ld request(s)\n", requests);
    ASSERT_GE(requests, 1);

    char shot[PATH_MAX];
    snprintf(shot, sizeof(shot), "%s/tests/artifacts", test_root());
    mkdir(shot, 0755);
    snprintf(shot + strlen(shot), sizeof(shot) - strlen(shot), "/ui.png");
    TEST_FAIL_IF(!wd_screenshot(w, shot), "%s", w->error);
    printf("  screenshot: %s\n", shot);

    /* A file that is no image: the page shows the server's own message. */
    struct http_resp direct;
    http_post(d, "/v2/models/lenet5/classify", "text/plain", NOT_AN_IMAGE,
              sizeof(NOT_AN_IMAGE) - 1, &direct);
    cJSON *root = cJSON_Parse(direct.body ? direct.body : "");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "error");
    snprintf(expected, sizeof(expected), "%s", cJSON_IsString(msg) ? msg->valuestring : "?");
    cJSON_Delete(root);
    http_resp_free(&direct);
    ASSERT_EQ_INT(wd_find_all(w, NULL, "input#file", ids, 1), 1);
    TEST_FAIL_IF(!wd_send_keys(w, ids[0], bad_path), "%s", w->error);
    ASSERT_EQ_INT(wait_for(w, "#error:not([hidden])", 1, deadline, ids, 1), 1);
    ASSERT_TRUE(wd_text(w, ids[0], text, sizeof(text)));
    ASSERT_STR_EQ(text, expected);
    return TEST_PASS;
}

static enum test_result browser(struct http_daemon *d)
{
    long long deadline = (long long)test_now_ms() + BROWSER_BUDGET_MS;
    char dir[] = "/tmp/inferd-ui-XXXXXX";
    struct picture pics[N_PICTURES];
    memset(pics, 0, sizeof(pics));
    TEST_FAIL_IF(!mkdtemp(dir), "cannot create a temporary folder");
    enum test_result r = TEST_FAIL;
    struct wd w;
    char bad_path[PATH_MAX];
    snprintf(bad_path, sizeof(bad_path), "%s/not-an-image.txt", dir);
    FILE *f = fopen(bad_path, "wb");
    bool bad_written = f && fputs(NOT_AN_IMAGE, f) >= 0;
    if (f && fclose(f) != 0)
        bad_written = false;
    if (!bad_written || !write_pictures(dir, pics)) {
        printf("  cannot write the test pictures\n");
    } else if (!wd_start(&w, 1200, 1100)) {
        printf("  skip: chromium cannot be started: %s\n", w.error);
        r = TEST_SKIP;
    } else {
        r = drive(&w, d, pics, bad_path, deadline);
        wd_stop(&w);
    }
    for (int i = 0; i < N_PICTURES; i++) {
        if (pics[i].path[0])
            unlink(pics[i].path);
    }
    unlink(bad_path);
    rmdir(dir);
    return r;
}

TEST(ui_browser_classifies_upload) { return http_run(&LENET, 1, NULL, browser); }
