/* webdriver.c - chromedriver and the W3C WebDriver protocol over libcurl
 * (see webdriver.h). */
#include "webdriver.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The key under which WebDriver returns an element reference. */
#define WD_ELEMENT_KEY "element-6066-11e4-a52e-4f735466cecf"

/* Chromium's start can take a few seconds on a loaded machine; a single
 * command should never take long. */
enum { WD_DRIVER_START_MS = 15000, WD_CALL_TIMEOUT_S = 20 };

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void set_error(struct wd *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct wd *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof(w->error), fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ plain HTTP */

struct grow {
    char *p;
    size_t len;
};

static size_t on_data(char *data, size_t size, size_t n, void *user)
{
    struct grow *g = user;
    char *p = realloc(g->p, g->len + size * n + 1);
    if (!p)
        return 0;
    memcpy(p + g->len, data, size * n);
    g->len += size * n;
    p[g->len] = '\0';
    g->p = p;
    return size * n;
}

bool wd_http(const char *method, const char *url, const char *const *extra_headers,
             const char *body, struct wd_http_resp *out)
{
    pthread_once(&curl_once, curl_init);
    memset(out, 0, sizeof(*out));
    CURL *c = curl_easy_init();
    if (!c)
        return false;
    struct grow head = {0}, data = {0};
    struct curl_slist *hl = curl_slist_append(NULL, "Expect:");
    if (body)
        hl = curl_slist_append(hl, "Content-Type: application/json");
    for (int i = 0; extra_headers && extra_headers[i]; i++)
        hl = curl_slist_append(hl, extra_headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &data);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)WD_CALL_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    out->headers = head.p ? head.p : strdup("");
    out->body = data.p ? data.p : strdup("");
    out->len = data.len;
    return rc == CURLE_OK && out->headers && out->body;
}

void wd_http_free(struct wd_http_resp *r)
{
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------ protocol */

/* One command: body (taken, may be NULL) to method path under the driver.
 * On success the answer's "value" is detached into *value (may be NULL). */
static bool call(struct wd *w, const char *method, const char *path, cJSON *body, cJSON **value)
{
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w->port, path);
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    struct wd_http_resp r;
    bool sent = wd_http(method, url, NULL, text, &r);
    free(text);
    cJSON *root = sent ? cJSON_ParseWithLength(r.body, r.len) : NULL;
    cJSON *v = root ? cJSON_DetachItemFromObjectCaseSensitive(root, "value") : NULL;
    bool ok = sent && r.status == 200 && v;
    if (!sent) {
        set_error(w, "%s %s: no answer from chromedriver", method, path);
    } else if (!ok) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "message");
        set_error(w, "%s %s: HTTP %ld: %s: %.300s", method, path, r.status,
                  cJSON_IsString(e) ? e->valuestring : "?",
                  cJSON_IsString(m) ? m->valuestring : r.body);
    }
    cJSON_Delete(root);
    wd_http_free(&r);
    if (ok && value)
        *value = v;
    else
        cJSON_Delete(v);
    return ok;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void append_log_tail(struct wd *w)
{
    FILE *f = fopen(w->log, "rb");
    if (!f)
        return;
    char tail[200];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof(tail) - 1 ? size - (long)sizeof(tail) + 1 : 0, SEEK_SET);
    size_t n = fread(tail, 1, sizeof(tail) - 1, f);
    tail[n] = '\0';
    fclose(f);
    if (n == 0)
        return;
    size_t used = strlen(w->error);
    snprintf(w->error + used, sizeof(w->error) - used, " [chromedriver: %s]", tail);
}

static bool start_driver(struct wd *w)
{
    w->port = free_port();
    snprintf(w->log, sizeof(w->log), "/tmp/inferd-chromedriver-XXXXXX");
    int log_fd = mkstemp(w->log);
    if (w->port < 0 || log_fd < 0) {
        set_error(w, "no free loopback port or temporary file");
        if (log_fd >= 0)
            close(log_fd);
        return false;
    }
    char port_arg[32];
    snprintf(port_arg, sizeof(port_arg), "--port=%d", w->port);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(log_fd);
        set_error(w, "fork: %s", strerror(errno));
        return false;
    }
    if (pid == 0) {
        /* Its own group, so wd_stop ends the browser it starts too. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        close(log_fd);
        execlp("chromedriver", "chromedriver", port_arg, (char *)NULL);
        fprintf(stderr, "cannot run chromedriver: %s\n", strerror(errno));
        _exit(127);
    }
    close(log_fd);
    setpgid(pid, pid);
    w->driver = pid;
    for (int waited = 0; waited < WD_DRIVER_START_MS; waited += 50) {
        cJSON *status = NULL;
        if (call(w, "GET", "/status", NULL, &status)) {
            bool ready = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "ready"));
            cJSON_Delete(status);
            if (ready)
                return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            w->driver = 0;
            set_error(w, "chromedriver exited at start (is chromium-driver installed?)");
            append_log_tail(w);
            return false;
        }
        sleep_ms(50);
    }
    set_error(w, "chromedriver did not become ready within %d ms", WD_DRIVER_START_MS);
    append_log_tail(w);
    return false;
}

bool wd_start(struct wd *w, int width, int height)
{
    memset(w, 0, sizeof(*w));
    if (!start_driver(w)) {
        wd_stop(w);
        return false;
    }
    /* Root in a container needs --no-sandbox; a small /dev/shm needs
     * --disable-dev-shm-usage; --headless=new renders as a real window does. */
    char size[64];
    snprintf(size, sizeof(size), "--window-size=%d,%d", width, height);
    const char *args[] = {"--headless=new", "--no-sandbox", "--disable-gpu",
                          "--disable-dev-shm-usage", "--hide-scrollbars", size};
    cJSON *body = cJSON_CreateObject();
    cJSON *opts = cJSON_AddObjectToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "capabilities"), "alwaysMatch"),
        "goog:chromeOptions");
    cJSON *arr = cJSON_AddArrayToObject(opts, "args");
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(args[i]));
    cJSON *value = NULL;
    if (!call(w, "POST", "/session", body, &value)) {
        append_log_tail(w);
        wd_stop(w);
        return false;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(value, "sessionId");
    if (cJSON_IsString(id))
        snprintf(w->session, sizeof(w->session), "%s", id->valuestring);
    cJSON_Delete(value);
    if (!w->session[0]) {
        set_error(w, "chromedriver gave no session id");
        wd_stop(w);
        return false;
    }
    return true;
}

