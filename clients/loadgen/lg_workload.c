/*
 * lg_workload.c - everything prepared before the clock starts: a check
 * that the server answers and knows the model, the images (a folder, or the
 * Fashion-MNIST test set encoded as PNG), and a pool of complete requests
 * (request line, headers, body), so the engine only writes bytes.
 *
 * The infer kinds send the images as FP32 tensors of the model's input
 * shape [-1, C, H, W], scaled to [0, 1]: the model's own normalisation is
 * not visible over the API, and the load is the same either way.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "clients/lib/icl.h"
#include "lg.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"

struct image {
    uint8_t *data;
    size_t len;
    const char *type;
};

struct images {
    int n;
    struct image *v;
};

static void images_free(struct images *im)
{
    for (int i = 0; i < im->n; i++)
        free(im->v[i].data);
    free(im->v);
    memset(im, 0, sizeof(*im));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Up to max image files of dir, in name order. */
static bool load_folder(const char *dir, int max, struct images *im)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "inferd-loadgen: cannot open %s\n", dir);
        return false;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(icl_image_content_type(e->d_name), "application/octet-stream") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, (size_t)cap * sizeof(*names));
            if (!p)
                break;
            names = p;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, (size_t)n, sizeof(*names), by_name);
    im->v = calloc(n > 0 ? (size_t)(n < max ? n : max) : 1, sizeof(*im->v));
    bool ok = im->v != NULL && n > 0;
    for (int i = 0; ok && i < n && i < max; i++) {
        char path[4096];
        struct icl_error err;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (icl_file_read(path, &im->v[i].data, &im->v[i].len, &err) != ICL_OK) {
            fprintf(stderr, "inferd-loadgen: %s\n", err.message);
            ok = false;
        } else {
            im->v[i].type = icl_image_content_type(names[i]);
            im->n++;
        }
    }
    if (n == 0)
        fprintf(stderr, "inferd-loadgen: no image files (.png, .jpg, .pgm, ...) in %s\n", dir);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ok;
}

/* The first max images of the Fashion-MNIST test set, as PNG files. */
static bool load_fashion_mnist(int max, struct images *im)
{
    struct rt_dataset ds;
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK) {
        fprintf(stderr, "inferd-loadgen: Fashion-MNIST test set: %s (install "
                        "dataset-fashion-mnist, or pass --images DIR)\n", err.msg);
        return false;
    }
    int n = ds.count < max ? ds.count : max;
    im->v = calloc((size_t)n, sizeof(*im->v));
    bool ok = im->v != NULL;
    for (int i = 0; ok && i < n; i++) {
        struct rt_image img = {ds.cols, ds.rows, 1,
                               ds.images + (size_t)i * (size_t)ds.rows * (size_t)ds.cols};
        ok = rt_image_encode_png(&img, &im->v[i].data, &im->v[i].len, &err) == RT_OK;
        im->v[i].type = "image/png";
        im->n += ok;
    }
    if (!ok)
        fprintf(stderr, "inferd-loadgen: encoding the test images: %s\n", err.msg);
    rt_dataset_free(&ds);
    return ok;
}

/* The model's input for the infer kinds: one FP32 image tensor. */
static bool image_input(struct icl_client *c, const char *model, struct icl_tensor *in)
{
    struct icl_model_metadata meta;
    struct icl_error err;
    if (icl_model_metadata(c, model, &meta, &err) != ICL_OK) {
        fprintf(stderr, "inferd-loadgen: metadata of '%s': %s\n", model, err.message);
        return false;
    }
    *in = meta.inputs[0];
    if (meta.n_inputs != 1 || in->rank != 4 || in->shape[0] != -1 ||
        strcmp(in->datatype, "FP32") != 0 || (in->shape[1] != 1 && in->shape[1] != 3) ||
        in->shape[2] < 1 || in->shape[3] < 1 || in->shape[2] * in->shape[3] > (1 << 24)) {
        fprintf(stderr, "inferd-loadgen: the infer kinds need a model with one FP32 image input "
                        "[-1, C, H, W]; '%s' has another\n", model);
        return false;
    }
    return true;
}

/* Request r of an infer kind: batch images from im as one tensor. */
static bool infer_request(const struct lg_config *cfg, const struct images *im, int r,
                          const struct icl_tensor *desc, const struct lg_target *t,
                          struct lg_request *q)
{
    const struct rt_preprocess pre = {.present = true, .width = (int)desc->shape[3],
                                      .height = (int)desc->shape[2],
                                      .channels = (int)desc->shape[1], .scale = 1.0f / 255.0f,
                                      .std = {1, 1, 1}};
    size_t sample = (size_t)pre.channels * (size_t)pre.width * (size_t)pre.height;
    float *x = malloc((size_t)cfg->batch * sample * sizeof(float));
    bool ok = x != NULL;
    for (int j = 0; ok && j < cfg->batch; j++) {
        const struct image *src = &im->v[(r * cfg->batch + j) % im->n];
        struct rt_image img;
        struct rt_error err = {0};
        ok = rt_image_decode(src->data, src->len, NULL, &img, &err) == RT_OK;
        if (ok) {
            ok = rt_image_preprocess(&img, &pre, x + (size_t)j * sample, &err) == RT_OK;
            rt_image_free(&img);
        }
        if (!ok)
            fprintf(stderr, "inferd-loadgen: image %d: %s\n", (r * cfg->batch + j) % im->n,
                    err.msg);
    }
    struct icl_tensor in = *desc;
    in.shape[0] = cfg->batch;
    in.data = x;
    in.byte_size = (size_t)cfg->batch * sample * sizeof(float);
    bool binary = cfg->kind == LG_KIND_INFER_BINARY;
    struct icl_infer_request req = {.n_inputs = 1, .inputs = &in, .binary_inputs = binary,
                                    .binary_outputs = binary};
    uint8_t *body = NULL;
    size_t len = 0, header_len = 0;
    struct icl_error err;
    if (ok && icl_infer_encode(&req, &body, &len, &header_len, &err) != ICL_OK) {
        fprintf(stderr, "inferd-loadgen: %s\n", err.message);
        ok = false;
    }
    ok = ok && lg_request_build(t, body, len, binary ? "application/octet-stream"
                                                     : "application/json",
                                binary ? (int64_t)header_len : -1, q);
    free(body);
    free(x);
    return ok;
}

