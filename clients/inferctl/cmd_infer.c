/*
 * cmd_infer.c - "inferctl infer MODEL --input FILE": one KServe v2
 * inference. FILE (or "-" for stdin) is either a JSON request body (a file
 * that parses as a JSON object), sent as it is, or raw little-endian tensor
 * data for the model's single input (as many rows as the file holds), sent
 * as JSON or, with --binary, with the binary tensor extension both ways. Prints every output: a header
 * line "NAME DATATYPE [SHAPE]", then one line of values per row.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "inferctl.h"

static void print_value(const char *dt, const uint8_t *p)
{
    if (strcmp(dt, "FP32") == 0) {
        float f;
        memcpy(&f, p, 4);
        printf(" %.7g", (double)f);
    } else if (strcmp(dt, "FP64") == 0) {
        double d;
        memcpy(&d, p, 8);
        printf(" %.16g", d);
    } else if (strcmp(dt, "BOOL") == 0) {
        printf(" %s", *p ? "true" : "false");
    } else {
        size_t size = icl_datatype_size(dt);
        uint64_t u = 0;
        memcpy(&u, p, size);
        if (dt[0] == 'I' && size < 8 && (u >> (size * 8 - 1)) & 1)
            u |= ~(uint64_t)0 << (size * 8);
        if (dt[0] == 'I')
            printf(" %lld", (long long)(int64_t)u);
        else
            printf(" %llu", (unsigned long long)u);
    }
}

static void print_output(const struct icl_tensor *t)
{
    printf("%s %s [", t->name, t->datatype);
    for (int d = 0; d < t->rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf("]\n");
    int64_t elems = icl_shape_elements(t->shape, t->rank);
    int64_t row = t->rank > 1 ? icl_shape_elements(t->shape + 1, t->rank - 1) : elems;
    if (strcmp(t->datatype, "BYTES") == 0) {
        const char *s;
        size_t len;
        for (int64_t i = 0; icl_tensor_string(t, i, &s, &len); i++)
            printf("  %.*s\n", (int)len, s);
        return;
    }
    size_t size = icl_datatype_size(t->datatype);
    bool printable = size && strcmp(t->datatype, "FP16") != 0 && strcmp(t->datatype, "BF16") != 0;
    if (!printable || elems < 0 || (size_t)elems * size != t->byte_size) {
        printf("  (%zu bytes of %s data)\n", t->byte_size, t->datatype);
        return;
    }
    for (int64_t i = 0; i < elems; i++) {
        if (i % (row > 0 ? row : 1) == 0)
            printf(i ? "\n " : " ");
        print_value(t->datatype, (const uint8_t *)t->data + (size_t)i * size);
    }
    printf("\n");
}

/* Whether the first byte past leading white space is '{'. */
static bool opens_like_json(const uint8_t *data, size_t len)
{
    size_t i = 0;
    while (i < len && isspace(data[i]))
        i++;
    return i < len && data[i] == '{';
}

/* Builds the request for raw tensor data from the model's metadata. */
static int raw_request(struct icl_client *c, const char *model, const uint8_t *data, size_t len,
                       struct icl_tensor *in, struct icl_model_metadata *meta)
{
    struct icl_error err;
    if (icl_model_metadata(c, model, meta, &err) != ICL_OK)
        return ctl_remote_error("infer", &err);
    if (meta->n_inputs != 1) {
        fprintf(stderr, "inferctl infer: model '%s' has %d inputs; give a JSON request file\n",
                model, meta->n_inputs);
        return CTL_EXIT_ERROR;
    }
    *in = meta->inputs[0];
    size_t size = icl_datatype_size(in->datatype);
    bool batched = in->rank > 0 && in->shape[0] == -1;
    int64_t sample = batched ? icl_shape_elements(in->shape + 1, in->rank - 1)
                             : icl_shape_elements(in->shape, in->rank);
    if (!size || sample <= 0) {
        fprintf(stderr, "inferctl infer: input '%s' (%s) cannot be read from a raw file; give a "
                        "JSON request file\n", in->name, in->datatype);
        return CTL_EXIT_ERROR;
    }
    size_t sample_bytes = (size_t)sample * size;
    if (len == 0 || len % sample_bytes != 0 || (!batched && len != sample_bytes)) {
        fprintf(stderr, "inferctl infer: the file holds %zu bytes, not a whole number of "
                        "%zu-byte %s samples of input '%s'%s\n", len, sample_bytes, in->datatype,
                in->name, opens_like_json(data, len) ? ", nor a JSON request (it does not parse)" : "");
        return CTL_EXIT_ERROR;
    }
    if (batched)
        in->shape[0] = (int64_t)(len / sample_bytes);
    in->data = data;
    in->byte_size = len;
    return CTL_EXIT_OK;
}

