/*
 * model_write.c - a loaded graph back out as a model folder (see
 * format/model_write.h): the node list and weights, stored at the requested
 * precision, spliced into the source model.json so that every serving
 * setting survives.
 */
#include "runtime/format/model_write.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_quant.h"
#include "runtime/ops/ops_impl.h"
#include "runtime/precision/quant.h"
#include "runtime/format/safetensors.h"
#include "runtime/rt_model.h"


/* The tensors to write; names and converted data are owned here. */
struct wlist {
    struct rt_st_write *t;
    int n, cap;
    void **owned;
    int n_owned, cap_owned;
};

static bool own(struct wlist *l, void *p)
{
    if (!p)
        return false;
    if (l->n_owned == l->cap_owned) {
        int cap = l->cap_owned ? l->cap_owned * 2 : 64;
        void **o = realloc(l->owned, sizeof(void *) * (size_t)cap);
        if (!o) {
            free(p);
            return false;
        }
        l->owned = o;
        l->cap_owned = cap;
    }
    l->owned[l->n_owned++] = p;
    return true;
}

static bool used(const struct wlist *l, const char *name)
{
    for (int i = 0; i < l->n; i++) {
        if (strcmp(l->t[i].name, name) == 0)
            return true;
    }
    return false;
}

/* base, or base_2, base_3, ... : a name no written tensor has, nor its
 * "<name>_scale" companion when with_scale. Owned by l; NULL when out of memory. */
static const char *unique_name(struct wlist *l, const char *base, bool with_scale)
{
    size_t len = strlen(base) + 24;
    char *name = malloc(len);
    if (!own(l, name))
        return NULL;
    char *scale = malloc(len + 8);
    if (!scale)
        return NULL;
    for (int k = 1;; k++) {
        if (k == 1)
            snprintf(name, len, "%s", base);
        else
            snprintf(name, len, "%s_%d", base, k);
        snprintf(scale, len + 8, "%s_scale", name);
        if (!used(l, name) && (!with_scale || !used(l, scale)))
            break;
    }
    free(scale);
    return name;
}

static bool add(struct wlist *l, const char *name, enum rt_dtype dt, struct rt_shape shape, const void *data)
{
    if (!name || !data)
        return false;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        struct rt_st_write *t = realloc(l->t, sizeof(*t) * (size_t)cap);
        if (!t)
            return false;
        l->t = t;
        l->cap = cap;
    }
    l->t[l->n++] = (struct rt_st_write){name, dt, shape, data};
    return true;
}

