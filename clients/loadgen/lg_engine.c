/*
 * lg_engine.c - sends the requests of one level and times them.
 *
 * Each thread owns an epoll set and a fixed array of keep-alive HTTP/1.1
 * connections (one request on each at a time); requests are prebuilt
 * bytes, answers are parsed in place and dropped, so the hot loop
 * allocates nothing and threads share only a few atomics.
 *
 * Closed loop: a thread keeps its share of the concurrency in flight; a
 * connection gets its next request as soon as its answer is in, and
 * latency runs from the actual send. Open loop: a thread follows its own
 * Poisson schedule (the threads' schedules together form one of the full
 * rate); latency runs from each request's intended send time, so when the
 * server (or --max-inflight) holds requests back the wait counts instead
 * of being hidden (coordinated omission).
 *
 * A request belongs to the measurement when it was (meant to be) sent
 * after the warm-up; sending stops at the end of the window or when
 * --requests measured requests have been sent, and what is in flight then
 * is awaited and counted.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lg.h"

#define LATE_NS 1000000        /* an open-loop send this far behind schedule is "late" */
#define TICK_NS 10000000       /* timeouts and the live counters, every 10 ms */
#define BACKOFF_NS 1000000     /* after a refused connection, before the next try */
#define READ_BUF ((size_t)64 * 1024)
#define MAX_EVENTS 256

struct shared {
    int64_t start_ns, warm_end_ns, end_ns;
    atomic_int_fast64_t tickets; /* measured sends left when cfg->requests > 0 */
    atomic_bool stop;
    struct lg_live *live;
};

struct conn {
    int fd;                  /* -1: not connected */
    bool connecting, busy;
    bool reused;             /* has answered before: a close may be its idle timeout */
    bool retried, got_bytes;
    bool measured;
    const struct lg_request *req;
    size_t sent;
    int64_t start_ns;        /* actual (closed) or intended (open) send time */
    int64_t deadline_ns;
    struct lg_http http;
};

enum failure { FAIL_CONNECT, FAIL_TIMEOUT, FAIL_TRANSPORT };

