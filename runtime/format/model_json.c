/*
 * model_json.c - model.json -> struct rt_model_config + struct rt_graph.
 *
 * Only syntax and local constraints are checked here (types, ranges, names,
 * weight presence and dtype); graph.c checks how the pieces fit together.
 * Errors are RT_ERR_BAD_MODEL and name the file and the node or field.
 */
#include "runtime/format/model_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format/json_keys.h"
#include "runtime/ops/ops_impl.h"
#include "runtime/rt_model.h"

#define MAX_NODES 65536

struct ctx {
    const char *label;          /* "model.json" as the user sees it */
    const struct rt_safetensors *st;
    struct rt_error *err;
    const struct rt_model_config *cfg;   /* precision, parsed before the nodes */
    struct rt_graph *g;
};

static enum rt_status fail(struct ctx *c, const char *where, const char *what)
{
    return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: %s: %s", c->label, where, what);
}

#define N_KEYS(list) ((int)(sizeof(list) / sizeof((list)[0])))

/* Every key an object may hold: anything else is refused (a typo would
 * otherwise be a setting silently not applied). */
static const char *const ROOT_KEYS[] = {"format_version", "name", "inputs", "outputs", "nodes", "preprocessing",
                                        "precision", "max_batch_size", "dynamic_batching", "instances",
                                        "conv_engine", "quantization", "labels"};
static const char *const IO_KEYS[] = {"name", "datatype", "shape"};
static const char *const PREPROCESS_KEYS[] = {"input", "color", "width", "height", "resize_shorter",
                                              "invert", "scale", "divisor", "mean", "std"};
static const char *const BATCHING_KEYS[] = {"max_queue_delay_us", "max_queue_size", "default_timeout_us",
                                            "preferred_batch_sizes"};
static const char *const INSTANCE_KEYS[] = {"count", "kind"};
static const char *const QUANT_KEYS[] = {"activation_scales", "calibration_images", "method"};
static const char *const NODE_KEYS[] = {"name", "op", "inputs", "outputs", "weights", "attrs"};

static enum rt_status check_keys(struct ctx *c, const cJSON *obj, const char *const *known, int n_known,
                                 const char *where)
{
    char msg[160];
    return rt_json_unknown_key(obj, known, n_known, msg, sizeof(msg)) ? fail(c, where, msg) : RT_OK;
}

static bool json_int(const cJSON *v, long lo, long hi, int *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return false;
    *out = (int)v->valuedouble;
    return true;
}

static bool json_i64(const cJSON *v, double lo, double hi, int64_t *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

static bool copy_name(char *dst, size_t cap, const cJSON *v)
{
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) >= cap)
        return false;
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return true;
}

/* An int field with a default; false (error set) when present but invalid. */
static bool get_int(struct ctx *c, const cJSON *obj, const char *key, long lo, long hi, int def, int *out,
                    const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return true;
    }
    if (json_int(v, lo, hi, out))
        return true;
    char what[96];
    snprintf(what, sizeof(what), "'%s' must be an integer in [%ld, %ld]", key, lo, hi);
    fail(c, where, what);
    return false;
}

/* A list of exactly n ints (or of n2 ints when n2 > 0) in [lo, hi]; a single
 * int is broadcast. Returns the count read, 0 on error. */
static int get_ints(struct ctx *c, const cJSON *obj, const char *key, int n, int n2, int lo, int hi,
                    const int *def, int *out, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char what[112];
    snprintf(what, sizeof(what), "'%s' must be %d%s%.0d integers in [%d, %d]", key, n,
             n2 ? " or " : "", n2, lo, hi);
    if (!v) {
        if (!def) {
            fail(c, where, what);
            return 0;
        }
        memcpy(out, def, sizeof(int) * (size_t)n);
        return n;
    }
    if (cJSON_IsNumber(v)) {
        int x;
        if (!json_int(v, lo, hi, &x)) {
            fail(c, where, what);
            return 0;
        }
        for (int i = 0; i < n; i++)
            out[i] = x;
        return n;
    }
    int len = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (len != n && (n2 == 0 || len != n2)) {
        fail(c, where, what);
        return 0;
    }
    for (int i = 0; i < len; i++) {
        if (!json_int(cJSON_GetArrayItem(v, i), lo, hi, &out[i])) {
            fail(c, where, what);
            return 0;
        }
    }
    return len;
}

