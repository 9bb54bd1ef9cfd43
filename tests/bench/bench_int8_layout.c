/*
 * bench_int8_layout.c - the CPU's INT8 convolution in its two layouts, side
 * by side: the NCHW implicit GEMM (kcpu_conv2d_q8) against the channels-last
 * kernel (kcpu_conv2d_q8_nhwc), on layer shapes of MobileNetV2, ResNet-50
 * and resnet-mini, map size by map size. It is the measurement behind
 * kcpu_conv2d_q8_nhwc_takes (which layers go channels last on this ISA),
 * whose choice it prints beside each row.
 *
 *   build/bench_int8_layout [--threads N] [--repeats R] [--batch B]
 *
 * Per shape: both outputs are checked byte for byte (the NHWC one turned
 * back to NCHW), then R rounds, each timing a window of about 20 ms of each
 * layout back to back, so both see the same machine load. Reported: the
 * median time per call of each, and the median of the per-round ratios
 * NCHW / NHWC (above 1: channels last is faster). On a CPU with AMX-INT8
 * (kcpu_q8_amx_usable) the channels-last kernel's dense layers run on AMX
 * tiles; two more columns then time it held to its VNNI tiles
 * (kcpu_q8_amx_allow(0)) and give VNNI / AMX.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_q8.h"
#include "kernels/cpu/kcpu_threads.h"

#define MAX_REPEATS 31

static const char PROG[] = "bench_int8_layout";   /* for error messages */
#define WINDOW_S 0.02

struct shape {
    const char *name;
    int c, hw, oc, k, stride;
    int depthwise;
    int nonneg;                /* x has no negative byte (the layer reads a ReLU's output) */
};

/* MobileNetV2's expansions read a block's linear output (signed); its
 * depthwise and projection layers, and every ResNet layer, read a ReLU's. */
static const struct shape SHAPES[] = {
    {"mobilenet_v2 stem 3->32 s2", 3, 224, 32, 3, 2, 0, 0},
    {"mobilenet_v2 expand 16->96", 16, 112, 96, 1, 1, 0, 0},
    {"mobilenet_v2 depthwise 96 s2", 96, 112, 96, 3, 2, 1, 1},
    {"mobilenet_v2 expand 24->144", 24, 56, 144, 1, 1, 0, 0},
    {"mobilenet_v2 depthwise 144", 144, 56, 144, 3, 1, 1, 1},
    {"mobilenet_v2 project 144->24", 144, 56, 24, 1, 1, 0, 1},
    {"mobilenet_v2 expand 32->192", 32, 28, 192, 1, 1, 0, 0},
    {"mobilenet_v2 depthwise 192", 192, 28, 192, 3, 1, 1, 1},
    {"mobilenet_v2 project 192->32", 192, 28, 32, 1, 1, 0, 1},
    {"mobilenet_v2 expand 64->384", 64, 14, 384, 1, 1, 0, 0},
    {"mobilenet_v2 depthwise 384", 384, 14, 384, 3, 1, 1, 1},
    {"mobilenet_v2 project 384->64", 384, 14, 64, 1, 1, 0, 1},
    {"mobilenet_v2 expand 160->960", 160, 7, 960, 1, 1, 0, 0},
    {"mobilenet_v2 depthwise 960", 960, 7, 960, 3, 1, 1, 1},
    {"mobilenet_v2 project 960->160", 960, 7, 160, 1, 1, 0, 1},
    {"resnet50 stem 3->64 7x7 s2", 3, 224, 64, 7, 2, 0, 0},
    {"resnet50 3x3 64", 64, 56, 64, 3, 1, 0, 1},
    {"resnet50 1x1 64->256", 64, 56, 256, 1, 1, 0, 1},
    {"resnet50 1x1 256->64", 256, 56, 64, 1, 1, 0, 1},
    {"resnet50 3x3 128", 128, 28, 128, 3, 1, 0, 1},
    {"resnet50 1x1 512->128", 512, 28, 128, 1, 1, 0, 1},
    {"resnet50 3x3 256", 256, 14, 256, 3, 1, 0, 1},
    {"resnet50 1x1 1024->256", 1024, 14, 256, 1, 1, 0, 1},
    {"resnet50 3x3 512", 512, 7, 512, 3, 1, 0, 1},
    {"resnet50 1x1 2048->512", 2048, 7, 512, 1, 1, 0, 1},
    {"resnet-mini stem 1->16", 1, 28, 16, 3, 1, 0, 0},
    {"resnet-mini 3x3 16", 16, 28, 16, 3, 1, 0, 1},
    {"resnet-mini 3x3 32", 32, 14, 32, 3, 1, 0, 1},
    {"resnet-mini 3x3 64", 64, 7, 64, 3, 1, 0, 1},
};

/* Deterministic inputs: xorshift32, seeded per shape. */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

