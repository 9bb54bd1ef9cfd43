/* srv_head_watch.c - shutting down connections whose request head is late (srv_head_watch.h). */
#include "srv_head_watch.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "srv_clock.h"
#include "srv_log.h"

#define SWEEP_NS 200000000LL   /* how often the list is walked */

struct srv_head_watch {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    struct srv_head_entry head;   /* sentinel of a circular list, oldest first */
    int64_t timeout_ns;
    bool stopping;
    atomic_uint_fast64_t cut;
};

static void unlink_entry(struct srv_head_entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->linked = false;
}

static void *sweep(void *arg)
{
    struct srv_head_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SWEEP_NS;
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&w->wake, &w->mu, &until);
        int64_t now = srv_now_ns();
        int cut = 0;
        /* Oldest first: stop at the first entry still within its time.
         * shutdown() under the lock: a connection being closed disarms
         * (taking the lock) before libmicrohttpd closes its descriptor, so
         * the number cannot belong to another connection yet. */
        while (w->head.next != &w->head && now - w->head.next->since_ns > w->timeout_ns) {
            struct srv_head_entry *e = w->head.next;
            unlink_entry(e);
            shutdown(e->fd, SHUT_RDWR);
            cut++;
        }
        if (cut) {
            atomic_fetch_add(&w->cut, (uint64_t)cut);
            srv_log_info("closed %d connection%s whose request head took longer than --header-timeout", cut,
                         cut == 1 ? "" : "s");
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct srv_head_watch *srv_head_watch_start(int64_t timeout_ns, struct rt_error *err)
{
    struct srv_head_watch *w = calloc(1, sizeof(*w));
    if (!w) {
        rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    w->head.prev = w->head.next = &w->head;
    w->timeout_ns = timeout_ns;
    atomic_init(&w->cut, 0);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, sweep, w) != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        free(w);
        rt_error_set(err, RT_ERR_NO_MEMORY, "cannot start the request head watch thread");
        return NULL;
    }
    return w;
}

void srv_head_watch_arm(struct srv_head_watch *w, struct srv_head_entry *e, int fd)
{
    pthread_mutex_lock(&w->mu);
    if (e->linked)
        unlink_entry(e);
    e->fd = fd;
    e->since_ns = srv_now_ns();
    e->prev = w->head.prev;   /* at the tail: the list stays oldest first */
    e->next = &w->head;
    w->head.prev->next = e;
    w->head.prev = e;
    e->linked = true;
    pthread_mutex_unlock(&w->mu);
}

void srv_head_watch_disarm(struct srv_head_watch *w, struct srv_head_entry *e)
{
    pthread_mutex_lock(&w->mu);
    if (e->linked)
        unlink_entry(e);
    pthread_mutex_unlock(&w->mu);
}

uint64_t srv_head_watch_cut(const struct srv_head_watch *w) { return atomic_load(&w->cut); }

void srv_head_watch_stop(struct srv_head_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
