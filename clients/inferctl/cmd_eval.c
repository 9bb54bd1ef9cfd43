/*
 * cmd_eval.c - "inferctl eval MODEL_DIR [--data DIR]": top-1 accuracy and
 * throughput on the user's images (DIR in the ImageFolder layout: one
 * sub-folder per class, named after the model's labels) or on the
 * Fashion-MNIST test set (Debian's dataset-fashion-mnist). How each kind of
 * image is preprocessed: image_source.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_source.h"
#include "inferctl.h"

#define PROGRESS_WIDTH 40

/* Redraws the bar on stderr, at most ten times a second. */
static void progress(int done, int total, double *last_draw)
{
    double now = ctl_now();
    if (done < total && now - *last_draw < 0.1)
        return;
    *last_draw = now;
    int filled = (int)((long)done * PROGRESS_WIDTH / total);
    char bar[PROGRESS_WIDTH + 1];
    memset(bar, '#', (size_t)filled);
    memset(bar + filled, '.', (size_t)(PROGRESS_WIDTH - filled));
    bar[PROGRESS_WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %d/%d", bar, done, total);
    if (done == total)
        fprintf(stderr, "\r%*s\r", PROGRESS_WIDTH + 24, "");
    fflush(stderr);
}

/* Preprocesses images [first, first + n) of src into input. */
static bool preprocess_batch(const struct ctl_images *src, int first, int n, const struct rt_preprocess *pre,
                             size_t in_elems, float *input)
{
    for (int i = 0; i < n; i++)
        if (!ctl_images_preprocess(src, first + i, pre, input + (size_t)i * in_elems))
            return false;
    return true;
}

/* Runs the whole evaluation; prints the report. */
static bool evaluate(struct ctl_model *m, const struct ctl_images *ds, int count, int batch)
{
    const struct rt_preprocess *pre = &m->cfg->pre;
    const size_t in_elems = (size_t)m->cfg->inputs[m->input].sample_elems;
    float *input = malloc((size_t)batch * in_elems * sizeof(float));
    float *outs[RT_MAX_IO] = {0};
    bool ok = false;
    if (!input) {
        fprintf(stderr, "inferctl: out of memory for a batch of %d\n", batch);
        return false;
    }
    if (!ctl_outputs_alloc(m, batch, outs))
        goto done;
    /* One untimed batch first: lazy allocations and caches warm up. */
    int first = count < batch ? count : batch;
    if (!preprocess_batch(ds, 0, first, pre, in_elems, input) ||
        !ctl_run_chunks(m, first, batch, input, outs))
        goto done;

    const bool tty = isatty(STDERR_FILENO);
    double last_draw = 0.0;
    int correct = 0;
    double infer_s = 0.0, t0 = ctl_now();
    for (int start = 0; start < count; start += batch) {
        int n = count - start < batch ? count - start : batch;
        if (!preprocess_batch(ds, start, n, pre, in_elems, input))
            goto done;
        double t = ctl_now();
        if (!ctl_run_chunks(m, n, batch, input, outs))
            goto done;
        infer_s += ctl_now() - t;
        for (int i = 0; i < n; i++)
            correct += ctl_argmax(outs[0] + (size_t)i * (size_t)m->classes, m->classes) ==
                       ds->labels[start + i];
        if (tty)
            progress(start + n, count, &last_draw);
    }
    double total_s = ctl_now() - t0;
    printf("%s: %s on %s\n", m->cfg->name, rt_precision_name(m->cfg->precision),
           rt_backend_describe(m->backend));
    printf("top-1 accuracy: %.2f%% (%d/%d)\n", 100.0 * correct / count, correct, count);
    printf("throughput: %.0f images/s inference, %.0f images/s with preprocessing (batch %d)\n",
           count / infer_s, count / total_s, batch);
    ok = true;
done:
    ctl_outputs_free(m, outs);
    free(input);
    return ok;
}

int ctl_cmd_eval(int argc, char **argv)
{
    int threads = 0, batch = 0, limit = 0;
    const char *backend = "auto", *data = NULL;
    const struct ctl_option opts[] = {
        {"backend", CTL_OPT_STRING, &backend, 0, 0},
        {"threads", CTL_OPT_INT, &threads, 0, 4096},
        {"batch", CTL_OPT_INT, &batch, 1, RT_MAX_BATCH},
        {"limit", CTL_OPT_INT, &limit, 1, 1 << 30},
        {"data", CTL_OPT_STRING, &data, 0, 0},
    };
    char **pos = calloc((size_t)argc + 1, sizeof(char *));
    if (!pos)
        return CTL_EXIT_ERROR;
    int npos, rc = ctl_parse_options("eval", argc, argv, opts, 5, pos, &npos);
    enum rt_backend_kind kind = RT_BACKEND_AUTO;
    if (rc == CTL_EXIT_OK && npos != 1) {
        fprintf(stderr, "inferctl eval: needs exactly one MODEL_DIR\n");
        ctl_print_command_usage(stderr, "eval");
        rc = CTL_EXIT_USAGE;
    }
    if (rc == CTL_EXIT_OK && !ctl_parse_backend(backend, &kind))
        rc = CTL_EXIT_USAGE;
    const char *dir = pos[0];
    free(pos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;

    struct ctl_model m;
    if (!ctl_model_open(dir, kind, threads, &m))
        return CTL_EXIT_ERROR;
    if (batch == 0)
        batch = m.cfg->max_batch_size;
    if (batch > m.cfg->max_batch_size) {
        fprintf(stderr, "inferctl eval: --batch is at most %d, the model's max_batch_size\n",
                m.cfg->max_batch_size);
        ctl_model_close(&m);
        return CTL_EXIT_USAGE;
    }
    struct ctl_images ds;
    rc = CTL_EXIT_ERROR;
    if (data ? ctl_images_folder(data, m.cfg, true, &ds) : ctl_images_fashion_mnist("test", m.cfg, &ds)) {
        int count = limit > 0 && limit < ds.count ? limit : ds.count;
        if (evaluate(&m, &ds, count, batch))
            rc = CTL_EXIT_OK;
        ctl_images_free(&ds);
    }
    ctl_model_close(&m);
    return rc;
}
