/*
 * lg.h - internals of inferd-loadgen, the load generator: its options, the
 * pool of prepared requests, the latency histogram, the engine that sends
 * requests (closed or open loop) and the reports it writes.
 *
 * One run measures one or more levels (a concurrency, or a request rate);
 * each level is warm-up, then a measured window bounded by duration and by
 * request count. Every file here but main.c is linked into the test runner.
 *
 * The engine speaks HTTP/1.1 itself (keep-alive, one request per
 * connection at a time) rather than through libcurl, whose per-request
 * cost would make the tool, not the server, the limit on fast endpoints;
 * the client library (libcurl) still checks the server and encodes the
 * bodies beforehand.
 */
#ifndef LG_H
#define LG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* ------------------------------------------------------------ options */

enum lg_kind { LG_KIND_CLASSIFY, LG_KIND_INFER_JSON, LG_KIND_INFER_BINARY, LG_KIND_LIVE };
enum lg_mode { LG_MODE_CLOSED, LG_MODE_OPEN };

#define LG_MAX_LEVELS 64

struct lg_config {
    const char *url;
    const char *model;
    enum lg_kind kind;
    const char *images;      /* folder of image files; NULL: Fashion-MNIST test set */
    int pool;                /* distinct request bodies to cycle through */
    int batch;               /* images (rows) per request */
    enum lg_mode mode;
    int n_levels;            /* concurrencies (closed) or rates in req/s (open) */
    double levels[LG_MAX_LEVELS];
    double duration_s, warmup_s;
    int64_t requests;        /* measured requests per level; 0: duration only */
    int threads;             /* 0: one per core, at most one per connection */
    int max_inflight;        /* open loop: requests outstanding at once */
    double timeout_s;        /* per request */
    const char *out;         /* PREFIX for PREFIX.json, .csv, .png; NULL: none */
    uint64_t seed;
    bool progress;           /* a status line on stderr (when it is a TTY) */
};

/* Parses argv (without the program name) into cfg. Returns 0 on success,
 * 2 after printing a usage error to err, or -1 when --help was printed to
 * out. */
int lg_config_parse(int argc, char **argv, struct lg_config *cfg, FILE *out, FILE *err);
const char *lg_kind_name(enum lg_kind k);
const char *lg_mode_name(enum lg_mode m);

/* ------------------------------------------------------------ histogram */

/* Log-linear buckets over nanoseconds: exact below 256 ns, then 128 per
 * power of two, so any value is known within 1/128 (0.8%); fixed size, so
 * recording never allocates and per-thread histograms merge by adding. */
#define LG_HIST_SUB 128
#define LG_HIST_MAX_EXP 34   /* values up to 2^41 ns (about 36 minutes) */
#define LG_HIST_BUCKETS (2 * LG_HIST_SUB + LG_HIST_MAX_EXP * LG_HIST_SUB)

struct lg_hist {
    uint64_t count;
    int64_t min, max;        /* exact */
    double sum;              /* exact mean */
    uint64_t buckets[LG_HIST_BUCKETS];
};

void lg_hist_init(struct lg_hist *h);
void lg_hist_record(struct lg_hist *h, int64_t ns);
void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from);
/* Nearest-rank percentile p in (0, 100]; the bucket's midpoint, clamped to
 * [min, max]; 0 for an empty histogram. */
int64_t lg_hist_percentile(const struct lg_hist *h, double p);

/* ------------------------------------------------------------ schedule */

/* xorshift64* state; never zero. */
uint64_t lg_rand_next(uint64_t *state);
/* An exponential inter-arrival time in ns for a Poisson process of rate
 * requests per second: -ln(1 - U) / rate. */
int64_t lg_exp_interval_ns(uint64_t *state, double rate);

/* ------------------------------------------------------------ HTTP */

/* Where requests go: the resolved address and what the request line and
 * Host header say. */
struct lg_target {
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char host[256];          /* "host:port" as the URL gave it */
    char path[1024];         /* the URL's base path + the endpoint */
};

/* Splits url ("http://host[:port][/base]"), resolves the host and appends
 * path. False with the reason in why. */
