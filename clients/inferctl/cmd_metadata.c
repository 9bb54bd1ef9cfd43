/*
 * cmd_metadata.c - "inferctl metadata [MODEL]": a model's inputs and
 * outputs (name, datatype, shape; -1 is the batch dimension), or without
 * MODEL the server's name, version and protocol extensions.
 */
#include <stdlib.h>

#include "inferctl.h"

static void print_tensors(const char *title, const struct icl_tensor *t, int n)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++) {
        printf("  %-20s %-6s [", t[i].name, t[i].datatype);
        for (int d = 0; d < t[i].rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)t[i].shape[d]);
        printf("]\n");
    }
}

static int server_metadata(struct icl_client *c)
{
    struct icl_server_metadata m;
    struct icl_error err;
    if (icl_server_metadata(c, &m, &err) != ICL_OK)
        return ctl_remote_error("metadata", &err);
    printf("server: %s %s\nextensions:", m.name, m.version);
    for (int i = 0; i < m.n_extensions; i++)
        printf(" %s", m.extensions[i]);
    printf("\n");
    return CTL_EXIT_OK;
}

static int model_metadata(struct icl_client *c, const char *model)
{
    struct icl_model_metadata m;
    struct icl_error err;
    if (icl_model_metadata(c, model, &m, &err) != ICL_OK)
        return ctl_remote_error("metadata", &err);
    printf("model: %s (platform %s)\n", m.name, m.platform[0] ? m.platform : "unknown");
    print_tensors("inputs", m.inputs, m.n_inputs);
    print_tensors("outputs", m.outputs, m.n_outputs);
    return CTL_EXIT_OK;
}

int ctl_cmd_metadata(int argc, char **argv)
{
    char **pos;
    int npos, rc = ctl_positional("metadata", argc, argv, NULL, 0, 0, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    struct icl_client *c = ctl_connect("metadata");
    if (c) {
        rc = npos ? model_metadata(c, pos[0]) : server_metadata(c);
        icl_client_free(c);
    } else {
        rc = CTL_EXIT_ERROR;
    }
    free(pos);
    return rc;
}
