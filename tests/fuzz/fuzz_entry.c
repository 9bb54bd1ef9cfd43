/*
 * fuzz_entry.c - parser entry points for the fuzz targets and the
 * regression test (see fuzz_entry.h).
 *
 * Inputs are copied into exact-size heap buffers first, so AddressSanitizer
 * sees any read one byte past what the client sent, as the daemon's own
 * body buffer would be read.
 */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/core/graph.h"
#include "runtime/image/image.h"
#include "runtime/format/model_json.h"
#include "runtime/onnx/onnx_load.h"
#include "runtime/core/plan.h"
#include "runtime/precision/graph_precision.h"
#include "runtime/format/safetensors.h"
#include "server/srv_infer.h"
#include "server/srv_multipart.h"

/* The limits the daemon runs with by default would let one input allocate
 * 64 MB; smaller ones keep the fuzzer fast without skipping any check. */
static const struct srv_infer_limits LIMITS = {.max_json_depth = 32,
                                               .max_tensor_elements = 1 << 16};

static char *LABELS[] = {"zero", "one", "two"};

/* A model with two inputs of different ranks and one output with labels:
 * enough to reach every branch of the request parser. */
static const struct rt_model_config CFG = {
    .name = "fuzz",
    .max_batch_size = 8,
    .n_inputs = 2,
    .n_outputs = 1,
    .inputs = {{"a", RT_DTYPE_F32, {2, {-1, 4}}, 4},
               {"b", RT_DTYPE_F32, {3, {-1, 2, 3}}, 6}},
    .outputs = {{"y", RT_DTYPE_F32, {2, {-1, 3}}, 3}},
    .n_labels = 3,
    .labels = LABELS,
};

/* Every pair the plan offers becomes a chain, so that chaining runs on
 * whatever graphs the input makes (a backend's rule takes fewer). */
static bool chain_any(const struct k_conv2d *pw, const struct k_conv2d *dw) { return true; }

static uint8_t *copy_of(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (p && size)
        memcpy(p, data, size);
    return p;
}

/* Parses, and for a valid request fills the outputs and writes the reply. */
static void infer_once(uint8_t *body, size_t len, size_t json_len)
{
    struct srv_infer_req q;
    struct rt_error err = {RT_OK, ""};
    if (srv_infer_parse(&CFG, body, len, json_len, &LIMITS, &q, &err) != RT_OK)
        return;
    for (int i = 0; i < CFG.n_outputs; i++) {
        for (int64_t k = 0; k < (int64_t)q.rows * CFG.outputs[i].sample_elems; k++)
            q.outputs[i][k] = (float)(k % 7) - 2.5f;
    }
    struct srv_buf out = {0};
    size_t header_len;
    bool binary;
    srv_infer_write_response(&CFG, CFG.name, "1", &q, &out, &header_len, &binary);
    srv_buf_free(&out);
    srv_infer_req_free(&q);
}

int fuzz_infer_json(const uint8_t *data, size_t size)
{
    uint8_t *body = copy_of(data, size);
    if (body)
        infer_once(body, size, size);
    free(body);
    return 0;
}

int fuzz_infer_binary(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t json_len = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2;
    size -= 2;
    /* The handler refuses a header length past the body before parsing. */
    if (json_len > size)
        return 0;
    uint8_t *body = copy_of(data, size);
    if (body)
        infer_once(body, size, json_len);
    free(body);
    return 0;
}

int fuzz_multipart(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    size_t ct_len = (size_t)(nl - data);
    char *ct = malloc(ct_len + 1);
    uint8_t *body = copy_of(nl + 1, size - ct_len - 1);
    if (ct && body) {
        memcpy(ct, data, ct_len);
        ct[ct_len] = '\0'; /* a header value is a C string: an embedded NUL ends it */
        char boundary[SRV_MULTIPART_BOUNDARY_MAX + 1];
        struct srv_part parts[8];
        int n = 0;
        struct rt_error err = {RT_OK, ""};
        if (srv_multipart_boundary(ct, boundary, &err) == RT_OK &&
            srv_multipart_parse(body, size - ct_len - 1, boundary, parts, 8, &n, &err) == RT_OK) {
            /* Touch every byte of every part: a part must lie inside the body. */
            unsigned sum = 0;
            for (int i = 0; i < n; i++) {
                for (size_t k = 0; k < parts[i].len; k++)
                    sum += parts[i].data[k];
            }
            (void)sum;
        }
    }
    free(ct);
    free(body);
    return 0;
}

