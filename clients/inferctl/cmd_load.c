/*
 * cmd_load.c - "inferctl load MODEL" and "inferctl unload MODEL": the
 * repository's model control (the server must run with
 * --enable-model-control). One file for the pair: they differ in a word.
 */
#include <stdlib.h>

#include "inferctl.h"

static int repo_action(const char *command, int argc, char **argv, bool load)
{
    char **pos;
    int npos, rc = ctl_positional(command, argc, argv, NULL, 0, 1, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    struct icl_client *c = ctl_connect(command);
    if (c) {
        struct icl_error err;
        enum icl_status st = load ? icl_model_load(c, pos[0], &err)
                                  : icl_model_unload(c, pos[0], &err);
        if (st == ICL_OK)
            printf("%s: %s\n", pos[0], load ? "loaded" : "unloaded");
        rc = st == ICL_OK ? CTL_EXIT_OK : ctl_remote_error(command, &err);
        icl_client_free(c);
    } else {
        rc = CTL_EXIT_ERROR;
    }
    free(pos);
    return rc;
}

int ctl_cmd_load(int argc, char **argv) { return repo_action("load", argc, argv, true); }

int ctl_cmd_unload(int argc, char **argv) { return repo_action("unload", argc, argv, false); }
