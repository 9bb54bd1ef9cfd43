/*
 * bench_kernels.c - micro-benchmark of the CPU kernels: GEMM throughput on
 * fixed shapes and the layer sequences of LeNet-5 and ResNet-mini at one
 * batch size, each with 1 and 2 threads. Prints medians over repeated runs
 * after a warm-up. The PyTorch peer for the model figures is
 * models/bench_torch.py (make bench).
 *
 *   build/bench_kernels [--batch N] [--reps N] [--layers]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cpu/kcpu.h"

static float *buf(size_t count)
{
    float *p = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++)
        p[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    return p;
}

/* One layer of a benchmarked sequence: a convolution, a linear or a 2x2 max pool. */
enum layer_kind { L_CONV, L_LINEAR, L_MAXPOOL };

struct layer {
    enum layer_kind kind;
    struct k_conv2d conv;
    struct k_linear fc;
    struct k_pool2d pool;
    int residual;
    float *x, *w, *packed, *bias, *res, *y;
    void *scratch;
};

static double layer_flops(const struct layer *l)
{
    if (l->kind == L_CONV) {
        const struct k_conv2d *p = &l->conv;
        return 2.0 * p->n * p->oc * p->oh * p->ow * p->c / p->groups * p->kh * p->kw;
    }
    if (l->kind == L_LINEAR)
        return 2.0 * l->fc.n * (double)l->fc.k * l->fc.m;
    return 0;
}

static void layer_setup(struct layer *l, int threads)
{
    if (l->kind == L_CONV) {
        const struct k_conv2d *p = &l->conv;
        l->x = buf((size_t)p->n * p->c * p->h * p->w);
        l->w = buf((size_t)p->oc * (p->c / p->groups) * p->kh * p->kw);
        l->packed = buf(kcpu_conv2d_packed_floats(p));
        kcpu_conv2d_pack(p, l->w, l->packed);
        l->bias = buf((size_t)p->oc);
        l->y = buf((size_t)p->n * p->oc * p->oh * p->ow);
        l->res = l->residual ? buf((size_t)p->n * p->oc * p->oh * p->ow) : NULL;
        l->scratch = malloc(kcpu_conv2d_scratch_bytes(p, threads));
    } else if (l->kind == L_LINEAR) {
        const struct k_linear *p = &l->fc;
        l->x = buf((size_t)p->n * p->k);
        l->w = buf((size_t)p->m * p->k);
        l->packed = buf(kcpu_linear_packed_floats(p));
        kcpu_linear_pack(p, l->w, l->packed);
        l->bias = buf((size_t)p->m);
        l->y = buf((size_t)p->n * p->m);
        l->res = NULL;
        l->scratch = malloc(kcpu_linear_scratch_bytes(p, threads));
    } else {
        const struct k_pool2d *p = &l->pool;
        l->x = buf((size_t)p->n * p->c * p->h * p->w);
        l->y = buf((size_t)p->n * p->c * p->oh * p->ow);
        l->w = l->packed = l->bias = l->res = NULL;
        l->scratch = NULL;
    }
}

static void layer_free(struct layer *l)
{
    free(l->x);
    free(l->w);
    free(l->packed);
    free(l->bias);
    free(l->res);
    free(l->y);
    free(l->scratch);
}

static void layer_run(struct kcpu_threads *pool, const struct layer *l)
{
    if (l->kind == L_CONV)
        kcpu_conv2d_f32(pool, &l->conv, l->x, l->packed, l->bias, l->res, l->y, l->scratch);
    else if (l->kind == L_LINEAR)
        kcpu_linear_f32(pool, &l->fc, l->x, l->packed, l->bias, NULL, l->y, l->scratch);
    else
        kcpu_max_pool2d_f32(pool, &l->pool, l->x, l->y);
}

/* Median seconds per run of the whole sequence. */
static double time_layers(struct kcpu_threads *pool, struct layer *ls, int count, int reps)
{
    double t[64] = {0};
    for (int w = 0; w < 3; w++)
        for (int i = 0; i < count; i++)
            layer_run(pool, &ls[i]);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < count; i++)
            layer_run(pool, &ls[i]);
        t[r] = bench_now_s() - t0;
    }
    return bench_median(t, reps);
}

static int per_layer;  /* --layers: also time each layer alone */

static void print_layer(const struct layer *l, double s)
{
    if (l->kind == L_CONV)
        printf("    conv n%d %d->%d %dx%d k%d s%d%s  %8.3f ms  %7.1f GFLOP/s\n", l->conv.n, l->conv.c,
               l->conv.oc, l->conv.h, l->conv.w, l->conv.kh, l->conv.stride_h,
               l->residual ? " +res" : "", s * 1e3, layer_flops(l) / s * 1e-9);
    else if (l->kind == L_LINEAR)
        printf("    linear n%d %d->%d  %8.3f ms  %7.1f GFLOP/s\n", l->fc.n, l->fc.k, l->fc.m, s * 1e3,
               layer_flops(l) / s * 1e-9);
    else
        printf("    maxpool n%d c%d %dx%d  %8.3f ms\n", l->pool.n, l->pool.c, l->pool.h, l->pool.w, s * 1e3);
}

