/*
 * srv_infer_reply.c - the KServe v2 inference response: JSON tensors, the
 * binary tensor extension (JSON header, then raw little-endian data) and
 * the classification extension (BYTES "score:index:label" per class).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_infer.h"
#include "srv_topk.h"

/* One classification entry, formatted as Triton does ("%f" score). */
static int class_entry(char *dst, size_t cap, const struct rt_model_config *cfg, float score,
                       int index)
{
    if (index < cfg->n_labels && cfg->labels && cfg->labels[index])
        return snprintf(dst, cap, "%f:%d:%s", (double)score, index, cfg->labels[index]);
    return snprintf(dst, cap, "%f:%d", (double)score, index);
}

/* Writes the classification of one output either as JSON strings (json) or
 * as serialized BYTES elements (4-byte little-endian length + bytes). */
static void write_classes(const struct rt_model_config *cfg, const struct srv_infer_req *q,
                          const struct srv_infer_output *o, bool json, struct srv_buf *b)
{
    int n = (int)cfg->outputs[o->index].sample_elems, k = o->classification;
    int *idx = malloc((size_t)k * sizeof(int));
    if (!idx) {
        b->failed = true;
        return;
    }
    bool first = true;
    for (int row = 0; row < q->rows; row++) {
        const float *x = q->outputs[o->index] + (size_t)row * (size_t)n;
        srv_top_k(x, n, k, idx);
        for (int j = 0; j < k; j++) {
            char s[RT_NAME_MAX + 96];
            int len = class_entry(s, sizeof(s), cfg, x[idx[j]], idx[j]);
            if (len < 0)
                len = 0;
            if ((size_t)len >= sizeof(s))
                len = (int)sizeof(s) - 1;
            if (json) {
                if (!first)
                    srv_buf_putc(b, ',');
                srv_buf_json_strn(b, s, (size_t)len);
            } else {
                uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                                 (uint8_t)(len >> 24)};
                srv_buf_append(b, le, 4);
                srv_buf_append(b, s, (size_t)len);
            }
            first = false;
        }
    }
    free(idx);
}

static void write_floats(struct srv_buf *b, const float *x, size_t n)
{
    if (!srv_buf_reserve(b, n * 16))
        return;
    for (size_t i = 0; i < n; i++) {
        if (i)
            srv_buf_putc(b, ',');
        srv_buf_json_float(b, x[i]);
    }
}

/* The reply's size, so that its buffer is allocated once: the names and
 * per-output JSON around the data, 16 bytes a number as text (the longest
 * float, "-1.17549435e-38", and a comma) or 4 as binary data. Classes are
 * left to grow the buffer (their labels' lengths vary). */
static size_t reply_size_hint(const struct rt_model_config *cfg, const char *model_name,
                              const char *model_version, const struct srv_infer_req *q)
{
    size_t n = 128 + 2 * (strlen(model_name) + strlen(model_version) + strlen(q->id));
    for (int i = 0; i < q->n_outputs; i++) {
        const struct srv_infer_output *o = &q->outputs_req[i];
        const struct rt_io_desc *io = &cfg->outputs[o->index];
        n += 160 + 2 * strlen(io->name);
        if (!o->classification)
            n += (size_t)q->rows * (size_t)io->sample_elems * (o->binary ? sizeof(float) : 16);
    }
    return n;
}

void srv_infer_write_response(const struct rt_model_config *cfg, const char *model_name,
                              const char *model_version, const struct srv_infer_req *q, struct srv_buf *out,
                              size_t *json_len, bool *binary)
{
    /* Classification's binary parts, whose size is known once written. */
    struct srv_buf blobs[RT_MAX_IO] = {{0}};
    *binary = false;
    srv_buf_reserve(out, reply_size_hint(cfg, model_name, model_version, q));
    srv_buf_puts(out, "{\"model_name\":");
    srv_buf_json_str(out, model_name);
    srv_buf_puts(out, ",\"model_version\":");
    srv_buf_json_str(out, model_version);
    if (q->has_id) {
        srv_buf_puts(out, ",\"id\":");
        srv_buf_json_str(out, q->id);
    }
    srv_buf_puts(out, ",\"outputs\":[");
    for (int i = 0; i < q->n_outputs; i++) {
        const struct srv_infer_output *o = &q->outputs_req[i];
        const struct rt_io_desc *io = &cfg->outputs[o->index];
        size_t elems = (size_t)q->rows * (size_t)io->sample_elems;
        srv_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        srv_buf_json_str(out, io->name);
        if (o->classification) {
            srv_buf_printf(out, ",\"datatype\":\"BYTES\",\"shape\":[%d,%d]", q->rows,
                           o->classification);
        } else {
            srv_buf_printf(out, ",\"datatype\":\"%s\",\"shape\":[%d", rt_dtype_kserve_name(io->dtype),
                           q->rows);
            for (int d = 1; d < io->shape.rank; d++)
                srv_buf_printf(out, ",%lld", (long long)io->shape.dims[d]);
            srv_buf_putc(out, ']');
        }
        if (o->binary) {
            *binary = true;
            if (o->classification)
                write_classes(cfg, q, o, false, &blobs[i]);
            srv_buf_printf(out, ",\"parameters\":{\"binary_data_size\":%zu}}",
                           o->classification ? blobs[i].len : elems * sizeof(float));
            continue;
        }
        srv_buf_puts(out, ",\"data\":[");
        if (o->classification)
            write_classes(cfg, q, o, true, out);
        else
            write_floats(out, q->outputs[o->index], elems);
        srv_buf_puts(out, "]}");
    }
    srv_buf_puts(out, "]}");
    *json_len = out->len;
    for (int i = 0; i < q->n_outputs; i++) {
        const struct srv_infer_output *o = &q->outputs_req[i];
        if (!o->binary)
            continue;
        if (o->classification) {
            if (blobs[i].failed)
                out->failed = true;
            srv_buf_append(out, blobs[i].data, blobs[i].len);
            srv_buf_free(&blobs[i]);
        } else {
            size_t elems = (size_t)q->rows * (size_t)cfg->outputs[o->index].sample_elems;
            srv_buf_append(out, q->outputs[o->index], elems * sizeof(float));
        }
    }
}