static bool get_bool(struct ctx *c, const cJSON *obj, const char *key, bool def, bool *out, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return true;
    }
    if (!cJSON_IsBool(v)) {
        char what[64];
        snprintf(what, sizeof(what), "'%s' must be true or false", key);
        fail(c, where, what);
        return false;
    }
    *out = cJSON_IsTrue(v);
    return true;
}

static enum rt_status parse_io(struct ctx *c, const cJSON *arr, const char *key, struct rt_io_desc *io,
                               int *count)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > RT_MAX_IO)
        return fail(c, key, "must be an array of 1 to 8 tensors");
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, arr) {
        struct rt_io_desc *d = &io[i++];
        if (!copy_name(d->name, sizeof(d->name), cJSON_GetObjectItemCaseSensitive(t, "name")))
            return fail(c, key, "each tensor needs a 'name' (1 to 63 characters)");
        if (check_keys(c, t, IO_KEYS, N_KEYS(IO_KEYS), d->name) != RT_OK)
            return c->err->status;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "datatype");
        if (!cJSON_IsString(dt) || !rt_dtype_from_kserve(dt->valuestring, &d->dtype))
            return fail(c, d->name, "unknown 'datatype'");
        if (d->dtype != RT_DTYPE_F32)
            return fail(c, d->name, "format version 1 supports FP32 model inputs and outputs only");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        int rank = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : 0;
        if (rank < 2 || rank > RT_MAX_DIMS)
            return fail(c, d->name, "'shape' must list 2 to 8 dimensions, the first -1");
        d->shape.rank = rank;
        d->sample_elems = 1;
        for (int k = 0; k < rank; k++) {
            int64_t v;
            if (!json_i64(cJSON_GetArrayItem(shape, k), -1, 1e9, &v) || (k == 0) != (v == -1) || v == 0)
                return fail(c, d->name, "'shape' must be [-1, positive dims...]");
            d->shape.dims[k] = v;
            if (k > 0 && __builtin_mul_overflow(d->sample_elems, v, &d->sample_elems))
                return fail(c, d->name, "'shape' overflows");
        }
        if (d->sample_elems > (1 << 28))
            return fail(c, d->name, "'shape' is too large");
    }
    *count = i;
    return RT_OK;
}

static enum rt_status parse_preprocess(struct ctx *c, const cJSON *p, struct rt_model_config *cfg)
{
    struct rt_preprocess *pre = &cfg->pre;
    const char *where = "preprocessing";
    if (!p)
        return RT_OK;
    if (!cJSON_IsObject(p))
        return fail(c, where, "must be an object");
    if (check_keys(c, p, PREPROCESS_KEYS, N_KEYS(PREPROCESS_KEYS), where) != RT_OK)
        return c->err->status;
    pre->present = true;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(p, "input");
    pre->input = -1;
    for (int i = 0; i < cfg->n_inputs; i++) {
        if (!in || (cJSON_IsString(in) && strcmp(in->valuestring, cfg->inputs[i].name) == 0)) {
            pre->input = i;
            break;
        }
    }
    if (pre->input < 0)
        return fail(c, where, "'input' names no model input");
    const cJSON *color = cJSON_GetObjectItemCaseSensitive(p, "color");
    if (!color || (cJSON_IsString(color) && strcmp(color->valuestring, "gray") == 0))
        pre->channels = 1;
    else if (cJSON_IsString(color) && strcmp(color->valuestring, "rgb") == 0)
        pre->channels = 3;
    else
        return fail(c, where, "'color' must be \"gray\" or \"rgb\"");
    if (!get_int(c, p, "width", 1, 8192, 0, &pre->width, where) ||
        !get_int(c, p, "height", 1, 8192, 0, &pre->height, where) ||
        !get_int(c, p, "resize_shorter", 0, 8192, 0, &pre->resize_shorter, where) ||
        !get_bool(c, p, "invert", false, &pre->invert, where))
        return c->err->status;
    const struct rt_io_desc *d = &cfg->inputs[pre->input];
    if (d->shape.rank != 4 || d->shape.dims[1] != pre->channels || d->shape.dims[2] != pre->height ||
        d->shape.dims[3] != pre->width)
        return fail(c, where, "size and color must match the input's [-1, C, H, W] shape");
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(p, "scale");
    pre->scale = 1.0f;
    if (scale && (!cJSON_IsNumber(scale) || !isfinite(scale->valuedouble)))
        return fail(c, where, "'scale' must be a number");
    if (scale)
        pre->scale = (float)scale->valuedouble;
    /* v / 255 and v * float(1/255) differ in the last bit for half of the
     * byte values: "divisor" lets a model ask for torchvision's division. */
    const cJSON *divisor = cJSON_GetObjectItemCaseSensitive(p, "divisor");
    pre->divisor = 0.0f;
    if (divisor && (!cJSON_IsNumber(divisor) || !isfinite(divisor->valuedouble) || divisor->valuedouble <= 0 ||
                    divisor->valuedouble > 1e30))
        return fail(c, where, "'divisor' must be a positive number");
    if (divisor && scale)
        return fail(c, where, "give 'scale' or 'divisor', not both");
    if (divisor)
        pre->divisor = (float)divisor->valuedouble;
    const char *keys[2] = {"mean", "std"};
    float *dst[2] = {pre->mean, pre->std};
    for (int k = 0; k < 2; k++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, keys[k]);
        for (int ch = 0; ch < 3; ch++)
            dst[k][ch] = (float)k;   /* mean 0, std 1 */
        if (!arr)
            continue;
        if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != pre->channels)
            return fail(c, where, "'mean' and 'std' need one number per channel");
        for (int ch = 0; ch < pre->channels; ch++) {
            const cJSON *v = cJSON_GetArrayItem(arr, ch);
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (k == 1 && v->valuedouble <= 0))
                return fail(c, where, "'mean' must be numbers and 'std' positive numbers");
            dst[k][ch] = (float)v->valuedouble;
        }
    }
    return RT_OK;
}

