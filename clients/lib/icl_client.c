/*
 * icl_client.c - the client handle and the one place that talks HTTP: a
 * request on the client's reused curl handle, its answer, and how curl's
 * and the server's failures become an icl_error. Health endpoints too,
 * being one request each.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "icl_impl.h"

static const char *const STATUS_NAMES[] = {
#define ICL_STATUS_NAME(name, text) text,
    ICL_STATUS_LIST(ICL_STATUS_NAME)
#undef ICL_STATUS_NAME
};

const char *icl_status_name(enum icl_status s)
{
    return (unsigned)s < ICL_STATUS_COUNT ? STATUS_NAMES[s] : "unknown status";
}

void icl_error_clear(struct icl_error *err)
{
    if (err) {
        err->status = ICL_OK;
        err->http_status = 0;
        err->message[0] = '\0';
    }
}

enum icl_status icl_fail(struct icl_error *err, enum icl_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return status;
}

bool icl_copy(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    bool fits = n < cap;
    if (!fits)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return fits;
}

enum icl_status icl_client_create(const char *url, const struct icl_options *opts,
                                  struct icl_client **out, struct icl_error *err)
{
    icl_error_clear(err);
    *out = NULL;
    if (!url)
        url = ICL_DEFAULT_URL;
    const char *scheme = strstr(url, "://") ? "" : "http://";
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    if (n == 0)
        return icl_fail(err, ICL_ERR_INVALID, "empty server URL");
    struct icl_client *c = calloc(1, sizeof(*c));
    if (!c)
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory");
    if ((size_t)snprintf(c->url, sizeof(c->url), "%s%.*s", scheme, (int)n, url) >= sizeof(c->url)) {
        free(c);
        return icl_fail(err, ICL_ERR_INVALID, "server URL too long");
    }
    /* Idempotent; done here so single-threaded users need not know about it. */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c->curl = curl_easy_init();
    if (!c->curl) {
        free(c);
        return icl_fail(err, ICL_ERR_NO_MEMORY, "curl_easy_init failed");
    }
    if (opts)
        c->opts = *opts;
    if (c->opts.connect_timeout_ms <= 0)
        c->opts.connect_timeout_ms = 5000;
    if (c->opts.timeout_ms <= 0)
        c->opts.timeout_ms = 60000;
    *out = c;
    return ICL_OK;
}

void icl_client_free(struct icl_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c);
}

const char *icl_client_url(const struct icl_client *c) { return c->url; }

void icl_response_free(struct icl_response *resp)
{
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
    resp->header_len = -1;
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    struct icl_buf *b = user;
    icl_buf_append(b, p, size * n);
    return b->failed ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    static const char NAME[] = "Inference-Header-Content-Length:";
    struct icl_response *resp = user;
    size_t len = size * n;
    if (len > sizeof(NAME) - 1 && strncasecmp(p, NAME, sizeof(NAME) - 1) == 0) {
        char num[32];
        size_t k = len - (sizeof(NAME) - 1);
        k = k < sizeof(num) - 1 ? k : sizeof(num) - 1;
        memcpy(num, p + sizeof(NAME) - 1, k);
        num[k] = '\0';
        char *end;
        long long v = strtoll(num, &end, 10);
        resp->header_len = (end != num && v >= 0) ? v : -2; /* -2: present but malformed */
    }
    return len;
}

/* The server's {"error": "..."} message, else the start of the body. */
static void server_message(const struct icl_response *resp, struct icl_error *err)
{
    if (!err)
        return;
    cJSON *root = cJSON_ParseWithLength((const char *)resp->body, resp->len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (cJSON_IsString(e)) {
        icl_copy(err->message, sizeof(err->message), e->valuestring);
    } else if (resp->len > 0) {
        size_t n = resp->len < 200 ? resp->len : 200, k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof(err->message); i++)
            err->message[k++] = isprint(resp->body[i]) ? (char)resp->body[i] : ' ';
        err->message[k] = '\0';
    } else {
        snprintf(err->message, sizeof(err->message), "HTTP status %ld", resp->status);
    }
    cJSON_Delete(root);
}

static enum icl_status curl_failure(struct icl_client *c, CURLcode rc, const char *errbuf,
                                    struct icl_error *err)
{
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    curl_off_t connected = 0;
    curl_easy_getinfo(c->curl, CURLINFO_CONNECT_TIME_T, &connected);
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return icl_fail(err, ICL_ERR_CONNECT, "cannot connect to %s: %s", c->url, why);
    case CURLE_OPERATION_TIMEDOUT:
        /* A timeout before the connection was up means nobody answered. */
        if (connected == 0)
            return icl_fail(err, ICL_ERR_CONNECT, "cannot connect to %s: %s", c->url, why);
        return icl_fail(err, ICL_ERR_TIMEOUT, "%s: %s", c->url, why);
    case CURLE_OUT_OF_MEMORY:
    case CURLE_WRITE_ERROR:
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory for the answer");
    default:
        return icl_fail(err, ICL_ERR_TRANSPORT, "%s: %s", c->url, why);
    }
}

/* The request core; header_len < 0 means no binary tensor data follows
 * the JSON, so no Inference-Header-Content-Length is sent. */
