/*
 * icl_classify.c - the image endpoint, POST /v2/models/{name}/classify:
 * one image as the raw body or several as multipart/form-data parts, and
 * the JSON answer as native predictions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icl_impl.h"

/* A boundary that occurs in none of the images (RFC 2046 requires it). */
static void pick_boundary(const struct icl_image *images, int n, char *out, size_t cap)
{
    for (unsigned k = 0;; k++) {
        snprintf(out, cap, "icl-boundary-%08x-%u", 0x5eedf00du ^ (k * 2654435761u), k);
        bool clash = false;
        for (int i = 0; i < n && !clash; i++)
            clash = memmem(images[i].data, images[i].len, out, strlen(out)) != NULL;
        if (!clash)
            return;
    }
}

enum icl_status icl_classify_encode(const struct icl_image *images, int n, enum icl_body_kind kind,
                                    uint8_t **body, size_t *len, char *content_type, size_t cap,
                                    struct icl_error *err)
{
    icl_error_clear(err);
    *body = NULL;
    *len = 0;
    if (n < 1)
        return icl_fail(err, ICL_ERR_INVALID, "no image to classify");
    for (int i = 0; i < n; i++)
        if (!images[i].data || images[i].len == 0)
            return icl_fail(err, ICL_ERR_INVALID, "image %d is empty", i + 1);
    if (kind == ICL_BODY_AUTO)
        kind = n == 1 ? ICL_BODY_RAW : ICL_BODY_MULTIPART;
    if (kind == ICL_BODY_RAW && n != 1)
        return icl_fail(err, ICL_ERR_INVALID, "a raw body carries one image; use multipart");
    struct icl_buf b = {0};
    if (kind == ICL_BODY_RAW) {
        icl_copy(content_type, cap, images[0].content_type ? images[0].content_type
                                                           : "application/octet-stream");
        icl_buf_append(&b, images[0].data, images[0].len);
    } else {
        char boundary[64];
        pick_boundary(images, n, boundary, sizeof(boundary));
        snprintf(content_type, cap, "multipart/form-data; boundary=%s", boundary);
        for (int i = 0; i < n; i++) {
            const char *name = images[i].filename ? images[i].filename : "image";
            const char *slash = strrchr(name, '/');
            icl_buf_printf(&b, "--%s\r\nContent-Disposition: form-data; name=\"image\"; "
                               "filename=", boundary);
            /* the file's base name, quoted as a JSON-like string is close
             * enough to RFC 7578's quoted-string for names with quotes */
            icl_buf_json_str(&b, slash ? slash + 1 : name, strlen(slash ? slash + 1 : name));
            icl_buf_printf(&b, "\r\nContent-Type: %s\r\n\r\n",
                           images[i].content_type ? images[i].content_type
                                                  : "application/octet-stream");
            icl_buf_append(&b, images[i].data, images[i].len);
            icl_buf_puts(&b, "\r\n");
        }
        icl_buf_printf(&b, "--%s--\r\n", boundary);
    }
    if (b.failed) {
        icl_buf_free(&b);
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory encoding the images");
    }
    *body = b.data;
    *len = b.len;
    return ICL_OK;
}

void icl_classify_result_free(struct icl_classify_result *r)
{
    for (int i = 0; r->results && i < r->n_results; i++)
        free(r->results[i].predictions);
    free(r->results);
    memset(r, 0, sizeof(*r));
}

static int64_t timing(const cJSON *t, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, name);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static bool parse_result(const cJSON *r, struct icl_classification *out)
{
    const cJSON *preds = cJSON_GetObjectItemCaseSensitive(r, "predictions"), *p;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "timing_us");
    out->queue_us = timing(t, "queue");
    out->compute_us = timing(t, "compute");
    out->total_us = timing(t, "total");
    if (!cJSON_IsArray(preds))
        return false;
    int n = cJSON_GetArraySize(preds);
    out->predictions = calloc(n > 0 ? (size_t)n : 1, sizeof(*out->predictions));
    if (!out->predictions)
        return false;
    cJSON_ArrayForEach(p, preds) {
        struct icl_prediction *q = &out->predictions[out->n_predictions];
        const cJSON *index = cJSON_GetObjectItemCaseSensitive(p, "index");
        const cJSON *score = cJSON_GetObjectItemCaseSensitive(p, "score");
        if (!cJSON_IsNumber(index) || !cJSON_IsNumber(score))
            return false;
        icl_json_str(p, "label", q->label, sizeof(q->label));
        q->index = (int)index->valuedouble;
        q->score = score->valuedouble;
        out->n_predictions++;
    }
    return true;
}

enum icl_status icl_classify(struct icl_client *c, const char *model,
                             const struct icl_image *images, int n, int top_k,
                             enum icl_body_kind kind, struct icl_classify_result *out,
                             struct icl_error *err)
{
    memset(out, 0, sizeof(*out));
    char path[640], suffix[40] = "/classify", ctype[128];
    if (top_k < 0)
        return icl_fail(err, ICL_ERR_INVALID, "top_k must not be negative");
    if (top_k > 0)
        snprintf(suffix, sizeof(suffix), "/classify?top_k=%d", top_k);
    if (!icl_model_path(path, sizeof(path), model, suffix, err))
        return ICL_ERR_INVALID;
    uint8_t *body;
    size_t len;
    enum icl_status st = icl_classify_encode(images, n, kind, &body, &len, ctype, sizeof(ctype), err);
    if (st != ICL_OK)
        return st;
    cJSON *root = NULL;
    struct icl_response resp;
    st = icl_request(c, "POST", path, body, len, ctype, &resp, err);
    free(body);
    if (st == ICL_OK)
        root = cJSON_ParseWithLength((const char *)resp.body, resp.len);
    icl_response_free(&resp);
    if (st != ICL_OK)
        return st;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *r;
    int count = cJSON_GetArraySize(results);
    if (!cJSON_IsArray(results) || count != n) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_PROTOCOL, "the classify answer does not hold %d result%s",
                        n, n == 1 ? "" : "s");
    }
    icl_json_str(root, "model_name", out->model_name, sizeof(out->model_name));
    icl_json_str(root, "model_version", out->model_version, sizeof(out->model_version));
    out->results = calloc((size_t)count, sizeof(*out->results));
    bool ok = out->results != NULL;
    cJSON_ArrayForEach(r, results) {
        if (!ok)
            break;
        ok = parse_result(r, &out->results[out->n_results]);
        out->n_results++;
    }
    cJSON_Delete(root);
    if (!ok) {
        icl_classify_result_free(out);
        return icl_fail(err, ICL_ERR_PROTOCOL, "the classify answer is malformed");
    }
    return ICL_OK;
}
