/*
 * lg_http.c - the little HTTP/1.1 the engine speaks: splitting the server
 * URL, resolving it once, prebuilding each request's bytes (request line,
 * headers, body) so a send is one write, and an incremental response
 * parser that needs no allocation (status, Content-Length or chunked body,
 * keep-alive). Responses are counted and discarded, never stored.
 */
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lg.h"

bool lg_target_resolve(const char *url, const char *path, struct lg_target *t, char *why,
                       size_t cap)
{
    memset(t, 0, sizeof(*t));
    const char *p = url;
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strstr(p, "://")) {
        snprintf(why, cap, "only http:// URLs are supported: %s", url);
        return false;
    }
    size_t hostport = strcspn(p, "/");
    char host[256], port[16] = "80";
    const char *colon = NULL;
    if (p[0] == '[') { /* [IPv6]:port */
        const char *close = memchr(p, ']', hostport);
        if (!close || close - p - 1 >= (long)sizeof(host)) {
            snprintf(why, cap, "bad host in %s", url);
            return false;
        }
        snprintf(host, sizeof(host), "%.*s", (int)(close - p - 1), p + 1);
        colon = close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(p, ':', hostport);
        size_t n = colon ? (size_t)(colon - p) : hostport;
        if (n == 0 || n >= sizeof(host)) {
            snprintf(why, cap, "bad host in %s", url);
            return false;
        }
        snprintf(host, sizeof(host), "%.*s", (int)n, p);
    }
    if (colon)
        snprintf(port, sizeof(port), "%.*s", (int)(p + hostport - colon - 1), colon + 1);
    snprintf(t->host, sizeof(t->host), "%.*s", (int)hostport, p);
    /* a base path in the URL prefixes every endpoint (its trailing '/' would double) */
    int base = (int)strlen(p + hostport);
    while (base > 0 && p[hostport + (size_t)base - 1] == '/')
        base--;
    if ((size_t)snprintf(t->path, sizeof(t->path), "%.*s%s", base, p + hostport, path) >=
        sizeof(t->path)) {
        snprintf(why, cap, "URL too long");
        return false;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(why, cap, "cannot resolve %s:%s: %s", host, port, gai_strerror(rc));
        return false;
    }
    memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
    t->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

bool lg_request_build(const struct lg_target *t, const void *body, size_t len,
                      const char *content_type, int64_t header_len, struct lg_request *q)
{
    char head[1024], extra[96] = "";
    if (header_len >= 0)
        snprintf(extra, sizeof(extra), "Inference-Header-Content-Length: %lld\r\n",
                 (long long)header_len);
    int n = body ? snprintf(head, sizeof(head),
                            "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: inferd-loadgen\r\n"
                            "Content-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                            t->path, t->host, content_type, len, extra)
                 : snprintf(head, sizeof(head),
                            "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: inferd-loadgen\r\n\r\n",
                            t->path, t->host);
    if (n < 0 || (size_t)n >= sizeof(head))
        return false;
    q->len = (size_t)n + (body ? len : 0);
    if (!(q->bytes = malloc(q->len)))
        return false;
    memcpy(q->bytes, head, (size_t)n);
    if (body)
        memcpy(q->bytes + n, body, len);
    return true;
}

/* ------------------------------------------------------------ responses */

enum { P_HEAD, P_BODY, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_END, P_TRAILER, P_DONE };

void lg_http_reset(struct lg_http *p)
{
    p->state = P_HEAD;
    p->status = 0;
    p->remaining = 0;
    p->close = false;
    p->len = 0;
}

bool lg_http_done(const struct lg_http *p) { return p->state == P_DONE; }

/* The value of header name in the block head[0..n), or NULL. */
static const char *header(const char *head, size_t n, const char *name, size_t *vlen)
{
    size_t k = strlen(name);
    for (const char *line = memchr(head, '\n', n); line && line + 1 < head + n;
         line = memchr(line + 1, '\n', (size_t)(head + n - line - 1))) {
        const char *s = line + 1;
        if ((size_t)(head + n - s) > k && strncasecmp(s, name, k) == 0 && s[k] == ':') {
            s += k + 1;
            while (*s == ' ' || *s == '\t')
                s++;
            const char *e = memchr(s, '\r', (size_t)(head + n - s));
            *vlen = e ? (size_t)(e - s) : 0;
            return s;
        }
    }
    return NULL;
}

/* Parses the complete header block in p->buf[0..p->len). */
static bool parse_head(struct lg_http *p)
{
    const char *h = p->buf;
    if (p->len < 12 || strncmp(h, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)h[9]))
        return false;
    p->status = (int)strtol(h + 9, NULL, 10);
    size_t vlen;
    const char *v = header(h, p->len, "Connection", &vlen);
    p->close = (v && vlen >= 5 && strncasecmp(v, "close", 5) == 0) || h[7] == '0';
    if ((p->status >= 100 && p->status < 200) || p->status == 204 || p->status == 304) {
        p->state = P_DONE;
        return p->status >= 200; /* 1xx are never asked for (no Expect) */
    }
    v = header(h, p->len, "Transfer-Encoding", &vlen);
    if (v && vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0) {
        p->state = P_CHUNK_SIZE;
        p->len = 0;
        return true;
    }
    v = header(h, p->len, "Content-Length", &vlen);
    if (!v) /* the body runs to the close; loadgen's server never does this */
        return false;
    char *end;
    p->remaining = strtoll(v, &end, 10);
    if (end == v || p->remaining < 0)
        return false;
    p->state = p->remaining ? P_BODY : P_DONE;
    return true;
}

