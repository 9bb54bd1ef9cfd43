/*
 * srv_server.h - the state the whole daemon shares: settings, the backend,
 * the model repository and the lifecycle flags the HTTP layer reads.
 * One instance lives in srv_main.c for the life of the process.
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/rt_model.h"
#include "srv_config.h"
#include "srv_repo.h"
#include "srv_work.h"

#define SRV_NAME "inferd"
#define SRV_VERSION "0.1.0"

struct srv_server {
    struct srv_config cfg;
    struct rt_backend *backend;
    struct srv_repo *repo;
    struct srv_work_pool *work;        /* image decoding and preprocessing, large infer bodies' parse */
    struct srv_work_pool *control;     /* model load and unload, one at a time */
    atomic_bool shutting_down;         /* a signal arrived: not ready; the listen backlog is still served */
    atomic_bool draining;              /* the backlog is served: refuse new work */
    atomic_bool models_loaded;         /* start-up loading finished */
    atomic_int inflight;               /* HTTP requests between arrival and completion */
    atomic_uint_fast64_t responses[600];  /* responses sent, by status code */
    atomic_int_fast64_t buffered_bytes; /* request bodies held now (--max-buffered-bytes) */
    atomic_int open_connections;       /* client connections open now */
    atomic_uint_fast64_t refused_connections[2];  /* requests refused over --max-connections, -per-ip */
    atomic_uint_fast64_t connections_without_request;  /* closed before a request head reached inferd */
    atomic_uint_fast64_t requests_cut[3];  /* closed before their answer: timeout, client, error */
};

#endif /* SRV_SERVER_H */
