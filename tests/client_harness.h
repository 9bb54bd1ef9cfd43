/*
 * client_harness.h - helpers for the client tests: run a program that sits
 * beside the test runner (build/inferctl, build/inferd-loadgen), or any
 * other (the examples' interpreters), to completion with its stdout and stderr captured, and a closed loopback
 * port for "server down" cases. The daemon itself comes from
 * http_harness.h.
 *
 *     struct client_run r;
 *     const char *args[] = {"--url", url, "health", NULL};
 *     client_run_tool("inferctl", args, &r);   // r.status, r.out, r.err
 *     client_run_free(&r);
 */
#ifndef CLIENT_HARNESS_H
#define CLIENT_HARNESS_H

#include <stdbool.h>

struct client_run {
    int status;              /* exit status; -1 when it did not exit normally */
    char *out, *err;         /* captured stdout and stderr, NUL-terminated */
};

/* Runs tool (a name beside the runner, or a path when it holds a '/')
 * with args (NULL-ended). False when it could not be started. */
bool client_run_tool(const char *tool, const char *const *args, struct client_run *r);
void client_run_free(struct client_run *r);

/* "http://127.0.0.1:PORT" of a daemon's port, into buf. */
const char *client_url(int port, char *buf, int cap);
/* A loopback port nothing listens on (bound, then closed). */
int client_closed_port(void);

#endif /* CLIENT_HARNESS_H */
