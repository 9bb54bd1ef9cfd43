/*
 * srv_api_infer.c - POST /v2/models/{model}[/versions/{v}]/infer: parse the
 * request into native buffers, queue it on the model's batcher, answer from
 * its own rows when the batch has run.
 *
 * A small body is parsed on the HTTP thread: the hand-over to a pool thread
 * costs more than its parse (a lenet5 row of JSON is about 6 KB). A larger
 * one (a 32 MB body takes tens of milliseconds to scan, more to parse) is
 * parsed on the work pool (srv_work.h) while its connection is suspended,
 * as images are decoded, so liveness and the other requests are not kept
 * waiting behind it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "srv_handlers.h"
#include "srv_infer.h"

/* Bodies up to this many bytes are parsed on the HTTP thread. */
#define INFER_INLINE_BODY_MAX ((size_t)64 * 1024)

/* The handler (HTTP thread) reads what it needs from the request's head;
 * the parse and the batcher's submit run on the HTTP thread or a pool
 * thread (see the top); a batcher thread runs the job (or the submitting
 * thread itself, for a cheap batch: srv_batcher.h); finish (HTTP again)
 * answers. Only the HTTP threads touch the connection, which may be gone
 * meanwhile (srv_request_resume then frees the request). */
struct infer_ctx {
    struct srv_request *r;
    struct srv_model *model;
    struct srv_work work;
    size_t json_len;             /* the JSON header's length in r->body */
    struct srv_infer_limits lim;
    struct srv_infer_req q;
    struct srv_job job;
    struct rt_error err;         /* parse or submit failure: the answer */
    bool retry_after;            /* with err: the batcher refused the job */
};

static void infer_ctx_free(void *p)
{
    struct infer_ctx *c = p;
    srv_infer_req_free(&c->q);
    srv_model_unref(c->model);
    free(c);
}

static void job_done(struct srv_job *job)
{
    struct infer_ctx *c = job->user;
    srv_request_resume(c->r);
}

static void infer_finish(struct srv_request *r)
{
    struct infer_ctx *c = r->ctx;
    if (c->err.status != RT_OK) {
        if (c->retry_after)
            srv_reply_header(r, "Retry-After", "1");
        srv_reply_rt_error(r, &c->err);
    } else if (c->job.err.status != RT_OK) {
        srv_reply_rt_error(r, &c->job.err);
    } else {
        struct srv_buf b = {0};
        size_t json_len;
        bool binary;
        srv_infer_write_response(c->model->cfg, c->model->name, c->model->version, &c->q, &b, &json_len, &binary);
        if (binary) {
            char len[32];
            snprintf(len, sizeof(len), "%zu", json_len);
            srv_reply_header(r, "Inference-Header-Content-Length", len);
            srv_reply(r, 200, "application/octet-stream", &b);
        } else {
            srv_reply_json(r, 200, &b);
        }
    }
    srv_record_outcome(r, c->model, &c->job.times);
}

/* The JSON header's length under the binary tensor extension, or the whole body. */
static bool json_header_length(struct srv_request *r, size_t *out)
{
    const char *h = srv_request_header(r, "Inference-Header-Content-Length");
    *out = r->body_len;
    if (!h)
        return true;
    char *end;
    unsigned long long n = strtoull(h, &end, 10);
    if (end == h || *end || h[0] == '-' || n > r->body_len) {
        srv_reply_error(r, 400, "Inference-Header-Content-Length must be a length within the body");
        return false;
    }
    *out = (size_t)n;
    return true;
}

/* Parses the body and queues the job. True: queued (c may be gone
 * already: job_done resumed the request). False: c->err says why. */
static bool infer_start(struct infer_ctx *c)
{
    struct srv_request *r = c->r;
    const struct rt_model_config *cfg = c->model->cfg;
    enum rt_status st = srv_infer_parse(cfg, r->body, r->body_len, c->json_len, &c->lim, &c->q, &c->err);
    /* Parsed or refused: the request holds only its tensors now (and a
     * 32 MB body is unmapped here, not on the HTTP thread). */
    srv_request_body_release(r);
    if (st != RT_OK)
        return false;
    c->job.rows = c->q.rows;
    for (int i = 0; i < cfg->n_inputs; i++)
        c->job.inputs[i] = c->q.inputs[i];
    for (int i = 0; i < cfg->n_outputs; i++)
        c->job.outputs[i] = c->q.outputs[i];
    c->job.done = job_done;
    c->job.user = c;
    if (srv_batcher_submit(c->model->batcher, &c->job, c->q.timeout_us, &c->err) == RT_OK)
        return true;
    c->retry_after = true;
    return false;
}

/* On a pool thread: a large body. The request is resumed here on failure,
 * else by job_done. */
static void infer_work(struct srv_work *w)
{
    struct infer_ctx *c = (struct infer_ctx *)((char *)w - offsetof(struct infer_ctx, work));
    if (!infer_start(c))
        srv_request_resume(c->r);
}

void srv_handle_infer(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    struct infer_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        srv_model_unref(m);
        srv_reply_error(r, 503, "out of memory");
        return;
    }
    c->r = r;
    c->model = m;
    c->err = (struct rt_error){RT_OK, ""};
    r->ctx = c;
    r->ctx_free = infer_ctx_free;

    if (!json_header_length(r, &c->json_len)) {
        srv_record_outcome(r, m, &c->job.times);
        return;
    }
    c->lim = (struct srv_infer_limits){(int)r->srv->cfg.max_json_depth,
                                       r->srv->cfg.max_tensor_elements};
    srv_request_defer(r, infer_finish);
    if (r->body_len > INFER_INLINE_BODY_MAX) {
        c->work.run = infer_work;
        if (srv_work_submit(r->srv->work, &c->work))
            return;
        srv_request_undefer(r);
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_error(r, 503, "too many requests are waiting to be parsed; retry later");
        srv_record_outcome(r, m, &c->job.times);
        return;
    }
    if (!infer_start(c)) {
        srv_request_undefer(r);
        infer_finish(r);
    }
}
