/*
 * srv_api_classify.c - POST /v2/models/{model}/classify[?top_k=K]: one image
 * as the body (any Content-Type; the bytes are sniffed) or several as
 * multipart/form-data parts, decoded and preprocessed as model.json says,
 * run as one job, answered as softmax probabilities of the first output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/rt_checked.h"
#include "runtime/image/image.h"
#include "srv_clock.h"
#include "srv_handlers.h"
#include "srv_multipart.h"
#include "srv_topk.h"

#define CLASSIFY_DEFAULT_TOP_K 5

struct classify_ctx {
    struct srv_request *r;
    struct srv_model *model;
    int n_images;
    int top_k;
    float *input;                /* [n_images * inputs[0].sample_elems] */
    float *outputs[RT_MAX_IO];   /* [n_images * outputs[i].sample_elems] */
    struct srv_part *parts;      /* [max_batch_size] */
    struct srv_job job;
};

static void classify_ctx_free(void *p)
{
    struct classify_ctx *c = p;
    free(c->input);
    for (int i = 0; i < RT_MAX_IO; i++)
        free(c->outputs[i]);
    free(c->parts);
    srv_model_unref(c->model);
    free(c);
}

static void job_done(struct srv_job *job)
{
    struct classify_ctx *c = job->user;
    srv_request_resume(c->r);
}

/* Softmax of x[0..n) into p, in double for a stable sum. */
static void softmax(const float *x, int n, float *p)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - (double)mx);
    for (int i = 0; i < n; i++)
        p[i] = (float)(exp((double)x[i] - (double)mx) / sum);
}

static void write_predictions(struct srv_buf *b, const struct rt_model_config *cfg,
                              const float *prob, int n, int k, int *idx)
{
    srv_top_k(prob, n, k, idx);   /* k <= n: the caller caps top_k at the class count */
    srv_buf_puts(b, "\"predictions\":[");
    for (int j = 0; j < k; j++) {
        int best = idx[j];
        srv_buf_puts(b, j ? ",{\"label\":" : "{\"label\":");
        if (best < cfg->n_labels && cfg->labels && cfg->labels[best])
            srv_buf_json_str(b, cfg->labels[best]);
        else
            srv_buf_printf(b, "\"%d\"", best);
        srv_buf_printf(b, ",\"index\":%d,\"score\":", best);
        srv_buf_json_float(b, prob[best]);
        srv_buf_putc(b, '}');
    }
    srv_buf_putc(b, ']');
}

static void classify_finish(struct srv_request *r)
{
    struct classify_ctx *c = r->ctx;
    const struct rt_model_config *cfg = c->model->cfg;
    if (c->job.err.status != RT_OK) {
        srv_reply_rt_error(r, &c->job.err);
        srv_record_outcome(r, c->model, &c->job.times);
        return;
    }
    int n = (int)cfg->outputs[0].sample_elems;
    float *prob = malloc((size_t)n * sizeof(float));
    int *idx = malloc((size_t)n * sizeof(int));
    if (!prob || !idx) {
        free(prob);
        free(idx);
        srv_reply_error(r, 503, "out of memory");
        srv_record_outcome(r, c->model, &c->job.times);
        return;
    }
    const struct srv_request_times *t = &c->job.times;
    long long total_us = (long long)((srv_now_ns() - r->start_ns) / 1000);
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"model_name\":");
    srv_buf_json_str(&b, c->model->name);
    srv_buf_puts(&b, ",\"model_version\":\"1\",\"results\":[");
    for (int k = 0; k < c->n_images; k++) {
        softmax(c->outputs[0] + (size_t)k * (size_t)n, n, prob);
        srv_buf_puts(&b, k ? ",{" : "{");
        write_predictions(&b, cfg, prob, n, c->top_k, idx);
        srv_buf_printf(&b, ",\"timing_us\":{\"queue\":%llu,\"compute\":%llu,\"total\":%lld}}",
                       (unsigned long long)(t->queue_ns / 1000),
                       (unsigned long long)((t->input_ns + t->infer_ns + t->output_ns) / 1000),
                       total_us);
    }
    srv_buf_puts(&b, "]}");
    free(prob);
    free(idx);
    srv_reply_json(r, 200, &b);
    srv_record_outcome(r, c->model, &c->job.times);
}

/* A non-negative integer query argument; def when absent. */
static bool query_int(struct srv_request *r, const char *name, long long lo, long long hi,
                      long long def, long long *out)
{
    const char *v = srv_request_query(r, name);
    *out = def;
    if (!v)
        return true;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        srv_reply_error(r, 400, "%s must be an integer in %lld..%lld", name, lo, hi);
        return false;
    }
    *out = n;
    return true;
}

