/*
 * tune_server.c - the inferd that `inferctl tune` measures.
 *
 * By default a child process: the model folder is copied (inferd refuses
 * files that link outside its repository) into a private repository under
 * /tmp, inferd starts on it with model control on and a free loopback port,
 * and each configuration is a rewritten model.json followed by a reload
 * (POST /v2/repository/models/{m}/load; the old instance finishes what it
 * holds). The child dies with inferctl (PR_SET_PDEATHSIG). With --url, a
 * running server is measured as it is configured: a user's repository is
 * never written to (as Triton Model Analyzer's remote mode).
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inferctl.h"
#include "tune.h"

#define START_TIMEOUT_S 60.0

static void sleep_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000L}, NULL); }

/* ------------------------------------------------------------ model.json */

static cJSON *object_item(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (cJSON_IsObject(o))
        return o;
    cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
    return cJSON_AddObjectToObject(parent, key);
}

/* Sets o[key] = v where the key is (so model.json keeps its order), else at the end. */
static bool set_number(cJSON *o, const char *key, double v)
{
    if (!cJSON_GetObjectItemCaseSensitive(o, key))
        return cJSON_AddNumberToObject(o, key, v) != NULL;
    cJSON *n = cJSON_CreateNumber(v);
    if (n && cJSON_ReplaceItemInObjectCaseSensitive(o, key, n))
        return true;
    cJSON_Delete(n);
    return false;
}

/* The source's preferred sizes that fit max_batch (none left: the key goes,
 * and the batcher aims at max_batch_size). */
static bool fit_preferred(cJSON *db, int max_batch)
{
    cJSON *pref = cJSON_GetObjectItemCaseSensitive(db, "preferred_batch_sizes"), *keep = cJSON_CreateArray();
    if (!keep)
        return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, pref) {
        if (cJSON_IsNumber(v) && v->valuedouble <= max_batch)
            cJSON_AddItemToArray(keep, cJSON_CreateNumber(v->valuedouble));
    }
    if (cJSON_GetArraySize(keep) == 0) {
        cJSON_Delete(keep);
        cJSON_DeleteItemFromObjectCaseSensitive(db, "preferred_batch_sizes");
        return true;
    }
    if (pref && cJSON_ReplaceItemInObjectCaseSensitive(db, "preferred_batch_sizes", keep))
        return true;
    if (!pref && cJSON_AddItemToObject(db, "preferred_batch_sizes", keep))
        return true;
    cJSON_Delete(keep);
    return false;
}

/* The source with cfg applied; NULL when the source is no JSON object or
 * memory ran out. */
static cJSON *configured(const char *source_json, const struct tune_config *cfg)
{
    cJSON *root = cJSON_Parse(source_json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON *db = object_item(root, "dynamic_batching"), *inst = object_item(root, "instances");
    bool ok = db && inst && set_number(root, "max_batch_size", cfg->max_batch) &&
              set_number(db, "max_queue_delay_us", (double)cfg->delay_us) && fit_preferred(db, cfg->max_batch) &&
              set_number(inst, "count", cfg->instances);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

char *tune_model_json(const char *source_json, const struct tune_config *cfg)
{
    cJSON *root = configured(source_json, cfg);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return text;
}

void tune_print_model_json_lines(FILE *f, const char *source_json, const struct tune_config *cfg)
{
    static const char *const KEYS[] = {"max_batch_size", "dynamic_batching", "instances"};
    cJSON *root = configured(source_json, cfg);
    for (size_t i = 0; root && i < sizeof(KEYS) / sizeof(KEYS[0]); i++) {
        char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, KEYS[i]));
        if (v)
            fprintf(f, "  \"%s\": %s,\n", KEYS[i], v);
        free(v);
    }
    cJSON_Delete(root);
}

/* ------------------------------------------------------------ the private repository */

static bool copy_file(const char *from, const char *to)
{
    uint8_t *data = NULL;
    size_t len = 0;
    struct icl_error err;
    if (icl_file_read(from, &data, &len, &err) != ICL_OK) {
        fprintf(stderr, "inferctl tune: %s\n", err.message);
        return false;
    }
    FILE *f = fopen(to, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "inferctl tune: cannot write %s: %s\n", to, strerror(errno));
    free(data);
    return ok;
}

/* Copies the regular files of src (the model folder) into dst, keeping
 * model.json's text in s->source_json (a bare one for an ONNX model
 * without model.json). */