/* Whether the file is a JSON request: a whole JSON object, not merely a
 * first byte of '{' (raw FP32 rows start with that byte one time in 256,
 * and were then sent as a malformed JSON body). */
static bool is_json(const uint8_t *data, size_t len)
{
    if (!opens_like_json(data, len))
        return false;
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts((const char *)data, len, &end, false);
    bool object = cJSON_IsObject(doc);
    cJSON_Delete(doc);
    for (size_t at = end ? (size_t)(end - (const char *)data) : 0; object && at < len; at++)
        object = isspace(data[at]);   /* white space only after the object */
    return object;
}

int ctl_cmd_infer(int argc, char **argv)
{
    const char *input = NULL, *output = NULL;
    int classification = 0;
    bool binary = false;
    const struct ctl_option opts[] = {
        {"input", CTL_OPT_STRING, &input, 0, 0},
        {"binary", CTL_OPT_FLAG, &binary, 0, 0},
        {"output", CTL_OPT_STRING, &output, 0, 0},
        {"classification", CTL_OPT_INT, &classification, 1, 1 << 20},
    };
    char **pos;
    int npos, rc = ctl_positional("infer", argc, argv, opts, 4, 1, 1, &pos, &npos);
    if (rc != CTL_EXIT_OK)
        return rc < 0 ? CTL_EXIT_OK : rc;
    if (!input) {
        fprintf(stderr, "inferctl infer: --input FILE is required\n");
        ctl_print_command_usage(stderr, "infer");
        free(pos);
        return CTL_EXIT_USAGE;
    }
    uint8_t *data = NULL;
    size_t len;
    struct icl_error err;
    struct icl_client *c = NULL;
    struct icl_infer_result res = {0};
    struct icl_model_metadata *meta = calloc(1, sizeof(*meta));
    if (!meta) {
        fprintf(stderr, "inferctl infer: out of memory\n");
        rc = CTL_EXIT_ERROR;
    } else if (icl_file_read(input, &data, &len, &err) != ICL_OK) {
        fprintf(stderr, "inferctl infer: %s\n", err.message);
        rc = CTL_EXIT_ERROR;
    } else if (!(c = ctl_connect("infer"))) {
        rc = CTL_EXIT_ERROR;
    } else if (is_json(data, len)) {
        if (binary || output || classification)
            fprintf(stderr, "inferctl infer: a JSON request file is sent as it is; "
                            "--binary, --output and --classification are ignored\n");
        if (icl_infer_body(c, pos[0], data, len, len, &res, &err) != ICL_OK)
            rc = ctl_remote_error("infer", &err);
    } else {
        struct icl_tensor in;
        struct icl_output_request outs[ICL_MAX_IO];
        struct icl_infer_request req = {.n_inputs = 1, .inputs = &in, .outputs = outs,
                                        .binary_inputs = binary, .binary_outputs = binary};
        if ((rc = raw_request(c, pos[0], data, len, &in, meta)) != CTL_EXIT_OK)
            goto done;
        for (int i = 0; i < meta->n_outputs && (output || classification); i++) {
            if (output && strcmp(output, meta->outputs[i].name) != 0)
                continue;
            outs[req.n_outputs++] = (struct icl_output_request){meta->outputs[i].name,
                                                                classification};
        }
        if (output && req.n_outputs == 0) {
            fprintf(stderr, "inferctl infer: model '%s' has no output '%s'\n", pos[0], output);
            rc = CTL_EXIT_ERROR;
        } else if (icl_infer(c, pos[0], &req, &res, &err) != ICL_OK) {
            rc = ctl_remote_error("infer", &err);
        }
    }
    for (int i = 0; rc == CTL_EXIT_OK && i < res.n_outputs; i++)
        print_output(&res.outputs[i]);
done:
    icl_infer_result_free(&res);
    icl_client_free(c);
    free(data);
    free(meta);
    free(pos);
    return rc;
}
