/*
 * srv_api_classify.c - POST /v2/models/{model}/classify[?top_k=K]: one image
 * as the body (any Content-Type; the bytes are sniffed) or several as
 * multipart/form-data parts, decoded and preprocessed as model.json says,
 * run as one job, answered as softmax probabilities of the first output.
 */
#include <math.h>
#include <stddef.h>
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

/* The work runs on three kinds of thread: the handler (HTTP) reads what it
 * needs from the request, a pool thread decodes and queues the batch, a
 * batcher thread writes the answer into reply once the batch ran, and
 * finish (HTTP again) hands it over. Only the HTTP threads touch the
 * connection (headers, query, srv_reply_*), which may be gone meanwhile. */
struct classify_ctx {
    struct srv_request *r;
    struct srv_model *model;
    struct srv_work work;
    bool multipart;
    char boundary[SRV_MULTIPART_BOUNDARY_MAX + 1];
    int64_t timeout_us;
    int n_images;
    int top_k;
    float *input;                /* [n_images * inputs[0].sample_elems] */
    float *outputs[RT_MAX_IO];   /* [n_images * outputs[i].sample_elems] */
    struct srv_part *parts;      /* [max_batch_size] */
    struct srv_job job;
    struct rt_error err;         /* the answer when not RT_OK ... */
    bool retry_after;
    struct srv_buf reply;        /* ... else this JSON */
};

static void classify_ctx_free(void *p)
{
    struct classify_ctx *c = p;
    free(c->input);
    for (int i = 0; i < RT_MAX_IO; i++)
        free(c->outputs[i]);
    free(c->parts);
    srv_buf_free(&c->reply);
    srv_model_unref(c->model);
    free(c);
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

/* The answer, on the batcher's thread: softmax and top-k cost O(classes
 * log k) per image. */
static void write_reply(struct classify_ctx *c)
{
    const struct rt_model_config *cfg = c->model->cfg;
    int n = (int)cfg->outputs[0].sample_elems;
    float *prob = malloc((size_t)n * sizeof(float));
    int *idx = malloc((size_t)n * sizeof(int));
    if (!prob || !idx) {
        free(prob);
        free(idx);
        rt_error_set(&c->err, RT_ERR_NO_MEMORY, "out of memory");
        return;
    }
    const struct srv_request_times *t = &c->job.times;
    long long total_us = (long long)((srv_now_ns() - c->r->start_ns) / 1000);
    struct srv_buf *b = &c->reply;
    srv_buf_puts(b, "{\"model_name\":");
    srv_buf_json_str(b, c->model->name);
    srv_buf_puts(b, ",\"model_version\":");
    srv_buf_json_str(b, c->model->version);
    srv_buf_puts(b, ",\"results\":[");
    for (int k = 0; k < c->n_images; k++) {
        softmax(c->outputs[0] + (size_t)k * (size_t)n, n, prob);
        srv_buf_puts(b, k ? ",{" : "{");
        write_predictions(b, cfg, prob, n, c->top_k, idx);
        srv_buf_printf(b, ",\"timing_us\":{\"queue\":%llu,\"compute\":%llu,\"total\":%lld}}",
                       (unsigned long long)(t->queue_ns / 1000),
                       (unsigned long long)((t->input_ns + t->infer_ns + t->output_ns) / 1000),
                       total_us);
    }
    srv_buf_puts(b, "]}");
    free(prob);
    free(idx);
}

static void job_done(struct srv_job *job)
{
    struct classify_ctx *c = job->user;
    if (job->err.status != RT_OK)
        c->err = job->err;
    else
        write_reply(c);
    srv_request_resume(c->r);
}

static void classify_finish(struct srv_request *r)
{
    struct classify_ctx *c = r->ctx;
    if (c->err.status != RT_OK) {
        if (c->retry_after)
            srv_reply_header(r, "Retry-After", "1");
        srv_reply_rt_error(r, &c->err);
    } else {
        srv_reply_json(r, 200, &c->reply);
    }
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
    if (!c->multipart) {
        c->parts[0] = (struct srv_part){.data = r->body, .len = r->body_len};
        c->n_images = 1;
        return true;
    }
    if (srv_multipart_parse(r->body, r->body_len, c->boundary, c->parts, max, &c->n_images,
                            &c->err) == RT_OK)
        return true;
    if (c->err.status == RT_ERR_TOO_LARGE)
        rt_error_set(&c->err, RT_ERR_TOO_LARGE,
                     "more than %d images; model '%s' takes at most %d per request", max,
                     c->model->name, max);
    return false;
}

/* Decodes and preprocesses every image into c->input. */
static bool prepare_inputs(struct classify_ctx *c)
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
            rt_error_set(&c->err, RT_ERR_NO_MEMORY, "out of memory");
            return false;
        }
    }
    const struct rt_image_limits lim = {.max_pixels = c->r->srv->cfg.max_image_pixels};
    for (int k = 0; k < c->n_images; k++) {
        struct rt_image img;
        if (rt_image_decode(c->parts[k].data, c->parts[k].len, &lim, &img, &c->err) == RT_OK) {
            rt_image_preprocess(&img, &cfg->pre, c->input + (size_t)k * elems, &c->err);
            rt_image_free(&img);
        }
        if (c->err.status != RT_OK) {
            if (c->n_images > 1)
                rt_error_prefix(&c->err, "image %d", k + 1);
            return false;
        }
    }
    return true;
}