/* Uniform in [lo, hi]. */
static int random_int(uint32_t *state, int lo, int hi)
{
    return lo + (int)(next_random(state) % (uint32_t)(hi - lo + 1));
}

/* [n][c][hw] <-> [n][hw][c] for bytes of esize. */
static void transpose(const void *src, void *dst, int64_t n, int64_t rows, int64_t cols, size_t esize)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t col = 0; col < cols; col++)
                memcpy((char *)dst + ((i * cols + col) * rows + r) * (int64_t)esize,
                       (const char *)src + ((i * rows + r) * cols + col) * (int64_t)esize, esize);
}

/* One layer and both layouts' packed weights, scratch and outputs. */
struct layer {
    struct k_conv2d p;
    struct k_q8_epilogue e;
    int8_t *x, *xt, *y, *yt;
    void *packed, *packed_nhwc, *scratch, *scratch_nhwc;
    int32_t *bias;
    struct k_q8_mult *mult;
};

static void layer_init(struct layer *l, const struct shape *s, int batch, int threads, uint32_t seed)
{
    const int pad = s->k / 2, oh = (s->hw + 2 * pad - s->k) / s->stride + 1;
    l->p = (struct k_conv2d){.n = batch, .c = s->c, .h = s->hw, .w = s->hw, .oc = s->oc, .oh = oh, .ow = oh,
                             .kh = s->k, .kw = s->k, .stride_h = s->stride, .stride_w = s->stride, .pad_t = pad,
                             .pad_l = pad, .dil_h = 1, .dil_w = 1, .groups = s->depthwise ? s->c : 1};
    const int64_t xn = (int64_t)batch * s->c * s->hw * s->hw, yn = (int64_t)batch * s->oc * oh * oh;
    const int64_t wn = (int64_t)s->oc * (s->depthwise ? 1 : s->c) * s->k * s->k;
    l->x = bench_alloc(PROG, (size_t)xn), l->xt = bench_alloc(PROG, (size_t)xn);
    l->y = bench_alloc(PROG, (size_t)yn), l->yt = bench_alloc(PROG, (size_t)yn);
    int8_t *w = bench_alloc(PROG, (size_t)wn);
    uint32_t rs = seed;
    for (int64_t i = 0; i < xn; i++)
        l->x[i] = (int8_t)random_int(&rs, s->nonneg ? 0 : -127, 127);
    for (int64_t i = 0; i < wn; i++)
        w[i] = (int8_t)random_int(&rs, -127, 127);
    transpose(l->x, l->xt, batch, s->c, (int64_t)s->hw * s->hw, 1);
    l->bias = bench_alloc(PROG, (size_t)s->oc * sizeof(*l->bias));
    l->mult = bench_alloc(PROG, (size_t)s->oc * sizeof(*l->mult));
    for (int o = 0; o < s->oc; o++) {   /* a served model's range: shifts of 38 to 41 */
        l->bias[o] = random_int(&rs, -10000, 10000);
        l->mult[o] = (struct k_q8_mult){(int32_t)((1u << 30) + next_random(&rs) % (1u << 30)), random_int(&rs, 38, 41)};
    }
    l->e = (struct k_q8_epilogue){.bias = l->bias, .mult = l->mult, .res_mult = {0, 1}, .lo = -127, .hi = 127};
    l->packed = bench_alloc(PROG, kcpu_conv2d_q8_packed_bytes(&l->p));
    l->packed_nhwc = bench_alloc(PROG, kcpu_conv2d_q8_nhwc_packed_bytes(&l->p));
    l->scratch = bench_alloc(PROG, kcpu_conv2d_q8_scratch_bytes(&l->p, threads));
    l->scratch_nhwc = bench_alloc(PROG, kcpu_conv2d_q8_nhwc_scratch_bytes(&l->p, threads));
    kcpu_conv2d_q8_pack(&l->p, w, l->packed);
    kcpu_conv2d_q8_nhwc_pack(&l->p, w, l->packed_nhwc);
    free(w);
}

static void layer_free(struct layer *l)
{
    free(l->x), free(l->xt), free(l->y), free(l->yt), free(l->bias), free(l->mult);
    free(l->packed), free(l->packed_nhwc), free(l->scratch), free(l->scratch_nhwc);
}

static void run_nchw(struct kcpu_threads *th, struct layer *l)
{
    kcpu_conv2d_q8(th, &l->p, l->x, l->packed, &l->e, NULL, l->y, l->scratch);
}

static void run_nhwc(struct kcpu_threads *th, struct layer *l)
{
    kcpu_conv2d_q8_nhwc(th, &l->p, l->xt, 0, l->packed_nhwc, &l->e, NULL, l->yt, l->scratch_nhwc);
}

