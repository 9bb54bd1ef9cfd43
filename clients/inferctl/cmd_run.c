/*
 * cmd_run.c - "inferctl run MODEL_DIR IMAGE...": decodes each image,
 * preprocesses it as the model's config says, runs them all as one batch
 * (in chunks of max_batch_size) and prints each image's top-k classes with
 * softmax probabilities: the image endpoint's answer, without a server.
 */
#include <stdlib.h>
#include <string.h>

#include "image_source.h"
#include "inferctl.h"

static void print_predictions(const struct ctl_model *m, const char *path, const float *logits,
                              int top_k, double *probs, int *idx)
{
    ctl_softmax(logits, m->classes, probs);
    ctl_top_k(probs, m->classes, top_k, idx);
    printf("%s\n", path);
    for (int k = 0; k < top_k; k++) {
        char buf[32];
        printf("  %.4f  %s (%d)\n", probs[idx[k]], ctl_label(m, idx[k], buf, sizeof(buf)),
               idx[k]);
    }
}

int ctl_cmd_run(int argc, char **argv)
{
    int top_k = 5, threads = 0;
    const char *backend = "auto";
    const struct ctl_option opts[] = {
        {"top-k", CTL_OPT_INT, &top_k, 1, 1 << 20},
        {"backend", CTL_OPT_STRING, &backend, 0, 0},
        {"threads", CTL_OPT_INT, &threads, 0, 4096},
    };
    char **pos = calloc((size_t)argc + 1, sizeof(char *));
    if (!pos)
        return CTL_EXIT_ERROR;
    int npos, rc = ctl_parse_options("run", argc, argv, opts, 3, pos, &npos);
    enum rt_backend_kind kind = RT_BACKEND_AUTO;
    if (rc == CTL_EXIT_OK && npos < 2) {
        fprintf(stderr, "inferctl run: needs MODEL_DIR and at least one IMAGE\n");
        ctl_print_command_usage(stderr, "run");
        rc = CTL_EXIT_USAGE;
    }
    if (rc == CTL_EXIT_OK && !ctl_parse_backend(backend, &kind))
        rc = CTL_EXIT_USAGE;
    if (rc != CTL_EXIT_OK) {
        free(pos);
        return rc < 0 ? CTL_EXIT_OK : rc;
    }

    struct ctl_model m;
    if (!ctl_model_open(pos[0], kind, threads, &m)) {
        free(pos);
        return CTL_EXIT_ERROR;
    }
    const int n = npos - 1;
    const size_t in_elems = (size_t)m.cfg->inputs[m.input].sample_elems;
    top_k = top_k < m.classes ? top_k : m.classes;
    float *input = malloc((size_t)n * in_elems * sizeof(float));
    float *outs[RT_MAX_IO] = {0};
    double *probs = malloc((size_t)m.classes * sizeof(double));
    int *idx = malloc((size_t)top_k * sizeof(int));
    rc = CTL_EXIT_ERROR;
    if (!input || !probs || !idx) {
        fprintf(stderr, "inferctl: out of memory for %d images\n", n);
        goto done;
    }
    if (!ctl_outputs_alloc(&m, n, outs))
        goto done;
    for (int i = 0; i < n; i++)
        if (!ctl_image_file_preprocess(pos[1 + i], &m.cfg->pre, input + (size_t)i * in_elems))
            goto done;
    if (!ctl_run_chunks(&m, n, m.cfg->max_batch_size, input, outs))
        goto done;
    for (int i = 0; i < n; i++)
        print_predictions(&m, pos[1 + i], outs[0] + (size_t)i * (size_t)m.classes, top_k, probs,
                          idx);
    rc = CTL_EXIT_OK;
done:
    ctl_outputs_free(&m, outs);
    free(idx);
    free(probs);
    free(input);
    ctl_model_close(&m);
    free(pos);
    return rc;
}
