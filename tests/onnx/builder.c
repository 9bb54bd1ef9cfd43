/*
 * builder.c - ONNX models for tests, assembled from the protobuf-c structs
 * generated from onnx.proto (see builder.h). Every allocation goes on one
 * list freed by ob_free; allocation failure aborts (a test helper).
 */
#include "builder.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "runtime/rt_status.h"

struct ob {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    void **allocs;
    size_t n_allocs, cap_allocs;
};

static void *ob_alloc(struct ob *m, size_t size)
{
    if (m->n_allocs == m->cap_allocs) {
        m->cap_allocs = m->cap_allocs ? 2 * m->cap_allocs : 64;
        m->allocs = realloc(m->allocs, sizeof(void *) * m->cap_allocs);
        RT_ASSERT(m->allocs);
    }
    void *p = calloc(1, size ? size : 1);
    RT_ASSERT(p);
    m->allocs[m->n_allocs++] = p;
    return p;
}

static char *ob_strdup(struct ob *m, const char *s)
{
    char *d = ob_alloc(m, strlen(s) + 1);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

/* Appends item to a protobuf-c repeated field (count, array). */
static void push(struct ob *m, size_t *n, void ***arr, void *item)
{
    void **grown = ob_alloc(m, sizeof(void *) * (*n + 1));
    if (*n)
        memcpy(grown, *arr, sizeof(void *) * *n);
    grown[(*n)++] = item;
    *arr = grown;
}

struct ob *ob_new(int opset)
{
    struct ob *m = calloc(1, sizeof(*m));
    RT_ASSERT(m);
    onnx__model_proto__init(&m->model);
    onnx__graph_proto__init(&m->graph);
    onnx__operator_set_id_proto__init(&m->opset);
    m->model.has_ir_version = 1;
    m->model.ir_version = 8;
    m->model.graph = &m->graph;
    m->graph.name = "test";
    if (opset > 0) {
        m->opset.domain = "";
        m->opset.has_version = 1;
        m->opset.version = opset;
        m->opsets[0] = &m->opset;
        m->model.n_opset_import = 1;
        m->model.opset_import = m->opsets;
    }
    return m;
}

void ob_free(struct ob *m)
{
    for (size_t i = 0; i < m->n_allocs; i++)
        free(m->allocs[i]);
    free(m->allocs);
    free(m);
}

static Onnx__ValueInfoProto *value_info(struct ob *m, const char *name, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = ob_alloc(m, sizeof(*vi));
    onnx__value_info_proto__init(vi);
    vi->name = ob_strdup(m, name);
    Onnx__TypeProto *t = ob_alloc(m, sizeof(*t));
    onnx__type_proto__init(t);
    Onnx__TypeProto__Tensor *tt = ob_alloc(m, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    vi->type = t;
    if (rank < 0)
        return vi;
    Onnx__TensorShapeProto *sh = ob_alloc(m, sizeof(*sh));
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < rank; d++) {
        Onnx__TensorShapeProto__Dimension *dim = ob_alloc(m, sizeof(*dim));
        onnx__tensor_shape_proto__dimension__init(dim);
        if (dims[d] == -1) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = "N";
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = dims[d];
        }
        push(m, &sh->n_dim, (void ***)&sh->dim, dim);
    }
    tt->shape = sh;
    return vi;
}

void ob_input(struct ob *m, const char *name, int rank, const int64_t *dims)
{
    push(m, &m->graph.n_input, (void ***)&m->graph.input, value_info(m, name, rank, dims));
}

void ob_output(struct ob *m, const char *name)
{
    push(m, &m->graph.n_output, (void ***)&m->graph.output, value_info(m, name, -1, NULL));
}

static Onnx__TensorProto *tensor(struct ob *m, const char *name, int rank, const int64_t *dims, int type)
{
    Onnx__TensorProto *t = ob_alloc(m, sizeof(*t));
    onnx__tensor_proto__init(t);
    t->name = ob_strdup(m, name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    t->dims = ob_alloc(m, sizeof(int64_t) * (size_t)(rank + 1));
    if (rank > 0)   /* a scalar may pass dims NULL */
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return t;
}

static int64_t count(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d] > 0 ? dims[d] : 0;
    return n;
}

void ob_init(struct ob *m, const char *name, int rank, const int64_t *dims, const float *data)
{
    Onnx__TensorProto *t = tensor(m, name, rank, dims, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    size_t bytes = data ? sizeof(float) * (size_t)count(rank, dims) : 0;   /* no data: dims alone */
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = ob_alloc(m, bytes);
    if (data)
        memcpy(t->raw_data.data, data, bytes);
    push(m, &m->graph.n_initializer, (void ***)&m->graph.initializer, t);
}

void ob_init_i64(struct ob *m, const char *name, int rank, const int64_t *dims, const int64_t *data)
{
    Onnx__TensorProto *t = tensor(m, name, rank, dims, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    t->n_int64_data = (size_t)count(rank, dims);
    t->int64_data = ob_alloc(m, sizeof(int64_t) * t->n_int64_data);
    memcpy(t->int64_data, data, sizeof(int64_t) * t->n_int64_data);
    push(m, &m->graph.n_initializer, (void ***)&m->graph.initializer, t);
}

void ob_init_external(struct ob *m, const char *name)
{
    for (size_t i = 0; i < m->graph.n_initializer; i++) {
        Onnx__TensorProto *t = m->graph.initializer[i];
        if (strcmp(t->name, name) == 0) {
            t->has_data_location = 1;
            t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
            t->has_raw_data = 0;
        }
    }
}

/* Splits "a,b" into a repeated string field. */
static void names(struct ob *m, const char *list, size_t *n, char ***out)
{
    char *copy = ob_strdup(m, list);
    for (char *p = copy; *list;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        push(m, n, (void ***)out, p);
        if (!comma)
            break;
        p = comma + 1;
    }
}

struct ob_node *ob_node(struct ob *m, const char *op, const char *name, const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = ob_alloc(m, sizeof(*n));
    onnx__node_proto__init(n);
    n->op_type = ob_strdup(m, op);
    n->name = ob_strdup(m, name);
    names(m, inputs, &n->n_input, &n->input);
    names(m, outputs, &n->n_output, &n->output);
    push(m, &m->graph.n_node, (void ***)&m->graph.node, n);
    return (struct ob_node *)n;
}

static Onnx__AttributeProto *attr(struct ob *m, struct ob_node *node, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    Onnx__NodeProto *n = (Onnx__NodeProto *)node;
    Onnx__AttributeProto *a = ob_alloc(m, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = ob_strdup(m, name);
    a->has_type = 1;
    a->type = type;
    push(m, &n->n_attribute, (void ***)&n->attribute, a);
    return a;
}

void ob_attr_int(struct ob *m, struct ob_node *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void ob_attr_float(struct ob *m, struct ob_node *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void ob_attr_ints(struct ob *m, struct ob_node *n, const char *name, int count_, const int64_t *v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count_;
    a->ints = ob_alloc(m, sizeof(int64_t) * (size_t)count_);
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)count_);
}

void ob_attr_string(struct ob *m, struct ob_node *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)ob_strdup(m, v);
}

uint8_t *ob_pack(struct ob *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&m->model);
    uint8_t *buf = malloc(*len + 1);
    RT_ASSERT(buf);
    onnx__model_proto__pack(&m->model, buf);
    return buf;
}
