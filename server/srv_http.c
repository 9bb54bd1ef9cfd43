/* srv_http.c - libmicrohttpd glue: request lifecycle, limits, replies (see srv_http.h). */
#include "srv_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv_clock.h"
#include "srv_conn_limits.h"
#include "srv_head_watch.h"
#include "srv_inflate.h"
#include "srv_log.h"
#include "srv_routes.h"

struct srv_http {
    struct srv_server *srv;
    struct MHD_Daemon *daemon;
    char *tls_cert, *tls_key;   /* PEM text, kept while the daemon runs */
    int port;
    MHD_socket quiesced_fd;     /* the listener after the drain began, closed at stop */
    atomic_uint_fast64_t next_id;
    struct srv_conn_limits *limits;
    struct srv_head_watch *heads;   /* --header-timeout */
    int64_t max_connections;    /* --max-connections, held to the descriptor limit */
    atomic_int_fast64_t refusal_logged_s;   /* the last second a refusal was logged */
};

/* libmicrohttpd zeroes a connection's whole memory pool after every
 * request (MHD_pool_reset): 64 KiB took 5 % of the daemon's time at 64
 * connections. Above 32 KiB the pool is its own mapping; at or below, a
 * malloc block, and 10 000 connections opened and closed fragmented the
 * heap by megabytes (hard_disconnects_leak_nothing). */
enum { HTTP_CONNECTION_MEMORY = 36 * 1024, HTTP_LISTEN_BACKLOG = 1024, BODY_RATE_GRACE_S = 2 };

/* ------------------------------------------------------------ status mapping */

int srv_http_status(enum rt_status st)
{
    switch (st) {
    case RT_OK: return 200;
    case RT_ERR_INVALID: return 400;
    case RT_ERR_NOT_FOUND: return 404;
    case RT_ERR_UNSUPPORTED: return 415;
    case RT_ERR_TOO_LARGE: return 413;
    case RT_ERR_UNAVAILABLE:
    case RT_ERR_NO_MEMORY: return 503;
    case RT_ERR_BAD_MODEL:
    case RT_ERR_IO:
    case RT_ERR_DEVICE:
    case RT_ERR_INTERNAL:
    case RT_STATUS_COUNT: break;
    }
    return 500;
}

/* ------------------------------------------------------------ replies */

void srv_reply(struct srv_request *r, int status, const char *content_type, struct srv_buf *body)
{
    RT_ASSERT(r->status == 0);
    r->status = status;
    r->content_type = content_type;
    srv_buf_free(&r->resp);
    r->resp = *body;
    *body = (struct srv_buf){0};
}

void srv_reply_json(struct srv_request *r, int status, struct srv_buf *body)
{
    srv_reply(r, status, "application/json", body);
}

void srv_reply_error(struct srv_request *r, int status, const char *fmt, ...)
{
    char msg[RT_ERROR_MSG_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    srv_log(status >= 500 && status != 503 ? SRV_LOG_WARN : SRV_LOG_DEBUG, r->id,
            "%s %s -> %d: %s", r->method, r->path, status, msg);
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"error\":");
    srv_buf_json_str(&b, msg);
    srv_buf_putc(&b, '}');
    srv_reply_json(r, status, &b);
}

void srv_reply_rt_error(struct srv_request *r, const struct rt_error *err)
{
    srv_reply_error(r, srv_http_status(err->status), "%s", err->msg);
}

void srv_reply_header(struct srv_request *r, const char *name, const char *value)
{
    RT_ASSERT(r->n_headers < SRV_MAX_RESP_HEADERS);
    r->headers[r->n_headers].name = name;
    snprintf(r->headers[r->n_headers].copy, sizeof(r->headers[0].copy), "%s", value);
    r->headers[r->n_headers].value = r->headers[r->n_headers].copy;
    r->n_headers++;
}

void srv_reply_header_static(struct srv_request *r, const char *name, const char *value)
{
    RT_ASSERT(r->n_headers < SRV_MAX_RESP_HEADERS);
    r->headers[r->n_headers].name = name;
    r->headers[r->n_headers].value = value;
    r->n_headers++;
}

