/*
 * onnx_impl.h - shared internals of the ONNX loader (onnx_*.c only):
 *
 *   onnx_proto.c   protobuf-c with a memory budget and a nesting limit,
 *                  TensorProto decoding, attribute access
 *   onnx_load.c    the model: opsets, inputs and outputs, batch or whole
 *                  mode, node order, the value table, dispatch to converters
 *   onnx_node.c    helpers the converters share: inputs, attributes,
 *                  emitting runtime nodes, views, broadcasting binaries
 *   onnx_ops_nn.c  Conv, Gemm, MatMul, pooling, BatchNormalization
 *   onnx_ops_ew.c  activations, arithmetic, Softmax, Identity, Constant
 *   onnx_ops_math.c  functions, variadic ops, reductions
 *   onnx_ops_shape.c Concat, the reshapes, Transpose, Slice, Split, Pad, Gather
 *   onnx_ops_resize.c Resize, Upsample
 *   onnx_ops_norm.c LayerNormalization, and layer norms written out
 *   onnx_fold.c    shape computations on constants, evaluated at load
 *
 * Converters work on "values": every ONNX name maps to an activation (a
 * runtime tensor) or a constant (decoded data). Shapes are kept in ONNX
 * terms; onnx_rt_shape() gives the runtime shape for the current mode.
 */
#ifndef ONNX_IMPL_H
#define ONNX_IMPL_H

#include "onnx/onnx.pb-c.h"
#include "runtime/onnx/onnx_load.h"

#define ONNX_OPSET_MAX 17          /* newest ai.onnx opset whose op versions this loader knows */
#define ONNX_MAX_NODES 65536
#define ONNX_MAX_DIM (1LL << 31)   /* largest dimension accepted */
#define ONNX_MAX_ELEMS (1ll << 31) /* largest tensor accepted */
#define ONNX_BATCH (-1)            /* dims[0] of an activation in batch mode */
#define ONNX_MAX_RANK (RT_MAX_DIMS - 1)   /* whole mode adds a runtime dim */

/* ------------------------------------------------------------ protobuf */

/* An unpacked message and the allocator that owns it, with its budget. */
struct onnx_proto {
    ProtobufCMessage *msg;
    ProtobufCAllocator alloc;      /* allocator_data: this struct */
    size_t used, limit;            /* bytes allocated, and the most allowed */
    bool exceeded;
};

/* Unpacks a message of descriptor d (onnx__model_proto__descriptor, ...)
 * after checking its framing and nesting, within a memory budget; NULL with
 * err set when malformed or too large. Free with onnx_proto_free. */
struct onnx_proto *onnx_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                               const char *label, struct rt_error *err);
void onnx_proto_free(struct onnx_proto *p);

/* A decoded tensor: float types give f, integer and bool types give i. */
struct onnx_data {
    struct rt_shape shape;
    int64_t elems;
    int type;                      /* ONNX data type */
    float *f;                      /* owned */
    int64_t *i;                    /* owned */
    uint64_t batch_at;             /* bit k: i[k] stands for batch mode's batch size,
                                      unknown at load (onnx_fold.c); i[k] is then ONNX_BATCH */
};

/* Decodes t (raw_data or the typed field); what names it in errors. */
enum rt_status onnx_data_decode(const Onnx__TensorProto *t, const char *label, const char *what,
                                struct onnx_data *out, struct rt_error *err);
void onnx_data_free(struct onnx_data *d);
const char *onnx_type_name(int type);
/* FLOAT, FLOAT16, DOUBLE, BFLOAT16 (decoded into f; the rest into i). */
bool onnx_type_is_float(int type);
/* v as an integer of the given type: truncated to its width, signed types
 * sign-extended, BOOL 0 or 1. */
int64_t onnx_int_wrap(int type, uint64_t v);

/* ------------------------------------------------------------ conversion */

enum onnx_kind { OV_UNSET = 0, OV_ACT, OV_CONST, OV_REFUSED };

struct onnx_value {
    const char *name;              /* ONNX name (owned by the protobuf) */
    const struct onnx_data *data;  /* OV_CONST */
    const char *why;               /* OV_REFUSED: an output the loader does not compute */
    struct rt_shape shape;         /* ONNX shape; see ONNX_BATCH */
    enum onnx_kind kind;
    int tensor;                    /* OV_ACT: runtime tensor id */
};

struct onnx_ctx {
    const char *label;
    struct rt_error *err;
    struct rt_graph *g;
    struct rt_model_config *cfg;
    const Onnx__GraphProto *graph;
    int opset;                     /* ai.onnx */
    bool whole;                    /* whole mode (onnx/onnx_load.h) */
    int64_t batch_fixed;           /* batch mode: the inputs' fixed first dim, or -1 */
    bool retry_whole;              /* set with an error: this graph needs whole mode */
    struct onnx_value *vals;
    int n_vals, cap_vals;
    int *index;                    /* open addressing: name -> value */
    int index_cap;
    struct onnx_data **consts;     /* decoded initializers and Constant outputs */
    int n_consts, cap_consts;
    int cap_nodes;
    int synth;                     /* counter for generated tensor names */
    const Onnx__NodeProto *node;   /* being converted */
    int node_index, version;       /* its index and resolved op version */
    int sub;                       /* runtime nodes emitted for it so far */
};

