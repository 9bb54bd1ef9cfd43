/*
 * inferctl.h - internals of the inferctl command: the command table's
 * handler type, the commands, and helpers they share (option parsing,
 * opening a model, softmax and top-k).
 *
 * Exit codes: 0 success, 1 a runtime or server error (message on stderr),
 * 2 a usage error (usage on stderr), 3 no server answered at the address.
 */
#ifndef INFERCTL_H
#define INFERCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "clients/lib/icl.h"
#include "runtime/rt_model.h"

#define CTL_EXIT_OK 0
#define CTL_EXIT_ERROR 1
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_CONNECT 3

/* One command: "inferctl NAME ARGS..."; run gets the arguments after NAME
 * and returns an exit code. */
struct ctl_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *args;        /* synopsis of the arguments, for usage */
    const char *help;        /* one line */
};

int ctl_cmd_run(int argc, char **argv);
int ctl_cmd_eval(int argc, char **argv);
int ctl_cmd_health(int argc, char **argv);
int ctl_cmd_models(int argc, char **argv);
int ctl_cmd_metadata(int argc, char **argv);
int ctl_cmd_classify(int argc, char **argv);
int ctl_cmd_infer(int argc, char **argv);
int ctl_cmd_load(int argc, char **argv);
int ctl_cmd_unload(int argc, char **argv);
int ctl_cmd_quantize(int argc, char **argv);
int ctl_cmd_convert(int argc, char **argv);
int ctl_cmd_accuracy(int argc, char **argv);
int ctl_cmd_profile(int argc, char **argv);
int ctl_cmd_tune(int argc, char **argv);

/* Prints "usage: inferctl NAME ARGS" and the help line of one command. */
void ctl_print_command_usage(FILE *f, const char *name);

/* ------------------------------------------------------------ options */

enum ctl_opt_kind { CTL_OPT_INT, CTL_OPT_STRING, CTL_OPT_FLAG };

/* A "--name VALUE" or "--name=VALUE" option; an int must lie in min..max.
 * A flag ("--name", no value) sets a bool to true. */
struct ctl_option {
    const char *name;        /* without the leading "--" */
    enum ctl_opt_kind kind;
    void *value;             /* int *, const char ** or bool * */
    int min, max;
};

/* Splits argv into options (table of n) and positional arguments, which
 * are collected, in order, into positional (argc entries available).
 * Returns CTL_EXIT_OK, CTL_EXIT_USAGE after printing why and the command's
 * usage, or -1 when --help was asked (usage already printed to stdout). */
int ctl_parse_options(const char *command, int argc, char **argv, const struct ctl_option *opts,
                      int n, char **positional, int *n_positional);

/* Parses options and checks that min..max positional arguments remain;
 * *pos is malloc'd (free it) when the result is CTL_EXIT_OK. Otherwise
 * returns CTL_EXIT_USAGE, CTL_EXIT_ERROR, or -1 for --help. */
int ctl_positional(const char *command, int argc, char **argv, const struct ctl_option *opts,
                   int n_opts, int min, int max, char ***pos, int *npos);

/* ------------------------------------------------------------ server */

/* Set by main from the global options: url NULL means $INFERD_URL, else
 * ICL_DEFAULT_URL; timeout_ms 0 means the library's default. */
void ctl_set_server(const char *url, long timeout_ms);
/* The global --url when one was given, else NULL. */
const char *ctl_server_url(void);
/* A client for the server; prints why and returns NULL on failure. */
struct icl_client *ctl_connect(const char *command);
/* Prints "inferctl COMMAND: message (HTTP status)" and returns the exit
 * code: CTL_EXIT_CONNECT when no server answered, else CTL_EXIT_ERROR. */
int ctl_remote_error(const char *command, const struct icl_error *err);

/* ------------------------------------------------------------ models */

/* A model ready to run: backend, model, one session. */
struct ctl_model {
    struct rt_backend *backend;
    struct rt_model *model;
    struct rt_session *session;
    const struct rt_model_config *cfg;
    int input;               /* the preprocessed input (cfg->pre.input) */
    int classes;             /* elements of one sample of outputs[0] */
};

/* Parses --backend's value; false (after printing why) when unknown. */
bool ctl_parse_backend(const char *text, enum rt_backend_kind *out);

/* Opens dir on the backend; checks the model takes one image input as its
 * preprocessing describes and gives class scores. Prints the error and
 * returns false on failure. */
bool ctl_model_open(const char *dir, enum rt_backend_kind kind, int threads, struct ctl_model *m);
void ctl_model_close(struct ctl_model *m);

/* Allocates outs[o] for samples samples of every output o of m (the
 * session fills them all; outs[0] holds the class scores). Prints the error
 * and returns false when out of memory. */
bool ctl_outputs_alloc(const struct ctl_model *m, int samples, float **outs);
void ctl_outputs_free(const struct ctl_model *m, float **outs);

/* Runs samples inputs (consecutive, from input) in chunks of at most
 * max_batch (<= the model's max_batch_size), writing sample s of output o to
 * outs[o] + s * outputs[o].sample_elems. Prints the error and returns false
 * on failure. */
bool ctl_run_chunks(struct ctl_model *m, int samples, int max_batch, const float *input,
                    float **outs);

/* Label of class i, or "class i" in buf when the model has no labels. */
const char *ctl_label(const struct ctl_model *m, int i, char *buf, size_t size);

/* ------------------------------------------------------------ scores */

/* probs[i] = softmax(logits)[i], computed stably in double. */
void ctl_softmax(const float *logits, int n, double *probs);
/* Indices of the k largest scores, largest first (ties: lower index). */
void ctl_top_k(const double *scores, int n, int k, int *idx);
/* Index of the largest logit (ties: lower index). */
int ctl_argmax(const float *x, int n);

/* Seconds on a monotonic clock. */
double ctl_now(void);

/* ------------------------------------------------------------ files */

/* The last component of a folder path ("model_repository/lenet5/" ->
 * "lenet5"), into buf; returns buf. */
const char *ctl_dir_name(const char *dir, char *buf, size_t cap);
/* Removes dir and everything under it (temporary folders), as far as it can. */
void ctl_remove_tree(const char *dir);

#endif /* INFERCTL_H */