static enum rt_status parse_serving(struct ctx *c, const cJSON *root, struct rt_model_config *cfg)
{
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(root, "precision");
    if (!prec || (cJSON_IsString(prec) && strcmp(prec->valuestring, "fp32") == 0))
        cfg->precision = RT_PRECISION_FP32;
    else if (cJSON_IsString(prec) && strcmp(prec->valuestring, "fp16") == 0)
        cfg->precision = RT_PRECISION_FP16;
    else if (cJSON_IsString(prec) && strcmp(prec->valuestring, "int8") == 0)
        cfg->precision = RT_PRECISION_INT8;
    else
        return fail(c, "precision", "must be \"fp32\", \"fp16\" or \"int8\"");
    if (!get_int(c, root, "max_batch_size", 1, RT_MAX_BATCH, 64, &cfg->max_batch_size, "max_batch_size"))
        return c->err->status;

    struct rt_batching *b = &cfg->batching;
    const cJSON *db = cJSON_GetObjectItemCaseSensitive(root, "dynamic_batching");
    const char *where = "dynamic_batching";
    if (db && !cJSON_IsObject(db))
        return fail(c, where, "must be an object");
    if (check_keys(c, db, BATCHING_KEYS, N_KEYS(BATCHING_KEYS), where) != RT_OK)
        return c->err->status;
    int delay, timeout;
    if (!get_int(c, db, "max_queue_delay_us", 0, 10000000, 0, &delay, where) ||
        !get_int(c, db, "max_queue_size", 1, 1000000, 1024, &b->max_queue_size, where) ||
        !get_int(c, db, "default_timeout_us", 0, 2000000000, 0, &timeout, where))
        return c->err->status;
    b->max_queue_delay_us = delay;
    b->default_timeout_us = timeout;
    const cJSON *pref = cJSON_GetObjectItemCaseSensitive(db, "preferred_batch_sizes");
    if (pref) {
        if (!cJSON_IsArray(pref) || cJSON_GetArraySize(pref) > RT_MAX_PREFERRED)
            return fail(c, where, "'preferred_batch_sizes' must be an array of at most 8 sizes");
        const cJSON *v;
        cJSON_ArrayForEach(v, pref) {
            if (!json_int(v, 1, cfg->max_batch_size, &b->preferred[b->n_preferred++]))
                return fail(c, where, "'preferred_batch_sizes' must lie in [1, max_batch_size]");
        }
    }

    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(root, "instances");
    if (inst && !cJSON_IsObject(inst))
        return fail(c, "instances", "must be an object");
    if (check_keys(c, inst, INSTANCE_KEYS, N_KEYS(INSTANCE_KEYS), "instances") != RT_OK)
        return c->err->status;
    if (!get_int(c, inst, "count", 1, 64, 1, &cfg->instance_count, "instances"))
        return c->err->status;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(inst, "kind");
    if (!kind || (cJSON_IsString(kind) && strcmp(kind->valuestring, "auto") == 0))
        cfg->instance_kind = RT_INSTANCE_AUTO;
    else if (cJSON_IsString(kind) && strcmp(kind->valuestring, "cpu") == 0)
        cfg->instance_kind = RT_INSTANCE_CPU;
    else if (cJSON_IsString(kind) && strcmp(kind->valuestring, "gpu") == 0)
        cfg->instance_kind = RT_INSTANCE_GPU;
    else
        return fail(c, "instances", "'kind' must be \"auto\", \"cpu\" or \"gpu\"");
    const cJSON *engine = cJSON_GetObjectItemCaseSensitive(root, "conv_engine");
    if (!engine || (cJSON_IsString(engine) && strcmp(engine->valuestring, "custom") == 0))
        cfg->conv_engine = RT_CONV_ENGINE_CUSTOM;
    else if (cJSON_IsString(engine) && strcmp(engine->valuestring, "cudnn") == 0)
        cfg->conv_engine = RT_CONV_ENGINE_CUDNN;
    else
        return fail(c, "conv_engine", "must be \"custom\" or \"cudnn\"");
    return RT_OK;
}

