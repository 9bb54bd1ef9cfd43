/*
 * test_hard_security.c - secure defaults (issue 10): loopback bind, model
 * control off unless enabled and then behind --api-key, model names, no
 * reads outside the repository through symlinks, escaped logs, HTTPS with
 * a self-signed certificate made at test time, and the per-address limit.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http_harness.h"
#include "server/srv_config.h"
#include "server/srv_repo.h"

TEST(hard_defaults_loopback_and_no_model_control)
{
    struct srv_config cfg;
    char err[256];
    char *argv[] = {"inferd", NULL};
    ASSERT_EQ_INT(srv_config_parse(1, argv, &cfg, err, sizeof(err)), SRV_CONFIG_OK);
    ASSERT_STR_EQ(cfg.host, "127.0.0.1");
    ASSERT_FALSE(cfg.enable_model_control);
    ASSERT_STR_EQ(cfg.api_key, "");
    ASSERT_EQ_INT(cfg.max_connections_per_ip, 0);   /* off: a load balancer is one address */
    return TEST_PASS;
}

TEST(hard_model_names)
{
    static const char *const GOOD[] = {"lenet5", "..my_model", "model..1", ".hidden", "a-b_c.d"};
    static const char *const BAD[] = {"", ".", "..", "../x", "a/b", "a\\b", "a b", "x\ny", "ü"};
    for (size_t i = 0; i < sizeof(GOOD) / sizeof(GOOD[0]); i++)
        TEST_FAIL_IF(!srv_repo_valid_name(GOOD[i]), "'%s' should be a valid name", GOOD[i]);
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++)
        TEST_FAIL_IF(srv_repo_valid_name(BAD[i]), "'%s' should be refused", BAD[i]);
    char longest[RT_NAME_MAX + 1];
    memset(longest, 'a', sizeof(longest));
    longest[RT_NAME_MAX - 1] = '\0';
    ASSERT_TRUE(srv_repo_valid_name(longest));
    longest[RT_NAME_MAX - 1] = 'a';
    longest[RT_NAME_MAX] = '\0';
    ASSERT_FALSE(srv_repo_valid_name(longest));
    return TEST_PASS;
}

static enum test_result control_off(struct http_daemon *d)
{
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/unload", NULL, "", 0), 403);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/lenet5/load", NULL, "", 0), 403);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/index", NULL, "", 0), 200);   /* read-only, as Triton's */
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_model_control_off_by_default)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    return http_run(&spec, 1, NULL, control_off);
}

static long with_token(const struct http_daemon *d, const char *path, const char *auth)
{
    const char *headers[] = {auth, NULL};
    struct http_resp r;
    long st = http_request(d, "POST", path, auth ? headers : NULL, "", 0, &r) ? r.status : 0;
    http_resp_free(&r);
    return st;
}

static enum test_result api_key(struct http_daemon *d)
{
    const char *unload = "/v2/repository/models/lenet5/unload";
    ASSERT_EQ_INT(with_token(d, unload, NULL), 401);
    ASSERT_EQ_INT(with_token(d, unload, "Authorization: Bearer wrong"), 401);
    ASSERT_EQ_INT(with_token(d, unload, "Authorization: Bearer s3cret-but-longer"), 401);
    ASSERT_EQ_INT(with_token(d, unload, "Authorization: Basic czNjcmV0"), 401);
    ASSERT_EQ_INT(with_token(d, "/v2/repository/index", NULL), 401);
    ASSERT_TRUE(http_still_serves(d)); /* inference needs no token */
    ASSERT_EQ_INT(with_token(d, "/v2/repository/models/lenet5/load", "Authorization: Bearer s3cret"),
                  200);
    ASSERT_EQ_INT(with_token(d, "/v2/repository/index", "Authorization: bearer s3cret"), 200);
    return TEST_PASS;
}