static int64_t elems_of(const struct rt_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

/* One weight of node n, stored at precision prec, named in weights[key]. */
static bool write_weight(struct wlist *l, const struct rt_node *n, const struct rt_weight_key *key, const float *data,
                         struct rt_shape shape, enum rt_precision prec, cJSON *weights)
{
    int role = key->role;
    const struct rt_weight *w = &n->w[role];
    char base[RT_NAME_MAX * 3];
    if (w->name[0] && role == RT_W_WEIGHT)
        snprintf(base, sizeof(base), "%s", w->name);
    else   /* roles folding created or rewrote get the node's name */
        snprintf(base, sizeof(base), "%s.%s", n->name, key->key);
    bool q8 = prec == RT_PRECISION_INT8 && rt_op_has(n->op, RT_T_GEMM) && role == RT_W_WEIGHT;
    const char *name = unique_name(l, base, q8);
    int64_t count = elems_of(&shape);
    bool ok;
    if (q8) {
        int64_t oc = shape.dims[0];
        int8_t *q = malloc((size_t)count);
        float *scale = malloc(sizeof(float) * (size_t)oc);
        char *scale_name = name ? malloc(strlen(name) + 8) : NULL;
        ok = own(l, q) & own(l, scale) & own(l, scale_name);
        if (ok) {
            rt_q8_quantize_weights(data, oc, count / oc, q, scale);
            snprintf(scale_name, strlen(name) + 8, "%s_scale", name);
            ok = add(l, name, RT_DTYPE_I8, shape, q) &&
                 add(l, scale_name, RT_DTYPE_F32, (struct rt_shape){1, {oc}}, scale);
        }
    } else if (prec == RT_PRECISION_FP16) {
        uint8_t *h = malloc((size_t)count * 2);
        ok = own(l, h);
        for (int64_t i = 0; ok && i < count; i++) {
            uint16_t v = k_f16_from_f32(data[i]);
            h[2 * i] = (uint8_t)v;   /* little endian */
            h[2 * i + 1] = (uint8_t)(v >> 8);
        }
        ok = ok && add(l, name, RT_DTYPE_F16, shape, h);
    } else {
        ok = add(l, name, RT_DTYPE_F32, shape, data);
    }
    return ok && cJSON_AddStringToObject(weights, key->key, name) != NULL;
}

/* A batch norm left standalone by folding holds scale / shift in
 * weight / bias: written back with mean 0, var 1 and an eps too small to
 * change 1 + eps, so loading it folds to the same affine exactly. */
static bool write_weights(struct wlist *l, const struct rt_node *n, enum rt_precision prec, cJSON *weights)
{
    const struct rt_weight_key *key = rt_op_info(n->op)->family->weights;
    for (; key && key->key; key++) {
        int r = key->role;
        const float *data = n->w[r].data;
        struct rt_shape shape = n->w[r].shape;
        if (n->op == RT_OP_BATCH_NORM && r >= RT_W_MEAN) {
            shape = n->w[RT_W_WEIGHT].shape;
            float *fill = malloc(sizeof(float) * (size_t)elems_of(&shape));
            if (!own(l, fill))
                return false;
            for (int64_t i = 0; i < elems_of(&shape); i++)
                fill[i] = r == RT_W_MEAN ? 0.0f : 1.0f;
            data = fill;
        }
        if (data && !write_weight(l, n, key, data, shape, prec, weights))
            return false;
    }
    return true;
}

static bool write_attrs(const struct rt_node *n, cJSON *attrs)
{
    const struct rt_op_family *f = rt_op_info(n->op)->family;
    return !f->write_attrs || f->write_attrs(n, attrs);
}

static cJSON *write_nodes(struct wlist *l, const struct rt_graph *g, enum rt_precision prec)
{
    cJSON *nodes = cJSON_CreateArray();
    bool ok = nodes != NULL;
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const struct rt_node *n = &g->nodes[i];
        cJSON *j = cJSON_CreateObject();
        if (!j || !cJSON_AddItemToArray(nodes, j)) {
            cJSON_Delete(j);
            ok = false;
            break;
        }
        ok = cJSON_AddStringToObject(j, "name", n->name) && cJSON_AddStringToObject(j, "op", rt_op_name(n->op));
        cJSON *ins = cJSON_AddArrayToObject(j, "inputs"), *outs = cJSON_AddArrayToObject(j, "outputs");
        cJSON *weights = cJSON_AddObjectToObject(j, "weights"), *attrs = cJSON_AddObjectToObject(j, "attrs");
        ok = ok && ins && outs && weights && attrs;
        for (int k = 0; ok && k < n->n_inputs; k++)
            ok = cJSON_AddItemToArray(ins, cJSON_CreateString(g->tensors[n->inputs[k]].name));
        ok = ok && cJSON_AddItemToArray(outs, cJSON_CreateString(g->tensors[n->output].name)) &&
             write_weights(l, n, prec, weights) && write_attrs(n, attrs);
        if (ok && cJSON_GetArraySize(weights) == 0)
            cJSON_DeleteItemFromObjectCaseSensitive(j, "weights");
        if (ok && cJSON_GetArraySize(attrs) == 0)
            cJSON_DeleteItemFromObjectCaseSensitive(j, "attrs");
    }
    if (!ok) {
        cJSON_Delete(nodes);
        return NULL;
    }
    return nodes;
}

