/* test_srv_pbtxt.c - config.pbtxt (server/srv_pbtxt.c, srv_triton_config.c):
 * a config as Triton users write it maps field by field; malformed text,
 * unsupported fields and platforms, a wrong name and out-of-range values
 * are refused with their line and column. */
#include <stdlib.h>
#include <string.h>

#include "server/srv_pbtxt.h"
#include "server/srv_triton_config.h"
#include "test.h"

TEST(srv_pbtxt_triton_config_maps)
{
    static const char TEXT[] =
        "# a Triton config\n"
        "name: \"m\"\n"
        "platform: \"onnxruntime_onnx\"\n"
        "max_batch_size: 16\n"
        "input [\n"
        "  { name: \"x\", data_type: TYPE_FP32, dims: [ 3, -1, 224 ] }\n"
        "]\n"
        "output { name: 'y\\x41' data_type: TYPE_FP32 dims: 1000 }\n"
        "dynamic_batching { preferred_batch_size: [ 4, 8 ]; max_queue_delay_microseconds: 200\n"
        "  default_queue_policy { max_queue_size: 32 default_timeout_microseconds: 5000 } }\n"
        "instance_group [ { name: \"g\" count: 3 kind: KIND_GPU } ]\n"
        "version_policy: { specific: { versions: [ 3, 1 ] } }\n"
        "default_model_filename: \"net.onnx\"\n";
    struct srv_triton_config c;
    struct rt_error err = {0};
    enum rt_status st = srv_triton_config_parse(TEXT, sizeof(TEXT) - 1, "m", &c, &err);
    TEST_FAIL_IF(st != RT_OK, "%s", err.msg);
    ASSERT_TRUE(c.onnx);
    ASSERT_EQ_INT(c.max_batch_size, 16);
    ASSERT_EQ_INT(c.n_inputs, 1);
    ASSERT_STR_EQ(c.inputs[0].name, "x");
    ASSERT_STR_EQ(c.inputs[0].data_type, "TYPE_FP32");
    ASSERT_EQ_INT(c.inputs[0].dims.rank, 3);
    ASSERT_EQ_INT(c.inputs[0].dims.dims[1], -1);
    ASSERT_EQ_INT(c.inputs[0].dims.dims[2], 224);
    ASSERT_STR_EQ(c.outputs[0].name, "yA");
    ASSERT_EQ_INT(c.outputs[0].dims.dims[0], 1000);
    ASSERT_EQ_INT(c.n_preferred, 2);
    ASSERT_EQ_INT(c.preferred[1], 8);
    ASSERT_EQ_INT(c.max_queue_delay_us, 200);
    ASSERT_EQ_INT(c.max_queue_size, 32);
    ASSERT_EQ_INT(c.default_timeout_us, 5000);
    ASSERT_EQ_INT(c.instance_count, 3);
    ASSERT_EQ_INT(c.instance_kind, RT_INSTANCE_GPU);
    ASSERT_EQ_INT(c.policy, SRV_VERSIONS_SPECIFIC);
    ASSERT_EQ_INT(c.n_versions, 2);
    ASSERT_EQ_INT(c.versions[0], 1);
    ASSERT_EQ_INT(c.versions[1], 3);
    ASSERT_STR_EQ(c.model_filename, "net.onnx");
    /* the defaults: latest 1 */
    ASSERT_EQ_INT(srv_triton_config_parse("", 0, "m", &c, &err), RT_OK);
    ASSERT_EQ_INT(c.policy, SRV_VERSIONS_LATEST);
    ASSERT_EQ_INT(c.latest, 1);
    ASSERT_EQ_INT(srv_triton_config_parse("version_policy { latest { num_versions: 2 } }", 45, "m", &c, &err),
                  RT_OK);
    ASSERT_EQ_INT(c.latest, 2);
    return TEST_PASS;
}