const char *srv_request_header(struct srv_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *srv_request_query(struct srv_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result queue_reply(struct srv_request *r)
{
    static const char OOM_BODY[] = "{\"error\":\"out of memory\"}";
    size_t len;
    char *data = srv_buf_take(&r->resp, &len);
    struct MHD_Response *resp;
    if (data) {
        resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    } else {
        r->status = 503;
        r->content_type = "application/json";
        resp = MHD_create_response_from_buffer(sizeof(OOM_BODY) - 1, (void *)OOM_BODY,
                                               MHD_RESPMEM_PERSISTENT);
    }
    if (!resp) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    const char *origin = r->srv->cfg.cors_origin;
    if (origin[0]) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                "Inference-Header-Content-Length, X-Request-Id, Retry-After");
        if (strcmp(origin, "*") != 0)
            MHD_add_response_header(resp, "Vary", "Origin");
    }
    for (int i = 0; i < r->n_headers; i++)
        MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value);
    if (atomic_load(&r->srv->shutting_down) || atomic_load(&r->srv->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    if (r->status >= 100 && r->status < 600)
        atomic_fetch_add(&r->srv->responses[r->status], 1);
    r->queued = true;
    return ret;
}

/* ------------------------------------------------------------ connections */

/* libmicrohttpd opened or closed a connection: count it, and remember in
 * its socket context which limit it is over (refuse_over_limit reads it). */
/* What inferd keeps per connection (its MHD socket context). */
struct conn_state {
    enum srv_conn_over over;       /* over a connection limit when it opened */
    atomic_bool saw_request;       /* a request head reached inferd */
    struct srv_head_entry head;    /* waiting for a request head (--header-timeout) */
};

static int conn_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static struct conn_state *conn_state(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct srv_http *h = cls;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *addr = ci ? ci->client_addr : NULL;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        enum srv_conn_over over = srv_conn_opened(h->limits, addr);
        struct conn_state *cs = calloc(1, sizeof(*cs));
        int fd = conn_fd(conn);
        if (cs)
            cs->over = over;
        if (cs && fd >= 0)
            srv_head_watch_arm(h->heads, &cs->head, fd);
        *socket_context = cs;   /* NULL when out of memory: within limits, not tracked */
        atomic_fetch_add(&h->srv->open_connections, 1);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn_state *cs = *socket_context;
        /* A connection that closes before any request head reached inferd
         * timed out idle or slow, or got libmicrohttpd's own error reply
         * (a malformed or oversized head): counted, as inferd's own are. */
        if (cs && !atomic_load(&cs->saw_request))
            atomic_fetch_add(&h->srv->connections_without_request, 1);
        if (cs)
            srv_head_watch_disarm(h->heads, &cs->head);   /* before libmicrohttpd closes the fd */
        free(cs);
        *socket_context = NULL;
        srv_conn_closed(h->limits, addr);
        atomic_fetch_sub(&h->srv->open_connections, 1);
    }
}

/* ------------------------------------------------------------ deferral */

void srv_request_defer(struct srv_request *r, void (*finish)(struct srv_request *r))
{
    r->finish = finish;
    r->pending = true;
}

void srv_request_undefer(struct srv_request *r)
{
    r->finish = NULL;
    r->pending = false;
}

static void request_destroy(struct srv_request *r);

void srv_request_resume(struct srv_request *r)
{
    pthread_mutex_lock(&r->mu);
    r->done = true;
    bool orphaned = r->orphaned;
    if (r->suspended && !orphaned)
        MHD_resume_connection(r->conn);
    pthread_mutex_unlock(&r->mu);
    if (orphaned)
        request_destroy(r); /* its connection is gone: nobody else will */
}

/* ------------------------------------------------------------ request lifecycle */

static bool valid_client_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (n >= SRV_REQ_ID_MAX - 1 ||
            !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':'))
            return false;
    }
    return n > 0;
}

