/* srv_triton_config.c - config.pbtxt into serving settings (see srv_triton_config.h). */
#include "srv_triton_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_pbtxt.h"

struct mapper {
    const struct srv_pb_doc *doc;
    char label[RT_NAME_MAX + 32];     /* "model/config.pbtxt" */
    bool json;                        /* from JSON: enum values and int64s come as strings */
    struct rt_error *err;
};

static enum rt_status fail(const struct mapper *m, const struct srv_pb_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum rt_status fail(const struct mapper *m, const struct srv_pb_node *n, const char *fmt, ...)
{
    char what[RT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (n->line > 0)
        rt_error_set(m->err, RT_ERR_BAD_MODEL, "%s:%d:%d: %s", m->label, n->line, n->col, what);
    else
        rt_error_set(m->err, RT_ERR_BAD_MODEL, "%s: %s", m->label, what);
    return RT_ERR_BAD_MODEL;
}

static const struct srv_pb_node *node(const struct mapper *m, int i) { return &m->doc->nodes[i]; }

/* "field 'where.name'" for messages: where is "" at the top level. */
static enum rt_status unsupported(const struct mapper *m, const struct srv_pb_node *n, const char *where)
{
    return fail(m, n, "field '%s%s%s' is not supported", where, where[0] ? "." : "", n->name);
}

/* Protobuf refuses a singular field given twice; so do we. */
static enum rt_status once(const struct mapper *m, int first, int i)
{
    for (int j = first; j != i; j = node(m, j)->next) {
        if (strcmp(node(m, j)->name, node(m, i)->name) == 0)
            return fail(m, node(m, i), "field '%s' is given twice", node(m, i)->name);
    }
    return RT_OK;
}

static enum rt_status get_int(const struct mapper *m, int i, int64_t lo, int64_t hi, int64_t *out)
{
    const struct srv_pb_node *n = node(m, i);
    char *end = NULL;
    errno = 0;
    bool word = n->kind == SRV_PB_WORD || (m->json && n->kind == SRV_PB_STRING);
    long long v = word ? strtoll(n->text, &end, 10) : 0;
    if (!word || end == n->text || *end != '\0' || errno != 0 || v < lo || v > hi)
        return fail(m, n, "'%s' must be an integer in [%lld, %lld]", n->name, (long long)lo, (long long)hi);
    *out = v;
    return RT_OK;
}

static enum rt_status get_string(const struct mapper *m, int i, char *out, size_t cap)
{
    const struct srv_pb_node *n = node(m, i);
    if (n->kind != SRV_PB_STRING)
        return fail(m, n, "'%s' must be a quoted string", n->name);
    if (strlen(n->text) >= cap)
        return fail(m, n, "'%s' is longer than %zu bytes", n->name, cap - 1);
    snprintf(out, cap, "%s", n->text);
    return RT_OK;
}

static enum rt_status get_message(const struct mapper *m, int i)
{
    return node(m, i)->kind == SRV_PB_MESSAGE ? RT_OK : fail(m, node(m, i), "'%s' must be a { } block", node(m, i)->name);
}

static enum rt_status get_word(const struct mapper *m, int i)
{
    enum srv_pb_kind k = node(m, i)->kind;
    return k == SRV_PB_WORD || (m->json && k == SRV_PB_STRING)
               ? RT_OK
               : fail(m, node(m, i), "'%s' must be an unquoted value", node(m, i)->name);
}

#define TRY(x)                      \
    do {                            \
        enum rt_status st_ = (x);   \
        if (st_ != RT_OK)           \
            return st_;             \
    } while (0)

static bool is(const struct srv_pb_node *n, const char *name) { return strcmp(n->name, name) == 0; }

static enum rt_status map_io(const struct mapper *m, int at, const char *where, struct srv_triton_io *io)
{
    TRY(get_message(m, at));
    const struct srv_pb_node *block = node(m, at);
    memset(io, 0, sizeof(*io));
    io->line = block->line;
    io->col = block->col;
    for (int i = block->first_child; i >= 0; i = node(m, i)->next) {
        const struct srv_pb_node *n = node(m, i);
        if (is(n, "name")) {
            TRY(once(m, block->first_child, i));
            TRY(get_string(m, i, io->name, sizeof(io->name)));
        } else if (is(n, "data_type")) {
            TRY(once(m, block->first_child, i));
            TRY(get_word(m, i));
            if (strncmp(n->text, "TYPE_", 5) != 0 || strlen(n->text) >= sizeof(io->data_type))
                return fail(m, n, "'data_type' must be a TYPE_ value (TYPE_FP32, ...)");
            snprintf(io->data_type, sizeof(io->data_type), "%s", n->text);
        } else if (is(n, "dims")) {
            int64_t v = 0;
            if (io->dims.rank == RT_MAX_DIMS - 1)
                return fail(m, n, "more than %d dims", RT_MAX_DIMS - 1);
            TRY(get_int(m, i, -1, INT32_MAX, &v));
            io->dims.dims[io->dims.rank++] = v;
            io->has_dims = true;
        } else {
            return unsupported(m, n, where);
        }
    }
    if (!io->name[0])
        return fail(m, block, "%s without a name", where);
    return RT_OK;
}

static enum rt_status map_queue_policy(const struct mapper *m, int at, struct srv_triton_config *c)
{
    TRY(get_message(m, at));
    const struct srv_pb_node *block = node(m, at);
    for (int i = block->first_child; i >= 0; i = node(m, i)->next) {
        const struct srv_pb_node *n = node(m, i);
        int64_t v = 0;
        TRY(once(m, block->first_child, i));
        if (is(n, "max_queue_size")) {
            /* Triton's 0 is "unbounded"; inferd's queue is always bounded, so 0 keeps the model's bound */
            TRY(get_int(m, i, 0, 1000000, &v));
            c->has_queue_size = v > 0;
            c->max_queue_size = (int)v;
        } else if (is(n, "default_timeout_microseconds")) {
            TRY(get_int(m, i, 0, 2000000000, &c->default_timeout_us));
            c->has_timeout = true;
        } else {
            return unsupported(m, n, "dynamic_batching.default_queue_policy");
        }
    }
    return RT_OK;
}

static enum rt_status map_batching(const struct mapper *m, int at, struct srv_triton_config *c)
{
    TRY(get_message(m, at));
    const struct srv_pb_node *block = node(m, at);
    for (int i = block->first_child; i >= 0; i = node(m, i)->next) {
        const struct srv_pb_node *n = node(m, i);
        int64_t v = 0;
        if (is(n, "preferred_batch_size")) {
            if (c->n_preferred == RT_MAX_PREFERRED)
                return fail(m, n, "more than %d preferred batch sizes", RT_MAX_PREFERRED);
            TRY(get_int(m, i, 1, RT_MAX_BATCH, &v));
            c->preferred[c->n_preferred++] = (int)v;
            c->has_preferred = true;
        } else if (is(n, "max_queue_delay_microseconds")) {
            TRY(once(m, block->first_child, i));
            TRY(get_int(m, i, 0, 10000000, &c->max_queue_delay_us));
            c->has_delay = true;
        } else if (is(n, "default_queue_policy")) {
            TRY(once(m, block->first_child, i));
            TRY(map_queue_policy(m, i, c));
        } else {
            return unsupported(m, n, "dynamic_batching");
        }
    }
    return RT_OK;
}

static enum rt_status map_instances(const struct mapper *m, int at, struct srv_triton_config *c)
{
    TRY(get_message(m, at));
    const struct srv_pb_node *block = node(m, at);
    if (c->has_instances)
        return fail(m, block, "only one instance_group is supported");
    c->has_instances = true;
    for (int i = block->first_child; i >= 0; i = node(m, i)->next) {
        const struct srv_pb_node *n = node(m, i);
        int64_t v = 0;
        char name[RT_NAME_MAX];
        TRY(once(m, block->first_child, i));
        if (is(n, "count")) {
            TRY(get_int(m, i, 1, 64, &v));
            c->instance_count = (int)v;
        } else if (is(n, "kind")) {
            TRY(get_word(m, i));
            if (strcmp(n->text, "KIND_AUTO") == 0)
                c->instance_kind = RT_INSTANCE_AUTO;
            else if (strcmp(n->text, "KIND_CPU") == 0)
                c->instance_kind = RT_INSTANCE_CPU;
            else if (strcmp(n->text, "KIND_GPU") == 0)
                c->instance_kind = RT_INSTANCE_GPU;
            else
                return fail(m, n, "kind '%s' is not supported (KIND_AUTO, KIND_CPU or KIND_GPU)", n->text);
        } else if (is(n, "name")) {
            TRY(get_string(m, i, name, sizeof(name)));   /* a label in Triton's logs only */
        } else {
            return unsupported(m, n, "instance_group");
        }
    }
    return RT_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static enum rt_status map_policy(const struct mapper *m, int at, struct srv_triton_config *c)
{
    TRY(get_message(m, at));
    const struct srv_pb_node *block = node(m, at);
    int i = block->first_child;
    if (i < 0 || node(m, i)->next >= 0)
        return fail(m, block, "version_policy must hold exactly one of latest, all, specific");
    const struct srv_pb_node *p = node(m, i);
    TRY(get_message(m, i));
    if (is(p, "all")) {
        c->policy = SRV_VERSIONS_ALL;
        if (p->first_child >= 0)
            return unsupported(m, node(m, p->first_child), "version_policy.all");
    } else if (is(p, "latest")) {
        c->policy = SRV_VERSIONS_LATEST;
        c->latest = 0;
        for (int j = p->first_child; j >= 0; j = node(m, j)->next) {
            int64_t v = 0;
            if (!is(node(m, j), "num_versions"))
                return unsupported(m, node(m, j), "version_policy.latest");
            TRY(once(m, p->first_child, j));
            TRY(get_int(m, j, 1, SRV_MAX_VERSIONS, &v));
            c->latest = (int)v;
        }
        if (c->latest == 0)
            return fail(m, p, "latest needs num_versions");
    } else if (is(p, "specific")) {
        c->policy = SRV_VERSIONS_SPECIFIC;
        for (int j = p->first_child; j >= 0; j = node(m, j)->next) {
            if (!is(node(m, j), "versions"))
                return unsupported(m, node(m, j), "version_policy.specific");
            if (c->n_versions == SRV_MAX_VERSIONS)
                return fail(m, node(m, j), "more than %d versions", SRV_MAX_VERSIONS);
            TRY(get_int(m, j, 0, INT64_MAX, &c->versions[c->n_versions++]));
        }
        if (c->n_versions == 0)
            return fail(m, p, "specific needs versions");
        qsort(c->versions, (size_t)c->n_versions, sizeof(c->versions[0]), cmp_i64);
        for (int k = 1; k < c->n_versions; k++) {
            if (c->versions[k] == c->versions[k - 1])
                return fail(m, p, "version %lld is listed twice", (long long)c->versions[k]);
        }
    } else {
        return unsupported(m, p, "version_policy");
    }
    return RT_OK;
}

/* platform and backend name what runs the model: ONNX, or inferd's own format. */
static enum rt_status map_runtime(const struct mapper *m, int i, struct srv_triton_config *c)
{
    char v[64];
    const struct srv_pb_node *n = node(m, i);
    TRY(get_string(m, i, v, sizeof(v)));
    const char *onnx = is(n, "platform") ? "onnxruntime_onnx" : "onnxruntime";
    if (strcmp(v, onnx) == 0)
        c->onnx = true;
    else if (strcmp(v, "inferd") != 0)
        return fail(m, n, "%s '%s' is not supported (inferd runs \"%s\" models, and its own as \"inferd\")", n->name, v,
                    onnx);
    return RT_OK;
}

static enum rt_status map_field(const struct mapper *m, int first, int i, struct srv_triton_config *c)
{
    const struct srv_pb_node *n = node(m, i);
    int64_t v = 0;
    char name[RT_NAME_MAX];
    if (is(n, "input") || is(n, "output")) {
        bool in = is(n, "input");
        int *count = in ? &c->n_inputs : &c->n_outputs;
        if (*count == RT_MAX_IO)
            return fail(m, n, "more than %d %ss", RT_MAX_IO, n->name);
        return map_io(m, i, n->name, in ? &c->inputs[(*count)++] : &c->outputs[(*count)++]);
    }
    if (is(n, "instance_group"))
        return map_instances(m, i, c);
    TRY(once(m, first, i));
    if (is(n, "name")) {
        TRY(get_string(m, i, name, sizeof(name)));
        if (strcmp(name, c->model) != 0)
            return fail(m, n, "name '%s' differs from the model's folder name '%s'", name, c->model);
    } else if (is(n, "platform") || is(n, "backend")) {
        return map_runtime(m, i, c);
    } else if (is(n, "max_batch_size")) {
        TRY(get_int(m, i, 0, RT_MAX_BATCH, &v));
        if (v == 0)
            return fail(m, n, "max_batch_size 0 (no batch dimension) is not supported: inferd's models batch "
                              "along their first dimension; give 1 or more");
        c->has_max_batch = true;
        c->max_batch_size = (int)v;
    } else if (is(n, "dynamic_batching")) {
        return map_batching(m, i, c);
    } else if (is(n, "version_policy")) {
        return map_policy(m, i, c);
    } else if (is(n, "default_model_filename")) {
        TRY(get_string(m, i, c->model_filename, sizeof(c->model_filename)));
        if (!c->model_filename[0] || strchr(c->model_filename, '/') || strcmp(c->model_filename, ".") == 0 ||
            strcmp(c->model_filename, "..") == 0)
            return fail(m, n, "default_model_filename must be a file name inside the version folder");
    } else {
        return unsupported(m, n, "");
    }
    return RT_OK;
}

void srv_triton_config_default(const char *model, struct srv_triton_config *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->model, sizeof(out->model), "%s", model);
    out->policy = SRV_VERSIONS_LATEST;
    out->latest = 1;
    out->instance_count = 1;
}

enum rt_status srv_triton_config_parse(const char *text, size_t len, const char *model,
                                       struct srv_triton_config *out, struct rt_error *err)
{
    srv_triton_config_default(model, out);
    struct srv_pb_doc doc;
    struct mapper m = {.doc = &doc, .err = err};
    snprintf(m.label, sizeof(m.label), "%s/config.pbtxt", model);
    enum rt_status st = srv_pbtxt_parse(text, len, m.label, &doc, err);
    if (st != RT_OK)
        return st == RT_ERR_NO_MEMORY ? st : RT_ERR_BAD_MODEL;
    int first = doc.nodes[0].first_child;
    for (int i = first; st == RT_OK && i >= 0; i = doc.nodes[i].next)
        st = map_field(&m, first, i, out);
    srv_pbtxt_free(&doc);
    return st;
}

/* ------------------------------------------------------------ from JSON */

/* The load API's parameters.config is the same configuration in
 * protobuf's JSON mapping: it is turned into the tree the text format
 * gives (objects are messages, arrays repeated fields, field names in
 * lowerCamelCase or as written), then read by the same rules. */
struct builder {
    struct srv_pb_doc doc;
    int cap;
    size_t used, arena_cap;
    struct rt_error *err;
};

static const char *keep(struct builder *b, const char *s, size_t len)
{
    if (b->used + len + 1 > b->arena_cap)
        return NULL;
    char *d = b->doc.arena + b->used;
    memcpy(d, s, len);
    d[len] = '\0';
    b->used += len + 1;
    return d;
}

/* maxBatchSize -> max_batch_size */
static const char *snake_name(struct builder *b, const char *name)
{
    char tmp[128];
    size_t n = 0;
    for (const char *p = name; *p && n + 2 < sizeof(tmp); p++) {
        if (*p >= 'A' && *p <= 'Z') {
            tmp[n++] = '_';
            tmp[n++] = (char)(*p - 'A' + 'a');
        } else {
            tmp[n++] = *p;
        }
    }
    return keep(b, tmp, n);
}

/* Adds v (named name) as one node, or one per element of an array; links
 * them after *last (or as parent's first child). False when out of room or
 * for JSON with no text-format equivalent (a list of lists). */
static bool add_value(struct builder *b, int parent, int *last, const char *name, const cJSON *v, bool in_list)
{
    if (cJSON_IsNull(v))
        return true;
    if (cJSON_IsArray(v)) {
        if (in_list)
            return rt_error_set(b->err, RT_ERR_BAD_MODEL, "'%s' is a list of lists", name), false;
        for (const cJSON *e = v->child; e; e = e->next)
            if (!add_value(b, parent, last, name, e, true))
                return false;
        return true;
    }
    if (b->doc.n == b->cap)
        return rt_error_set(b->err, RT_ERR_TOO_LARGE, "more than %d fields", SRV_PBTXT_MAX_NODES), false;
    int i = b->doc.n++;
    struct srv_pb_node *n = &b->doc.nodes[i];
    *n = (struct srv_pb_node){.name = snake_name(b, name), .first_child = -1, .next = -1};
    char num[40];
    if (cJSON_IsObject(v)) {
        n->kind = SRV_PB_MESSAGE;
        int child_last = -1;
        for (const cJSON *m = v->child; m; m = m->next)
            if (!add_value(b, i, &child_last, m->string, m, false))
                return false;
    } else if (cJSON_IsString(v)) {
        n->kind = SRV_PB_STRING;
        n->text = keep(b, v->valuestring, strlen(v->valuestring));
    } else if (cJSON_IsNumber(v)) {
        n->kind = SRV_PB_WORD;
        double d = v->valuedouble;
        int len = d == (double)(long long)d ? snprintf(num, sizeof(num), "%lld", (long long)d)
                                            : snprintf(num, sizeof(num), "%.17g", d);
        n->text = keep(b, num, (size_t)len);
    } else {
        n->kind = SRV_PB_WORD;
        n->text = cJSON_IsTrue(v) ? "true" : "false";
    }
    if (!n->name || (n->kind != SRV_PB_MESSAGE && !n->text))
        return rt_error_set(b->err, RT_ERR_NO_MEMORY, "out of memory"), false;
    if (*last >= 0)
        b->doc.nodes[*last].next = i;
    else
        b->doc.nodes[parent].first_child = i;
    *last = i;
    return true;
}

/* Upper bounds of a JSON tree's nodes and of the text they keep. */
static void measure(const cJSON *v, int *nodes, size_t *bytes)
{
    for (; v; v = v->next) {
        ++*nodes;
        *bytes += (v->string ? 2 * strlen(v->string) + 1 : 0) + 41 +
                  (cJSON_IsString(v) ? strlen(v->valuestring) + 1 : 0);
        measure(v->child, nodes, bytes);
    }
}

enum rt_status srv_triton_config_from_json(const cJSON *root, const char *model, struct srv_triton_config *out,
                                           struct rt_error *err)
{
    srv_triton_config_default(model, out);
    if (!cJSON_IsObject(root))
        return rt_error_set(err, RT_ERR_BAD_MODEL, "parameters.config must hold a JSON object");
    int nodes = 1;
    size_t bytes = 1;
    measure(root->child, &nodes, &bytes);
    struct builder b = {.cap = nodes < SRV_PBTXT_MAX_NODES ? nodes : SRV_PBTXT_MAX_NODES,
                        .arena_cap = bytes, .err = err};
    b.doc.nodes = calloc((size_t)b.cap, sizeof(*b.doc.nodes));
    b.doc.arena = malloc(bytes);
    enum rt_status st = RT_OK;
    if (!b.doc.nodes || !b.doc.arena) {
        st = rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    } else {
        b.doc.nodes[0] = (struct srv_pb_node){.name = "", .first_child = -1, .next = -1};
        b.doc.n = 1;
        int last = -1;
        for (const cJSON *m = root->child; m && st == RT_OK; m = m->next)
            if (!add_value(&b, 0, &last, m->string, m, false))
                st = err->status;
    }
    if (st == RT_OK) {
        out->from_load_request = true;
        struct mapper m = {.doc = &b.doc, .json = true, .err = err};
        snprintf(m.label, sizeof(m.label), "%s: parameters.config", model);
        int first = b.doc.nodes[0].first_child;
        for (int i = first; st == RT_OK && i >= 0; i = b.doc.nodes[i].next)
            st = map_field(&m, first, i, out);
    } else if (st != RT_ERR_NO_MEMORY) {
        char why[RT_ERROR_MSG_MAX];
        snprintf(why, sizeof(why), "%s", err->msg);
        rt_error_set(err, st, "%s: parameters.config: %s", model, why);
    }
    srv_pbtxt_free(&b.doc);
    return st;
}

/* ------------------------------------------------------------ applying */

/* Where a setting came from, for messages: "m/config.pbtxt:3:5" or
 * "m: parameters.config". */
static const char *locate(const struct srv_triton_config *c, int line, int col, char *buf, size_t cap)
{
    if (c->from_load_request)
        snprintf(buf, cap, "%s: parameters.config", c->model);
    else if (line > 0)
        snprintf(buf, cap, "%s/config.pbtxt:%d:%d", c->model, line, col);
    else
        snprintf(buf, cap, "%s/config.pbtxt", c->model);
    return buf;
}

static enum rt_status check_io(const struct srv_triton_config *c, const struct srv_triton_io *io, const char *what,
                               const struct rt_io_desc *have, int n_have, struct rt_error *err)
{
    const struct rt_io_desc *d = NULL;
    char names[RT_ERROR_MSG_MAX / 2] = "";
    for (int i = 0; i < n_have; i++) {
        if (strcmp(have[i].name, io->name) == 0)
            d = &have[i];
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s'%s'", i ? ", " : "", have[i].name);
    }
    char at[RT_NAME_MAX + 40];
    locate(c, io->line, io->col, at, sizeof(at));
    if (!d)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: %s '%s' is not one of the model's (%s)", at, what, io->name,
                            names);
    char type[40];
    snprintf(type, sizeof(type), "TYPE_%s", rt_dtype_kserve_name(d->dtype));
    if (io->data_type[0] && strcmp(io->data_type, type) != 0)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: %s '%s': data_type %s, but the model's is %s", at, what,
                            io->name, io->data_type, type);
    bool same = !io->has_dims || io->dims.rank == d->shape.rank - 1;
    for (int k = 0; same && io->has_dims && k < io->dims.rank; k++)
        same = io->dims.dims[k] == -1 || io->dims.dims[k] == d->shape.dims[k + 1];
    if (!same) {
        char shape[96] = "";
        for (int k = 1; k < d->shape.rank; k++) {
            size_t used = strlen(shape);
            snprintf(shape + used, sizeof(shape) - used, "%s%lld", k > 1 ? ", " : "", (long long)d->shape.dims[k]);
        }
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "%s: %s '%s': dims differ from the model's [%s] (without the batch dimension)", at,
                            what, io->name, shape);
    }
    return RT_OK;
}