/* The value table (onnx_load.c): by ONNX name (NULL when unknown), and a
 * new entry, anonymous when name is NULL; -1 with err set when the name is
 * already defined or the table is full. */
const struct onnx_value *onnx_value_find(const struct onnx_ctx *c, const char *name);
int onnx_value_add(struct onnx_ctx *c, const char *name);

/* Error for the current node: "label: node 'n' (Op): what". */
enum rt_status onnx_fail(struct onnx_ctx *c, enum rt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define onnx_unsupported(c, ...) onnx_fail((c), RT_ERR_UNSUPPORTED, __VA_ARGS__)
#define onnx_bad(c, ...) onnx_fail((c), RT_ERR_BAD_MODEL, __VA_ARGS__)
/* The current node mixes values along the batch dimension (axis 0). */
enum rt_status onnx_needs_whole(struct onnx_ctx *c, const char *what);

/* Attributes of the current node. Each returns false with err set when the
 * attribute is present with the wrong type or value. */
const Onnx__AttributeProto *onnx_attr(struct onnx_ctx *c, const char *name);
bool onnx_attr_int(struct onnx_ctx *c, const char *name, int64_t def, int64_t *out);
bool onnx_attr_float(struct onnx_ctx *c, const char *name, float def, float *out);
/* A list of ints: *n receives the count (0 when absent); at most cap. */
bool onnx_attr_ints(struct onnx_ctx *c, const char *name, int64_t *out, int cap, int *n);
/* A string compared against choices; *out is the index (def when absent). */
bool onnx_attr_choice(struct onnx_ctx *c, const char *name, const char *const *choices, int n, int def, int *out);

/* Node input k (NULL when absent or ""), or output name k ("" when absent). */
const struct onnx_value *onnx_input(struct onnx_ctx *c, int k);
const char *onnx_output_name(struct onnx_ctx *c, int k);
/* Input k, which must be an activation / a constant; error otherwise. */
const struct onnx_value *onnx_act_in(struct onnx_ctx *c, int k);
const struct onnx_value *onnx_const_in(struct onnx_ctx *c, int k);
/* Input k as a 1-D integer constant of at most cap values into out (*n
 * its count; 0 when the input is absent); false with err set otherwise. */
bool onnx_const_ints(struct onnx_ctx *c, int k, const char *what, int64_t *out, int cap, int *n);
/* Extra outputs (k >= first) must be absent or unused: marked refused. */
enum rt_status onnx_refuse_outputs(struct onnx_ctx *c, int first, const char *why);

/* The runtime shape of an ONNX activation shape in the current mode. */
struct rt_shape onnx_rt_shape(const struct onnx_ctx *c, const struct rt_shape *s);
/* Runtime axis of ONNX axis a (normalised, >= 0) of an activation. */
int onnx_rt_axis(const struct onnx_ctx *c, int a);

/* The runtime node computing tensor t (NULL when t < 0 or t is an input). */
const struct rt_node *onnx_producer(const struct onnx_ctx *c, int t);
/* How many nodes of the ONNX graph read the value named name, counting a
 * graph output as one more. */
int onnx_readers(const struct onnx_ctx *c, const char *name);
/* The constant of n where n (may be NULL) is a binary op of one tensor and
 * a one-element constant, on either side (n->a.binary.const_left says
 * which); else NULL. */
const float *onnx_binary_scalar(const struct rt_node *n, enum k_binop op);

/* Appends a runtime node writing tensor out (inputs still to fill). */
struct rt_node *onnx_append_node(struct onnx_ctx *c, enum rt_op op, int out, const char *name);
/* Defines output k of the current node as an activation of ONNX shape s,
 * computed by a new runtime node, returned with its inputs still to fill
 * (the pointer is valid until the next node is emitted); NULL with err set. */
struct rt_node *onnx_emit(struct onnx_ctx *c, enum rt_op op, int out_k, const struct rt_shape *s);
/* The same when the node computes per-sample dims[rank] (in the sense of
 * onnx_samples_in): a view to the output's shape follows where needed. */
struct rt_node *onnx_emit_samples(struct onnx_ctx *c, enum rt_op op, int out_k, const struct rt_shape *s,
                                  const int64_t *dims, int rank);
/* Output 0 of a node of one input and one output, computed element by
 * element from its activation input 0 by a new node of op (its attributes
 * still to set); NULL with err set. */
struct rt_node *onnx_emit_elementwise(struct onnx_ctx *c, enum rt_op op);
/* A node writing a new intermediate tensor (*tensor receives its id). */
struct rt_node *onnx_emit_temp(struct onnx_ctx *c, enum rt_op op, int *tensor);
/* A view (reshape) of runtime tensor `in` to per-sample dims: into a new
 * intermediate tensor (*tensor), or into output k when out_k >= 0. */
enum rt_status onnx_view(struct onnx_ctx *c, int in, const int64_t *dims, int rank, int out_k,
                         const struct rt_shape *s, int *tensor);
/* Output k is value v under another name (Identity). */
enum rt_status onnx_alias(struct onnx_ctx *c, int out_k, const struct onnx_value *v);
/* Output k is a constant that takes ownership of d. */
enum rt_status onnx_define_const(struct onnx_ctx *c, int out_k, struct onnx_data *d);

/* Runtime tensor with per-sample shape dims[rank] ([-1, dims...]) holding
 * activation x, its first ONNX axis being the batch: x itself or a view.
 * In whole mode this needs x.dims[0] == 1. */
enum rt_status onnx_samples_in(struct onnx_ctx *c, const struct onnx_value *x, const int64_t *dims, int rank,
                               int *tensor);

/* Runtime tensor holding activation x viewed as per-sample dims[rank]
 * after the runtime batch (x itself when that is its shape already). */
enum rt_status onnx_reshape_in(struct onnx_ctx *c, const struct onnx_value *x, const int64_t *dims, int rank,
                               int *tensor);
/* numpy's slicing of a dim of d: start and end clamped (negative counting
 * from the end), *len elements from *first every step-th (step != 0). */
void onnx_slice_range(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *len);
/* The axes of Squeeze and Unsqueeze: the attribute before opset 13, the
 * constant input 1 from it (*n is 0 when absent); each normalised against
 * rank plus, for Unsqueeze (added), their own count, and given once. */
enum rt_status onnx_squeeze_axes(struct onnx_ctx *c, int rank, bool added, int *axes, int *n);
/* Slice's arguments: starts, ends and axes from attributes before opset
 * 10, from constant inputs 1-4 (steps too) after; of one non-zero length,
 * axes normalised against rank (k-th when absent) and each given once,
 * steps 1 when absent and never 0 (onnx_ops_shape.c). */
struct onnx_slice_args {
    int n;
    int axis[RT_MAX_DIMS];
    int64_t start[RT_MAX_DIMS], end[RT_MAX_DIMS], step[RT_MAX_DIMS];
};
enum rt_status onnx_slice_args(struct onnx_ctx *c, int rank, struct onnx_slice_args *a);
/* Checks the node's input and output counts. */
enum rt_status onnx_arity(struct onnx_ctx *c, int min_in, int max_in, int max_out);
/* Product of dims[from..to). */
int64_t onnx_prod(const struct rt_shape *s, int from, int to);
/* Normalises axis against rank (negative counts from the end); false with
 * err set when out of [0, rank) (or [0, rank] when inclusive). */
bool onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, bool inclusive, int *out);

