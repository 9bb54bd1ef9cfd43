/* http_harness.c - inferd child processes, libcurl and raw-socket requests,
 * offline model runs for the HTTP integration tests (see http_harness.h). */
#include "http_harness.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
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


/* A growable byte buffer (aborts on allocation failure: a broken test run). */
struct hbuf {
    char *p;
    size_t len, cap;
};

static void hbuf_append(struct hbuf *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        RT_ASSERT(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void hbuf_printf(struct hbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hbuf_printf(struct hbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    RT_ASSERT(n >= 0 && (size_t)n < sizeof(tmp));
    hbuf_append(b, tmp, (size_t)n);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool http_source_model_present(void)
{
    return access(HTTP_SOURCE_MODEL "/model.json", R_OK) == 0 &&
           access(HTTP_SOURCE_MODEL "/model.safetensors", R_OK) == 0;
}

/* ------------------------------------------------------------ repository */

static bool set_number(cJSON *obj, const char *key, double v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    return cJSON_AddNumberToObject(obj, key, v) != NULL;
}

/* A copy, not a symlink: inferd refuses files that link outside its repository. */
static bool copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    bool ok = in && out;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = false;
    return ok;
}

static bool write_model(const char *repo, const struct http_model_spec *s)
{
    char dir[PATH_MAX], src[PATH_MAX], path[PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%s/%s", repo, s->name);
    if (mkdir(dir, 0755) != 0 || !realpath(HTTP_SOURCE_MODEL, src))
        return false;
    if (s->broken) {
        snprintf(path, sizeof(path), "%s/model.json", dir);
        FILE *f = fopen(path, "w");
        return f && fputs("{\"format_version\": 1, \"nodes\": [", f) >= 0 && fclose(f) == 0;
    }
    static const char *const COPIED[] = {"model.safetensors", "labels.txt"};
    for (int i = 0; i < 2; i++) {
        char target[PATH_MAX + 64];
        snprintf(target, sizeof(target), "%s/%s", src, COPIED[i]);
        snprintf(path, sizeof(path), "%s/%s", dir, COPIED[i]);
        if (access(target, R_OK) == 0 && !copy_file(target, path))
            return false;
    }
    snprintf(path, sizeof(path), "%s/model.json", src);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
    cJSON_AddStringToObject(root, "name", s->name);
    if (s->max_batch_size > 0)
        set_number(root, "max_batch_size", s->max_batch_size);
    cJSON *db = cJSON_GetObjectItemCaseSensitive(root, "dynamic_batching");
    if (!db)
        db = cJSON_AddObjectToObject(root, "dynamic_batching");
    if (s->max_queue_delay_us >= 0)
        set_number(db, "max_queue_delay_us", (double)s->max_queue_delay_us);
    if (s->max_queue_size >= 0)
        set_number(db, "max_queue_size", s->max_queue_size);
    if (s->default_timeout_us >= 0)
        set_number(db, "default_timeout_us", (double)s->default_timeout_us);
    if (s->n_preferred >= 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(db, "preferred_batch_sizes");
        cJSON_AddItemToObject(db, "preferred_batch_sizes",
                              cJSON_CreateIntArray(s->preferred, s->n_preferred));
    }
    if (s->instances > 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(root, "instances");
        cJSON *inst = cJSON_AddObjectToObject(root, "instances");
        cJSON_AddNumberToObject(inst, "count", s->instances);
        cJSON_AddStringToObject(inst, "kind", "auto");
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    snprintf(path, sizeof(path), "%s/model.json", dir);
    f = out ? fopen(path, "wb") : NULL;
    bool ok = f && fputs(out, f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(out);
    return ok;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    if (dir[0])
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ daemon */

void http_inferd_path(char *out, size_t cap)
{
    const char *env = getenv("INFERD_BIN");
    if (env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%s/inferd", n > 0 ? self : "build");
}

bool http_daemon_log(const struct http_daemon *d, char *buf, size_t cap)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/inferd.log", d->dir);
    FILE *f = fopen(path, "rb");
    buf[0] = '\0';
    if (!f)
        return false;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return true;
}

static void print_log(const struct http_daemon *d)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/inferd.log", d->dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    printf("  --- inferd log (tail) ---\n%s  ---\n", buf);
}

static bool spawn(struct http_daemon *d, const char *const *extra)
{
    char bin[PATH_MAX], repo[PATH_MAX], port_file[PATH_MAX], log_path[PATH_MAX];
    http_inferd_path(bin, sizeof(bin));
    snprintf(repo, sizeof(repo), "%s/repo", d->dir);
    snprintf(port_file, sizeof(port_file), "%s/port", d->dir);
    snprintf(log_path, sizeof(log_path), "%s/inferd.log", d->dir);
    const char *argv[64] = {bin, "--model-repository", repo, "--http-port", "0",
                            "--port-file", port_file, "--http-threads", "2", "--threads", "1"};
    int argc = 11;
    /* gpu_check.sh runs the HTTP suite on the GPU with INFERD_TEST_BACKEND=cuda
     * (a test's own --backend, later on the line, still wins) */
    const char *backend = getenv("INFERD_TEST_BACKEND");
    if (backend && backend[0]) {
        argv[argc++] = "--backend";
        argv[argc++] = backend;
    }
    for (int i = 0; extra && extra[i] && argc < 62; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(bin, (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    d->pid = pid;
    for (int waited = 0; waited < 30000; waited += 10) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &d->port); // NOLINT(cert-err34-c): the daemon's own port file
            fclose(f);
            if (ok == 1 && d->port > 0)
                return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            d->pid = 0;
            printf("  inferd (%s) exited during start-up\n", bin);
            return false;
        }
        sleep_ms(10);
    }
    printf("  inferd did not write its port file\n");
    return false;
}

/* Spawns inferd on d->dir/repo and waits until probe answers 200; on
 * failure prints why (and the log) and cleans up. */
static bool spawn_and_wait(struct http_daemon *d, const char *const *extra_args, const char *probe)
{
    bool ok = spawn(d, extra_args);
    for (int waited = 0; ok; waited += 10) {
        struct http_resp r;
        if (http_get(d, probe, &r) && r.status == 200) {
            http_resp_free(&r);
            return true;
        }
        http_resp_free(&r);
        if (waited > 30000) {
            printf("  inferd never became ready\n");
            ok = false;
        }
        sleep_ms(10);
    }
    print_log(d);
    http_daemon_stop(d);
    return false;
}

static bool make_dirs(struct http_daemon *d, char *repo, size_t cap)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "/tmp/inferd-http-XXXXXX");
    if (!mkdtemp(d->dir)) {
        d->dir[0] = '\0';
        return false;
    }
    snprintf(repo, cap, "%s/repo", d->dir);
    return mkdir(repo, 0755) == 0;
}

bool http_daemon_start(struct http_daemon *d, const struct http_model_spec *models, int n_models,
                       const char *const *extra_args)
{
    char repo[PATH_MAX];
    bool ok = make_dirs(d, repo, sizeof(repo));
    snprintf(d->model, sizeof(d->model), "%s", n_models > 0 ? models[0].name : "");
    for (int i = 0; ok && i < n_models; i++)
        ok = write_model(repo, &models[i]);
    if (!ok) {
        printf("  cannot write the test model repository\n");
        http_daemon_stop(d);
        return false;
    }
    bool any_broken = false;
    for (int i = 0; i < n_models; i++)
        any_broken |= models[i].broken;
    return spawn_and_wait(d, extra_args, any_broken ? "/v2/health/live" : "/v2/health/ready");
}

bool http_daemon_start_custom(struct http_daemon *d, bool (*fill)(const char *repo), const char *const *extra_args,
                              const char *probe)
{
    char repo[PATH_MAX];
    if (!make_dirs(d, repo, sizeof(repo)) || !fill(repo)) {
        printf("  cannot write the test model repository\n");
        http_daemon_stop(d);
        return false;
    }
    return spawn_and_wait(d, extra_args, probe);
}

bool http_copy_source_model(const char *dir, const char *name)
{
    char src[PATH_MAX], from[PATH_MAX + 32], to[PATH_MAX + 32];
    if (!realpath(HTTP_SOURCE_MODEL, src) || (mkdir(dir, 0755) != 0 && errno != EEXIST))
        return false;
    static const char *const FILES[] = {"model.safetensors", "labels.txt", "model.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof(from), "%s/%s", src, FILES[i]);
        snprintf(to, sizeof(to), "%s/%s", dir, FILES[i]);
        if (!copy_file(from, to))
            return false;
    }
    /* the shipped model.json names its folder: name it after the model */
    FILE *f = fopen(to, "rb");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    cJSON *root = n ? cJSON_ParseWithLength(text, n) : NULL;
    if (!root)
        return false;
    cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
    cJSON_AddStringToObject(root, "name", name);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    f = out ? fopen(to, "wb") : NULL;
    bool ok = f && fputs(out, f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(out);
    return ok;
}

void http_daemon_signal(const struct http_daemon *d)
{
    if (d->pid > 0)
        kill(d->pid, SIGTERM);
}

int http_daemon_wait(struct http_daemon *d, int timeout_ms)
{
    if (d->pid <= 0)
        return -1;
    int status = 0;
    for (int waited = 0;; waited += 5) {
        pid_t p = waitpid(d->pid, &status, WNOHANG);
        if (p == d->pid)
            break;
        if (waited >= timeout_ms) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &status, 0);
            d->pid = 0;
            printf("  inferd did not exit within %d ms\n", timeout_ms);
            return -1;
        }
        sleep_ms(5);
    }
    d->pid = 0;
    if (!WIFEXITED(status)) {
        printf("  inferd died from signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -1;
    }
    return WEXITSTATUS(status);
}

int http_daemon_stop(struct http_daemon *d)
{
    int status = -1;
    if (d->pid > 0) {
        http_daemon_signal(d);
        status = http_daemon_wait(d, 20000);
        if (status != 0)
            print_log(d);
    }
    remove_tree(d->dir);
    d->dir[0] = '\0';
    return status;
}

enum test_result http_run(const struct http_model_spec *models, int n_models,
                          const char *const *extra_args, http_test_fn fn)
{
    if (!http_source_model_present())
        SKIP("%s is missing (make models)", HTTP_SOURCE_MODEL);
    struct http_daemon d;
    TEST_FAIL_IF(!http_daemon_start(&d, models, n_models, extra_args), "inferd did not start");
    enum test_result r = fn(&d);
    int status = http_daemon_stop(&d);
    TEST_FAIL_IF(status != 0, "inferd exited with status %d after the test", status);
    return r;
}

int http_run_inferd(const char *const *args, char *out, size_t cap)
{
    char bin[PATH_MAX];
    http_inferd_path(bin, sizeof(bin));
    const char *argv[32] = {bin};
    int argc = 1;
    for (int i = 0; args && args[i] && argc < 31; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pipefd[1], STDOUT_FILENO);
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t have = 0;
    ssize_t n;
    while ((n = read(pipefd[0], out + have, cap - 1 - have)) > 0 && have + (size_t)n < cap - 1)
        have += (size_t)n;
    if (n > 0)
        have += (size_t)n;
    out[have] = '\0';
    close(pipefd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ------------------------------------------------------------ requests */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    hbuf_append(user, data, size * n);
    return size * n;
}

static void header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0)
        return;
    const char *v = line + nl;
    size_t vl = len - nl;
    while (vl && (*v == ' '))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    if (vl >= cap)
        vl = cap - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    struct http_resp *r = user;
    char len[32] = "";
    header_value(data, size * n, "Content-Type:", r->content_type, sizeof(r->content_type));
    header_value(data, size * n, "Retry-After:", r->retry_after, sizeof(r->retry_after));
    header_value(data, size * n, "Inference-Header-Content-Length:", len, sizeof(len));
    if (len[0])
        r->header_len = strtol(len, NULL, 10);
    return size * n;
}

bool http_request(const struct http_daemon *d, const char *method, const char *path,
                  const char *const *headers, const void *body, size_t len, struct http_resp *out)
{
    pthread_once(&curl_once, curl_init);
    memset(out, 0, sizeof(*out));
    out->header_len = -1;
    CURL *c = curl_easy_init();
    if (!c)
        return false;
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", d->port, path);
    struct curl_slist *hl = curl_slist_append(NULL, "Expect:");
    for (int i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    struct hbuf b = {0};
    hbuf_append(&b, "", 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    out->curl_code = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    out->body = b.p;
    out->len = b.len;
    return out->curl_code == CURLE_OK && out->body;
}

bool http_get(const struct http_daemon *d, const char *path, struct http_resp *out)
{
    return http_request(d, "GET", path, NULL, NULL, 0, out);
}

bool http_post(const struct http_daemon *d, const char *path, const char *content_type,
               const void *body, size_t len, struct http_resp *out)
{
    char ct[160];
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type ? content_type : "");
    const char *headers[] = {ct, NULL};
    return http_request(d, "POST", path, content_type ? headers : NULL, body ? body : "", len, out);
}

void http_resp_free(struct http_resp *r)
{
    free(r->body);
    r->body = NULL;
}

long http_status(const struct http_daemon *d, const char *method, const char *path,
                 const char *content_type, const void *body, size_t len)
{
    char ct[160];
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type ? content_type : "");
    const char *headers[] = {ct, NULL};
    struct http_resp r;
    http_request(d, method, path, content_type ? headers : NULL, body, len, &r);
    long status = r.status;
    if (status >= 400) {
        cJSON *root = r.body ? cJSON_ParseWithLength(r.body, r.len) : NULL;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
        bool ok = cJSON_IsString(e) && !strstr(e->valuestring, d->dir) &&
                  !strstr(e->valuestring, "/tmp") && !strstr(e->valuestring, "/work");
        if (!ok) {
            printf("  bad error answer to %s %s (%ld): %s\n", method, path, status,
                   r.body ? r.body : "(none)");
            status = -2;
        }
        cJSON_Delete(root);
    }
    http_resp_free(&r);
    return status;
}

bool http_still_serves(const struct http_daemon *d)
{
    float x[784];
    for (int i = 0; i < 784; i++)
        x[i] = (float)((i * 37) % 255) / 255.0f;
    char *req = http_infer_json(x, 1, NULL);
    char path[128];
    snprintf(path, sizeof(path), "/v2/models/%s/infer", d->model);
    struct http_resp r;
    float logits[10];
    bool ok = req && http_post(d, path, "application/json", req, strlen(req), &r) &&
              r.status == 200 && http_parse_logits(r.body, logits, 10);
    if (!ok)
        printf("  the daemon no longer serves (status %ld, curl %d)\n", r.status, r.curl_code);
    http_resp_free(&r);
    free(req);
    return ok;
}

/* ------------------------------------------------------------ raw sockets */

int http_raw_connect(const struct http_daemon *d)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

bool http_raw_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

int http_raw_status(int fd, int timeout_ms)
{
    char buf[4096];
    size_t have = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0)
            return -1;
        ssize_t n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
        if (n <= 0)
            return have ? -1 : 0;
        have += (size_t)n;
        buf[have] = '\0';
        int status;
        if (strstr(buf, "\r\n") && sscanf(buf, "HTTP/1.%*d %d", &status) == 1) // NOLINT(cert-err34-c): a bad status fails the caller's check
            return status;
        if (have >= sizeof(buf) - 1)
            return -1;
    }
}

double http_metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

/* ------------------------------------------------------------ payloads */

char *http_infer_json(const float *x, int rows, const char *extra_fields)
{
    struct hbuf b = {0};
    hbuf_printf(&b, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\","
                    "\"shape\":[%d,1,28,28],\"data\":[", rows);
    for (int i = 0; i < rows * 784; i++)
        hbuf_printf(&b, "%s%.9g", i ? "," : "", (double)x[i]);
    hbuf_append(&b, "]}]", 3);
    if (extra_fields)
        hbuf_append(&b, extra_fields, strlen(extra_fields));
    hbuf_append(&b, "}", 1);
    return b.p;
}

char *http_numbers_json(const char *head, int64_t numbers, const char *tail, size_t *len)
{
    size_t h = strlen(head), t = strlen(tail);
    char *body = malloc(h + (size_t)numbers * 2 + t + 1);   /* NUL-terminated too */
    if (!body)
        return NULL;
    memcpy(body, head, h + 1);
    char *p = body + h;
    for (int64_t i = 0; i < numbers; i++, p += 2)
        p[0] = '1', p[1] = ',';
    p--;   /* the last comma gives way to the tail */
    memcpy(p, tail, t + 1);
    *len = (size_t)(p - body) + t;
    return body;
}

bool http_parse_logits(const char *body, float *out, int n)
{
    cJSON *root = body ? cJSON_Parse(body) : NULL;
    cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    cJSON *data = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(outs, 0), "data");
    bool ok = cJSON_IsArray(data) && cJSON_GetArraySize(data) == n;
    int i = 0;
    for (cJSON *v = ok ? data->child : NULL; v; v = v->next)
        out[i++] = (float)v->valuedouble;
    cJSON_Delete(root);
    return ok;
}