static struct srv_request *request_new(struct srv_http *h, struct MHD_Connection *conn,
                                       const char *url, const char *method)
{
    struct srv_request *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->srv = h->srv;
    r->conn = conn;
    r->method = method;
    r->path = url;
    r->start_ns = srv_now_ns();
    pthread_mutex_init(&r->mu, NULL);
    struct conn_state *cs = conn_state(conn);
    if (cs) {
        atomic_store(&cs->saw_request, true);
        srv_head_watch_disarm(h->heads, &cs->head);
    }
    const char *client_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    if (client_id && valid_client_id(client_id))
        snprintf(r->id, sizeof(r->id), "%s", client_id);
    else
        snprintf(r->id, sizeof(r->id), "%08llx",
                 (unsigned long long)atomic_fetch_add(&h->next_id, 1));
    atomic_fetch_add(&h->srv->inflight, 1);
    return r;
}

/* Counts n more body bytes against --max-buffered-bytes; false (nothing
 * counted) when that would pass it. */
static bool body_reserve(struct srv_request *r, size_t n)
{
    int64_t limit = r->srv->cfg.max_buffered_bytes;
    int_fast64_t held = atomic_load(&r->srv->buffered_bytes);
    do {
        if ((int64_t)n > limit - held)
            return false;
    } while (!atomic_compare_exchange_weak(&r->srv->buffered_bytes, &held, held + (int64_t)n));
    r->body_reserved += n;
    return true;
}

void srv_request_body_release(struct srv_request *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = r->body_cap = 0;
    atomic_fetch_sub(&r->srv->buffered_bytes, (int64_t)r->body_reserved);
    r->body_reserved = 0;
}

static void request_destroy(struct srv_request *r)
{
    if (r->ctx_free)
        r->ctx_free(r->ctx);
    srv_request_body_release(r);
    srv_buf_free(&r->resp);
    pthread_mutex_destroy(&r->mu);
    atomic_fetch_sub(&r->srv->inflight, 1);
    free(r);
}

/* The connection is finished. A client that vanished right after sending
 * its request can take the connection down while the request's job is
 * still queued (libmicrohttpd completes it despite the suspension): then
 * the job's owner frees the request when the job is done, not us. */
static void request_free(struct srv_request *r)
{
    pthread_mutex_lock(&r->mu);
    bool in_flight = r->pending && !r->done;
    r->orphaned = in_flight;
    pthread_mutex_unlock(&r->mu);
    if (!in_flight)
        request_destroy(r);
}

/* First callback: headers are in, no body yet. May answer at once. */
/* Whether the decoded path holds a control byte (unescape_url turns %00
 * into DEL, so none hides behind a NUL). */
static bool has_control_byte(const char *path)
{
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return true;
    }
    return false;
}

/* Health and metrics stay reachable on connections over a limit (the
 * reserve of srv_conn_limits.h). */
static bool always_served(const char *path)
{
    return strncmp(path, "/v2/health/", 11) == 0 || strcmp(path, "/metrics") == 0;
}

/* A request on a connection over a connection limit: 503, Retry-After,
 * the connection closed after it, counted, logged at most once a second. */
static bool refuse_over_limit(struct srv_request *r, struct srv_http *h)
{
    const struct conn_state *cs = conn_state(r->conn);
    enum srv_conn_over over = cs ? cs->over : SRV_CONN_WITHIN;
    if (over == SRV_CONN_WITHIN || always_served(r->path))
        return false;
    const struct srv_config *cfg = &r->srv->cfg;
    bool global = over == SRV_CONN_OVER_GLOBAL;
    atomic_fetch_add(&r->srv->refused_connections[global ? 0 : 1], 1);
    int64_t now_s = srv_now_ns() / 1000000000, last = atomic_load(&h->refusal_logged_s);
    if (now_s != last && atomic_compare_exchange_strong(&h->refusal_logged_s, &last, now_s))
        srv_log_warn("refusing requests: %s (counted in inferd_connections_refused_total)",
                     global ? "more than --max-connections connections are open"
                            : "a client address has more than --max-connections-per-ip connections open");
    srv_reply_header(r, "Retry-After", "1");
    srv_reply_header(r, "Connection", "close");
    srv_reply_error(r, 503, global ? "too many connections (the server allows %lld)"
                                   : "too many connections from your address (the server allows %lld)",
                    (long long)(global ? h->max_connections : cfg->max_connections_per_ip));
    return true;
}

