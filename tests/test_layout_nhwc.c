/* test_layout_nhwc.c - the channels-last layout pass (runtime/backend/
 * layout_nhwc.h), host code that needs no GPU: its rules on small plans
 * built by hand, then the shipped models' plans (resnet-mini runs NHWC from
 * the stem's output to the global pool; lenet5, whose second convolution
 * has 6 channels, stays NCHW). */
#include <stdlib.h>
#include <string.h>

#include "runtime/backend/backend.h"
#include "runtime/backend/layout_nhwc.h"
#include "runtime/rt_model_impl.h"
#include "test.h"

/* The CUDA FP16 rule: 8 channels a group make a 16-byte piece. */
static bool whole_pieces(const struct k_conv2d *p, void *user)
{
    return p->c / p->groups % 8 == 0;
}

/* ---- a plan built by hand: tensors, steps, views */

#define MINI_MAX 16

struct mini {
    struct rt_tensor t[MINI_MAX];
    struct rt_node node[MINI_MAX];
    struct rt_step s[MINI_MAX];
    int root[MINI_MAX];
    struct rt_graph g;
    struct rt_plan p;
    bool nhwc[MINI_MAX];
};

static void mini_init(struct mini *m)
{
    memset(m, 0, sizeof(*m));
    m->g.tensors = m->t;
    m->g.nodes = m->node;
    m->p.g = &m->g;
    m->p.steps = m->s;
    m->p.root = m->root;
}

/* A rank-r tensor; model input or output when io is 'i' or 'o'. */
static int mini_tensor(struct mini *m, int rank, char io)
{
    int i = m->g.n_tensors++;
    RT_ASSERT(i < MINI_MAX);
    m->t[i].shape.rank = rank;
    m->t[i].input_index = io == 'i' ? 0 : -1;
    m->t[i].output_index = io == 'o' ? 0 : -1;
    m->root[i] = i;
    return i;
}

/* view's storage is src's (flatten, reshape: no step) */
static int mini_view(struct mini *m, int src)
{
    int v = mini_tensor(m, 2, 0);
    m->root[v] = m->root[src];
    return v;
}

static struct rt_step *mini_step(struct mini *m, enum rt_op op, int n_in, const int *in, int out)
{
    int i = m->p.n_steps++;
    RT_ASSERT(i < MINI_MAX);
    struct rt_step *s = &m->s[i];
    s->op = op;
    s->node = &m->node[i];
    s->n_in = n_in;
    memcpy(s->in, in, sizeof(int) * (size_t)n_in);
    s->out = out;
    s->residual = -1;
    return s;
}

/* conv2d x -> y reading c channels */
static struct rt_step *mini_conv(struct mini *m, int x, int y, int c)
{
    struct rt_step *s = mini_step(m, RT_OP_CONV2D, 1, &x, y);
    s->k.conv.c = c;
    s->k.conv.groups = 1;
    return s;
}

static void mini_plan(struct mini *m) { rt_nhwc_plan(&m->p, RT_NHWC_FLOAT_STEPS, whole_pieces, NULL, m->nhwc); }

/* input -> conv (16) -> a -> relu -> b -> conv (c2) -> out: the edge
 * convolutions convert; a refused read pulls its whole chain back to NCHW. */
TEST(layout_nhwc_chain)
{
    for (int c2 = 6; c2 <= 16; c2 += 10) {
        struct mini m;
        mini_init(&m);
        int x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0);
        int y = mini_tensor(&m, 4, 'o');
        mini_conv(&m, x, a, 16);
        mini_step(&m, RT_OP_RELU, 1, &a, b);
        mini_conv(&m, b, y, c2);
        mini_plan(&m);
        ASSERT_TRUE(!m.nhwc[x] && !m.nhwc[y]);
        ASSERT_EQ_INT(m.nhwc[a], c2 == 16);
        ASSERT_EQ_INT(m.nhwc[b], c2 == 16);
    }
    return TEST_PASS;
}

/* A view of a tensor reads NCHW order: the tensor and what shares its
 * layout go back to NCHW; rank-4 tensors of other steps too. */
TEST(layout_nhwc_views_and_others)
{
    struct mini m;
    mini_init(&m);
    int x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0);
    mini_conv(&m, x, a, 8);
    mini_step(&m, RT_OP_MAX_POOL2D, 1, &a, b);
    int v = mini_view(&m, b), y = mini_tensor(&m, 2, 'o');
    mini_step(&m, RT_OP_LINEAR, 1, &v, y);
    mini_plan(&m);
    for (int t = 0; t < m.g.n_tensors; t++)
        ASSERT_TRUE(!m.nhwc[t]);

    mini_init(&m);   /* softmax over channels reads NCHW */
    x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0);
    int c = mini_tensor(&m, 4, 0);
    y = mini_tensor(&m, 4, 'o');
    mini_conv(&m, x, a, 8);
    mini_step(&m, RT_OP_RELU, 1, &a, b);
    mini_step(&m, RT_OP_SOFTMAX, 1, &b, c);
    mini_conv(&m, c, y, 8);
    mini_plan(&m);
    ASSERT_TRUE(!m.nhwc[a] && !m.nhwc[b] && !m.nhwc[c]);
    return TEST_PASS;
}

