/*
 * remote.c - what inferctl's server commands share: the server address
 * (--url, else $INFERD_URL, else the loopback default), the request
 * timeout, opening a client, and the one mapping from a client-library
 * error to a message and an exit code.
 */
#include <stdlib.h>

#include "inferctl.h"

static const char *server_url;
static long timeout_ms;

void ctl_set_server(const char *url, long timeout)
{
    server_url = url;
    timeout_ms = timeout;
}

const char *ctl_server_url(void) { return server_url; }

struct icl_client *ctl_connect(const char *command)
{
    const char *url = server_url ? server_url : getenv("INFERD_URL");
    struct icl_options opts = {.timeout_ms = timeout_ms};
    struct icl_client *c;
    struct icl_error err;
    if (icl_client_create(url && url[0] ? url : ICL_DEFAULT_URL, &opts, &c, &err) != ICL_OK) {
        ctl_remote_error(command, &err);
        return NULL;
    }
    return c;
}

int ctl_remote_error(const char *command, const struct icl_error *err)
{
    if (err->status == ICL_ERR_HTTP)
        fprintf(stderr, "inferctl %s: %s (HTTP %ld)\n", command, err->message, err->http_status);
    else
        fprintf(stderr, "inferctl %s: %s\n", command, err->message);
    return err->status == ICL_ERR_CONNECT ? CTL_EXIT_CONNECT : CTL_EXIT_ERROR;
}

int ctl_positional(const char *command, int argc, char **argv, const struct ctl_option *opts,
                   int n_opts, int min, int max, char ***pos, int *npos)
{
    *pos = calloc((size_t)argc + 1, sizeof(char *));
    if (!*pos) {
        fprintf(stderr, "inferctl %s: out of memory\n", command);
        return CTL_EXIT_ERROR;
    }
    int rc = ctl_parse_options(command, argc, argv, opts, n_opts, *pos, npos);
    if (rc == CTL_EXIT_OK && (*npos < min || *npos > max)) {
        fprintf(stderr, "inferctl %s: wrong number of arguments\n", command);
        ctl_print_command_usage(stderr, command);
        rc = CTL_EXIT_USAGE;
    }
    if (rc != CTL_EXIT_OK) {
        free(*pos);
        *pos = NULL;
    }
    return rc;
}
