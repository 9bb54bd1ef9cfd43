/*
 * srv_http.h - the HTTP layer on libmicrohttpd: connection and request
 * lifecycle, limits, and the API handlers use to answer.
 *
 * Per request: state is created on the first callback (route lookup, the
 * Content-Length limit), the body is collected under the limits, then the
 * route's handler runs on the HTTP thread. A handler either answers at once
 * (srv_reply_*) or defers: it calls srv_request_defer(), hands the work to
 * another thread and returns; the connection is suspended, and when the
 * other thread calls srv_request_resume() the connection is resumed and
 * finish() runs on an HTTP thread to write the answer. HTTP threads never
 * wait for inference. The request is freed when libmicrohttpd reports the
 * response done, whatever happened (ctx_free releases the handler's state).
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_status.h"
#include "runtime/rt_types.h"
#include "srv_buf.h"
#include "srv_server.h"

struct MHD_Connection;
struct srv_http;
struct srv_route;

#define SRV_REQ_ID_MAX 72
#define SRV_MAX_RESP_HEADERS 6

struct srv_request {
    struct srv_server *srv;
    struct MHD_Connection *conn;
    char id[SRV_REQ_ID_MAX];
    const char *method, *path;      /* owned by libmicrohttpd */
    int64_t start_ns;               /* monotonic, at the first callback */
    const struct srv_route *route;
    char model[RT_NAME_MAX];        /* {model} of the route, or "" */
    char version[16];               /* {version} of the route, or "" */
    uint8_t *body;
    size_t body_len, body_cap;
    size_t body_reserved;           /* bytes counted in srv->buffered_bytes */
    bool body_overflow;             /* grew past --max-body-bytes: discarded */
    int encoding;                   /* enum srv_encoding of Content-Encoding */
    bool body_over_budget;          /* grew past --max-buffered-bytes: discarded */
    /* The answer. */
    int status;                     /* 0 until decided */
    const char *content_type;
    struct srv_buf resp;
    struct {
        const char *name;
        const char *value;          /* copy[], or a string that outlives the request */
        char copy[48];
    } headers[SRV_MAX_RESP_HEADERS];
    int n_headers;
    /* Deferred handling. */
    pthread_mutex_t mu;
    bool pending, done, suspended, queued;
    bool orphaned;                  /* connection gone while deferred work ran */
    void (*finish)(struct srv_request *r);
    void *ctx;                      /* handler state, freed by ctx_free */
    void (*ctx_free)(void *ctx);
};

/* Binds cfg->host:cfg->http_port and starts the HTTP threads. */
enum rt_status srv_http_start(struct srv_server *srv, struct srv_http **out, struct rt_error *err);
/* The port actually bound (useful with port 0). */
int srv_http_port(const struct srv_http *h);
/* Keeps accepting while clients wait in the listen backlog (at most max_ms),
 * so requests sent before a signal are served, not reset at exit. Returns
 * how many were still waiting at the end, or -1 where the platform cannot
 * tell (then it returns at once). */
int srv_http_accept_backlog(struct srv_http *h, int max_ms);
/* Stops accepting connections; open ones keep being served. */
void srv_http_quiesce(struct srv_http *h);
/* Closes every connection and stops the threads. No request may be pending. */
void srv_http_stop(struct srv_http *h);

/* The one mapping from a runtime status to an HTTP status code. */
int srv_http_status(enum rt_status st);

/* Answers: body is taken over (emptied). */
void srv_reply(struct srv_request *r, int status, const char *content_type, struct srv_buf *body);
void srv_reply_json(struct srv_request *r, int status, struct srv_buf *body);
/* {"error": "..."}; 5xx other than 503 are logged as warnings. */
void srv_reply_error(struct srv_request *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Status from srv_http_status(err->status), err->msg as the message. */
void srv_reply_rt_error(struct srv_request *r, const struct rt_error *err);
void srv_reply_header(struct srv_request *r, const char *name, const char *value);
/* The same without a copy, for long constant values (a Content-Security-Policy):
 * value must live as long as the request (a literal, an embedded table). */
void srv_reply_header_static(struct srv_request *r, const char *name, const char *value);

/* Frees the body once the handler has taken what it needs from it, so it
 * stops counting against --max-buffered-bytes while the request waits. */
void srv_request_body_release(struct srv_request *r);

/* A request header or query argument, or NULL. */
const char *srv_request_header(struct srv_request *r, const char *name);
const char *srv_request_query(struct srv_request *r, const char *name);

/* See the top of this file. finish() must answer (srv_reply_*). */
void srv_request_defer(struct srv_request *r, void (*finish)(struct srv_request *r));
/* Takes back a defer when the hand-over failed (the handler answers itself). */
void srv_request_undefer(struct srv_request *r);
/* From any thread, once the deferred work is done; the request must not be
 * touched by the caller afterwards. */
void srv_request_resume(struct srv_request *r);

#endif /* SRV_HTTP_H */