static enum icl_status exchange(struct icl_client *c, const char *method, const char *path,
                                const void *body, size_t len, const char *content_type,
                                int64_t header_len, struct icl_response *resp,
                                struct icl_error *err)
{
    icl_error_clear(err);
    memset(resp, 0, sizeof(*resp));
    resp->header_len = -1;
    char url[1024], errbuf[CURL_ERROR_SIZE] = "";
    if ((size_t)snprintf(url, sizeof(url), "%s%s", c->url, path) >= sizeof(url))
        return icl_fail(err, ICL_ERR_INVALID, "URL too long");
    CURL *h = c->curl;
    /* reset keeps the live connection, and forgets the last call's options */
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->opts.timeout_ms);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    struct icl_buf out = {0};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    struct curl_slist *headers = NULL, *tmp;
    char line[160];
    bool oom = false;
    if (body) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        /* "Expect: 100-continue" would cost a round trip on every large body */
        oom |= !(tmp = curl_slist_append(headers, "Expect:")) || !(headers = tmp);
        snprintf(line, sizeof(line), "Content-Type: %s",
                 content_type ? content_type : "application/octet-stream");
        oom |= !(tmp = curl_slist_append(headers, line)) || !(headers = tmp);
        if (header_len >= 0) {
            snprintf(line, sizeof(line), "Inference-Header-Content-Length: %lld",
                     (long long)header_len);
            oom |= !(tmp = curl_slist_append(headers, line)) || !(headers = tmp);
        }
    } else if (method && strcmp(method, "POST") == 0) {
        /* an empty body given as data: without it curl would read stdin */
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (method && strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = oom ? CURLE_OUT_OF_MEMORY : curl_easy_perform(h);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK || out.failed) {
        icl_buf_free(&out);
        return curl_failure(c, out.failed ? CURLE_OUT_OF_MEMORY : rc, errbuf, err);
    }
    icl_buf_append(&out, "", 1); /* NUL after the body, for text answers */
    if (out.failed) {
        icl_buf_free(&out);
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory for the answer");
    }
    resp->body = out.data;
    resp->len = out.len - 1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    icl_copy(resp->content_type, sizeof(resp->content_type), ct ? ct : "");
    if (err)
        err->http_status = resp->status;
    if (resp->status < 200 || resp->status > 299) {
        server_message(resp, err);
        if (err)
            err->status = ICL_ERR_HTTP;
        return ICL_ERR_HTTP;
    }
    return ICL_OK;
}

enum icl_status icl_request(struct icl_client *c, const char *method, const char *path,
                            const void *body, size_t len, const char *content_type,
                            struct icl_response *resp, struct icl_error *err)
{
    return exchange(c, method, path, body, len, content_type, -1, resp, err);
}

enum icl_status icl_exchange_binary(struct icl_client *c, const char *path, const void *body,
                                    size_t len, size_t header_len, struct icl_response *resp,
                                    struct icl_error *err)
{
    bool binary = header_len < len;
    return exchange(c, "POST", path, body, len,
                    binary ? "application/octet-stream" : "application/json",
                    binary ? (int64_t)header_len : -1, resp, err);
}

enum icl_status icl_get_json(struct icl_client *c, const char *method, const char *path,
                             const char *body, cJSON **root, struct icl_error *err)
{
    *root = NULL;
    struct icl_response resp;
    enum icl_status st = exchange(c, method, path, body, body ? strlen(body) : 0,
                                  "application/json", -1, &resp, err);
    if (st == ICL_OK) {
        *root = cJSON_ParseWithLength((const char *)resp.body, resp.len);
        if (!*root || !(cJSON_IsObject(*root) || cJSON_IsArray(*root))) {
            cJSON_Delete(*root);
            *root = NULL;
            st = icl_fail(err, ICL_ERR_PROTOCOL, "%s: the answer is not JSON", path);
        }
    }
    icl_response_free(&resp);
    return st;
}

bool icl_model_path(char *dst, size_t cap, const char *model, const char *suffix,
                    struct icl_error *err)
{
    if (!model || !model[0]) {
        icl_fail(err, ICL_ERR_INVALID, "no model name");
        return false;
    }
    size_t k = (size_t)snprintf(dst, cap, "/v2/models/");
    for (const unsigned char *p = (const unsigned char *)model; *p; p++) {
        /* percent-encode all but RFC 3986's unreserved characters */
        bool plain = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        int w = plain ? snprintf(dst + k, cap > k ? cap - k : 0, "%c", *p)
                      : snprintf(dst + k, cap > k ? cap - k : 0, "%%%02X", *p);
        k += (size_t)w;
        if (k >= cap)
            break;
    }
    if (k >= cap || (size_t)snprintf(dst + k, cap - k, "%s", suffix) >= cap - k) {
        icl_fail(err, ICL_ERR_INVALID, "model name too long");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ health */

static enum icl_status probe(struct icl_client *c, const char *path, bool *ok,
                             struct icl_error *err)
{
    struct icl_error local;
    if (!err)
        err = &local;
    struct icl_response resp;
    enum icl_status st = exchange(c, "GET", path, NULL, 0, NULL, -1, &resp, err);
    icl_response_free(&resp);
    *ok = st == ICL_OK;
    if (st == ICL_ERR_HTTP && err->http_status == 503) {
        err->status = ICL_OK; /* a clear "no" is an answer, not a failure */
        return ICL_OK;
    }
    return st;
}

enum icl_status icl_server_live(struct icl_client *c, bool *ok, struct icl_error *err)
{
    return probe(c, "/v2/health/live", ok, err);
}

enum icl_status icl_server_ready(struct icl_client *c, bool *ok, struct icl_error *err)
{
    return probe(c, "/v2/health/ready", ok, err);
}

enum icl_status icl_model_ready(struct icl_client *c, const char *model, bool *ok,
                                struct icl_error *err)
{
    char path[600];
    *ok = false;
    if (!icl_model_path(path, sizeof(path), model, "/ready", err))
        return ICL_ERR_INVALID;
    return probe(c, path, ok, err);
}