int fuzz_image(const uint8_t *data, size_t size)
{
    uint8_t *buf = copy_of(data, size);
    if (!buf)
        return 0;
    /* Caps far below the daemon's defaults: the check is the same code, and
     * a fuzzer that allocates 16 Mpx per input finds nothing faster. */
    const struct rt_image_limits lim = {.max_pixels = 1 << 20, .max_side = 4096};
    struct rt_image img;
    struct rt_error err = {RT_OK, ""};
    if (rt_image_decode(buf, size, &lim, &img, &err) == RT_OK) {
        static const struct rt_preprocess pre[2] = {
            {.present = true, .width = 8, .height = 8, .channels = 1, .invert = true,
             .scale = 1.0f / 255, .mean = {0.5f}, .std = {0.25f}},
            {.present = true, .width = 6, .height = 5, .channels = 3, .resize_shorter = 7,
             .divisor = 255, .mean = {0.4f, 0.4f, 0.4f}, .std = {0.2f, 0.2f, 0.2f}},
        };
        float out[3 * 8 * 8];
        for (int i = 0; i < 2; i++)
            rt_image_preprocess(&img, &pre[i], out, &err);
        rt_image_free(&img);
    }
    free(buf);
    return 0;
}

int fuzz_model(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    size_t st_len = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
                    (size_t)data[3] << 24;
    if (st_len > size - 4)
        return 0;
    uint8_t *st_buf = copy_of(data + 4, st_len);
    char *json = (char *)copy_of(data + 4 + st_len, size - 4 - st_len);
    struct rt_safetensors st = {0};
    struct rt_error err = {RT_OK, ""};
    if (st_buf && json &&
        rt_safetensors_parse(st_buf, st_len, "fuzz/model.safetensors", &st, &err) == RT_OK) {
        struct rt_model_config cfg;
        struct rt_graph g;
        struct rt_plan plan;
        memset(&cfg, 0, sizeof(cfg));
        memset(&g, 0, sizeof(g));
        memset(&plan, 0, sizeof(plan));
        char labels_file[RT_NAME_MAX];
        const char *label = "fuzz/model.json";
        if (rt_model_json_parse(json, size - 4 - st_len, label, &st, &cfg, &g, labels_file,
                                &err) == RT_OK &&
            rt_graph_finish(&g, &cfg, label, &err) == RT_OK &&
            rt_graph_apply_precision(&g, &cfg, label, &err) == RT_OK &&
            rt_plan_build(&g, chain_any, &plan, &err) == RT_OK)
            rt_plan_free(&plan);
        rt_graph_free(&g);
        rt_safetensors_close(&st);
    }
    free(st_buf);
    free(json);
    return 0;
}

int fuzz_onnx(const uint8_t *data, size_t size)
{
    uint8_t *buf = copy_of(data, size);
    struct rt_model_config cfg;
    struct rt_graph g;
    struct rt_plan plan;
    memset(&cfg, 0, sizeof(cfg));
    memset(&g, 0, sizeof(g));
    memset(&plan, 0, sizeof(plan));
    struct rt_error err = {RT_OK, ""};
    const char *label = "fuzz/model.onnx";
    if (buf && rt_onnx_parse(buf, size, label, &cfg, &g, &err) == RT_OK &&
        rt_graph_finish(&g, &cfg, label, &err) == RT_OK && rt_plan_build(&g, chain_any, &plan, &err) == RT_OK)
        rt_plan_free(&plan);
    rt_graph_free(&g);
    free(buf);
    return 0;
}

int fuzz_entry_run(const char *target, const uint8_t *data, size_t size)
{
    static const struct {
        const char *name;
        int (*fn)(const uint8_t *, size_t);
    } TARGETS[] = {
        {"infer_json", fuzz_infer_json}, {"infer_binary", fuzz_infer_binary},
        {"multipart", fuzz_multipart},   {"image", fuzz_image},
        {"model", fuzz_model},           {"onnx", fuzz_onnx},
    };
    for (size_t i = 0; i < sizeof(TARGETS) / sizeof(TARGETS[0]); i++) {
        if (strcmp(TARGETS[i].name, target) == 0)
            return TARGETS[i].fn(data, size);
    }
    return -1;
}