enum rt_status srv_triton_config_apply(const void *user, struct rt_model_config *cfg, struct rt_error *err)
{
    const struct srv_triton_config *c = user;
    for (int i = 0; i < c->n_inputs; i++)
        TRY(check_io(c, &c->inputs[i], "input", cfg->inputs, cfg->n_inputs, err));
    for (int i = 0; i < c->n_outputs; i++)
        TRY(check_io(c, &c->outputs[i], "output", cfg->outputs, cfg->n_outputs, err));
    struct rt_batching *b = &cfg->batching;
    if (c->has_max_batch)
        cfg->max_batch_size = c->max_batch_size;
    if (c->has_preferred) {
        memcpy(b->preferred, c->preferred, sizeof(b->preferred));
        b->n_preferred = c->n_preferred;
    }
    /* Sizes the configuration gives must fit its max_batch_size; model.json's
     * own that a smaller max_batch_size leaves out are dropped. */
    int kept = 0;
    for (int i = 0; i < b->n_preferred; i++) {
        char at[RT_NAME_MAX + 40];
        if (b->preferred[i] <= cfg->max_batch_size)
            b->preferred[kept++] = b->preferred[i];
        else if (c->has_preferred)
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: preferred batch size %d is above max_batch_size %d",
                                locate(c, 0, 0, at, sizeof(at)), b->preferred[i], cfg->max_batch_size);
    }
    b->n_preferred = kept;
    if (c->has_delay)
        b->max_queue_delay_us = c->max_queue_delay_us;
    if (c->has_queue_size)
        b->max_queue_size = c->max_queue_size;
    if (c->has_timeout)
        b->default_timeout_us = c->default_timeout_us;
    if (c->has_instances) {
        cfg->instance_count = c->instance_count;
        cfg->instance_kind = c->instance_kind;
    }
    return RT_OK;
}