static bool classify_request(const struct lg_config *cfg, const struct images *im, int r,
                             const struct lg_target *t, struct lg_request *q)
{
    struct icl_image *v = calloc((size_t)cfg->batch, sizeof(*v));
    if (!v)
        return false;
    for (int j = 0; j < cfg->batch; j++) {
        const struct image *src = &im->v[(r * cfg->batch + j) % im->n];
        v[j] = (struct icl_image){src->data, src->len, src->type, NULL};
    }
    char ctype[128];
    uint8_t *body = NULL;
    size_t len = 0;
    struct icl_error err;
    bool ok = icl_classify_encode(v, cfg->batch, ICL_BODY_AUTO, &body, &len, ctype,
                                  sizeof(ctype), &err) == ICL_OK &&
              lg_request_build(t, body, len, ctype, -1, q);
    free(body);
    free(v);
    return ok;
}

/* Connects, checks the model, and resolves w->target. */
static int preflight(const struct lg_config *cfg, struct icl_client *c, struct lg_workload *w,
                     struct icl_tensor *input)
{
    struct icl_error err;
    bool ok;
    if (icl_server_live(c, &ok, &err) != ICL_OK || !ok) {
        fprintf(stderr, "inferd-loadgen: %s\n", err.message[0] ? err.message : "server not live");
        return err.status == ICL_ERR_CONNECT ? 3 : 1;
    }
    char path[600], why[300];
    if (cfg->kind == LG_KIND_LIVE) {
        snprintf(w->description, sizeof(w->description), "GET /v2/health/live");
        if (!lg_target_resolve(icl_client_url(c), "/v2/health/live", &w->target, why,
                               sizeof(why))) {
            fprintf(stderr, "inferd-loadgen: %s\n", why);
            return 2;
        }
        return 0;
    }
    for (const char *p = cfg->model; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr("-_.", *p)) {
            fprintf(stderr, "inferd-loadgen: model names are letters, digits, '-', '_', '.'\n");
            return 2;
        }
    }
    if (icl_model_ready(c, cfg->model, &ok, &err) != ICL_OK || !ok) {
        fprintf(stderr, "inferd-loadgen: model '%s': %s\n", cfg->model,
                err.message[0] ? err.message : "not ready");
        return 1;
    }
    bool classify = cfg->kind == LG_KIND_CLASSIFY;
    if (!classify && !image_input(c, cfg->model, input))
        return 1;
    snprintf(path, sizeof(path), "/v2/models/%s/%s", cfg->model, classify ? "classify" : "infer");
    if (!lg_target_resolve(icl_client_url(c), path, &w->target, why, sizeof(why))) {
        fprintf(stderr, "inferd-loadgen: %s\n", why);
        return 2;
    }
    snprintf(w->description, sizeof(w->description), "%s %s, %d image%s per request",
             lg_kind_name(cfg->kind), cfg->model, cfg->batch, cfg->batch == 1 ? "" : "s");
    return 0;
}

int lg_workload_build(const struct lg_config *cfg, struct lg_workload *w)
{
    memset(w, 0, sizeof(*w));
    struct icl_client *c;
    struct icl_error err;
    if (icl_client_create(cfg->url, NULL, &c, &err) != ICL_OK) {
        fprintf(stderr, "inferd-loadgen: %s\n", err.message);
        return 2;
    }
    struct icl_tensor input;
    int rc = preflight(cfg, c, w, &input);
    icl_client_free(c);
    if (rc != 0)
        return rc;
    if (cfg->kind == LG_KIND_LIVE) {
        w->requests = calloc(1, sizeof(*w->requests));
        w->n = w->requests && lg_request_build(&w->target, NULL, 0, NULL, -1, w->requests);
        return w->n ? 0 : 1;
    }
    struct images im = {0};
    int64_t want = (int64_t)cfg->pool * cfg->batch;
    int max = want < 10000 ? (int)want : 10000;
    if (!(cfg->images ? load_folder(cfg->images, max, &im) : load_fashion_mnist(max, &im))) {
        images_free(&im);
        return 1;
    }
    /* more requests than distinct images would only repeat bodies */
    int n = cfg->pool < im.n ? cfg->pool : im.n;
    RT_ASSERT(n > 0); /* pool >= 1, and a loader that succeeds read at least one image */
    w->requests = calloc((size_t)n, sizeof(*w->requests));
    bool ok = w->requests != NULL;
    for (int r = 0; ok && r < n; r++) {
        ok = cfg->kind == LG_KIND_CLASSIFY
                 ? classify_request(cfg, &im, r, &w->target, &w->requests[r])
                 : infer_request(cfg, &im, r, &input, &w->target, &w->requests[r]);
        w->n += ok;
    }
    images_free(&im);
    if (!ok) {
        fprintf(stderr, "inferd-loadgen: could not prepare the requests\n");
        w->n = w->requests ? n : 0; /* the failed one may hold a body */
        lg_workload_free(w);
        return 1;
    }
    return 0;
}

void lg_workload_free(struct lg_workload *w)
{
    for (int i = 0; w->requests && i < w->n; i++)
        free(w->requests[i].bytes);
    free(w->requests);
    memset(w, 0, sizeof(*w));
}
