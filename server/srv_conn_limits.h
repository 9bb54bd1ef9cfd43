/*
 * srv_conn_limits.h - the connection limits, counted by inferd itself so a
 * refused client gets an answer (503, Retry-After, a log line, a counter)
 * instead of a silently closed socket:
 *
 *   --max-connections N          past N open connections, a new one is over
 *                                the global limit; health and metrics are
 *                                still answered on it (a reserve of
 *                                SRV_CONN_RESERVE slots above N, which is
 *                                libmicrohttpd's own hard cap)
 *   --max-connections-per-ip N   past N from one address (0: no such limit,
 *                                the default: a load balancer is one address)
 *
 * Used from libmicrohttpd's connection-notify callback (open, close) and
 * read at each request; thread-safe.
 */
#ifndef SRV_CONN_LIMITS_H
#define SRV_CONN_LIMITS_H

#include <stdbool.h>
#include <sys/socket.h>

#define SRV_CONN_RESERVE 64

enum srv_conn_over { SRV_CONN_WITHIN = 0, SRV_CONN_OVER_GLOBAL, SRV_CONN_OVER_PER_ADDRESS };

struct srv_conn_limits;

/* NULL when out of memory. */
struct srv_conn_limits *srv_conn_limits_new(int max_total, int max_per_address);
void srv_conn_limits_free(struct srv_conn_limits *l);

/* A connection from addr opened: which limit it is over, if any. Counted
 * either way; srv_conn_closed undoes it. */
enum srv_conn_over srv_conn_opened(struct srv_conn_limits *l, const struct sockaddr *addr);
void srv_conn_closed(struct srv_conn_limits *l, const struct sockaddr *addr);

#endif /* SRV_CONN_LIMITS_H */
