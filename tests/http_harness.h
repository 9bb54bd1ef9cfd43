/*
 * http_harness.h - helpers for the HTTP integration tests: a real inferd
 * child process on a free loopback port with a temporary model repository,
 * libcurl requests, raw sockets for malformed traffic, and the offline
 * (in-process) run of a model to compare answers with.
 *
 *     struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
 *     struct http_daemon d;
 *     if (!http_daemon_start(&d, &spec, 1, NULL)) SKIP/FAIL...;
 *     struct http_resp r;
 *     http_get(&d, "/v2/health/ready", &r);   // r.status, r.body
 *     http_resp_free(&r);
 *     int status = http_daemon_stop(&d);      // SIGTERM; the exit status
 *
 * The daemon is the inferd beside the test runner (build-asan/run-tests
 * starts build-asan/inferd), or $INFERD_BIN, with --backend $INFERD_TEST_BACKEND
 * when that is set. It dies with the runner.
 */
#ifndef HTTP_HARNESS_H
#define HTTP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/rt_model.h"
#include "test.h"

/* The shipped model the tests serve (copies with test-specific batching). */
#define HTTP_SOURCE_MODEL "model_repository/lenet5"

/* One model folder of the temporary repository: the source model's weights
 * and labels with its model.json edited. Negative values keep the source's. */
struct http_model_spec {
    const char *name;
    int max_batch_size;
    int64_t max_queue_delay_us;
    int max_queue_size;
    int64_t default_timeout_us;
    int instances;
    int n_preferred;              /* -1 keeps; 0 clears */
    int preferred[4];
    bool broken;                  /* a model.json that does not load */
};
#define HTTP_MODEL_SPEC(n) {(n), -1, -1, -1, -1, -1, -1, {0}, false}

struct http_daemon {
    pid_t pid;
    int port;
    char dir[256];                /* temporary folder: repo/, inferd.log, port */
    char model[64];               /* the first model's name */
};

/* Whether the source model exists (tests SKIP with a reason otherwise). */
bool http_source_model_present(void);

/* Writes the repository (in d->dir/repo), starts inferd on it with extra
 * flags (NULL-ended, may be NULL) and waits until /v2/health/ready answers
 * 200 (/v2/health/live when a model is broken). On failure
 * prints why (and the daemon's log) and cleans up. */
bool http_daemon_start(struct http_daemon *d, const struct http_model_spec *models, int n_models,
                       const char *const *extra_args);
/* As http_daemon_start on the repository fill writes into the empty folder
 * repo, waiting until probe answers 200. */
bool http_daemon_start_custom(struct http_daemon *d, bool (*fill)(const char *repo), const char *const *extra_args,
                              const char *probe);
/* Copies the source model's files into folder dir (made when missing),
 * its model.json naming the model `name`. */
bool http_copy_source_model(const char *dir, const char *name);
/* SIGTERM, waits for exit (up to 20 s, then SIGKILL) and removes the folder.
 * Returns the exit status, or -1 when it did not exit cleanly. */
int http_daemon_stop(struct http_daemon *d);
/* Sends SIGTERM without waiting. */
void http_daemon_signal(const struct http_daemon *d);
/* Waits for the daemon to exit; its exit status or -1. */
int http_daemon_wait(struct http_daemon *d, int timeout_ms);

typedef enum test_result (*http_test_fn)(struct http_daemon *d);

/* The usual test: SKIP without the source model, start the daemon, run fn,
 * stop the daemon; fails when fn fails or the daemon does not exit 0. */
enum test_result http_run(const struct http_model_spec *models, int n_models,
                          const char *const *extra_args, http_test_fn fn);

/* The daemon's log so far (its first cap - 1 bytes) into buf; false when
 * there is none. Valid until http_daemon_stop removes the folder. */
bool http_daemon_log(const struct http_daemon *d, char *buf, size_t cap);

/* The inferd binary the tests run (beside run-tests, or $INFERD_BIN). */
void http_inferd_path(char *out, size_t cap);

/* Runs inferd with args (NULL-ended) to completion; its exit status, with
 * stdout and stderr in out. */
int http_run_inferd(const char *const *args, char *out, size_t cap);

/* ------------------------------------------------------------ requests */

struct http_resp {
    long status;                  /* 0 when no response came */
    int curl_code;                /* CURLcode */
    char *body;                   /* NUL-terminated (body[len] == 0) */
    size_t len;
    char content_type[128];
    char retry_after[32];
    long header_len;              /* Inference-Header-Content-Length, or -1 */
};

/* headers: NULL-ended "Name: value" strings, may be NULL. */
bool http_request(const struct http_daemon *d, const char *method, const char *path,
                  const char *const *headers, const void *body, size_t len, struct http_resp *out);
bool http_get(const struct http_daemon *d, const char *path, struct http_resp *out);
bool http_post(const struct http_daemon *d, const char *path, const char *content_type,
               const void *body, size_t len, struct http_resp *out);
void http_resp_free(struct http_resp *r);

/* The status of one request (0: no answer). An error answer must be JSON
 * {"error": "..."} that names no host path, else -2 is returned. */
long http_status(const struct http_daemon *d, const char *method, const char *path,
                 const char *content_type, const void *body, size_t len);

/* A valid infer request for the source model answered 200 with 10 logits:
 * the "daemon still serves" check after each bad input. */
bool http_still_serves(const struct http_daemon *d);

/* Raw TCP for traffic libcurl will not send. connect: fd or -1. */
int http_raw_connect(const struct http_daemon *d);
bool http_raw_send(int fd, const void *data, size_t len);
/* The status code of the response read from fd, 0 when the server closed
 * the connection without one, -1 on timeout. */
int http_raw_status(int fd, int timeout_ms);

/* The value of the series line "name{labels}" in Prometheus text, or -1. */
double http_metric(const char *text, const char *series);

/* ------------------------------------------------------------ payloads */

/* JSON infer request for the source model's input "input": rows x 784. */
char *http_infer_json(const float *x, int rows, const char *extra_fields);
/* head, then `numbers` (>= 1) ones separated by commas, then tail (a body of
 * 2 * numbers bytes and more, for the memory and liveness attacks); its
 * length in *len, NULL when out of memory. */
char *http_numbers_json(const char *head, int64_t numbers, const char *tail, size_t *len);
/* Parses outputs[0].data (FP32) of a JSON infer response into out
 * (n floats); false when the shape or count is off. */
bool http_parse_logits(const char *body, float *out, int n);

/* ------------------------------------------------------------ offline runs */

struct http_offline {
    struct rt_backend *backend;
    struct rt_model *model;
    struct rt_session *session;
    const struct rt_model_config *cfg;
};

bool http_offline_open(struct http_offline *o, const char *model_dir);
/* Runs n samples in chunks of max_batch_size. */
bool http_offline_run(struct http_offline *o, int n, const float *in, float *out);
void http_offline_close(struct http_offline *o);

int http_argmax(const float *x, int n);

#endif /* HTTP_HARNESS_H */
