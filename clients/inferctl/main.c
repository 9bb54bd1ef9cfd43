/*
 * main.c - inferctl's entry point: one table of commands from which
 * dispatch, "inferctl help" and the usage text all derive. A new command
 * is one more row. Global options (the server's address) come before the
 * command name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferctl.h"

static int cmd_help(int argc, char **argv);

static const struct ctl_command COMMANDS[] = {
    {"run", ctl_cmd_run, "MODEL_DIR IMAGE... [--top-k K] [--backend auto|cpu|cuda] [--threads N]",
     "classify images (PNG, JPEG, PGM/PPM) offline with a model folder"},
    {"eval", ctl_cmd_eval,
     "MODEL_DIR [--data DIR] [--backend auto|cpu|cuda] [--threads N] [--batch B] [--limit N]",
     "top-1 accuracy and throughput on DIR (one sub-folder of images per class, named after the model's "
     "labels) or the Fashion-MNIST test set"},
    {"health", ctl_cmd_health, "[MODEL]",
     "is the server live and ready (or MODEL ready)? exit 0 yes, 1 no"},
    {"models", ctl_cmd_models, "", "list the server's models and their state"},
    {"metadata", ctl_cmd_metadata, "[MODEL]",
     "a model's inputs and outputs, or the server's name and extensions"},
    {"classify", ctl_cmd_classify, "MODEL IMAGE... [--top-k K] [--batch N] [--multipart]",
     "classify image files on the server (N images per request)"},
    {"infer", ctl_cmd_infer,
     "MODEL --input FILE|- [--binary] [--output NAME] [--classification K]",
     "run a JSON request file, or raw tensor data for the model's input"},
    {"load", ctl_cmd_load, "MODEL", "load a model (server started with --enable-model-control)"},
    {"unload", ctl_cmd_unload, "MODEL", "unload a model (same)"},
    {"quantize", ctl_cmd_quantize,
     "MODEL_DIR -o OUT_DIR [--method max|percentile|entropy] [--calib N] [--percentile P] [--calib-data DIR] "
     "[--eval-data DIR] [--threads N]",
     "INT8-quantise an fp32 model (calibrated on N images of DIR, any layout, or of Fashion-MNIST's training "
     "set), report top-1 (on --eval-data's class folders, or Fashion-MNIST's test set)"},
    {"convert", ctl_cmd_convert, "MODEL_DIR -o OUT_DIR [--precision fp16|fp32]",
     "write an fp32 model folder at another float precision (batch norms folded)"},
    {"accuracy", ctl_cmd_accuracy, "MODEL_DIR... [--calib N] [--threads N]",
     "top-1 of fp32, fp16 and int8 (each calibration method) on the test set"},
    {"profile", ctl_cmd_profile,
     "MODEL_DIR [--backend auto|cpu|cuda] [--threads N] [--batch N=1] [--precision fp32|fp16|int8] [--runs N=100] "
     "[--warmup N=10] [--trace FILE] [--calib-data DIR] [--floors TFLOPS,TBS]",
     "time every step of the model offline: a table per layer, and a Chrome/Perfetto trace; --floors: each "
     "step's least time at a device's peaks instead"},
    {"tune", ctl_cmd_tune,
     "MODEL_REPOSITORY/MODEL --latency-p99 MS [--concurrency A:B=1:16] [--budget SECONDS=60] "
     "[--max-batch LIST=1,4,16,64] [--instances LIST=1,2(,4 by cores)] [--queue-delay LIST=0,500] "
     "[--kind infer-binary|infer-json|classify] [--backend auto|cpu|cuda] [--threads N] [--inferd PATH] "
     "[--url URL] [--out PREFIX] [--no-progress]",
     "sweep max_batch_size, instances and queue delay under load; the best configuration within a p99"},
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
    fprintf(f, "usage: inferctl [--url URL] [--timeout SECONDS] COMMAND [ARGS...]\n\n"
               "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", COMMANDS[i].name, COMMANDS[i].help);
    fprintf(f, "\n'inferctl help COMMAND' or 'inferctl COMMAND --help' shows a command's "
               "arguments.\n"
               "The server commands talk to --url, else $INFERD_URL, else " ICL_DEFAULT_URL ".\n"
               "Exit status: 0 ok; 1 error (the server's message on stderr); 2 usage error;\n"
               "3 cannot connect (no server at the address).\n");
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

/* "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i past it. */
static const char *global_option(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[(*i)++] + n + 1;
    if (argv[*i][n] != '\0' || *i + 1 >= argc)
        return NULL;
    *i += 2;
    return argv[*i - 1];
}

int main(int argc, char **argv)
{
    const char *url = NULL, *v;
    long timeout_ms = 0;
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i], "--help") != 0) {
        if ((v = global_option(argc, argv, &i, "--url"))) {
            url = v;
        } else if ((v = global_option(argc, argv, &i, "--timeout"))) {
            char *end;
            errno = 0;
            double s = strtod(v, &end);
            if (errno || end == v || *end || !(s > 0 && s <= 86400)) {
                fprintf(stderr, "inferctl: --timeout must be seconds in (0, 86400]\n");
                return CTL_EXIT_USAGE;
            }
            timeout_ms = (long)(s * 1000 + 0.5);
        } else {
            fprintf(stderr, "inferctl: unknown or incomplete global option '%s'\n", argv[i]);
            print_usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        print_usage(stderr);
        return CTL_EXIT_USAGE;
    }
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
        return cmd_help(0, NULL);
    const struct ctl_command *c = find_command(argv[i]);
    if (!c) {
        fprintf(stderr, "inferctl: unknown command '%s'\n", argv[i]);
        print_usage(stderr);
        return CTL_EXIT_USAGE;
    }
    ctl_set_server(url, timeout_ms);
    return c->run(argc - i - 1, argv + i + 1);
}