TEST(hard_api_key_guards_model_control)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--enable-model-control", "--api-key", "s3cret", NULL};
    return http_run(&spec, 1, ARGS, api_key);
}

static enum test_result symlink_escape(struct http_daemon *d)
{
    /* A model folder whose weights link to a file outside the repository. */
    char dir[400], path[450], target[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/repo/escape", d->dir);
    ASSERT_EQ_INT(mkdir(dir, 0755), 0);
    ASSERT_TRUE(realpath(HTTP_SOURCE_MODEL "/model.safetensors", target) != NULL);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    ASSERT_EQ_INT(symlink(target, path), 0);
    snprintf(path, sizeof(path), "%s/model.json", dir);
    char src[450];
    snprintf(src, sizeof(src), "%s/repo/lenet5/model.json", d->dir);
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    ASSERT_TRUE(in && out);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, in);
    text[n] = '\0';
    char *name = strstr(text, "\"lenet5\"");
    if (name)
        memcpy(name, "\"escape\"", 8);
    fwrite(text, 1, n, out);
    fclose(in);
    fclose(out);
    struct http_resp r;
    ASSERT_TRUE(http_post(d, "/v2/repository/models/escape/load", NULL, "", 0, &r));
    ASSERT_EQ_INT(r.status, 500);
    ASSERT_STR_CONTAINS(r.body, "outside the model repository");
    ASSERT_TRUE(strstr(r.body, "/") == NULL || strstr(r.body, d->dir) == NULL);
    http_resp_free(&r);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/escape/ready", NULL, NULL, 0), 503);
    /* A folder that is itself a symlink out of the repository is refused too. */
    snprintf(path, sizeof(path), "%s/repo/outside", d->dir);
    ASSERT_TRUE(realpath(HTTP_SOURCE_MODEL, target) != NULL);
    ASSERT_EQ_INT(symlink(target, path), 0);
    ASSERT_EQ_INT(http_status(d, "POST", "/v2/repository/models/outside/load", NULL, "", 0), 500);
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

TEST(hard_repository_symlinks_stay_inside)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--enable-model-control", NULL};
    return http_run(&spec, 1, ARGS, symlink_escape);
}

static enum test_result log_escapes(struct http_daemon *d)
{
    /* control bytes in a path are refused (400), and logged escaped */
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/a%0aFORGED%1b[31m/ready", NULL, NULL, 0), 400);
    ASSERT_EQ_INT(http_status(d, "GET", "/v2/models/..%2f..%2fetc/ready", NULL, NULL, 0), 404);
    static char log[1 << 16];
    ASSERT_TRUE(http_daemon_log(d, log, sizeof(log)));
    ASSERT_STR_CONTAINS(log, "a\\x0aFORGED\\x1b[31m");
    ASSERT_TRUE(strstr(log, "\nFORGED") == NULL);
    ASSERT_TRUE(strchr(log, '\x1b') == NULL);
    return TEST_PASS;
}

TEST(hard_logs_escape_client_bytes)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--log-level", "debug", NULL};
    return http_run(&spec, 1, ARGS, log_escapes);
}

/* Two kept-alive connections fill the limit; on a third, health is still
 * answered, anything else gets 503 with Retry-After (then the connection
 * closes), counted in /metrics under `limit`, and logged. */
