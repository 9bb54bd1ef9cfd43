/*
 * main.c - inferctl's entry point: one table of commands from which
 * dispatch, "inferctl help" and the usage text all derive. A new command
 * (the HTTP client commands, quantize, ...) is one more row.
 */
#include <stdio.h>
#include <string.h>

#include "inferctl.h"

static int cmd_help(int argc, char **argv);

static const struct ctl_command COMMANDS[] = {
    {"run", ctl_cmd_run, "MODEL_DIR IMAGE... [--top-k K] [--backend auto|cpu|cuda] [--threads N]",
     "classify images (PNG, JPEG, PGM/PPM) offline with a model folder"},
    {"eval", ctl_cmd_eval,
     "MODEL_DIR [--backend auto|cpu|cuda] [--threads N] [--batch B] [--limit N]",
     "top-1 accuracy and throughput on the Fashion-MNIST test set"},
    {"help", cmd_help, "[COMMAND]", "show this help, or one command's"},
};
#define N_COMMANDS (int)(sizeof(COMMANDS) / sizeof(COMMANDS[0]))

static const struct ctl_command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

static void print_usage(FILE *f)
{
    fprintf(f, "usage: inferctl COMMAND [ARGS...]\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-6s %s\n", COMMANDS[i].name, COMMANDS[i].help);
    fprintf(f, "\n'inferctl help COMMAND' or 'inferctl COMMAND --help' shows a command's "
               "arguments.\nExit status: 0 ok, 1 error, 2 usage error.\n");
}

void ctl_print_command_usage(FILE *f, const char *name)
{
    const struct ctl_command *c = find_command(name);
    if (!c)
        return;
    fprintf(f, "usage: inferctl %s %s\n  %s\n", c->name, c->args, c->help);
}

static int cmd_help(int argc, char **argv)
{
    if (argc == 0) {
        print_usage(stdout);
        return CTL_EXIT_OK;
    }
    if (argc == 1 && find_command(argv[0])) {
        ctl_print_command_usage(stdout, argv[0]);
        return CTL_EXIT_OK;
    }
    fprintf(stderr, "inferctl: no command '%s'\n", argv[0]);
    print_usage(stderr);
    return CTL_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CTL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cmd_help(0, NULL);
    const struct ctl_command *c = find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "inferctl: unknown command '%s'\n", argv[1]);
        print_usage(stderr);
        return CTL_EXIT_USAGE;
    }
    return c->run(argc - 2, argv + 2);
}
