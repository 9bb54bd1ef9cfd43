/*
 * srv_api_infer.c - POST /v2/models/{model}[/versions/{v}]/infer: parse the
 * request into native buffers, queue it on the model's batcher, answer from
 * its own rows when the batch has run.
 */
#include <stdlib.h>
#include <string.h>

#include "srv_handlers.h"
#include "srv_infer.h"

struct infer_ctx {
    struct srv_request *r;
    struct srv_model *model;
    struct srv_infer_req q;
    struct srv_job job;
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
    if (c->job.err.status != RT_OK) {
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
    r->ctx = c;
    r->ctx_free = infer_ctx_free;

    size_t json_len;
    if (!json_header_length(r, &json_len)) {
        srv_record_outcome(r, m, &c->job.times);
        return;
    }
    const struct srv_infer_limits lim = {(int)r->srv->cfg.max_json_depth,
                                         r->srv->cfg.max_tensor_elements};
    struct rt_error err = {RT_OK, ""};
    if (srv_infer_parse(m->cfg, r->body, r->body_len, json_len, &lim, &c->q, &err) != RT_OK) {
        srv_reply_rt_error(r, &err);
        srv_record_outcome(r, m, &c->job.times);
        return;
    }
    srv_request_body_release(r);   /* parsed: the request holds only its tensors now */
    c->job.rows = c->q.rows;
    for (int i = 0; i < m->cfg->n_inputs; i++)
        c->job.inputs[i] = c->q.inputs[i];
    for (int i = 0; i < m->cfg->n_outputs; i++)
        c->job.outputs[i] = c->q.outputs[i];
    c->job.done = job_done;
    c->job.user = c;
    srv_request_defer(r, infer_finish);
    if (srv_batcher_submit(m->batcher, &c->job, c->q.timeout_us, &err) != RT_OK) {
        srv_request_undefer(r);
        srv_reply_header(r, "Retry-After", "1");
        srv_reply_rt_error(r, &err);
        srv_record_outcome(r, m, &c->job.times);
    }
}