/* RFC 9110 token characters, those a header name may hold. */
static bool token_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

struct head_check {
    const char *why;            /* NULL while the head is acceptable */
    const char *content_length; /* the first one seen */
    bool transfer_encoding;
};

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    struct head_check *c = cls;
    if (!key[0])
        c->why = "a header line has no name";
    for (const unsigned char *p = (const unsigned char *)key; *p && !c->why; p++) {
        if (!token_char(*p))
            c->why = "a header name holds a character a name may not (a space before the colon?)";
    }
    if (!c->why && strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (c->content_length && strcmp(c->content_length, value ? value : "") != 0)
            c->why = "Content-Length is given twice with different values";
        c->content_length = value ? value : "";
    }
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        c->transfer_encoding = true;
    if (!c->why && c->transfer_encoding && c->content_length)
        c->why = "Content-Length and Transfer-Encoding together";
    return c->why ? MHD_NO : MHD_YES;
}

/* libmicrohttpd 0.9.75 takes "Content-Length : 42" as a header named
 * "Content-Length " (so the body becomes the next request), a line ": x",
 * and differing Content-Lengths; a proxy that reads them otherwise lets a
 * request hide behind another. All are checked here, and HTTP/1.1 without
 * Host too (libmicrohttpd's MHD_OPTION_STRICT_FOR_CLIENT refuses that one
 * only, in HTML, with its status line and headers sent twice). The 400
 * closes the connection, so no byte after the head is read as a request.
 * A nameless line is seen only when it comes first: after another header,
 * libmicrohttpd drops it and every line after it, unseen by its API; a
 * POST left without a length then closes its connection after the answer. */
static bool strict_head(struct srv_request *r, const char *version)
{
    struct head_check c = {0};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, check_header, &c);
    if (!c.why && strcmp(version, MHD_HTTP_VERSION_1_1) == 0 && !srv_request_header(r, MHD_HTTP_HEADER_HOST))
        c.why = "HTTP/1.1 needs a Host header";
    if (!c.why) {
        /* A POST or PUT that names no length has no body (RFC 9112). If its
         * Content-Length was on a line libmicrohttpd dropped (above), the
         * body would be read as the next request: close after the answer. */
        if (!c.content_length && !c.transfer_encoding &&
            (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0))
            srv_reply_header_static(r, "Connection", "close");
        return true;
    }
    srv_reply_header(r, "Connection", "close");
    srv_reply_error(r, 400, "malformed request head: %s", c.why);
    return false;
}

