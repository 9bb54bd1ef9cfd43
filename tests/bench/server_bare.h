/*
 * server_bare.h - the ceiling for the HTTP benchmark: libmicrohttpd with
 * the same threading inferd uses (internal thread pool on poll()), answering
 * every request with one fixed JSON body and doing nothing else.
 */
#ifndef SERVER_BARE_H
#define SERVER_BARE_H

struct server_bare;

/* Listens on 127.0.0.1, a free port; NULL on failure. */
struct server_bare *server_bare_start(int threads);
int server_bare_port(const struct server_bare *s);
void server_bare_stop(struct server_bare *s);

#endif /* SERVER_BARE_H */