/* Inputs or outputs as model.json declares them. */
static cJSON *io_list(const struct rt_io_desc *io, int n)
{
    cJSON *list = cJSON_CreateArray();
    bool ok = list != NULL;
    for (int i = 0; ok && i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *dims = NULL;
        ok = o && cJSON_AddItemToArray(list, o) && cJSON_AddStringToObject(o, "name", io[i].name) &&
             cJSON_AddStringToObject(o, "datatype", rt_dtype_kserve_name(io[i].dtype)) &&
             (dims = cJSON_AddArrayToObject(o, "shape"));
        for (int d = 0; ok && d < io[i].shape.rank; d++)
            ok = cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)io[i].shape.dims[d]));
    }
    if (!ok)
        cJSON_Delete(list);
    return ok ? list : NULL;
}

/* Sets root[key], keeping its place when present. */
static bool set_item(cJSON *root, const char *key, cJSON *item)
{
    if (!item)
        return false;
    if (cJSON_GetObjectItemCaseSensitive(root, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(root, key, item);
    return rt_op_attach(root, key, item);
}

/* item on one line, with a space after each ':' and ',' outside strings. */
static void print_compact(FILE *f, const cJSON *item)
{
    char *text = cJSON_PrintUnformatted(item);
    bool in_string = false;
    for (const char *c = text; c && *c; c++) {
        fputc(*c, f);
        if (in_string && *c == '\\' && c[1])
            fputc(*++c, f);
        else if (*c == '"')
            in_string = !in_string;
        else if (!in_string && (*c == ':' || *c == ','))
            fputc(' ', f);
    }
    free(text);
}

/* The order model.json files are written in (the shipped ones'); a key
 * not here follows them as found. */
static const char *const KEY_ORDER[] = {"format_version", "name", "precision", "max_batch_size",
                                        "dynamic_batching", "instances", "conv_engine", "labels", "inputs",
                                        "outputs", "preprocessing", "nodes", "quantization"};

static bool in_key_order(const char *key)
{
    for (size_t i = 0; i < sizeof(KEY_ORDER) / sizeof(KEY_ORDER[0]); i++)
        if (strcmp(KEY_ORDER[i], key) == 0)
            return true;
    return false;
}

/* One root item, key and value, after a separator unless first. */
static void print_entry(FILE *f, const cJSON *it, bool first)
{
    cJSON *key = cJSON_CreateString(it->string);
    fputs(first ? "\n  " : ",\n  ", f);
    print_compact(f, key);
    fputs(": ", f);
    cJSON_Delete(key);
    const cJSON *scales = cJSON_GetObjectItemCaseSensitive(it, "activation_scales");
    if (strcmp(it->string, "nodes") == 0 && cJSON_IsArray(it)) {
        fputs("[", f);
        for (const cJSON *n = it->child; n; n = n->next) {
            fputs(n == it->child ? "\n    " : ",\n    ", f);
            print_compact(f, n);
        }
        fputs("\n  ]", f);
    } else if (strcmp(it->string, "quantization") == 0 && cJSON_IsObject(scales)) {
        fputs("{", f);
        for (const cJSON *q = it->child; q; q = q->next) {
            fprintf(f, "%s\n    \"%s\": ", q == it->child ? "" : ",", q->string);
            if (q != scales) {
                print_compact(f, q);
                continue;
            }
            fputs("{", f);
            for (const cJSON *v = scales->child; v; v = v->next) {
                cJSON *name = cJSON_CreateString(v->string);
                fputs(v == scales->child ? "\n      " : ",\n      ", f);
                print_compact(f, name);
                fputs(": ", f);
                print_compact(f, v);
                cJSON_Delete(name);
            }
            fputs("\n    }", f);
        }
        fputs("\n  }", f);
    } else {
        print_compact(f, it);
    }
}

/* The file's layout: one top-level field per line, one node per line, one
 * activation scale per line. */
static char *print_model(const cJSON *root)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("{", f);
    bool first = true;
    for (size_t i = 0; i < sizeof(KEY_ORDER) / sizeof(KEY_ORDER[0]); i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, KEY_ORDER[i]);
        if (it) {
            print_entry(f, it, first);
            first = false;
        }
    }
    for (const cJSON *it = root->child; it; it = it->next)
        if (!in_key_order(it->string)) {
            print_entry(f, it, first);
            first = false;
        }
    fputs("\n}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static cJSON *quantization(const struct rt_graph *g, const struct rt_write_options *opt)
{
    cJSON *q = cJSON_CreateObject();
    bool ok = q && cJSON_AddStringToObject(q, "method", opt->method) &&
              cJSON_AddNumberToObject(q, "calibration_images", opt->calibration_images);
    cJSON *scales = ok ? cJSON_AddObjectToObject(q, "activation_scales") : NULL;
    for (int t = 0; scales && t < g->n_tensors; t++) {
        if (opt->act_scales[t] > 0 && !cJSON_AddNumberToObject(scales, g->tensors[t].name, opt->act_scales[t]))
            scales = NULL;
    }
    if (!scales) {
        cJSON_Delete(q);
        return NULL;
    }
    return q;
}

static bool write_text(const char *dir, const char *file, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return (fclose(f) == 0) && ok;
}

static bool write_labels(const char *dir, const struct rt_model_config *cfg)
{
    size_t len = 1;
    for (int i = 0; i < cfg->n_labels; i++)
        len += strlen(cfg->labels[i]) + 1;
    char *text = malloc(len), *at = text;
    if (!text)
        return false;
    for (int i = 0; i < cfg->n_labels; i++)
        at += snprintf(at, len - (size_t)(at - text), "%s\n", cfg->labels[i]);
    *at = '\0';
    bool ok = write_text(dir, "labels.txt", text);
    free(text);
    return ok;
}

enum rt_status rt_model_write(const char *dir, const char *source_json, size_t source_len,
                              const struct rt_model_config *cfg, const struct rt_graph *g,
                              const struct rt_write_options *opt, struct rt_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {   /* what model.json could not read back */
        const struct rt_node *n = &g->nodes[i];
        if (!rt_op_has(n->op, RT_T_JSON))
            return rt_error_set(err, RT_ERR_UNSUPPORTED,
                                "node '%s': op '%s' has no model.json form (it comes from an ONNX graph); "
                                "serve model.onnx with \"precision\" in its model.json instead",
                                n->name, rt_op_name(n->op));
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(source_json, source_len, &end, 0);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return rt_error_set(err, RT_ERR_BAD_MODEL, "the source model.json is not a JSON object");
    }
    struct wlist l = {0};
    enum rt_status s = RT_OK;
    bool ok = set_item(root, "name", cJSON_CreateString(opt->name)) &&
              set_item(root, "precision", cJSON_CreateString(rt_precision_name(opt->precision))) &&
              set_item(root, "nodes", write_nodes(&l, g, opt->precision));
    /* A source without them (an ONNX folder's model.json, or none): the
     * model's own, as it was loaded. */
    if (ok && !cJSON_GetObjectItemCaseSensitive(root, "format_version"))
        ok = set_item(root, "format_version", cJSON_CreateNumber(1));
    if (ok && !cJSON_GetObjectItemCaseSensitive(root, "inputs"))
        ok = set_item(root, "inputs", io_list(cfg->inputs, cfg->n_inputs));
    if (ok && !cJSON_GetObjectItemCaseSensitive(root, "outputs"))
        ok = set_item(root, "outputs", io_list(cfg->outputs, cfg->n_outputs));
    cJSON_DeleteItemFromObjectCaseSensitive(root, "quantization");
    if (ok && opt->precision == RT_PRECISION_INT8)
        ok = set_item(root, "quantization", quantization(g, opt));
    if (ok && cfg->n_labels > 0)
        ok = set_item(root, "labels", cJSON_CreateString("labels.txt")) && write_labels(dir, cfg);
    char *text = ok ? print_model(root) : NULL;
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    if (!text)
        s = rt_error_set(err, RT_ERR_IO, "%s: cannot write the model (out of memory or labels.txt)", dir);
    else if (!write_text(dir, "model.json", text))
        s = rt_error_set(err, RT_ERR_IO, "%s/model.json: cannot write (%s)", dir, strerror(errno));
    else
        s = rt_safetensors_write(path, l.t, l.n, NULL, 0, err);
    free(text);
    cJSON_Delete(root);
    for (int i = 0; i < l.n_owned; i++)
        free(l.owned[i]);
    free(l.owned);
    free(l.t);
    return s;
}