TEST(srv_pbtxt_errors_name_the_place)
{
    static const struct {
        const char *text, *want;
    } CASES[] = {
        {"name: \"m\"\nensemble_scheduling { }\n", "m/config.pbtxt:2:1: field 'ensemble_scheduling' is not supported"},
        {"input [ { name: \"x\"\n  reshape { shape: [1] } } ]", "m/config.pbtxt:2:3: field 'input.reshape' is not supported"},
        {"dynamic_batching {\n  priority_levels: 2 }", "m/config.pbtxt:2:3: field 'dynamic_batching.priority_levels'"},
        {"instance_group [ { gpus: [ 0 ] } ]", "m/config.pbtxt:1:20: field 'instance_group.gpus' is not supported"},
        {"platform: \"tensorrt_plan\"", "m/config.pbtxt:1:1: platform 'tensorrt_plan' is not supported"},
        {"backend: \"python\"", "backend 'python' is not supported"},
        {"name: \"other\"", "m/config.pbtxt:1:1: name 'other' differs from the model's folder name 'm'"},
        {"max_batch_size: 0", "max_batch_size 0 (no batch dimension) is not supported"},
        {"max_batch_size: 8x", "m/config.pbtxt:1:1: 'max_batch_size' must be an integer in [0, 4096]"},
        {"max_batch_size: 1\nmax_batch_size: 2", "m/config.pbtxt:2:1: field 'max_batch_size' is given twice"},
        {"name: \"m\"\ninput {\n  name: \"x\"\n", "m/config.pbtxt:2:1: '{' not closed with '}'"},
        {"name: \"m\nx\"", "m/config.pbtxt:1:7: string not closed on its line"},
        {"dims: [1 2]", "m/config.pbtxt:1:10: expected ',' or ']' in the list 'dims'"},
        {"name \"m\"", "m/config.pbtxt:1:6: expected ':' or '{' after 'name'"},
        {"  = 3", "m/config.pbtxt:1:3: expected a field name, found '='"},
        {"name: \"a\\qb\"", "unknown escape in a string"},
        {"instance_group { kind: KIND_MODEL }", "kind 'KIND_MODEL' is not supported"},
        {"instance_group { } instance_group { }", "only one instance_group is supported"},
        {"version_policy { latest { } all { } }", "version_policy must hold exactly one of latest, all, specific"},
        {"version_policy { specific { versions: [2, 2] } }", "version 2 is listed twice"},
        {"default_model_filename: \"../x.onnx\"", "default_model_filename must be a file name"},
        {"input { data_type: TYPE_FP32 }", "m/config.pbtxt:1:1: input without a name"},
    };
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        struct srv_triton_config c;
        struct rt_error err = {0};
        enum rt_status st = srv_triton_config_parse(CASES[i].text, strlen(CASES[i].text), "m", &c, &err);
        TEST_FAIL_IF(st != RT_ERR_BAD_MODEL, "case %zu: status %s (%s)", i, rt_status_name(st), err.msg);
        ASSERT_STR_CONTAINS(err.msg, CASES[i].want);
    }
    return TEST_PASS;
}

TEST(srv_pbtxt_bounds)
{
    /* nesting past the limit, a flood of fields, a huge text: refused, never a crash */
    char deep[64];
    for (int i = 0; i < 60; i++)
        deep[i] = "a {"[i % 3];
    deep[60] = '\0';
    struct srv_pb_doc doc;
    struct rt_error err = {0};
    ASSERT_EQ_INT(srv_pbtxt_parse(deep, strlen(deep), "m/config.pbtxt", &doc, &err), RT_ERR_TOO_LARGE);
    ASSERT_STR_CONTAINS(err.msg, "nested deeper than 16");
    size_t n = (size_t)4 * (SRV_PBTXT_MAX_NODES + 1);
    char *many = malloc(n);
    RT_ASSERT(many);
    for (size_t i = 0; i < n; i++)
        many[i] = "a:1 "[i % 4];
    ASSERT_EQ_INT(srv_pbtxt_parse(many, n, "m/config.pbtxt", &doc, &err), RT_ERR_TOO_LARGE);
    ASSERT_STR_CONTAINS(err.msg, "more than 20000 fields");
    free(many);
    ASSERT_EQ_INT(srv_pbtxt_parse("x", SRV_PBTXT_MAX_BYTES + 1, "m/config.pbtxt", &doc, &err), RT_ERR_TOO_LARGE);
    /* the tree in order, lists expanded into repeated fields */
    static const char T[] = "a: [1, 2] b { c: 'x' } # end";
    ASSERT_EQ_INT(srv_pbtxt_parse(T, sizeof(T) - 1, "t", &doc, &err), RT_OK);
    ASSERT_EQ_INT(doc.n, 5);
    int i = doc.nodes[0].first_child;
    ASSERT_STR_EQ(doc.nodes[i].text, "1");
    i = doc.nodes[i].next;
    ASSERT_STR_EQ(doc.nodes[i].text, "2");
    i = doc.nodes[i].next;
    ASSERT_STR_EQ(doc.nodes[i].name, "b");
    ASSERT_EQ_INT(doc.nodes[i].kind, SRV_PB_MESSAGE);
    ASSERT_STR_EQ(doc.nodes[doc.nodes[i].first_child].text, "x");
    ASSERT_EQ_INT(doc.nodes[i].next, -1);
    srv_pbtxt_free(&doc);
    return TEST_PASS;
}
