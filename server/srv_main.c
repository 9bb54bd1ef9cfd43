/*
 * srv_main.c - the inferd daemon: settings, start-up, the signal wait and
 * the drain.
 *
 * Start-up order: parse settings, create the backend, open the repository,
 * start HTTP (live answers from here on; ready does not yet), load every
 * model (one failing ends start-up unless --exit-on-error false), then
 * wait. SIGTERM, SIGINT or SIGHUP (or a device error that poisons the
 * backend) starts the drain (SIGHUP does not reload: model control does):
 * readiness turns 503, connections waiting in the listen backlog are
 * accepted and served (up to 1 s), then new requests are refused, the
 * listener stops accepting, and every accepted request is answered; then
 * stop. Exit status 0 after a clean drain, 1 when
 * start-up or the drain failed or the device broke, 2 for bad flags.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv_clock.h"
#include "srv_http.h"
#include "srv_log.h"
#include "srv_server.h"

static struct srv_server server;
static atomic_int exit_status;

/* How long a drain keeps accepting while clients wait in the listen backlog. */
enum { BACKLOG_FLUSH_MS = 1000 };

/* A device error poisons the backend: stop being ready and end non-zero, so
 * a supervisor restarts the daemon. Runs on a worker thread. */
static void on_device_error(const struct rt_error *err)
{
    srv_log_error("device error, shutting down: %s", err->msg);
    atomic_store(&exit_status, 1);
    atomic_store(&server.draining, true);
    kill(getpid(), SIGTERM);
}

static bool write_port_file(const char *path, int port)
{
    char tmp[SRV_CONFIG_STR_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    fprintf(f, "%d\n", port);
    bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* Serves what waits in the listen backlog, then stops accepting and waits
 * until every accepted request has been answered. */
static bool drain(struct srv_http *http)
{
    atomic_store(&server.shutting_down, true);
    int left = srv_http_accept_backlog(http, BACKLOG_FLUSH_MS);
    if (left > 0)
        srv_log_warn("%d connection(s) still in the listen backlog after %d ms: they will be reset",
                     left, BACKLOG_FLUSH_MS);
    atomic_store(&server.draining, true);
    srv_http_quiesce(http);
    int64_t deadline = srv_now_ns() + server.cfg.drain_timeout_s * 1000000000LL;
    srv_log_info("draining %d request(s)", atomic_load(&server.inflight));
    while (atomic_load(&server.inflight) > 0) {
        if (srv_now_ns() > deadline) {
            srv_log_error("%d request(s) still running after --drain-timeout %lld s",
                          atomic_load(&server.inflight), (long long)server.cfg.drain_timeout_s);
            return false;
        }
        usleep(2000);
    }
    return true;
}

static int wait_for_signal(const sigset_t *set)
{
    int sig = 0;
    while (sigwait(set, &sig) != 0)
        ;
    return sig;
}

int main(int argc, char **argv)
{
    char msg[512];
    struct srv_config *cfg = &server.cfg;
    switch (srv_config_parse(argc, argv, cfg, msg, sizeof(msg))) {
    case SRV_CONFIG_HELP:
        srv_config_usage(stdout, argv[0]);
        return 0;
    case SRV_CONFIG_ERROR:
        fprintf(stderr, "inferd: %s\n", msg);
        return 2;
    case SRV_CONFIG_OK:
        break;
    }
    srv_log_set_level((enum srv_log_level)cfg->log_level);
    /* Request bodies and tensors of 1 MiB or more get their own mappings,
     * given back to the system when freed. Left to itself glibc raises
     * this threshold to the largest block freed so far, after which a 32 MB
     * body comes from a thread's arena and its memory stays with the
     * process. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);

    /* Signals go to the main thread's sigwait only; every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);   /* a closed terminal or a supervisor's hang-up: drain too */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct rt_error err = {RT_OK, ""};
    /* By default compute takes half the cores: a batch that spreads over
     * every core only fights the HTTP threads feeding it. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cfg->threads > 0 ? (int)cfg->threads : (int)(cores > 1 ? cores / 2 : 1);
    const struct rt_backend_options bopt = {.threads = threads,
                                            .device = -1,
                                            .cpu_batch_chunk = (int)cfg->cpu_batch_chunk,
                                            .cpu_isa = cfg->cpu_isa,
                                            .cuda_graphs = (enum rt_cuda_graphs)cfg->cuda_graphs,
                                            .cuda_kernels = (enum rt_cuda_kernels)cfg->cuda_kernels};
    if (rt_backend_create((enum rt_backend_kind)cfg->backend, &bopt, &server.backend, &err) != RT_OK) {
        srv_log_error("backend: %s", err.msg);
        return 1;
    }
    srv_log_info("backend %s: %s", rt_backend_name(server.backend),
                 rt_backend_describe(server.backend));
    const struct srv_batcher_options batch_opt = {.batching = cfg->batching,
                                                  .inline_budget_ns = cfg->inline_batch_us * 1000,
                                                  .profile_steps = cfg->profile_steps,
                                                  .on_device_error = on_device_error};
    if (srv_repo_open(cfg->model_repository, server.backend, &batch_opt, &server.repo, &err) != RT_OK) {
        srv_log_error("%s", err.msg);
        rt_backend_free(server.backend);
        return 1;
    }
    /* Long work leaves the HTTP threads for these: a decode per core; model
     * control one at a time, so a load stuck on a file (a FIFO, a dead
     * network mount) holds one thread and queues the rest. */
    struct srv_http *http = NULL;
    if (srv_work_pool_create(cores > 0 ? (int)cores : 1, 256, &server.work, &err) != RT_OK ||
        srv_work_pool_create(1, 16, &server.control, &err) != RT_OK ||
        srv_http_start(&server, &http, &err) != RT_OK) {
        srv_log_error("%s", err.msg);
        srv_work_pool_free(server.work);
        srv_work_pool_free(server.control);
        srv_repo_free(server.repo);
        rt_backend_free(server.backend);
        return 1;
    }
    srv_log_info("listening on %s port %d", cfg->host, srv_http_port(http));
    if (cfg->port_file[0] && !write_port_file(cfg->port_file, srv_http_port(http)))
        srv_log_warn("cannot write --port-file: %s", strerror(errno));

    bool ok = srv_repo_load_all(server.repo, &err) == RT_OK;
    if (!ok && !cfg->exit_on_error) {
        srv_log_warn("serving without it, not ready (--exit-on-error false): %s", err.msg);
        ok = true;
    }
    if (ok) {
        atomic_store(&server.models_loaded, true);
        char why[400];
        if (srv_repo_all_ready(server.repo, why, sizeof(why)))
            srv_log_info("ready");
        else
            srv_log_warn("serving, but not ready: %s", why);
        int sig = wait_for_signal(&set);
        srv_log_info("%s received, shutting down", sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM");
    } else {
        srv_log_error("start-up failed: %s", err.msg);
        atomic_store(&exit_status, 1);
    }
    if (!drain(http)) {
        /* Requests are stuck in a model: the HTTP layer cannot stop with them
         * suspended, so leave without tearing down. */
        _exit(1);
    }
    srv_http_stop(http);
    srv_work_pool_free(server.work);
    srv_work_pool_free(server.control);
    srv_repo_free(server.repo);
    rt_backend_free(server.backend);
    srv_log_info("stopped");
    return atomic_load(&exit_status);
}
