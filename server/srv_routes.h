/*
 * srv_routes.h - the one route table: method + path pattern -> handler.
 *
 * Patterns are '/'-separated; a "{model}" or "{version}" segment matches any
 * one segment and is captured into the request; "{file}" matches any one
 * segment without capturing it (the handler reads the path). The first
 * matching entry wins, so more specific patterns come first.
 */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include "srv_http.h"

typedef void (*srv_handler_fn)(struct srv_request *r);

struct srv_route {
    const char *method;
    const char *pattern;
    srv_handler_fn handler;
};

/* The route for r->method and r->path, filling r->model / r->version; NULL
 * when none matches, with *status 404 (no such path) or 405 (path exists for
 * other methods, listed in allow). */
const struct srv_route *srv_route_find(struct srv_request *r, int *status, char *allow,
                                       size_t allow_len);

#endif /* SRV_ROUTES_H */