/* One line of a chunked body ("1a\r\n", "\r\n", a trailer) into p->buf;
 * true when it is complete. */
static bool take_line(struct lg_http *p, const char **d, size_t *n, bool *bad)
{
    while (*n > 0) {
        char c = *(*d)++;
        (*n)--;
        if (c == '\n')
            return true;
        if (p->len + 1 >= sizeof(p->buf)) {
            *bad = true;
            return false;
        }
        if (c != '\r')
            p->buf[p->len++] = c;
    }
    return false;
}

bool lg_http_feed(struct lg_http *p, const char *d, size_t n)
{
    bool bad = false;
    while (n > 0 && !bad) {
        switch (p->state) {
        case P_HEAD: {
            size_t room = sizeof(p->buf) - 1 - p->len, take = n < room ? n : room;
            size_t from = p->len > 3 ? p->len - 3 : 0;
            memcpy(p->buf + p->len, d, take);
            p->len += take;
            p->buf[p->len] = '\0';
            char *end = memmem(p->buf + from, p->len - from, "\r\n\r\n", 4);
            if (!end) {
                if (p->len + 1 >= sizeof(p->buf))
                    return false; /* headers larger than we accept */
                d += take;
                n -= take;
                break;
            }
            size_t used = (size_t)(end + 4 - p->buf) - (p->len - take);
            p->len = (size_t)(end + 4 - p->buf);
            d += used;
            n -= used;
            if (!parse_head(p))
                return false;
            break;
        }
        case P_BODY:
        case P_CHUNK_DATA: {
            size_t take = (uint64_t)p->remaining < n ? (size_t)p->remaining : n;
            p->remaining -= (int64_t)take;
            d += take;
            n -= take;
            if (p->remaining == 0)
                p->state = p->state == P_BODY ? P_DONE : P_CHUNK_END;
            break;
        }
        case P_CHUNK_SIZE:
            if (take_line(p, &d, &n, &bad)) {
                p->buf[p->len] = '\0';
                char *end;
                long long size = strtoll(p->buf, &end, 16);
                if (end == p->buf || size < 0)
                    return false;
                p->remaining = size;
                p->len = 0;
                p->state = size ? P_CHUNK_DATA : P_TRAILER;
            }
            break;
        case P_CHUNK_END:
            if (take_line(p, &d, &n, &bad)) {
                bad = p->len != 0;
                p->state = P_CHUNK_SIZE;
            }
            break;
        case P_TRAILER:
            if (take_line(p, &d, &n, &bad)) {
                if (p->len == 0)
                    p->state = P_DONE;
                p->len = 0;
            }
            break;
        default: /* bytes after a complete response: we never pipeline */
            return false;
        }
    }
    return !bad;
}