static enum test_result over_limit(struct http_daemon *d, const char *limit)
{
    /* The harness's probes may still count until the daemon has seen them close. */
    usleep(300 * 1000);
    const char live[] = "GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n";
    const char meta[] = "GET /v2/models/lenet5 HTTP/1.1\r\nHost: t\r\n\r\n";
    int a = http_raw_connect(d), b = http_raw_connect(d);
    ASSERT_TRUE(a >= 0 && b >= 0);
    http_raw_send(a, meta, sizeof(meta) - 1);
    http_raw_send(b, meta, sizeof(meta) - 1);
    int first = http_raw_status(a, 5000), second = http_raw_status(b, 5000);
    int c = http_raw_connect(d);
    ASSERT_TRUE(c >= 0);
    http_raw_send(c, live, sizeof(live) - 1);
    int health = http_raw_status(c, 5000);
    http_raw_send(c, meta, sizeof(meta) - 1);
    int refused = http_raw_status(c, 5000);
    close(a);
    close(b);
    close(c);
    ASSERT_EQ_INT(first, 200);
    ASSERT_EQ_INT(second, 200);
    ASSERT_EQ_INT(health, 200);    /* health stays reachable */
    ASSERT_EQ_INT(refused, 503);
    usleep(100 * 1000);
    struct http_resp r;
    http_get(d, "/metrics", &r);
    char name[96];
    snprintf(name, sizeof(name), "inferd_connections_refused_total{limit=\"%s\"}", limit);
    double counted = http_metric(r.body, name);
    http_resp_free(&r);
    ASSERT_GE(counted, 1);
    static char log[1 << 16];
    ASSERT_TRUE(http_daemon_log(d, log, sizeof(log)));
    ASSERT_STR_CONTAINS(log, "refusing requests");
    ASSERT_TRUE(http_still_serves(d));
    return TEST_PASS;
}

static enum test_result per_ip_limit(struct http_daemon *d) { return over_limit(d, "per_address"); }
static enum test_result global_limit(struct http_daemon *d) { return over_limit(d, "global"); }

TEST(hard_per_ip_connection_limit)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--max-connections-per-ip", "2", NULL};
    return http_run(&spec, 1, ARGS, per_ip_limit);
}

TEST(hard_global_connection_limit)
{
    struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    static const char *const ARGS[] = {"--max-connections", "2", NULL};
    return http_run(&spec, 1, ARGS, global_limit);
}

/* ------------------------------------------------------------ TLS */

static size_t discard(char *data, size_t size, size_t n, void *user) { return size * n; }

static long https_get(int port, const char *path, bool verify_off)
{
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, verify_off ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, verify_off ? 0L : 2L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

TEST(hard_tls_self_signed)
{
    if (!http_source_model_present())
        SKIP("%s is missing", HTTP_SOURCE_MODEL);
    if (system("command -v openssl >/dev/null 2>&1") != 0) // NOLINT(cert-env33-c): a fixed command
        SKIP("openssl is not installed: no certificate to test HTTPS with");
    char dir[] = "/tmp/inferd-tls-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char cmd[1024], cert[128], key[128], port_file[128], repo[128];
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(port_file, sizeof(port_file), "%s/port", dir);
    snprintf(repo, sizeof(repo), "%s/repo", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 "
             "-subj /CN=localhost >/dev/null 2>&1 && mkdir %s && cp -r %s %s/",
             key, cert, repo, HTTP_SOURCE_MODEL, repo);
    ASSERT_EQ_INT(system(cmd), 0); // NOLINT(cert-env33-c): our own paths in a fixed command
    char bin[512];
    http_inferd_path(bin, sizeof(bin));
    fflush(stdout);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDERR_FILENO);
        execl(bin, bin, "--model-repository", repo, "--http-port", "0", "--port-file", port_file,
              "--threads", "1", "--tls-cert", cert, "--tls-key", key, (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 3000 && port == 0; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1) // NOLINT(cert-err34-c): the daemon's own port file
                port = 0;
            fclose(f);
        }
        usleep(10000);
    }
    long live = port ? https_get(port, "/v2/health/live", true) : -1;
    long verified = port ? https_get(port, "/v2/health/live", false) : -1;
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ASSERT_EQ_INT(system(cmd), 0); // NOLINT(cert-env33-c): our own paths in a fixed command
    ASSERT_TRUE(port > 0);
    ASSERT_EQ_INT(live, 200);
    ASSERT_EQ_INT(verified, 0); /* self-signed: a verifying client refuses it */
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return TEST_PASS;
}