/* Binds weight `role` of node n to the safetensors tensor named in weights[key]. */
static enum rt_status bind_weight(struct ctx *c, struct rt_node *n, const cJSON *weights, const char *key,
                                  enum rt_wrole role, bool required)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(weights, key);
    char what[RT_NAME_MAX * 3];
    if (!v) {
        if (!required)
            return RT_OK;
        snprintf(what, sizeof(what), "weight '%s' is required", key);
        return fail(c, n->name, what);
    }
    struct rt_weight *w = &n->w[role];
    if (!copy_name(w->name, sizeof(w->name), v)) {
        snprintf(what, sizeof(what), "weight '%s' must name a tensor", key);
        return fail(c, n->name, what);
    }
    const struct rt_st_tensor *t = rt_safetensors_find(c->st, w->name);
    if (!t)
        return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: node '%s': tensor '%s' is not in model.safetensors",
                            c->label, n->name, w->name);
    return rt_model_json_bind_tensor(c->st, c->cfg->precision, c->g, n, role, t, c->err);
}

/* ---- the attribute reader the op families use (ops_impl.h) */

struct rt_attrs {
    struct ctx *c;
    const cJSON *obj;       /* the node's "attrs", or NULL */
    const char *where;      /* the node's name */
    const char *asked[16];  /* the keys the op's reader asked for: the ones it knows */
    int n_asked;
};

static void asked(struct rt_attrs *a, const char *key)
{
    if (a->n_asked < N_KEYS(a->asked))
        a->asked[a->n_asked++] = key;
}

bool rt_attrs_int(struct rt_attrs *a, const char *key, long lo, long hi, int def, int *out)
{
    asked(a, key);
    return get_int(a->c, a->obj, key, lo, hi, def, out, a->where);
}

int rt_attrs_ints(struct rt_attrs *a, const char *key, int n, int n2, int lo, int hi, const int *def, int *out)
{
    asked(a, key);
    return get_ints(a->c, a->obj, key, n, n2, lo, hi, def, out, a->where);
}

int rt_attrs_i64s(struct rt_attrs *a, const char *key, int max_n, int64_t lo, int64_t hi, int64_t *out)
{
    asked(a, key);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(a->obj, key);
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
    if (n < 1 || n > max_n)
        return 0;
    for (int k = 0; k < n; k++)
        if (!json_i64(cJSON_GetArrayItem(list, k), (double)lo, (double)hi, &out[k]))
            return 0;
    return n;
}

bool rt_attrs_bool(struct rt_attrs *a, const char *key, bool def, bool *out)
{
    asked(a, key);
    return get_bool(a->c, a->obj, key, def, out, a->where);
}

const cJSON *rt_attrs_item(struct rt_attrs *a, const char *key)
{
    asked(a, key);
    return cJSON_GetObjectItemCaseSensitive(a->obj, key);
}

bool rt_attrs_fail(struct rt_attrs *a, const char *what)
{
    fail(a->c, a->where, what);
    return false;
}

static enum rt_status parse_attrs(struct ctx *c, struct rt_node *n, const cJSON *attrs)
{
    const struct rt_op_family *f = rt_op_info(n->op)->family;
    struct rt_attrs a = {c, attrs, n->name, {0}, 0};
    if (f->read_attrs && !f->read_attrs(&a, n))
        return c->err->status;
    return check_keys(c, attrs, a.asked, a.n_asked, n->name);
}

