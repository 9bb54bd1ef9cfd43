/*
 * cmd_models.c - "inferctl models": the models the server knows, with their
 * state and, for one that is not ready, the reason (the repository index,
 * which inferd answers with model control on or off; only the ready ones
 * from a server that refuses the index).
 */
#include <stdlib.h>

#include "inferctl.h"

int ctl_cmd_models(int argc, char **argv)
{
    char **pos;
    int npos, rc = ctl_positional("models", argc, argv, NULL, 0, 0, 0, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    free(pos);
    struct icl_client *c = ctl_connect("models");
    if (!c)
        return CTL_EXIT_ERROR;
    struct icl_model_entry *m;
    struct icl_error err;
    int n;
    if (icl_model_list(c, &m, &n, &err) != ICL_OK) {
        rc = ctl_remote_error("models", &err);
    } else {
        printf("%-24s %-8s %s\n", "MODEL", "VERSION", "STATE");
        for (int i = 0; i < n; i++)
            printf("%-24s %-8s %s%s%s\n", m[i].name, m[i].version[0] ? m[i].version : "-",
                   m[i].state[0] ? m[i].state : "UNKNOWN", m[i].reason[0] ? "  " : "",
                   m[i].reason);
        free(m);
    }
    icl_client_free(c);
    return rc;
}