static bool copy_model(struct tune_server *s, const char *src, const char *dst)
{
    DIR *d = opendir(src);
    if (!d) {
        fprintf(stderr, "inferctl tune: cannot open %s: %s\n", src, strerror(errno));
        return false;
    }
    bool ok = true, have_json = false, have_onnx = false;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        char from[4096], to[4096];
        struct stat sb;
        snprintf(from, sizeof(from), "%s/%s", src, e->d_name);
        if (stat(from, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (strcmp(e->d_name, "model.json") == 0) {
            uint8_t *text = NULL;
            size_t len = 0;
            struct icl_error err;
            ok = icl_file_read(from, &text, &len, &err) == ICL_OK &&
                 (s->source_json = strndup((const char *)text, len)) != NULL;
            if (!ok)
                fprintf(stderr, "inferctl tune: cannot read %s\n", from);
            free(text);
            have_json = true;
            continue;
        }
        have_onnx |= strcmp(e->d_name, "model.onnx") == 0;
        snprintf(to, sizeof(to), "%s/%s", dst, e->d_name);
        ok = copy_file(from, to);
    }
    closedir(d);
    if (ok && !have_json && !have_onnx) {
        fprintf(stderr, "inferctl tune: %s is not a model folder (no model.json or model.onnx)\n", src);
        return false;
    }
    if (ok && !have_json && !(s->source_json = strdup("{\"format_version\": 1}")))
        ok = false;
    return ok;
}

/* model.json of the private copy at cfg, replaced in one rename. */
static bool write_config(const struct tune_server *s, const struct tune_config *cfg)
{
    char path[256], tmp[256];
    snprintf(path, sizeof(path), "%s/repo/%s/model.json", s->tmp, s->model);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    char *text = tune_model_json(s->source_json, cfg);
    if (!text) {
        fprintf(stderr, "inferctl tune: %s's model.json is not a JSON object\n", s->model);
        return false;
    }
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "inferctl tune: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ the child */

/* The inferd beside this inferctl, else the one on PATH. */
static void default_inferd(char *out, size_t cap)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, cap, "%s/inferd", self);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, cap, "inferd");
}

static pid_t spawn(char *const *argv, const char *log_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM);   /* inferd goes when inferctl does, however it ends */
    int log = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600), null = open("/dev/null", O_RDONLY);
    if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
    }
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    execvp(argv[0], argv);
    _exit(127);
}

/* The end of the child's log, when it failed. */
static void print_log_tail(const struct tune_server *s)
{
    char path[128], buf[2048];
    snprintf(path, sizeof(path), "%s/inferd.log", s->tmp);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    fprintf(stderr, "inferctl tune: inferd's log ends:\n%s\n", buf);
}

/* Waits for the port file, then for readiness; false when the child died
 * or START_TIMEOUT_S passed. */
static bool wait_ready(struct tune_server *s)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/port", s->tmp);
    double t0 = ctl_now();
    int port = 0;
    while (ctl_now() - t0 < START_TIMEOUT_S) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            fprintf(stderr, "inferctl tune: inferd exited (status %d)\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return false;
        }
        FILE *f = port ? NULL : fopen(path, "r");
        if (f) {
            char text[16] = "", *end = text;
            long v = fgets(text, sizeof(text), f) ? strtol(text, &end, 10) : 0;
            fclose(f);
            /* a whole line: inferd writes the file once it listens, maybe not at once */
            port = v > 0 && v <= 65535 && end != text && *end == '\n' ? (int)v : 0;
            snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", port);
        }
        bool ready = false;
        struct icl_client *c = NULL;
        if (port && icl_client_create(s->url, NULL, &c, NULL) == ICL_OK &&
            icl_model_ready(c, s->model, &ready, NULL) == ICL_OK && ready) {
            icl_client_free(c);
            return true;
        }
        icl_client_free(c);
        sleep_ms(20);
    }
    fprintf(stderr, "inferctl tune: inferd was not ready after %.0f s\n", START_TIMEOUT_S);
    return false;
}