static enum rt_status parse_weights(struct ctx *c, struct rt_node *n, const cJSON *w)
{
    const struct rt_weight_key *keys = rt_op_info(n->op)->family->weights;
    if (!keys) {
        if (w && cJSON_GetArraySize(w) > 0)
            return fail(c, n->name, "this op takes no weights");
        return RT_OK;
    }
    const char *known[RT_W_COUNT];
    int n_known = 0;
    for (const struct rt_weight_key *k = keys; k->key && n_known < RT_W_COUNT; k++)
        known[n_known++] = k->key;
    enum rt_status s = check_keys(c, w, known, n_known, n->name);
    for (; keys->key && s == RT_OK; keys++)
        s = bind_weight(c, n, w, keys->key, keys->role, keys->required);
    return s;
}

static enum rt_status parse_node(struct ctx *c, const cJSON *j, int index, struct rt_graph *g)
{
    struct rt_node *n = &g->nodes[index];
    snprintf(n->name, sizeof(n->name), "node %d", index);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (name && !copy_name(n->name, sizeof(n->name), name))
        return fail(c, n->name, "'name' must be a string of 1 to 63 characters");
    if (check_keys(c, j, NODE_KEYS, N_KEYS(NODE_KEYS), n->name) != RT_OK)
        return c->err->status;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(j, "op");
    if (!cJSON_IsString(op))
        return fail(c, n->name, "missing 'op'");
    if (!rt_op_from_name(op->valuestring, &n->op) || !rt_op_has(n->op, RT_T_JSON))
        return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: %s: unknown op '%.40s'", c->label, n->name,
                            op->valuestring);
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(j, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(j, "outputs");
    int n_in = cJSON_IsArray(ins) ? cJSON_GetArraySize(ins) : 0;
    if (n_in < 1 || n_in > RT_NODE_MAX_INPUTS)
        return fail(c, n->name, "'inputs' must list 1 to 16 tensor names");
    if (!cJSON_IsArray(outs) || cJSON_GetArraySize(outs) != 1)
        return fail(c, n->name, "'outputs' must list exactly one tensor name");
    char tname[RT_NAME_MAX];
    for (int i = 0; i < n_in; i++) {
        if (!copy_name(tname, sizeof(tname), cJSON_GetArrayItem(ins, i)))
            return fail(c, n->name, "tensor names must be strings of 1 to 63 characters");
        if ((n->inputs[i] = rt_graph_tensor(g, tname, true)) < 0)
            return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    }
    n->n_inputs = n_in;
    if (!copy_name(tname, sizeof(tname), cJSON_GetArrayItem(outs, 0)))
        return fail(c, n->name, "tensor names must be strings of 1 to 63 characters");
    if ((n->output = rt_graph_tensor(g, tname, true)) < 0)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    if (g->tensors[n->output].producer >= 0 || g->tensors[n->output].input_index >= 0)
        return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: %s: tensor '%s' is produced twice", c->label,
                            n->name, tname);
    g->tensors[n->output].producer = index;

    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(j, "weights");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(j, "attrs");
    if ((weights && !cJSON_IsObject(weights)) || (attrs && !cJSON_IsObject(attrs)))
        return fail(c, n->name, "'weights' and 'attrs' must be objects");
    enum rt_status s = parse_weights(c, n, weights);
    return s == RT_OK ? parse_attrs(c, n, attrs) : s;
}

static enum rt_status parse_nodes(struct ctx *c, const cJSON *nodes, struct rt_model_config *cfg,
                                  struct rt_graph *g)
{
    int count = cJSON_IsArray(nodes) ? cJSON_GetArraySize(nodes) : 0;
    if (count < 1 || count > MAX_NODES)
        return fail(c, "nodes", "must be an array of 1 to 65536 nodes");
    g->nodes = calloc((size_t)count, sizeof(*g->nodes));
    if (!g->nodes)
        return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
    g->n_nodes = count;
    for (int i = 0; i < cfg->n_inputs; i++) {
        int t = rt_graph_tensor(g, cfg->inputs[i].name, true);
        if (t < 0)
            return rt_error_set(c->err, RT_ERR_NO_MEMORY, "out of memory");
        if (g->tensors[t].input_index >= 0)
            return fail(c, cfg->inputs[i].name, "input named twice");
        g->tensors[t].input_index = i;
        g->tensors[t].shape = cfg->inputs[i].shape;
        g->tensors[t].sample_elems = cfg->inputs[i].sample_elems;
    }
    for (int i = 0; i < count; i++) {
        enum rt_status s = parse_node(c, cJSON_GetArrayItem(nodes, i), i, g);
        if (s != RT_OK)
            return s;
    }
    for (int i = 0; i < cfg->n_outputs; i++) {
        int t = rt_graph_tensor(g, cfg->outputs[i].name, false);
        if (t < 0 || g->tensors[t].producer < 0)
            return fail(c, cfg->outputs[i].name, "output is produced by no node");
        if (g->tensors[t].output_index >= 0)
            return fail(c, cfg->outputs[i].name, "output named twice");
        g->tensors[t].output_index = i;
    }
    return RT_OK;
}