struct worker {
    pthread_t tid;
    const struct lg_config *cfg;
    const struct lg_workload *w;
    struct shared *sh;
    int n_conns;
    double rate;             /* open loop: this thread's share */
    uint64_t rng;
    int next_request;
    struct lg_stats stats;
    int ep;
    struct conn *conns;
    int *idle, n_idle;
    int64_t backoff_until;
    uint64_t live_done, live_errors; /* not yet added to sh->live */
    char *rbuf;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void conn_close(struct worker *wk, struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(wk->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->connecting = c->reused = false;
}

static void release(struct worker *wk, struct conn *c)
{
    c->busy = false;
    wk->idle[wk->n_idle++] = (int)(c - wk->conns);
}

static void count(struct worker *wk, struct conn *c, bool ok, int64_t now)
{
    struct lg_stats *st = &wk->stats;
    wk->live_done++;
    wk->live_errors += !ok;
    if (!c->measured) {
        st->warm_completed++;
        st->warm_ok += ok;
        return;
    }
    st->completed++;
    st->ok += ok;
    if (now > st->last_ns)
        st->last_ns = now;
    if (ok) /* errors are counted by kind; a fast 503 is no latency served */
        lg_hist_record(&st->hist, now - c->start_ns);
}

static void fail(struct worker *wk, struct conn *c, enum failure why)
{
    int64_t now = now_ns();
    if (c->measured) {
        if (why == FAIL_CONNECT)
            wk->stats.connect_errors++;
        else if (why == FAIL_TIMEOUT)
            wk->stats.timeouts++;
        else
            wk->stats.transport_errors++;
    }
    if (why == FAIL_CONNECT)
        wk->backoff_until = now + BACKOFF_NS;
    count(wk, c, false, now);
    conn_close(wk, c);
    release(wk, c);
}

static void complete(struct worker *wk, struct conn *c)
{
    int status = c->http.status;
    bool ok = status >= 200 && status < 300;
    if (c->measured)
        wk->stats.status[status > 0 && status < LG_MAX_STATUS ? status : 0]++;
    count(wk, c, ok, now_ns());
    c->reused = true;
    /* an answer before the whole request went out (an early 413, say) leaves
     * the rest of the body unsent: the connection is out of step */
    if (c->http.close || c->sent < c->req->len)
        conn_close(wk, c);
    release(wk, c);
}

/* Writes what the socket takes of the request. */
static void write_more(struct worker *wk, struct conn *c)
{
    while (c->sent < c->req->len) {
        ssize_t n = send(c->fd, c->req->bytes + c->sent, c->req->len - c->sent, MSG_NOSIGNAL);
        if (n > 0) {
            c->sent += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (errno == EAGAIN)
                return; /* the EPOLLOUT edge brings us back */
        } else {
            fail(wk, c, FAIL_TRANSPORT);
            return;
        }
    }
}

/* Opens c's connection (non-blocking); false when it failed at once. */
static bool conn_open(struct worker *wk, struct conn *c)
{
    const struct lg_target *t = &wk->w->target;
    c->fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return false;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* edge-triggered for both directions: one registration for the connection's life */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (epoll_ctl(wk->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        conn_close(wk, c);
        return false;
    }
    if (connect(c->fd, (const struct sockaddr *)&t->addr, t->addr_len) == 0)
        return true;
    if (errno == EINPROGRESS) {
        c->connecting = true;
        return true;
    }
    conn_close(wk, c);
    return false;
}

/* Puts the request on the wire (opening the connection first if needed). */
static void transmit(struct worker *wk, struct conn *c)
{
    c->sent = 0;
    c->got_bytes = false;
    lg_http_reset(&c->http);
    c->deadline_ns = now_ns() + (int64_t)(wk->cfg->timeout_s * 1e9);
    if (c->fd < 0 && !conn_open(wk, c)) {
        fail(wk, c, FAIL_CONNECT);
        return;
    }
    if (!c->connecting)
        write_more(wk, c);
}

static void send_one(struct worker *wk, int64_t start_ns, bool measured)
{
    struct conn *c = &wk->conns[wk->idle[--wk->n_idle]];
    c->req = &wk->w->requests[wk->next_request];
    wk->next_request = (wk->next_request + 1) % wk->w->n;
    c->busy = true;
    c->retried = false;
    c->start_ns = start_ns;
    c->measured = measured;
    if (measured)
        wk->stats.sent++;
    else
        wk->stats.warm_sent++;
    transmit(wk, c);
}

/* The server closed or reset c: a reused connection that had sent nothing
 * back was most likely closed idle, so the request goes again, once. */
static void lost(struct worker *wk, struct conn *c)
{
    bool again = c->busy && c->reused && !c->got_bytes && !c->retried;
    conn_close(wk, c);
    if (again) {
        c->retried = true;
        transmit(wk, c);
    } else if (c->busy) {
        fail(wk, c, FAIL_TRANSPORT);
    }
}

static void on_readable(struct worker *wk, struct conn *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, wk->rbuf, READ_BUF, 0);
        if (n > 0) {
            if (!c->busy) { /* nothing asked: the connection is out of step */
                conn_close(wk, c);
                return;
            }
            c->got_bytes = true;
            wk->stats.bytes_received += (uint64_t)n;
            if (!lg_http_feed(&c->http, wk->rbuf, (size_t)n)) {
                fail(wk, c, FAIL_TRANSPORT);
                return;
            }
            if (lg_http_done(&c->http)) {
                complete(wk, c);
                return; /* nothing may follow an answer: no pipelining */
            }
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return;
        } else {
            lost(wk, c);
            return;
        }
    }
}

static void on_event(struct worker *wk, struct conn *c, uint32_t events)
{
    if (c->fd < 0)
        return;
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || (events & (EPOLLERR | EPOLLHUP))) {
            fail(wk, c, FAIL_CONNECT);
            return;
        }
        c->connecting = false;
    }
    if (c->busy && c->sent < c->req->len && (events & EPOLLOUT))
        write_more(wk, c);
    if (c->fd >= 0 && (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)))
        on_readable(wk, c);
}

/* Whether a measured send may go; takes a ticket when --requests bounds it. */
static bool take_ticket(struct worker *wk)
{
    if (wk->cfg->requests <= 0)
        return true;
    if (atomic_fetch_sub(&wk->sh->tickets, 1) > 0)
        return true;
    atomic_store(&wk->sh->stop, true);
    return false;
}