/* Splits the body into images: multipart parts, or the whole body. */
static bool collect_parts(struct srv_request *r, struct classify_ctx *c)
{
    int max = c->model->cfg->max_batch_size;
    const char *ct = srv_request_header(r, "Content-Type");
    struct rt_error err = {RT_OK, ""};
    if (ct && strncasecmp(ct, "multipart/", 10) == 0) {
        char boundary[SRV_MULTIPART_BOUNDARY_MAX + 1];
        if (srv_multipart_boundary(ct, boundary, &err) != RT_OK ||
            srv_multipart_parse(r->body, r->body_len, boundary, c->parts, max, &c->n_images,
                                &err) != RT_OK) {
            if (err.status == RT_ERR_TOO_LARGE)
                rt_error_set(&err, RT_ERR_TOO_LARGE,
                             "more than %d images; model '%s' takes at most %d per request", max,
                             c->model->name, max);
            srv_reply_rt_error(r, &err);
            return false;
        }
        return true;
    }
    c->parts[0] = (struct srv_part){.data = r->body, .len = r->body_len};
    c->n_images = 1;
    return true;
}

/* Decodes and preprocesses every image into c->input. */
static bool prepare_inputs(struct srv_request *r, struct classify_ctx *c)
{
    const struct rt_model_config *cfg = c->model->cfg;
    size_t elems = (size_t)cfg->inputs[0].sample_elems, bytes;
    size_t per_image = (size_t)c->n_images * sizeof(float); /* n_images <= max_batch_size */
    if (rt_mul_size(per_image, elems, &bytes))
        c->input = malloc(bytes);
    for (int i = 0; i < cfg->n_outputs; i++) {
        if (rt_mul_size(per_image, (size_t)cfg->outputs[i].sample_elems, &bytes))
            c->outputs[i] = malloc(bytes);
    }
    for (int i = 0; i < cfg->n_outputs; i++) {
        if (!c->input || !c->outputs[i]) {
            srv_reply_error(r, 503, "out of memory");
            return false;
        }
    }
    const struct rt_image_limits lim = {.max_pixels = r->srv->cfg.max_image_pixels};
    for (int k = 0; k < c->n_images; k++) {
        struct rt_image img;
        struct rt_error err = {RT_OK, ""};
        if (rt_image_decode(c->parts[k].data, c->parts[k].len, &lim, &img, &err) == RT_OK) {
            rt_image_preprocess(&img, &cfg->pre, c->input + (size_t)k * elems, &err);
            rt_image_free(&img);
        }
        if (err.status != RT_OK) {
            if (c->n_images > 1)
                rt_error_prefix(&err, "image %d", k + 1);
            srv_reply_rt_error(r, &err);
            return false;
        }
    }
    return true;
}

void srv_handle_classify(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    struct classify_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        srv_model_unref(m);
        srv_reply_error(r, 503, "out of memory");
        return;
    }
    c->r = r;
    c->model = m;
    r->ctx = c;
    r->ctx_free = classify_ctx_free;
    const struct rt_model_config *cfg = m->cfg;
    long long top_k, timeout_us;
    int classes = (int)cfg->outputs[0].sample_elems;
    if (!cfg->pre.present || cfg->n_inputs != 1 || cfg->pre.input != 0 ||
        (int64_t)cfg->pre.channels * cfg->pre.width * cfg->pre.height != cfg->inputs[0].sample_elems ||
        classes > 4096) {
        srv_reply_error(r, 400, "model '%s' does not classify images", m->name);
    } else if (!query_int(r, "top_k", 1, INT32_MAX, CLASSIFY_DEFAULT_TOP_K, &top_k) ||
               !query_int(r, "timeout_us", 0, INT64_C(1) << 50, 0, &timeout_us)) {
        /* answered */
    } else if (r->body_len == 0) {
        srv_reply_error(r, 400, "empty request body: send an image");
    } else if (!(c->parts = calloc((size_t)cfg->max_batch_size, sizeof(*c->parts)))) {
        srv_reply_error(r, 503, "out of memory");
    } else if (collect_parts(r, c) && prepare_inputs(r, c)) {
        c->top_k = top_k < classes ? (int)top_k : classes;
        c->job.rows = c->n_images;
        c->job.inputs[0] = c->input;
        for (int i = 0; i < cfg->n_outputs; i++)
            c->job.outputs[i] = c->outputs[i];
        c->job.done = job_done;
        c->job.user = c;
        struct rt_error err = {RT_OK, ""};
        srv_request_defer(r, classify_finish);
        if (srv_batcher_submit(m->batcher, &c->job, timeout_us, &err) == RT_OK)
            return;
        srv_request_undefer(r);
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_rt_error(r, &err);
    }
    srv_record_outcome(r, m, &c->job.times);
}