/* The whole document; serving_only: the graph and the model's edges came
 * from model.onnx (cfg->inputs and g already filled), so model.json may
 * hold only serving settings. */
static enum rt_status parse_doc(struct ctx *c, struct rt_model_config *cfg, const char *text, size_t len,
                                bool serving_only, char *labels_file)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        int line, col;
        rt_json_position(text, len, end, &line, &col);
        return rt_error_set(c->err, RT_ERR_BAD_MODEL, "%s: not valid JSON (line %d, column %d)", c->label, line,
                            col);
    }
    enum rt_status s = RT_OK;
    int version = 0;
    if (!cJSON_IsObject(root))
        s = fail(c, "top level", "must be an object");
    else if (!get_int(c, root, "format_version", 1, 1, 0, &version, "format_version") || version != 1)
        s = fail(c, "format_version", "must be 1");
    else
        s = check_keys(c, root, ROOT_KEYS, N_KEYS(ROOT_KEYS), "top level");
    const cJSON *quant = s == RT_OK ? cJSON_GetObjectItemCaseSensitive(root, "quantization") : NULL;
    if (quant && cJSON_IsObject(quant))
        s = check_keys(c, quant, QUANT_KEYS, N_KEYS(QUANT_KEYS), "quantization");
    static const char *const GRAPH_KEYS[] = {"inputs", "outputs", "nodes"};
    for (int k = 0; k < 3 && s == RT_OK && serving_only; k++) {
        if (cJSON_GetObjectItemCaseSensitive(root, GRAPH_KEYS[k]))
            s = fail(c, GRAPH_KEYS[k], "comes from model.onnx; model.json beside it holds serving settings only");
    }
    if (s == RT_OK) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
        if (name && !copy_name(cfg->name, sizeof(cfg->name), name))
            s = fail(c, "name", "must be a string of 1 to 63 characters");
    }
    if (s == RT_OK)
        s = parse_serving(c, root, cfg);
    if (s == RT_OK && !serving_only)
        s = parse_io(c, cJSON_GetObjectItemCaseSensitive(root, "inputs"), "inputs", cfg->inputs, &cfg->n_inputs);
    if (s == RT_OK && !serving_only)
        s = parse_io(c, cJSON_GetObjectItemCaseSensitive(root, "outputs"), "outputs", cfg->outputs,
                     &cfg->n_outputs);
    if (s == RT_OK)
        s = parse_preprocess(c, cJSON_GetObjectItemCaseSensitive(root, "preprocessing"), cfg);
    if (s == RT_OK && !serving_only)
        s = parse_nodes(c, cJSON_GetObjectItemCaseSensitive(root, "nodes"), cfg, c->g);
    if (s == RT_OK && cfg->precision == RT_PRECISION_INT8)
        s = rt_model_json_quantization(cJSON_GetObjectItemCaseSensitive(root, "quantization"), c->label, c->g,
                                       c->err);
    if (s == RT_OK) {
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(root, "labels");
        labels_file[0] = '\0';
        if (labels && (!copy_name(labels_file, RT_NAME_MAX, labels) || strchr(labels_file, '/') ||
                       strcmp(labels_file, "..") == 0 || strcmp(labels_file, ".") == 0))
            s = fail(c, "labels", "must be a file name inside the model folder");
    }
    cJSON_Delete(root);
    return s;
}

enum rt_status rt_model_json_parse(const char *text, size_t len, const char *label,
                                   const struct rt_safetensors *st, struct rt_model_config *cfg,
                                   struct rt_graph *g, char *labels_file, struct rt_error *err)
{
    struct ctx c = {label, st, err, cfg, g};
    return parse_doc(&c, cfg, text, len, false, labels_file);
}

enum rt_status rt_model_json_parse_serving(const char *text, size_t len, const char *label,
                                           struct rt_model_config *cfg, struct rt_graph *g, char *labels_file,
                                           struct rt_error *err)
{
    struct ctx c = {label, NULL, err, cfg, g};
    return parse_doc(&c, cfg, text, len, true, labels_file);
}
