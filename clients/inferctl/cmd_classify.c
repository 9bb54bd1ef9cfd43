/*
 * cmd_classify.c - "inferctl classify MODEL IMAGE...": sends image files to
 * the server's classify endpoint and prints each one's top-k classes, in
 * the same layout as the offline "inferctl run". One image goes as the raw
 * body; several go as multipart parts, --batch of them per request (each
 * request is one batch on the server).
 */
#include <stdlib.h>
#include <string.h>

#include "inferctl.h"

struct image_file {
    uint8_t *data;
    size_t len;
};

static void print_result(const char *path, const struct icl_classification *r)
{
    printf("%s\n", path);
    for (int k = 0; k < r->n_predictions; k++)
        printf("  %.4f  %s (%d)\n", r->predictions[k].score, r->predictions[k].label,
               r->predictions[k].index);
}

/* Classifies images [first, first + n) in one request; prints them. */
static int classify_chunk(struct icl_client *c, const char *model, char **paths,
                          const struct image_file *files, int n, int top_k, bool multipart)
{
    struct icl_image *img = calloc((size_t)n, sizeof(*img));
    if (!img) {
        fprintf(stderr, "inferctl classify: out of memory\n");
        return CTL_EXIT_ERROR;
    }
    for (int i = 0; i < n; i++)
        img[i] = (struct icl_image){files[i].data, files[i].len,
                                    icl_image_content_type(paths[i]), paths[i]};
    struct icl_classify_result res;
    struct icl_error err;
    int rc = CTL_EXIT_OK;
    if (icl_classify(c, model, img, n, top_k, multipart ? ICL_BODY_MULTIPART : ICL_BODY_AUTO, &res,
                     &err) != ICL_OK) {
        rc = ctl_remote_error("classify", &err);
    } else {
        for (int i = 0; i < n; i++)
            print_result(paths[i], &res.results[i]);
        icl_classify_result_free(&res);
    }
    free(img);
    return rc;
}

int ctl_cmd_classify(int argc, char **argv)
{
    int top_k = 5, batch = 16;
    bool multipart = false;
    const struct ctl_option opts[] = {
        {"top-k", CTL_OPT_INT, &top_k, 1, 1 << 20},
        {"batch", CTL_OPT_INT, &batch, 1, 4096},
        {"multipart", CTL_OPT_FLAG, &multipart, 0, 0},
    };
    char **pos;
    int npos, rc = ctl_positional("classify", argc, argv, opts, 3, 2, argc, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    const int n = npos - 1;
    struct image_file *files = calloc((size_t)n, sizeof(*files));
    struct icl_client *c = files ? ctl_connect("classify") : NULL;
    rc = c ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    for (int i = 0; i < n && rc == CTL_EXIT_OK; i++) {
        struct icl_error err;
        if (icl_file_read(pos[1 + i], &files[i].data, &files[i].len, &err) != ICL_OK) {
            fprintf(stderr, "inferctl classify: %s\n", err.message);
            rc = CTL_EXIT_ERROR;
        }
    }
    for (int i = 0; i < n && rc == CTL_EXIT_OK; i += batch)
        rc = classify_chunk(c, pos[0], pos + 1 + i, files + i, n - i < batch ? n - i : batch,
                            top_k, multipart);
    for (int i = 0; files && i < n; i++)
        free(files[i].data);
    free(files);
    icl_client_free(c);
    free(pos);
    return rc;
}