bool lg_target_resolve(const char *url, const char *path, struct lg_target *t, char *why,
                       size_t cap);

/* One request as the bytes to write: request line, headers, body. */
struct lg_request {
    uint8_t *bytes;
    size_t len;
};

/* A POST of body (or a GET when body is NULL) to t; header_len >= 0 adds
 * Inference-Header-Content-Length. False when out of memory. */
bool lg_request_build(const struct lg_target *t, const void *body, size_t len,
                      const char *content_type, int64_t header_len, struct lg_request *q);

/* An incremental HTTP/1.1 response parser: fixed size, no allocation. */
struct lg_http {
    int state;
    int status;              /* once the headers are in */
    bool close;              /* the server will close the connection */
    int64_t remaining;       /* body or chunk bytes still to come */
    size_t len;
    char buf[8192];          /* the header block, then a chunk-size line */
};

void lg_http_reset(struct lg_http *p);
/* Consumes n bytes of the response; false when it is malformed (or bytes
 * follow its end). */
bool lg_http_feed(struct lg_http *p, const char *data, size_t n);
bool lg_http_done(const struct lg_http *p);

/* ------------------------------------------------------------ workload */

struct lg_workload {
    struct lg_target target;
    int n;
    struct lg_request *requests;
    char description[256];   /* for reports: what one request is */
};

/* Prepares cfg->pool requests (fewer when fewer images exist). Prints why
 * on failure; returns the exit code (0 ok, 1 error, 2 usage, 3 cannot
 * connect). */
int lg_workload_build(const struct lg_config *cfg, struct lg_workload *w);
void lg_workload_free(struct lg_workload *w);

/* ------------------------------------------------------------ engine */

#define LG_MAX_STATUS 600

/* What one level measured (threads' stats merged). */
struct lg_stats {
    struct lg_hist hist;     /* latency of measured requests answered 2xx */
    uint64_t sent, completed, ok;           /* measured */
    uint64_t warm_sent, warm_completed, warm_ok;
    uint64_t status[LG_MAX_STATUS];         /* measured answers by HTTP status */
    uint64_t connect_errors, timeouts, transport_errors; /* measured, no answer */
    uint64_t late_sends;     /* open loop: sent > 1 ms after their intended time */
    int64_t first_ns, last_ns; /* measured window: start, last completion */
    uint64_t bytes_received;
};

/* Live counters for the progress line, updated by the engine's threads. */
struct lg_live {
    atomic_uint_fast64_t completed, errors;
};

/* Runs one level to completion. level: a concurrency (closed) or a rate
 * (open). live may be NULL. Returns false (after printing why) only when
 * the engine could not start. */
bool lg_run_level(const struct lg_config *cfg, const struct lg_workload *w, double level,
                  struct lg_live *live, struct lg_stats *out);

/* Measured seconds: first_ns to last_ns. */
double lg_stats_elapsed_s(const struct lg_stats *s);
uint64_t lg_stats_errors(const struct lg_stats *s);

/* ------------------------------------------------------------ reports */

struct lg_level_report {
    double level;
    struct lg_stats stats;
};

void lg_report_text(FILE *f, const struct lg_config *cfg, const struct lg_workload *w,
                    const struct lg_level_report *r);
bool lg_report_json(FILE *f, const struct lg_config *cfg, const struct lg_workload *w,
                    const struct lg_level_report *r, int n);
bool lg_report_csv(FILE *f, const struct lg_config *cfg, const struct lg_level_report *r, int n);
/* Writes PREFIX.gp and runs gnuplot on it to draw PREFIX.png from
 * PREFIX.csv. False (after printing why) when gnuplot is missing or fails. */
bool lg_report_plot(const struct lg_config *cfg, const struct lg_workload *w);

/* Runs gnuplot on a script file: 0 when it succeeded, LG_GNUPLOT_MISSING
 * when gnuplot is not installed, else its exit status (-1: no status). */
#define LG_GNUPLOT_MISSING 127
int lg_gnuplot(const char *script);
/* Writes s as a gnuplot single-quoted string ('' stands for one quote). */
void lg_gnuplot_string(FILE *f, const char *s);

#endif /* LG_H */