/* a op b (numpy broadcasting) into output out_k, or into a temporary
 * (out_k < 0) that *res then describes. Either operand may be a constant
 * with float data, not both. */
enum rt_status onnx_emit_binary(struct onnx_ctx *c, enum k_binop op, const struct onnx_value *a,
                                const struct onnx_value *b, int out_k, struct onnx_value *res);

/* Layer normalisation written out in primitive ops (onnx_ops_norm.c):
 * whether the current Div ends one, or the current Mul or Add (op) applies a
 * constant scale or bias to one already found; when so, the node is
 * converted (the runtime node emitted or updated) with status *s. */
bool onnx_layer_norm_div(struct onnx_ctx *c, enum rt_status *s);
bool onnx_layer_norm_affine(struct onnx_ctx *c, enum k_binop op, enum rt_status *s);

/* Copies count floats into a graph-owned weight of the given shape. */
enum rt_status onnx_weight(struct onnx_ctx *c, struct rt_weight *w, const float *data, const struct rt_shape *shape,
                           const char *name);

/* Converters, one per ONNX op (onnx_ops_*.c); c->version is resolved. */
typedef enum rt_status (*onnx_convert_fn)(struct onnx_ctx *c);
struct onnx_op {
    const char *type;
    int versions[8];               /* since-versions up to ONNX_OPSET_MAX, ascending, 0-ended */
    onnx_convert_fn fn;
    const char *attrs;             /* accepted attribute names, comma-separated */
};
extern const struct onnx_op ONNX_OPS_NN[];
extern const struct onnx_op ONNX_OPS_EW[];
extern const struct onnx_op ONNX_OPS_MATH[];
extern const struct onnx_op ONNX_OPS_SHAPE[];
extern const struct onnx_op ONNX_OPS_RESIZE[];
extern const struct onnx_op ONNX_OPS_NORM[];
extern const struct onnx_op ONNX_OPS_FOLD[];

/* The folder (onnx_fold.c) that evaluates the current node at load, when
 * its op has one and every input it names is a constant; NULL otherwise. */
onnx_convert_fn onnx_folder(const struct onnx_ctx *c);

#endif /* ONNX_IMPL_H */