/* Sends what is due; false once this thread will send no more. */
static bool send_due(struct worker *wk, int64_t now, int64_t *next_arrival)
{
    struct shared *sh = wk->sh;
    if (wk->cfg->mode == LG_MODE_CLOSED) {
        while (wk->n_idle > 0 && now >= wk->backoff_until) {
            if (now >= sh->end_ns || atomic_load(&sh->stop))
                return false;
            bool measured = now >= sh->warm_end_ns;
            if (measured && !take_ticket(wk))
                return false;
            send_one(wk, now, measured);
        }
        return now < sh->end_ns;
    }
    while (*next_arrival <= now && wk->n_idle > 0) {
        if (*next_arrival >= sh->end_ns || atomic_load(&sh->stop))
            return false;
        bool measured = *next_arrival >= sh->warm_end_ns;
        if (measured && !take_ticket(wk))
            return false;
        if (now - *next_arrival > LATE_NS)
            wk->stats.late_sends++;
        send_one(wk, *next_arrival, measured);
        *next_arrival += lg_exp_interval_ns(&wk->rng, wk->rate);
    }
    return *next_arrival < sh->end_ns && !atomic_load(&sh->stop);
}

/* Every TICK_NS: requests past their deadline fail; the live counters move. */
static void tick(struct worker *wk, int64_t now)
{
    for (int i = 0; i < wk->n_conns; i++) {
        struct conn *c = &wk->conns[i];
        if (c->busy && now > c->deadline_ns)
            fail(wk, c, FAIL_TIMEOUT);
    }
    if (wk->sh->live) {
        atomic_fetch_add(&wk->sh->live->completed, wk->live_done);
        atomic_fetch_add(&wk->sh->live->errors, wk->live_errors);
    }
    wk->live_done = wk->live_errors = 0;
}

/* epoll_wait with a nanosecond timeout where the kernel has epoll_pwait2
 * (the open loop's send times are finer than milliseconds). */
static int wait_events(int ep, struct epoll_event *ev, int64_t timeout_ns)
{
    if (timeout_ns < 0)
        timeout_ns = 0;
#ifdef SYS_epoll_pwait2
    static atomic_bool missing;
    if (!atomic_load(&missing)) {
        struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
        int n = epoll_pwait2(ep, ev, MAX_EVENTS, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        atomic_store(&missing, true);
    }
#endif
    return epoll_wait(ep, ev, MAX_EVENTS, (int)((timeout_ns + 999999) / 1000000));
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct shared *sh = wk->sh;
    struct epoll_event ev[MAX_EVENTS];
    int64_t now = now_ns();
    if (sh->start_ns > now)
        wait_events(wk->ep, ev, sh->start_ns - now); /* nothing registered yet: a sleep */
    int64_t next_arrival = sh->start_ns, next_tick = sh->start_ns + TICK_NS;
    if (wk->cfg->mode == LG_MODE_OPEN)
        next_arrival += lg_exp_interval_ns(&wk->rng, wk->rate);
    bool sending = true;
    for (;;) {
        now = now_ns();
        if (now >= next_tick) {
            tick(wk, now);
            next_tick = now + TICK_NS;
        }
        if (sending)
            sending = send_due(wk, now, &next_arrival);
        if (!sending && wk->n_idle == wk->n_conns)
            break;
        int64_t wake = next_tick;
        if (sending && wk->n_idle > 0)
            wake = wk->cfg->mode == LG_MODE_OPEN ? next_arrival : wk->backoff_until;
        if (wake > next_tick)
            wake = next_tick;
        int n = wait_events(wk->ep, ev, wake - now_ns());
        for (int i = 0; i < n; i++)
            on_event(wk, ev[i].data.ptr, ev[i].events);
    }
    tick(wk, now_ns());
    return NULL;
}

static bool worker_init(struct worker *wk)
{
    wk->ep = epoll_create1(EPOLL_CLOEXEC);
    wk->conns = calloc((size_t)wk->n_conns, sizeof(*wk->conns));
    wk->idle = calloc((size_t)wk->n_conns, sizeof(int));
    wk->rbuf = malloc(READ_BUF);
    if (wk->ep < 0 || !wk->conns || !wk->idle || !wk->rbuf)
        return false;
    for (int i = 0; i < wk->n_conns; i++) {
        wk->conns[i].fd = -1;
        wk->idle[wk->n_idle++] = wk->n_conns - 1 - i; /* first use takes conns[0] */
    }
    return true;
}

static void worker_cleanup(struct worker *wk)
{
    for (int i = 0; wk->conns && i < wk->n_conns; i++)
        if (wk->conns[i].fd >= 0)
            close(wk->conns[i].fd);
    if (wk->ep >= 0)
        close(wk->ep);
    free(wk->conns);
    free(wk->idle);
    free(wk->rbuf);
}

double lg_stats_elapsed_s(const struct lg_stats *s)
{
    return s->last_ns > s->first_ns ? (double)(s->last_ns - s->first_ns) / 1e9 : 0.0;
}

uint64_t lg_stats_errors(const struct lg_stats *s) { return s->completed - s->ok; }

static void merge(struct lg_stats *into, const struct lg_stats *from)
{
    lg_hist_merge(&into->hist, &from->hist);
    into->sent += from->sent;
    into->completed += from->completed;
    into->ok += from->ok;
    into->warm_sent += from->warm_sent;
    into->warm_completed += from->warm_completed;
    into->warm_ok += from->warm_ok;
    for (int i = 0; i < LG_MAX_STATUS; i++)
        into->status[i] += from->status[i];
    into->connect_errors += from->connect_errors;
    into->timeouts += from->timeouts;
    into->transport_errors += from->transport_errors;
    into->late_sends += from->late_sends;
    into->bytes_received += from->bytes_received;
    if (from->last_ns > into->last_ns)
        into->last_ns = from->last_ns;
}

static int thread_count(const struct lg_config *cfg, double level)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = cfg->threads > 0 ? cfg->threads : (int)(cores > 0 ? cores : 1);
    if (cfg->mode == LG_MODE_CLOSED && t > (int)level)
        t = (int)level;
    if (cfg->mode == LG_MODE_OPEN && t > cfg->max_inflight)
        t = cfg->max_inflight;
    return t > 0 ? t : 1;
}