bool tune_server_start(struct tune_server *s, const char *src, const char *inferd, const char *backend, int threads,
                       const struct tune_config *cfg)
{
    memset(s, 0, sizeof(*s));
    ctl_dir_name(src, s->model, sizeof(s->model));
    snprintf(s->tmp, sizeof(s->tmp), "/tmp/inferctl-tune-XXXXXX");
    char repo[128], dir[256], port_file[128], log[128], bin[4096], threads_text[16];
    if (!mkdtemp(s->tmp)) {
        fprintf(stderr, "inferctl tune: cannot make a temporary folder: %s\n", strerror(errno));
        return false;
    }
    snprintf(repo, sizeof(repo), "%s/repo", s->tmp);
    snprintf(dir, sizeof(dir), "%s/%s", repo, s->model);
    snprintf(port_file, sizeof(port_file), "%s/port", s->tmp);
    snprintf(log, sizeof(log), "%s/inferd.log", s->tmp);
    snprintf(threads_text, sizeof(threads_text), "%d", threads);
    if (inferd)
        snprintf(bin, sizeof(bin), "%s", inferd);
    else
        default_inferd(bin, sizeof(bin));
    if (mkdir(repo, 0700) != 0 || mkdir(dir, 0700) != 0 || !copy_model(s, src, dir) || !write_config(s, cfg)) {
        tune_server_stop(s);
        return false;
    }
    char *argv[] = {bin, "--model-repository", repo, "--http-port", "0", "--host", "127.0.0.1", "--port-file",
                    port_file, "--enable-model-control", "--no-ui", "--log-level", "warn", "--backend",
                    (char *)backend, "--threads", threads_text, NULL};
    if ((s->pid = spawn(argv, log)) < 0) {
        fprintf(stderr, "inferctl tune: cannot start %s: %s\n", bin, strerror(errno));
        s->pid = 0;
        tune_server_stop(s);
        return false;
    }
    if (!wait_ready(s)) {
        print_log_tail(s);
        tune_server_stop(s);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ --url */

static int json_int(const cJSON *o, const char *key, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int)v->valuedouble : def;
}

bool tune_server_attach(struct tune_server *s, const char *url, const char *model, struct tune_config *cfg)
{
    memset(s, 0, sizeof(*s));
    s->external = true;
    snprintf(s->url, sizeof(s->url), "%s", url);
    snprintf(s->model, sizeof(s->model), "%s", model);
    if (!(s->source_json = strdup("{}"))) {
        fprintf(stderr, "inferctl tune: out of memory\n");
        return false;
    }
    struct icl_client *c = NULL;
    struct icl_error err;
    struct icl_response resp = {0};
    char path[256];
    snprintf(path, sizeof(path), "/v2/models/%s/config", model);
    bool ok = icl_client_create(url, NULL, &c, &err) == ICL_OK &&
              icl_request(c, NULL, path, NULL, 0, NULL, &resp, &err) == ICL_OK;
    cJSON *root = ok ? cJSON_ParseWithLength((const char *)resp.body, resp.len) : NULL;
    if (!ok)
        ctl_remote_error("tune", &err);
    else if (!cJSON_IsObject(root))
        fprintf(stderr, "inferctl tune: %s's configuration is not JSON\n", model);
    ok = ok && cJSON_IsObject(root);
    if (ok) {
        const cJSON *db = cJSON_GetObjectItemCaseSensitive(root, "dynamic_batching");
        const cJSON *group = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "instance_group"), 0);
        const cJSON *delay = cJSON_GetObjectItemCaseSensitive(db, "max_queue_delay_microseconds");
        *cfg = (struct tune_config){.max_batch = json_int(root, "max_batch_size", 1),
                                    .instances = json_int(group, "count", 1),
                                    .delay_us = cJSON_IsNumber(delay) ? (int64_t)delay->valuedouble : 0};
    }
    cJSON_Delete(root);
    icl_response_free(&resp);
    icl_client_free(c);
    return ok;
}

bool tune_server_apply(struct tune_server *s, const struct tune_config *cfg)
{
    if (s->external)
        return true;
    if (!write_config(s, cfg))
        return false;
    struct icl_client *c = NULL;
    struct icl_error err;
    bool ok = icl_client_create(s->url, NULL, &c, &err) == ICL_OK && icl_model_load(c, s->model, &err) == ICL_OK;
    if (!ok)
        fprintf(stderr, "inferctl tune: reloading %s at max_batch_size %d, %d instance%s, delay %lld us: %s\n",
                s->model, cfg->max_batch, cfg->instances, cfg->instances == 1 ? "" : "s", (long long)cfg->delay_us,
                err.message);
    icl_client_free(c);
    return ok;
}

void tune_server_stop(struct tune_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int status;
        double t0 = ctl_now();
        while (waitpid(s->pid, &status, WNOHANG) == 0) {
            if (ctl_now() - t0 > 10.0) {
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &status, 0);
                break;
            }
            sleep_ms(10);
        }
        s->pid = 0;
    }
    if (s->tmp[0])
        ctl_remove_tree(s->tmp);
    s->tmp[0] = '\0';
    free(s->source_json);
    s->source_json = NULL;
}