void wd_stop(struct wd *w)
{
    char path[160];
    if (w->session[0]) {
        snprintf(path, sizeof(path), "/session/%s", w->session);
        call(w, "DELETE", path, NULL, NULL);
        w->session[0] = '\0';
    }
    if (w->driver > 0) {
        kill(-w->driver, SIGTERM);
        int waited = 0;
        while (waitpid(w->driver, NULL, WNOHANG) == 0 && waited < 5000) {
            sleep_ms(20);
            waited += 20;
        }
        if (waited >= 5000) {
            kill(-w->driver, SIGKILL);
            waitpid(w->driver, NULL, 0);
        }
        w->driver = 0;
    }
    if (w->log[0])
        unlink(w->log);
    w->log[0] = '\0';
}

bool wd_navigate(struct wd *w, const char *url)
{
    char path[160];
    snprintf(path, sizeof(path), "/session/%s/url", w->session);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "url", url);
    return call(w, "POST", path, body, NULL);
}

int wd_find_all(struct wd *w, const char *from, const char *css, char ids[][WD_ID_MAX], int max)
{
    char path[320];
    if (from)
        snprintf(path, sizeof(path), "/session/%s/element/%s/elements", w->session, from);
    else
        snprintf(path, sizeof(path), "/session/%s/elements", w->session);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "using", "css selector");
    cJSON_AddStringToObject(body, "value", css);
    cJSON *value = NULL;
    if (!call(w, "POST", path, body, &value))
        return -1;
    int n = 0;
    for (const cJSON *e = cJSON_IsArray(value) ? value->child : NULL; e && n < max; e = e->next) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, WD_ELEMENT_KEY);
        if (cJSON_IsString(id))
            snprintf(ids[n++], WD_ID_MAX, "%s", id->valuestring);
    }
    cJSON_Delete(value);
    return n;
}

bool wd_send_keys(struct wd *w, const char *elem, const char *text)
{
    char path[320];
    snprintf(path, sizeof(path), "/session/%s/element/%s/value", w->session, elem);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "text", text);
    return call(w, "POST", path, body, NULL);
}

bool wd_text(struct wd *w, const char *elem, char *out, size_t cap)
{
    char path[320];
    snprintf(path, sizeof(path), "/session/%s/element/%s/text", w->session, elem);
    cJSON *value = NULL;
    bool ok = call(w, "GET", path, NULL, &value) && cJSON_IsString(value);
    if (ok)
        snprintf(out, cap, "%s", value->valuestring);
    cJSON_Delete(value);
    return ok;
}

/* Decodes standard base64 in place; the decoded length, or -1. */
static long base64_decode(char *s)
{
    static const char ALPHABET[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned acc = 0;
    int bits = 0;
    long n = 0;
    for (const char *p = s; *p && *p != '='; p++) {
        const char *at = strchr(ALPHABET, *p);
        if (!at)
            return -1;
        acc = (acc << 6) | (unsigned)(at - ALPHABET);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            s[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    return n;
}

bool wd_screenshot(struct wd *w, const char *png_path)
{
    char path[160];
    snprintf(path, sizeof(path), "/session/%s/screenshot", w->session);
    cJSON *value = NULL;
    if (!call(w, "GET", path, NULL, &value) || !cJSON_IsString(value)) {
        cJSON_Delete(value);
        return false;
    }
    long n = base64_decode(value->valuestring);
    FILE *f = n > 0 ? fopen(png_path, "wb") : NULL;
    bool ok = f && fwrite(value->valuestring, 1, (size_t)n, f) == (size_t)n;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        set_error(w, "cannot write the screenshot to %s", png_path);
    cJSON_Delete(value);
    return ok;
}