bool lg_run_level(const struct lg_config *cfg, const struct lg_workload *w, double level,
                  struct lg_live *live, struct lg_stats *out)
{
    int n = thread_count(cfg, level);
    int total = cfg->mode == LG_MODE_CLOSED ? (int)level : cfg->max_inflight;
    struct worker *wk = calloc((size_t)n, sizeof(*wk));
    struct shared sh = {.live = live};
    atomic_init(&sh.tickets, cfg->requests);
    atomic_init(&sh.stop, false);
    bool ok = wk != NULL;
    for (int i = 0; ok && i < n; i++) {
        wk[i] = (struct worker){.cfg = cfg, .w = w, .sh = &sh, .ep = -1,
                                .n_conns = total / n + (i < total % n),
                                .rate = cfg->mode == LG_MODE_OPEN ? level / n : 0,
                                .rng = cfg->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i + 1};
        lg_hist_init(&wk[i].stats.hist);
        ok = worker_init(&wk[i]);
    }
    if (!ok)
        fprintf(stderr, "inferd-loadgen: cannot set up %d connections\n", total);
    /* a head start, so every thread is waiting when the clock starts */
    sh.start_ns = now_ns() + 20000000;
    sh.warm_end_ns = sh.start_ns + (int64_t)(cfg->warmup_s * 1e9);
    sh.end_ns = sh.warm_end_ns + (int64_t)(cfg->duration_s * 1e9);
    int started = 0;
    for (; ok && started < n; started++)
        ok = pthread_create(&wk[started].tid, NULL, worker_main, &wk[started]) == 0;
    if (!ok && started < n) {
        atomic_store(&sh.stop, true); /* the started ones end at once */
        fprintf(stderr, "inferd-loadgen: cannot start thread %d\n", started + 1);
    }
    memset(out, 0, sizeof(*out));
    lg_hist_init(&out->hist);
    out->first_ns = sh.warm_end_ns;
    for (int i = 0; i < started; i++) {
        pthread_join(wk[i].tid, NULL);
        merge(out, &wk[i].stats);
    }
    for (int i = 0; wk && i < n; i++)
        worker_cleanup(&wk[i]);
    free(wk);
    return ok;
}