/* conv -> {a, b} -> concat -> c -> conv: NHWC along channels (axis 1 or
 * -3), NCHW along height; INT8 steps stay NCHW. */
TEST(layout_nhwc_concat_and_int8)
{
    static const int AXES[3] = {1, -3, 2};
    for (int i = 0; i < 3; i++) {
        struct mini m;
        mini_init(&m);
        int x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0);
        int c = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
        mini_conv(&m, x, a, 8);
        mini_conv(&m, x, b, 8);
        mini_step(&m, RT_OP_CONCAT, 2, (int[]){a, b}, c);
        m.node[2].a.axis = AXES[i];
        mini_conv(&m, c, y, 16);
        mini_plan(&m);
        bool channels = i < 2;
        ASSERT_EQ_INT(m.nhwc[a], channels);
        ASSERT_EQ_INT(m.nhwc[b], channels);
        ASSERT_EQ_INT(m.nhwc[c], channels);
    }
    struct mini m;
    mini_init(&m);
    int x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
    mini_conv(&m, x, a, 8)->q8 = true;
    mini_conv(&m, a, y, 8);
    mini_plan(&m);
    ASSERT_TRUE(!m.nhwc[a]);
    return TEST_PASS;
}

/* A fused residual shares its convolution's output layout: a model input
 * as residual keeps that output NCHW (and the add chain after it). Global
 * average pooling reads NHWC and writes NCHW. */
TEST(layout_nhwc_residual_and_pool)
{
    struct mini m;
    mini_init(&m);
    int x = mini_tensor(&m, 4, 'i'), r = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0);
    int b = mini_tensor(&m, 4, 0), c = mini_tensor(&m, 4, 0), d = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
    mini_conv(&m, x, a, 8);
    mini_conv(&m, a, b, 8)->residual = r;
    mini_step(&m, RT_OP_RELU, 1, &b, c);
    mini_conv(&m, c, d, 8);
    mini_step(&m, RT_OP_GLOBAL_AVG_POOL, 1, &d, y);
    mini_plan(&m);
    ASSERT_TRUE(m.nhwc[a]);
    ASSERT_TRUE(!m.nhwc[b] && !m.nhwc[c]);
    ASSERT_TRUE(m.nhwc[d]);
    ASSERT_TRUE(!m.nhwc[y]);

    mini_init(&m);   /* residual from inside: both NHWC */
    x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0), c = mini_tensor(&m, 4, 0);
    y = mini_tensor(&m, 4, 'o');
    mini_conv(&m, x, a, 8);
    mini_conv(&m, a, b, 8)->residual = a;
    mini_step(&m, RT_OP_GLOBAL_AVG_POOL, 1, &b, c);
    mini_step(&m, RT_OP_RELU, 1, &c, y);
    mini_plan(&m);
    ASSERT_TRUE(m.nhwc[a] && m.nhwc[b] && !m.nhwc[c]);
    return TEST_PASS;
}

/* ---- the CPU's INT8 rules (RT_NHWC_Q8_STEPS) */

static bool takes_16(const struct k_conv2d *p, void *user) { return p->c % 16 == 0; }

static struct rt_step *q8(struct rt_step *s)
{
    s->q8 = true;
    return s;
}

/* quantize -> conv -> relu -> conv (+ residual) -> global pool: NHWC from
 * the first convolution's output to the pool's input; the quantize step
 * and float steps stay NCHW. */
