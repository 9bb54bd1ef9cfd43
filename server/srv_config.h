/*
 * srv_config.h - the daemon's settings.
 *
 * One table of options (name, type, default, bounds, help) in srv_config.c
 * drives everything: command-line parsing, --help, validation and the
 * optional JSON config file (--config FILE, an object whose keys are option
 * names). Precedence: defaults < config file < command line.
 *
 *     struct srv_config cfg;
 *     char err[256];
 *     switch (srv_config_parse(argc, argv, &cfg, err, sizeof(err))) { ... }
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SRV_CONFIG_STR_MAX 1024

struct srv_config {
    char model_repository[SRV_CONFIG_STR_MAX];
    char host[SRV_CONFIG_STR_MAX];
    int64_t http_port;
    int backend;                  /* enum rt_backend_kind */
    int64_t threads;              /* compute threads per model instance; 0 = cores */
    int64_t cpu_batch_chunk;      /* rt_backend_options.cpu_batch_chunk */
    char cpu_isa[SRV_CONFIG_STR_MAX]; /* rt_backend_options.cpu_isa; "": default */
    int cuda_graphs;              /* enum rt_cuda_graphs */
    int cuda_kernels;             /* enum rt_cuda_kernels */
    int64_t http_threads;         /* libmicrohttpd thread pool; 0 = cores */
    int log_level;                /* enum srv_log_level */
    bool enable_model_control;
    bool exit_on_error;           /* a model failing to load at start-up ends inferd */
    bool batching;                /* false: every request runs alone */
    int64_t inline_batch_us;      /* srv_batcher_options.inline_budget_ns, in us */
    bool no_ui;                   /* true: no web page at / and /ui/ */
    bool profile_steps;           /* time every step: GET /v2/models/{m}/profile */
    int64_t max_body_bytes;
    int64_t max_buffered_bytes;   /* all request bodies held at once */
    int64_t max_image_pixels;
    int64_t max_tensor_elements;
    int64_t max_json_depth;
    int64_t idle_timeout_s;       /* connection idle timeout */
    int64_t request_timeout_s;    /* whole-request receive timeout */
    int64_t header_timeout_s;     /* request head deadline (srv_head_watch.h) */
    int64_t min_body_rate;        /* bytes/s a body must average after a grace; 0: none */
    int64_t max_connections;
    int64_t max_connections_per_ip; /* 0: no per-address limit */
    char api_key[SRV_CONFIG_STR_MAX]; /* "" : model control needs no token */
    char cors_origin[SRV_CONFIG_STR_MAX]; /* "" : no CORS headers */
    char tls_cert[SRV_CONFIG_STR_MAX]; /* PEM files; both "" : plain HTTP */
    char tls_key[SRV_CONFIG_STR_MAX];
    int64_t drain_timeout_s;
    char port_file[SRV_CONFIG_STR_MAX];
    char config_file[SRV_CONFIG_STR_MAX];
};

enum srv_config_result { SRV_CONFIG_OK = 0, SRV_CONFIG_ERROR, SRV_CONFIG_HELP };

/* Fills cfg from the defaults, the config file and argv. On SRV_CONFIG_ERROR
 * err holds one line saying which option and why; SRV_CONFIG_HELP means
 * --help was asked for (the caller prints srv_config_usage and exits 0). */
enum srv_config_result srv_config_parse(int argc, char **argv, struct srv_config *cfg, char *err,
                                        size_t err_len);

/* The --help text, generated from the option table. */
void srv_config_usage(FILE *out, const char *prog);

#endif /* SRV_CONFIG_H */