static void request_start(struct srv_request *r, struct srv_http *h, const char *version)
{
    const struct srv_config *cfg = &r->srv->cfg;
    if (!strict_head(r, version))
        return;
    if (atomic_load(&r->srv->draining)) {
        srv_reply_error(r, 503, "the server is shutting down");
        return;
    }
    if (refuse_over_limit(r, h))
        return;
    if (has_control_byte(r->path)) {
        srv_reply_error(r, 400, "the path holds a control character");
        return;
    }
    /* A browser's CORS preflight, when --cors-origin allows pages to call */
    if (cfg->cors_origin[0] && strcmp(r->method, "OPTIONS") == 0 &&
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Access-Control-Request-Method")) {
        srv_reply_header_static(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        srv_reply_header_static(r, "Access-Control-Allow-Headers",
                                "Content-Type, Content-Encoding, Inference-Header-Content-Length, Authorization, "
                                "X-Request-Id");
        srv_reply_header_static(r, "Access-Control-Max-Age", "600");
        srv_reply(r, 204, "text/plain", &(struct srv_buf){0});
        return;
    }
    int status;
    char allow[64];
    r->route = srv_route_find(r, &status, allow, sizeof(allow));
    if (!r->route) {
        if (status == 405) {
            srv_reply_header(r, "Allow", allow);
            srv_reply_error(r, 405, "method %s not allowed here", r->method);
        } else {
            srv_reply_error(r, 404, "no such endpoint");
        }
        return;
    }
    const char *ce = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (ce && (r->encoding = srv_encoding_parse(ce)) < 0) {
        srv_reply_header(r, "Accept-Encoding", "gzip, deflate");
        srv_reply_error(r, 415, "Content-Encoding '%.40s' is not supported (gzip, deflate or identity)", ce);
        return;
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        /* Digits only: strtoull would take "-1" as 2^64-1 and " 12x" as 12.
         * A value past 2^64 saturates (ERANGE) and is refused as too large. */
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (cl[0] < '0' || cl[0] > '9' || *end != '\0') {
            srv_reply_error(r, 400, "Content-Length is not a number");
            return;
        }
        if (errno == ERANGE || n > (unsigned long long)cfg->max_body_bytes) {
            srv_reply_error(r, 413, "request body of %llu bytes exceeds the limit of %lld", n,
                            (long long)cfg->max_body_bytes);
            return;
        }
        if (n > 0 && !body_reserve(r, (size_t)n)) {
            srv_reply_header(r, "Retry-After", "1");
            srv_reply_header(r, "Connection", "close");
            srv_reply_error(r, 503, "the server holds too many request bodies; retry later");
            return;
        }
        if (n > 0) {
            r->body = malloc((size_t)n);
            if (!r->body) {
                srv_reply_error(r, 503, "out of memory for the request body");
                return;
            }
            r->body_cap = (size_t)n;
        }
    }
}

/* Appends a chunk of the body under the limits. libmicrohttpd 0.9.75 cannot
 * answer in the middle of a body, so a body that grows past the limit
 * (chunked uploads; a declared Content-Length was checked up front) is
 * discarded and answered 413 once it ends, and a client that takes longer
 * than --request-timeout loses its connection (false). */
static bool request_body(struct srv_request *r, const char *data, size_t n)
{
    const struct srv_config *cfg = &r->srv->cfg;
    int64_t elapsed = srv_now_ns() - r->start_ns;
    if (elapsed > cfg->request_timeout_s * 1000000000LL) {
        srv_log(SRV_LOG_INFO, r->id, "%s %s: body not received within %lld s, closing",
                r->method, r->path, (long long)cfg->request_timeout_s);
        return false;
    }
    /* Apache's mod_reqtimeout rule: after a grace, the body must keep
     * arriving at --min-body-rate on average, or a trickle holds memory
     * and a connection for all of --request-timeout. */
    size_t got = r->body_len + n;
    if (cfg->min_body_rate > 0 &&
        (double)elapsed > 1e9 * (BODY_RATE_GRACE_S + (double)got / (double)cfg->min_body_rate)) {
        srv_log(SRV_LOG_INFO, r->id, "%s %s: body arriving slower than %lld bytes/s, closing", r->method, r->path,
                (long long)cfg->min_body_rate);
        return false;
    }
    if (r->body_overflow || r->body_over_budget)
        return true;
    if (n > (size_t)cfg->max_body_bytes - r->body_len) {
        r->body_overflow = true;
        srv_request_body_release(r);
        return true;
    }
    /* body_len + n <= max_body_bytes (checked above), so doubling up to it cannot wrap. */
    if (r->body_len + n > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + n)
            cap *= 2;
        if (cap > (size_t)cfg->max_body_bytes)
            cap = (size_t)cfg->max_body_bytes;
        if (!body_reserve(r, cap - r->body_cap)) {
            r->body_over_budget = true;
            srv_request_body_release(r);
            return true;
        }
        uint8_t *p = realloc(r->body, cap);
        if (!p) {
            srv_log(SRV_LOG_WARN, r->id, "out of memory for a request body, closing");
            return false;
        }
        r->body = p;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    return true;
}

/* Replaces a compressed body by its decoded bytes, under the same size
 * limit and budget as a plain body; false when it answered instead. */
static bool request_decode(struct srv_request *r)
{
    const struct srv_config *cfg = &r->srv->cfg;
    const char *name = r->encoding == SRV_ENCODING_GZIP ? "gzip" : "deflate";
    uint8_t *plain = NULL;
    size_t len = 0;
    switch (srv_inflate(r->body, r->body_len, (enum srv_encoding)r->encoding, (size_t)cfg->max_body_bytes, &plain,
                        &len)) {
    case SRV_INFLATE_OK:
        break;
    case SRV_INFLATE_BAD:
        srv_reply_error(r, 400, "the request body is not valid %s data", name);
        return false;
    case SRV_INFLATE_TOO_LARGE:
        srv_reply_error(r, 413, "the %s request body decodes to more than the limit of %lld bytes", name,
                        (long long)cfg->max_body_bytes);
        return false;
    case SRV_INFLATE_NO_MEMORY:
        srv_reply_error(r, 503, "out of memory decoding the request body");
        return false;
    }
    srv_request_body_release(r);
    if (!body_reserve(r, len)) {
        free(plain);
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_error(r, 503, "the server holds too many request bodies; retry later");
        return false;
    }
    r->body = plain;
    r->body_len = r->body_cap = len;
    return true;
}

/* The body is complete: run the handler; suspend if it deferred. */
static enum MHD_Result request_dispatch(struct srv_request *r)
{
    if (r->body_overflow) {
        srv_reply_error(r, 413, "request body exceeds the limit of %lld bytes",
                        (long long)r->srv->cfg.max_body_bytes);
        return queue_reply(r);
    }
    if (r->body_over_budget) {
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_error(r, 503, "the server holds too many request bodies; retry later");
        return queue_reply(r);
    }
    if (r->encoding != SRV_ENCODING_IDENTITY && !request_decode(r))
        return queue_reply(r);
    r->route->handler(r);
    if (!r->pending) {
        RT_ASSERT(r->status != 0);
        return queue_reply(r);
    }
    pthread_mutex_lock(&r->mu);
    if (!r->done) {
        MHD_suspend_connection(r->conn);
        r->suspended = true;
        pthread_mutex_unlock(&r->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&r->mu);
    r->finish(r);
    return queue_reply(r);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct srv_http *h = cls;
    struct srv_request *r = *con_cls;
    if (!r) {
        r = request_new(h, conn, url, method);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        request_start(r, h, version);
        return r->status ? queue_reply(r) : MHD_YES;
    }
    if (r->queued) {
        *upload_size = 0; /* answered from the headers: the body is not read */
        return MHD_YES;
    }
    if (r->suspended) {
        /* Resumed: the deferred work is done. The lock orders its writes before ours. */
        pthread_mutex_lock(&r->mu);
        r->suspended = false;
        pthread_mutex_unlock(&r->mu);
        r->finish(r);
        return queue_reply(r);
    }
    if (*upload_size) {
        bool ok = request_body(r, upload, *upload_size);
        *upload_size = 0;
        return ok ? MHD_YES : MHD_NO;
    }
    return request_dispatch(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct srv_http *h = cls;
    struct srv_request *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    /* a kept-alive connection now waits for its next request head */
    struct conn_state *cs = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? conn_state(conn) : NULL;
    int fd = cs ? conn_fd(conn) : -1;
    if (fd >= 0)
        srv_head_watch_arm(h->heads, &cs->head, fd);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN) {
        /* closed before its answer went out: timeout, client gone, error */
        int why = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? 0
                  : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT || toe == MHD_REQUEST_TERMINATED_READ_ERROR ? 1
                                                                                                           : 2;
        atomic_fetch_add(&r->srv->requests_cut[why], 1);
    }
    if (srv_log_enabled(SRV_LOG_DEBUG)) {
        srv_log(SRV_LOG_DEBUG, r->id, "%s %s %d %.3f ms%s", r->method, r->path, r->status,
                (double)(srv_now_ns() - r->start_ns) / 1e6,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    }
    request_free(r);
}

/* fmt comes from libmicrohttpd; the attribute lets clang check it as one. */
__attribute__((format(printf, 2, 0)))
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    srv_log(SRV_LOG_DEBUG, NULL, "libmicrohttpd: %s", msg);
}

/* ------------------------------------------------------------ daemon */

/* A PEM file as a C string (at most 1 MiB); NULL when unreadable. */
static char *read_pem(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    enum { PEM_MAX = 1 << 20 };
    char *text = malloc(PEM_MAX + 1);
    size_t n = text ? fread(text, 1, PEM_MAX + 1, f) : 0;
    fclose(f);
    if (!text || n == 0 || n > PEM_MAX) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* libmicrohttpd's URL decoding, except that %00 becomes DEL (0x7f): a NUL
 * would cut the path short ("/v2/models/a%00b" read as "/v2/models/a"),
 * and request_start refuses every control byte with 400. Used for the path
 * and the query arguments alike. */
static size_t unescape_url(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls, (void)conn;
    char *w = s;
    for (const char *p = s; *p; p++) {
        int hi, lo;
        if (*p == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
            int c = hi * 16 + lo;
            *w++ = (char)(c == 0 ? 0x7f : c);
            p += 2;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* The optional settings (TLS) as libmicrohttpd option items, ended by
 * MHD_OPTION_END (items holds 4). */
static enum rt_status optional_settings(struct srv_http *h, struct MHD_OptionItem *items,
                                        unsigned *flags, struct rt_error *err)
{
    const struct srv_config *cfg = &h->srv->cfg;
    int n = 0;
    if (cfg->tls_cert[0] || cfg->tls_key[0]) {
        if (!cfg->tls_cert[0] || !cfg->tls_key[0])
            return rt_error_set(err, RT_ERR_INVALID, "--tls-cert and --tls-key go together");
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
            return rt_error_set(err, RT_ERR_UNSUPPORTED, "this libmicrohttpd has no TLS support");
        /* The names are the operator's own: saying which file failed helps and leaks nothing. */
        if (!(h->tls_cert = read_pem(cfg->tls_cert)))
            return rt_error_set(err, RT_ERR_IO, "--tls-cert %s: cannot read", cfg->tls_cert);
        if (!(h->tls_key = read_pem(cfg->tls_key)))
            return rt_error_set(err, RT_ERR_IO, "--tls-key %s: cannot read", cfg->tls_key);
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert};
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key};
        *flags |= MHD_USE_TLS;
    }
    items[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return RT_OK;
}

/* --max-connections held to what the descriptor limit allows: each
 * connection takes one, and the server keeps some for model files, its
 * listening socket, pipes and logs. Past it accept() would fail with
 * EMFILE and clients would hang in the backlog instead of getting a 503. */
static int64_t connection_cap(const struct srv_config *cfg)
{
    enum { KEPT_FDS = 128 };
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return cfg->max_connections;
    int64_t room = (int64_t)rl.rlim_cur - KEPT_FDS - SRV_CONN_RESERVE;
    if (room < 1)
        room = 1;
    if (cfg->max_connections <= room)
        return cfg->max_connections;
    srv_log_warn("--max-connections %lld is more than the descriptor limit (ulimit -n %llu) allows: "
                 "using %lld (raise the limit for more)",
                 (long long)cfg->max_connections, (unsigned long long)rl.rlim_cur, (long long)room);
    return room;
}

static void http_free(struct srv_http *h)
{
    srv_head_watch_stop(h->heads);
    free(h->tls_cert);
    free(h->tls_key);
    srv_conn_limits_free(h->limits);
    free(h);
}

enum rt_status srv_http_start(struct srv_server *srv, struct srv_http **out, struct rt_error *err)
{
    const struct srv_config *cfg = &srv->cfg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof(port), "%d", (int)cfg->http_port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0 || !ai)
        return rt_error_set(err, RT_ERR_INVALID, "--host %s: %s", cfg->host, gai_strerror(gai));
    struct srv_http *h = calloc(1, sizeof(*h));
    if (!h) {
        freeaddrinfo(ai);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    h->srv = srv;
    h->quiesced_fd = MHD_INVALID_SOCKET;
    atomic_init(&h->next_id, 1);
    atomic_init(&h->refusal_logged_s, 0);
    h->max_connections = connection_cap(cfg);
    h->heads = srv_head_watch_start(cfg->header_timeout_s * 1000000000LL, err);
    if (!h->heads) {
        freeaddrinfo(ai);
        free(h);
        return err->status;
    }
    h->limits = srv_conn_limits_new((int)h->max_connections, (int)cfg->max_connections_per_ip);
    if (!h->limits) {
        freeaddrinfo(ai);
        http_free(h);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = cfg->http_threads > 0 ? (unsigned)cfg->http_threads
                                             : (unsigned)(cores > 0 ? cores : 1);
    /* poll(), not MHD_USE_EPOLL: libmicrohttpd 0.9.75 registers connections
     * edge-triggered and takes a short recv() to mean "drained"
     * (recv_param_adapter clears MHD_EPOLL_STATE_READ_READY), so a client's
     * FIN that arrived with its last bytes is never read: the socket sat in
     * CLOSE-WAIT until --idle-timeout. poll() is level-triggered and sees it.
     * Not MHD_USE_TURBO either (it panicked in MHD_quiesce_daemon on epoll). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_OptionItem extra[4];
    if (optional_settings(h, extra, &flags, err) != RT_OK) {
        freeaddrinfo(ai);
        http_free(h);
        return err->status;
    }
    h->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->http_port, NULL, NULL, on_access, h,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,  /* first, to catch every message */
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->max_connections + SRV_CONN_RESERVE,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)HTTP_LISTEN_BACKLOG,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL,
        MHD_OPTION_ARRAY, extra,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->daemon) {
        http_free(h);
        return rt_error_set(err, RT_ERR_IO, "cannot listen on %s port %d (in use?)", cfg->host,
                            (int)cfg->http_port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : (int)cfg->http_port;
    *out = h;
    return RT_OK;
}

int srv_http_port(const struct srv_http *h) { return h->port; }

/* Connections that finished their handshake but are not accepted yet: for a
 * listening socket Linux reports the accept queue's length in TCP_INFO's
 * tcpi_unacked. -1 where the platform does not say. */
static int listen_queue_length(const struct srv_http *h)
{
#if defined(__linux__) && defined(TCP_INFO)
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    if (!info || getsockopt(info->listen_fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        ti.tcpi_state != TCP_LISTEN)
        return -1;
    return (int)ti.tcpi_unacked;
#else
    (void)h;
    return -1;
#endif
}

int srv_http_accept_backlog(struct srv_http *h, int max_ms)
{
    int64_t deadline = srv_now_ns() + (int64_t)max_ms * 1000000;
    int waiting = listen_queue_length(h);
    if (waiting < 0)
        return -1;
    while (waiting > 0 && srv_now_ns() < deadline) {
        usleep(1000);
        waiting = listen_queue_length(h);
    }
    /* The last connections accepted hold whole requests in their socket
     * buffers: one turn of the HTTP threads' poll loop reads their heads. */
    usleep(20 * 1000);
    return waiting;
}

void srv_http_quiesce(struct srv_http *h)
{
    /* Closed only after MHD_stop_daemon: the pool's threads may still be
     * watching it, and a closed descriptor number can be reused by the next
     * accepted connection (a race ThreadSanitizer saw). No shutdown() on it
     * either: when the pool ran on epoll, that made libmicrohttpd 0.9.75
     * panic ("Failed to remove listen FD from epoll set"). Clients that
     * connect after srv_http_accept_backlog wait in the backlog and are
     * reset at exit. */
    h->quiesced_fd = MHD_quiesce_daemon(h->daemon);
}

void srv_http_stop(struct srv_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    if (h->quiesced_fd != MHD_INVALID_SOCKET)
        close(h->quiesced_fd);
    http_free(h);
}