TEST(layout_nhwc_q8_cpu_rules)
{
    struct mini m;
    mini_init(&m);
    int x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0), c = mini_tensor(&m, 4, 0);
    int d = mini_tensor(&m, 4, 0), e = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
    q8(mini_step(&m, RT_OP_QUANTIZE, 1, &x, a));
    q8(mini_conv(&m, a, b, 16));
    q8(mini_step(&m, RT_OP_RELU, 1, &b, c));
    q8(mini_conv(&m, c, d, 16))->residual = b;
    q8(mini_step(&m, RT_OP_GLOBAL_AVG_POOL, 1, &d, e));
    q8(mini_step(&m, RT_OP_DEQUANTIZE, 1, &e, y));
    rt_nhwc_plan(&m.p, RT_NHWC_Q8_STEPS, takes_16, NULL, m.nhwc);
    ASSERT_TRUE(!m.nhwc[x] && !m.nhwc[a] && !m.nhwc[e] && !m.nhwc[y]);
    ASSERT_TRUE(m.nhwc[b] && m.nhwc[c] && m.nhwc[d]);
    /* the same steps in float: the CPU keeps them NCHW */
    for (int i = 0; i < m.p.n_steps; i++)
        m.s[i].q8 = false;
    rt_nhwc_plan(&m.p, RT_NHWC_Q8_STEPS, takes_16, NULL, m.nhwc);
    for (int t = 0; t < m.g.n_tensors; t++)
        ASSERT_TRUE(!m.nhwc[t]);

    /* a convolution the kernel does not take writes NCHW, so the one
     * before it, reading NHWC only into NHWC, falls back too; an NCHW
     * residual pulls its convolution's output back */
    mini_init(&m);
    x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0), c = mini_tensor(&m, 4, 0);
    d = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
    q8(mini_step(&m, RT_OP_QUANTIZE, 1, &x, a));
    q8(mini_conv(&m, a, b, 16));
    q8(mini_conv(&m, b, c, 6));
    q8(mini_conv(&m, c, d, 16))->residual = a;
    q8(mini_step(&m, RT_OP_DEQUANTIZE, 1, &d, y));
    rt_nhwc_plan(&m.p, RT_NHWC_Q8_STEPS, takes_16, NULL, m.nhwc);
    for (int t = 0; t < m.g.n_tensors; t++)
        ASSERT_TRUE(!m.nhwc[t]);

    /* max pooling keeps the layout; average pooling (NCHW on the CPU)
     * turns its input back, and with it the convolution before */
    for (int op = 0; op < 2; op++) {
        mini_init(&m);
        x = mini_tensor(&m, 4, 'i'), a = mini_tensor(&m, 4, 0), b = mini_tensor(&m, 4, 0), c = mini_tensor(&m, 4, 0);
        d = mini_tensor(&m, 4, 0), e = mini_tensor(&m, 4, 0), y = mini_tensor(&m, 4, 'o');
        q8(mini_step(&m, RT_OP_QUANTIZE, 1, &x, a));
        q8(mini_conv(&m, a, b, 16));
        q8(mini_step(&m, op ? RT_OP_AVG_POOL2D : RT_OP_MAX_POOL2D, 1, &b, c));
        q8(mini_conv(&m, c, d, 16));
        q8(mini_step(&m, RT_OP_GLOBAL_AVG_POOL, 1, &d, e));
        q8(mini_step(&m, RT_OP_DEQUANTIZE, 1, &e, y));
        rt_nhwc_plan(&m.p, RT_NHWC_Q8_STEPS, takes_16, NULL, m.nhwc);
        ASSERT_EQ_INT(m.nhwc[b], !op);
        ASSERT_EQ_INT(m.nhwc[c], !op);
        ASSERT_TRUE(m.nhwc[d] && !m.nhwc[e]);
    }
    return TEST_PASS;
}

/* ---- the shipped models' plans */

struct counts {
    int convs, reads_nhwc, writes_nhwc, pool_reads_nhwc, nhwc_tensors;
};

static bool model_counts(const char *dir, struct counts *c)
{
    struct rt_backend *be = NULL;
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    memset(c, 0, sizeof(*c));
    bool ok = rt_backend_ref_create(&be, &err) == RT_OK &&
              rt_model_load(dir, be, &m, &err) == RT_OK;
    if (!ok)
        printf("  %s: %s\n", dir, err.msg);
    const struct rt_plan *p = ok ? rt_model_plan(m) : NULL;
    bool *nhwc = ok ? calloc((size_t)p->g->n_tensors, sizeof(bool)) : NULL;
    if (nhwc) {
        rt_nhwc_plan(p, RT_NHWC_FLOAT_STEPS, whole_pieces, NULL, nhwc);
        for (int i = 0; i < p->n_steps; i++) {
            const struct rt_step *s = &p->steps[i];
            c->convs += s->op == RT_OP_CONV2D;
            c->reads_nhwc += s->op == RT_OP_CONV2D && nhwc[s->in[0]];
            c->writes_nhwc += s->op == RT_OP_CONV2D && nhwc[s->out];
            c->pool_reads_nhwc += s->op == RT_OP_GLOBAL_AVG_POOL && nhwc[s->in[0]];
        }
        for (int t = 0; t < p->g->n_tensors; t++) {
            c->nhwc_tensors += nhwc[t];
            ok = ok && !(nhwc[t] && (p->g->tensors[t].input_index >= 0 || p->g->tensors[t].output_index >= 0));
        }
    }
    free(nhwc);
    rt_model_free(m);
    rt_backend_free(be);
    return ok;
}

TEST(layout_nhwc_shipped_models)
{
    struct counts c;
    ASSERT_TRUE(model_counts("model_repository/resnet-mini", &c));
    printf("  resnet-mini: %d convolutions, %d read NHWC, %d write NHWC; %d NHWC tensors\n", c.convs, c.reads_nhwc,
           c.writes_nhwc, c.nhwc_tensors);
    ASSERT_EQ_INT(c.reads_nhwc, c.convs - 1);   /* all but the 1-channel stem */
    ASSERT_EQ_INT(c.writes_nhwc, c.convs);
    ASSERT_EQ_INT(c.pool_reads_nhwc, 1);
    ASSERT_TRUE(model_counts("model_repository/lenet5", &c));
    ASSERT_EQ_INT(c.nhwc_tensors, 0);
    return TEST_PASS;
}