/* On a pool thread: decode, then queue the batch. The request is resumed
 * here on failure, else by job_done. */
static void prepare(struct srv_work *w)
{
    struct classify_ctx *c = (struct classify_ctx *)((char *)w - offsetof(struct classify_ctx, work));
    if (collect_parts(c->r, c) && prepare_inputs(c)) {
        const struct rt_model_config *cfg = c->model->cfg;
        c->job.rows = c->n_images;
        c->job.inputs[0] = c->input;
        for (int i = 0; i < cfg->n_outputs; i++)
            c->job.outputs[i] = c->outputs[i];
        c->job.done = job_done;
        c->job.user = c;
        if (srv_batcher_submit(c->model->batcher, &c->job, c->timeout_us, &c->err) == RT_OK)
            return;  /* c may be gone already: job_done resumed the request */
        c->retry_after = true;
    }
    srv_request_resume(c->r);
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
    c->err = (struct rt_error){RT_OK, ""};
    r->ctx = c;
    r->ctx_free = classify_ctx_free;
    const struct rt_model_config *cfg = m->cfg;
    long long top_k, timeout_us;
    int classes = (int)cfg->outputs[0].sample_elems;
    const char *ct = srv_request_header(r, "Content-Type");
    c->multipart = ct && strncasecmp(ct, "multipart/", 10) == 0;
    struct rt_error err = {RT_OK, ""};
    if (!cfg->pre.present || cfg->n_inputs != 1 || cfg->pre.input != 0 ||
        (int64_t)cfg->pre.channels * cfg->pre.width * cfg->pre.height != cfg->inputs[0].sample_elems ||
        classes > 4096) {
        srv_reply_error(r, 400, "model '%s' does not classify images", m->name);
    } else if (!query_int(r, "top_k", 1, INT32_MAX, CLASSIFY_DEFAULT_TOP_K, &top_k) ||
               !query_int(r, "timeout_us", 0, INT64_C(1) << 50, 0, &timeout_us)) {
        /* answered */
    } else if (r->body_len == 0) {
        srv_reply_error(r, 400, "empty request body: send an image");
    } else if (c->multipart && srv_multipart_boundary(ct, c->boundary, &err) != RT_OK) {
        srv_reply_rt_error(r, &err);
    } else if (!(c->parts = calloc((size_t)cfg->max_batch_size, sizeof(*c->parts)))) {
        srv_reply_error(r, 503, "out of memory");
    } else {
        c->top_k = top_k < classes ? (int)top_k : classes;
        c->timeout_us = timeout_us;
        c->work.run = prepare;
        srv_request_defer(r, classify_finish);
        if (srv_work_submit(r->srv->work, &c->work))
            return;
        srv_request_undefer(r);
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_error(r, 503, "too many images are waiting to be decoded; retry later");
    }
    srv_record_outcome(r, m, &c->job.times);
}