/* The channels-last kernel held to its VNNI tiles. */
static void run_nhwc_vnni(struct kcpu_threads *th, struct layer *l)
{
    kcpu_q8_amx_allow(0);
    run_nhwc(th, l);
    kcpu_q8_amx_allow(1);
}

/* Seconds per call over a window of about WINDOW_S. */
static double window(struct kcpu_threads *th, struct layer *l, void (*run)(struct kcpu_threads *, struct layer *))
{
    int calls = 0;
    const double t0 = bench_now_s();
    double t;
    do {
        run(th, l);
        calls++;
    } while ((t = bench_now_s()) - t0 < WINDOW_S);
    return (t - t0) / calls;
}

/* Both layouts' bytes agree. */
static int same_output(struct kcpu_threads *th, struct layer *l)
{
    const int64_t yn = (int64_t)l->p.n * l->p.oc * l->p.oh * l->p.ow;
    run_nchw(th, l);
    run_nhwc(th, l);
    int8_t *back = bench_alloc(PROG, (size_t)yn);
    transpose(l->yt, back, l->p.n, (int64_t)l->p.oh * l->p.ow, l->p.oc, 1);
    const int same = memcmp(back, l->y, (size_t)yn) == 0;
    free(back);
    return same;
}

int main(int argc, char **argv)
{
    int threads = 1, repeats = 7, batch = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads"))
            threads = bench_arg_int(PROG, argc, argv, &i, 1, 64);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = bench_arg_int(PROG, argc, argv, &i, 1, MAX_REPEATS);
        else if (!strcmp(argv[i], "--batch"))
            batch = bench_arg_int(PROG, argc, argv, &i, 1, 256);
        else {
            fprintf(stderr, "usage: bench_int8_layout [--threads N] [--repeats R] [--batch B]\n");
            return 2;
        }
    }
    struct kcpu_threads *th = threads > 1 ? kcpu_threads_create(threads) : NULL;
    if (threads > 1 && !th) {
        fprintf(stderr, "bench_int8_layout: could not start %d threads\n", threads);
        return 1;
    }
    printf("INT8 convolution, NCHW GEMM against channels last: %s, %d thread%s, batch %d, median of %d rounds\n\n",
           kcpu_isa_name(kcpu_isa()), threads, threads > 1 ? "s" : "", batch, repeats);
    const int amx = kcpu_isa() == KCPU_ISA_AVX512 && kcpu_q8_amx_usable();
    if (amx)
        printf("Channels last on AMX tiles (dense layers), and held to its VNNI tiles.\n\n");
    printf("| layer | map | NCHW us | NHWC us | NCHW / NHWC |%s taken channels last |\n",
           amx ? " NHWC VNNI us | VNNI / AMX |" : "");
    printf("|---|--:|--:|--:|--:|%s---|\n", amx ? "--:|--:|" : "");
    const int nshapes = (int)(sizeof(SHAPES) / sizeof(SHAPES[0]));
    int failed = 0;
    for (int i = 0; i < nshapes; i++) {
        const struct shape *s = &SHAPES[i];
        struct layer l;
        layer_init(&l, s, batch, threads, 1234u + (uint32_t)i);
        if (!same_output(th, &l)) {
            fprintf(stderr, "bench_int8_layout: %s: the two layouts' outputs differ\n", s->name);
            failed = 1;
            layer_free(&l);
            continue;
        }
        double t_nchw[MAX_REPEATS] = {0}, t_nhwc[MAX_REPEATS] = {0}, ratio[MAX_REPEATS] = {0};
        double t_vnni[MAX_REPEATS] = {0}, ratio_amx[MAX_REPEATS] = {0};
        for (int r = 0; r < repeats; r++) {
            t_nchw[r] = window(th, &l, run_nchw);
            t_nhwc[r] = window(th, &l, run_nhwc);
            ratio[r] = t_nchw[r] / t_nhwc[r];
            if (amx) {
                t_vnni[r] = window(th, &l, run_nhwc_vnni);
                ratio_amx[r] = t_vnni[r] / t_nhwc[r];
            }
        }
        printf("| %s | %dx%d | %.1f | %.1f | %.2f |", s->name, s->hw, s->hw, bench_median(t_nchw, repeats) * 1e6,
               bench_median(t_nhwc, repeats) * 1e6, bench_median(ratio, repeats));
        if (amx)
            printf(" %.1f | %.2f |", bench_median(t_vnni, repeats) * 1e6, bench_median(ratio_amx, repeats));
        printf(" %s |\n", kcpu_conv2d_q8_nhwc_takes(&l.p) ? "yes" : "no");
        fflush(stdout);
        layer_free(&l);
    }
    char load[64];
    printf("\nload average after (/proc/loadavg): %s\n", bench_load_average(load, sizeof(load)));
    kcpu_threads_free(th);
    return failed;
}