/* ------------------------------------------------------------ offline runs */

bool http_offline_open(struct http_offline *o, const char *model_dir)
{
    struct rt_error err = {RT_OK, ""};
    memset(o, 0, sizeof(*o));
    const struct rt_backend_options opt = {.threads = 1, .device = -1};
    if (rt_backend_create(RT_BACKEND_CPU, &opt, &o->backend, &err) != RT_OK ||
        rt_model_load(model_dir, o->backend, &o->model, &err) != RT_OK ||
        rt_session_create(o->model, &o->session, &err) != RT_OK) {
        printf("  offline model: %s\n", err.msg);
        http_offline_close(o);
        return false;
    }
    o->cfg = rt_model_config(o->model);
    return true;
}

bool http_offline_run(struct http_offline *o, int n, const float *in, float *out)
{
    int64_t in_elems = o->cfg->inputs[0].sample_elems, out_elems = o->cfg->outputs[0].sample_elems;
    for (int start = 0; start < n; start += o->cfg->max_batch_size) {
        int b = n - start < o->cfg->max_batch_size ? n - start : o->cfg->max_batch_size;
        const float *ins[1] = {in + start * in_elems};
        float *outs[1] = {out + start * out_elems};
        struct rt_error err = {RT_OK, ""};
        if (rt_session_run(o->session, b, ins, outs, &err) != RT_OK) {
            printf("  offline run: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

void http_offline_close(struct http_offline *o)
{
    if (o->session)
        rt_session_free(o->session);
    if (o->model)
        rt_model_free(o->model);
    if (o->backend)
        rt_backend_free(o->backend);
    memset(o, 0, sizeof(*o));
}

int http_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best])
            best = i;
    }
    return best;
}
