/*
 * srv_head_watch.h - a deadline for the request head. libmicrohttpd 0.9.75
 * times a connection out only when it sends nothing at all, so a client
 * that trickles its headers a byte at a time holds a connection for as
 * long as it likes (slowloris). Every connection waiting for a request head
 * is on this watch's list; a thread shuts down the socket of any that has
 * waited longer than --header-timeout (libmicrohttpd then sees the socket
 * fail and closes the connection itself).
 *
 *     struct srv_head_watch *w = srv_head_watch_start(timeout_ns, &err);
 *     srv_head_watch_arm(w, &entry, fd);   // connection opened / answered
 *     srv_head_watch_disarm(w, &entry);    // head arrived / connection closing
 *     srv_head_watch_stop(w);
 */
#ifndef SRV_HEAD_WATCH_H
#define SRV_HEAD_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_status.h"

struct srv_head_watch;

/* Embedded in the connection's state; all zero before the first arm. */
struct srv_head_entry {
    struct srv_head_entry *prev, *next;
    int fd;
    int64_t since_ns;
    bool linked;
};

struct srv_head_watch *srv_head_watch_start(int64_t timeout_ns, struct rt_error *err);
/* Starts (or restarts) e's wait for a request head on socket fd. */
void srv_head_watch_arm(struct srv_head_watch *w, struct srv_head_entry *e, int fd);
/* Ends e's wait; after it returns the watch no longer touches e or its fd. */
void srv_head_watch_disarm(struct srv_head_watch *w, struct srv_head_entry *e);
/* Connections the watch has cut since it started. */
uint64_t srv_head_watch_cut(const struct srv_head_watch *w);
void srv_head_watch_stop(struct srv_head_watch *w);

#endif /* SRV_HEAD_WATCH_H */