static void bench(const char *name, struct layer *ls, int count, int reps)
{
    double flops = 0;
    for (int i = 0; i < count; i++)
        flops += layer_flops(&ls[i]);
    for (int threads = 1; threads <= 2; threads++) {
        struct kcpu_threads *pool = kcpu_threads_create(threads);
        for (int i = 0; i < count; i++)
            layer_setup(&ls[i], threads);
        double s = time_layers(pool, ls, count, reps);
        printf("%-36s threads %d  %9.3f ms  %7.1f GFLOP/s\n", name, threads, s * 1e3, flops / s * 1e-9);
        for (int i = 0; per_layer && count > 1 && i < count; i++)
            print_layer(&ls[i], time_layers(pool, &ls[i], 1, reps));
        for (int i = 0; i < count; i++)
            layer_free(&ls[i]);
        kcpu_threads_free(pool);
    }
}

static struct layer conv(int n, int c, int hw, int oc, int k, int stride, int pad, enum k_act act, int residual)
{
    struct layer l = {.kind = L_CONV, .residual = residual};
    int out = (hw + 2 * pad - k) / stride + 1;
    l.conv = (struct k_conv2d){.n = n, .c = c, .h = hw, .w = hw, .oc = oc, .oh = out, .ow = out,
                               .kh = k, .kw = k, .stride_h = stride, .stride_w = stride,
                               .pad_t = pad, .pad_l = pad, .dil_h = 1, .dil_w = 1, .groups = 1, .act = act};
    return l;
}

static struct layer fc(int n, int k, int m, enum k_act act)
{
    return (struct layer){.kind = L_LINEAR, .fc = {.n = n, .k = k, .m = m, .act = act}};
}

static struct layer maxpool2(int n, int c, int hw)
{
    return (struct layer){.kind = L_MAXPOOL,
                          .pool = {.n = n, .c = c, .h = hw, .w = hw, .oh = hw / 2, .ow = hw / 2, .kh = 2,
                                   .kw = 2, .stride_h = 2, .stride_w = 2, .dil_h = 1, .dil_w = 1}};
}

int main(int argc, char **argv)
{
    int batch = 64, reps = 21;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--batch") == 0)
            batch = bench_arg_int("bench_kernels", argc, argv, &i, 1, 256);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = bench_arg_int("bench_kernels", argc, argv, &i, 1, 64);
        else if (strcmp(argv[i], "--layers") == 0)
            per_layer = 1;
        else {
            fprintf(stderr, "usage: bench_kernels [--batch N] [--reps N] [--layers]\n");
            return 2;
        }
    }
    printf("kernels isa %s, batch %d, median of %d runs\n", kcpu_isa_name(kcpu_isa()), batch, reps);

    struct layer g1[] = {conv(1, 576, 28, 64, 1, 1, 0, K_ACT_NONE, 0)};
    bench("gemm 64x576x784 (1x1 conv)", g1, 1, reps);
    struct layer g2[] = {conv(1, 64, 28, 64, 3, 1, 1, K_ACT_NONE, 0)};
    bench("gemm 64x576x784 (3x3 conv)", g2, 1, reps);
    struct layer g3[] = {fc(256, 256, 256, K_ACT_NONE)};
    bench("gemm 256x256x256 (linear)", g3, 1, reps);

    int n = batch;
    struct layer lenet[] = {
        conv(n, 1, 28, 6, 5, 1, 2, K_ACT_RELU, 0), maxpool2(n, 6, 28),
        conv(n, 6, 14, 16, 5, 1, 0, K_ACT_RELU, 0), maxpool2(n, 16, 10),
        fc(n, 400, 120, K_ACT_RELU), fc(n, 120, 84, K_ACT_RELU), fc(n, 84, 10, K_ACT_NONE),
    };
    bench("lenet5 layers", lenet, (int)(sizeof(lenet) / sizeof(lenet[0])), reps);

    struct layer resnet[] = {
        conv(n, 1, 28, 16, 3, 1, 1, K_ACT_RELU, 0),
        conv(n, 16, 28, 16, 3, 1, 1, K_ACT_RELU, 0), conv(n, 16, 28, 16, 3, 1, 1, K_ACT_RELU, 1),
        conv(n, 16, 28, 32, 1, 2, 0, K_ACT_NONE, 0), conv(n, 16, 28, 32, 3, 2, 1, K_ACT_RELU, 0),
        conv(n, 32, 14, 32, 3, 1, 1, K_ACT_RELU, 1),
        conv(n, 32, 14, 32, 3, 1, 1, K_ACT_RELU, 0), conv(n, 32, 14, 32, 3, 1, 1, K_ACT_RELU, 1),
        conv(n, 32, 14, 64, 1, 2, 0, K_ACT_NONE, 0), conv(n, 32, 14, 64, 3, 2, 1, K_ACT_RELU, 0),
        conv(n, 64, 7, 64, 3, 1, 1, K_ACT_RELU, 1),
        conv(n, 64, 7, 64, 3, 1, 1, K_ACT_RELU, 0), conv(n, 64, 7, 64, 3, 1, 1, K_ACT_RELU, 1),
        fc(n, 64, 10, K_ACT_NONE),
    };
    bench("resnet-mini convs + fc", resnet, (int)(sizeof(resnet) / sizeof(resnet[0])), reps);
    return 0;
}
