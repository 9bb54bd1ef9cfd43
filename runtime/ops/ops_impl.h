/*
 * ops_impl.h - an op family: the code behind the lines of RT_OP_LIST
 * (ops/op_table.h), one family per file of runtime/ops/.
 *
 * The graph (shape inference), the plan (parameter blocks), model.json
 * (reading and writing attributes and weights) and the INT8 load step
 * (quant.c) call these through rt_op_info(op)->family instead of switching
 * over ops. A NULL member means the family has none of that.
 */
#ifndef OPS_IMPL_H
#define OPS_IMPL_H

#include "runtime/core/plan.h"
#include "runtime/precision/quant.h"

struct cJSON;
struct rt_attrs;   /* one node's model.json "attrs" being read (model_json.c) */

/* A model.json weight key and the role it binds. */
struct rt_weight_key {
    const char *key;
    enum rt_wrole role;
    bool required;
};

struct rt_op_family {
    /* The output shape from the node's inputs, weights and attributes (its
     * input count is checked against the table first). */
    enum rt_status (*infer)(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                            struct rt_error *err);
    /* The step's kernel parameter block for one sample, and the same scaled
     * to a batch (rt_step_params). */
    void (*params)(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k);
    void (*at_batch)(union rt_step_params *k, int batch);
    /* model.json: the weight keys (ended by a NULL key), the attributes. */
    const struct rt_weight_key *weights;
    bool (*read_attrs)(struct rt_attrs *a, struct rt_node *n);   /* false: error set */
    bool (*write_attrs)(const struct rt_node *n, struct cJSON *attrs);
    /* INT8 steps: the numbers derived at load (quant.c's rt_q8_step_prepare). */
    enum rt_status (*q8_prepare)(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                 struct rt_error *err);
    /* The step's arithmetic with parameters k (scaled to batch samples), a
     * multiply-add counting two: what a profile's GFLOP/s divide. NULL: one
     * operation per output element. */
    double (*flops)(const struct rt_step *s, const union rt_step_params *k, int batch);
};

#define RT_OP_FAMILY_DECL(op, name, lo, hi, traits, act, family) extern const struct rt_op_family rt_family_##family;
RT_OP_LIST(RT_OP_FAMILY_DECL)
#undef RT_OP_FAMILY_DECL

/* ---- model.json attribute reading (implemented in model_json.c). Each
 * returns false with the error set (naming the file and the node) when the
 * key is present but invalid; an absent key gives the default. */

/* An int in [lo, hi]. */
bool rt_attrs_int(struct rt_attrs *a, const char *key, long lo, long hi, int def, int *out);
/* A list of exactly n ints (or n2 when n2 > 0) in [lo, hi]; a single int is
 * broadcast; def NULL makes the key required. Returns the count read, 0 on error. */
int rt_attrs_ints(struct rt_attrs *a, const char *key, int n, int n2, int lo, int hi, const int *def, int *out);
/* A list of 1 to max_n integers in [lo, hi] (required; no error is set:
 * the caller says what the list must be). Returns the count, 0 when invalid. */
int rt_attrs_i64s(struct rt_attrs *a, const char *key, int max_n, int64_t lo, int64_t hi, int64_t *out);
bool rt_attrs_bool(struct rt_attrs *a, const char *key, bool def, bool *out);
/* The raw item (NULL when absent), for attributes of other shapes. */
const struct cJSON *rt_attrs_item(struct rt_attrs *a, const char *key);
/* Sets the error "file: node: what"; returns false. */
bool rt_attrs_fail(struct rt_attrs *a, const char *what);

/* ---- helpers shared by the families (ops/op_table.c) */

enum rt_status rt_op_node_error(struct rt_error *err, const struct rt_node *n, const char *what);
bool rt_op_weight_is(const struct rt_weight *w, int rank, const int64_t *dims);
/* Output length of a sliding window, PyTorch conventions (ceil_mode drops a
 * last window that would start inside the right padding). */
int64_t rt_op_window_out(int64_t in, int pad_a, int pad_b, int k, int dil, int stride, bool ceil_mode);
/* A tensor of one sample seen as [outer, axis, inner] around a non-batch axis
 * (negative counts from the end). */
void rt_op_axis_split(const struct rt_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner);
/* Attaches item to obj under key; frees item when that fails. */
bool rt_op_attach(struct cJSON *obj, const char *key, struct cJSON *item);
/* The output shaped as input 0 (element-wise ops). */
enum rt_status rt_op_infer_same(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                struct rt_error *err);
/* INT8 add and concat: each input's multiplier to the output's scale. */
enum rt_status rt_op_q8_prepare_rescale(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                        struct rt_error *err);
/* softmax and concat: the "axis" attribute. */
bool rt_op_read_axis(struct rt_attrs *a, struct rt_node *n, int def);
bool rt_op_write_axis(const struct rt_node *n, struct cJSON *attrs);
/* Element-count parameters (count), shared by the element-wise families. */
void rt_op_params_count(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k);
void rt_op_count_at_batch(union rt_step_params *k, int batch);
/* INT8 conv2d / linear: int32 biases, per-channel multipliers, the clamp of
 * a fused ReLU / ReLU6 and the residual's multiplier (op_linear.c). */
enum rt_status rt_op_q8_prepare_gemm(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                     struct rt_error *err);
/* The weight keys of conv2d and linear. */
extern const struct rt_weight_key rt_op_gemm_weights[];

#endif /* OPS_IMPL_H */
