/*
 * cmd_health.c - "inferctl health [MODEL]": whether the server is live and
 * ready (or one model is ready). The exit status is the answer, for
 * scripts and container health checks: 0 ready, 1 not ready, 3 no server.
 */
#include <stdlib.h>

#include "inferctl.h"

static int report(const char *what, bool ok, const struct icl_error *err)
{
    if (ok)
        printf("%s: yes\n", what);
    else
        printf("%s: no (%s)\n", what, err->message[0] ? err->message : "not ready");
    return ok ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}

int ctl_cmd_health(int argc, char **argv)
{
    char **pos;
    int npos, rc = ctl_positional("health", argc, argv, NULL, 0, 0, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    struct icl_client *c = ctl_connect("health");
    if (!c) {
        free(pos);
        return CTL_EXIT_ERROR;
    }
    struct icl_error err;
    bool live, ready;
    if (icl_server_live(c, &live, &err) != ICL_OK) {
        rc = ctl_remote_error("health", &err);
    } else if ((rc = report("live", live, &err)) == CTL_EXIT_OK) {
        enum icl_status st = npos ? icl_model_ready(c, pos[0], &ready, &err)
                                  : icl_server_ready(c, &ready, &err);
        if (st != ICL_OK)
            rc = ctl_remote_error("health", &err);
        else if (npos)
            rc = report(pos[0], ready, &err);
        else
            rc = report("ready", ready, &err);
    }
    icl_client_free(c);
    free(pos);
    return rc;
}
