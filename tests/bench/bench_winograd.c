/*
 * bench_winograd.c - the CPU's FP32 3x3 stride-1 convolution two ways, side
 * by side: Winograd F(2x2, 3x3) (kcpu_wino_f32) against the pixel-tile
 * kernel it replaced (kcpu_convpix_f32), on the 3x3 layers of ResNet-50
 * and resnet-mini and a few between. It is the measurement behind
 * kcpu_wino_applies (which layers take Winograd), whose choice it prints
 * beside each row.
 *
 *   build/bench_winograd [--threads N] [--repeats R] [--batch B]
 *
 * Per shape: the two outputs are compared first (max difference over the
 * output's largest magnitude, against the 1e-5 FP32 bound), then R rounds,
 * each timing a window of about 20 ms of each kernel back to back, so both
 * see the same machine load. Reported: the median time per call of each,
 * and the median of the per-round ratios pixel tile / Winograd (above 1:
 * Winograd is faster).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kernels/cpu/kcpu_convpix.h"
#include "kernels/cpu/kcpu_wino.h"

#define MAX_REPEATS 31

static const char PROG[] = "bench_winograd";   /* for error messages */
#define WINDOW_S 0.02
#define BOUND 1e-5

struct shape {
    const char *name;
    int c, hw, oc;
};

static const struct shape SHAPES[] = {
    {"resnet50 layer1", 64, 56, 64},
    {"resnet50 layer2", 128, 28, 128},
    {"resnet50 layer3", 256, 14, 256},
    {"resnet50 layer4", 512, 7, 512},
    {"64 channels on 14x14", 64, 14, 64},
    {"128 channels on 7x7", 128, 7, 128},
    {"resnet-mini layer1", 16, 28, 16},
    {"resnet-mini layer2", 32, 14, 32},
    {"resnet-mini layer3", 64, 7, 64},
};

/* Deterministic inputs in [-1, 1): xorshift32, seeded per shape. */
static float next_float(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

/* One layer: inputs, both kernels' packed weights, scratch and outputs. */
struct layer {
    struct k_conv2d p;
    float *x, *bias, *y_pix, *y_wino;
    float *panels, *u;
    void *scratch;
};

static void layer_init(struct layer *l, const struct shape *s, int batch, int threads, uint32_t seed)
{
    l->p = (struct k_conv2d){.n = batch, .c = s->c, .h = s->hw, .w = s->hw, .oc = s->oc, .oh = s->hw, .ow = s->hw,
                             .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1, .pad_t = 1, .pad_l = 1,
                             .dil_h = 1, .dil_w = 1, .groups = 1, .act = K_ACT_RELU};
    const int64_t xn = (int64_t)batch * s->c * s->hw * s->hw, yn = (int64_t)batch * s->oc * s->hw * s->hw;
    const int64_t kg = (int64_t)s->c * 9;
    l->x = bench_alloc(PROG, (size_t)xn * sizeof(float));
    l->bias = bench_alloc(PROG, (size_t)s->oc * sizeof(float));
    l->y_pix = bench_alloc(PROG, (size_t)yn * sizeof(float));
    l->y_wino = bench_alloc(PROG, (size_t)yn * sizeof(float));
    float *w = bench_alloc(PROG, (size_t)(s->oc * kg) * sizeof(float));
    uint32_t rs = seed;
    for (int64_t i = 0; i < xn; i++)
        l->x[i] = next_float(&rs);
    for (int64_t i = 0; i < s->oc * kg; i++)
        w[i] = next_float(&rs) * 0.1f;
    for (int o = 0; o < s->oc; o++)
        l->bias[o] = next_float(&rs);
    /* The pixel tile reads the GEMM's panels in pairs (every shape here
     * has a multiple of 16 channels). kcpu_conv2d_pack would give these
     * shapes Winograd's layout instead. */
    l->panels = bench_alloc(PROG, (size_t)(s->oc * kg) * sizeof(float));
    kcpu_gemm_pack_a(w, s->oc, kg, KCPU_PAIR, l->panels);
    l->u = bench_alloc(PROG, kcpu_wino_packed_floats(&l->p) * sizeof(float));
    kcpu_wino_pack(&l->p, w, l->u);
    free(w);
    size_t a = kcpu_convpix_scratch_bytes(&l->p, threads), b = kcpu_wino_scratch_bytes(&l->p, threads);
    l->scratch = bench_alloc(PROG, a > b ? a : b);
}

static void layer_free(struct layer *l)
{
    free(l->x), free(l->bias), free(l->y_pix), free(l->y_wino), free(l->panels), free(l->u), free(l->scratch);
}

static void run_pix(struct kcpu_threads *th, struct layer *l)
{
    kcpu_convpix_f32(th, &l->p, l->x, l->panels, l->bias, NULL, l->y_pix, l->scratch);
}

static void run_wino(struct kcpu_threads *th, struct layer *l)
{
    kcpu_wino_f32(th, &l->p, l->x, l->u, l->bias, NULL, l->y_wino, l->scratch);
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

/* max |Winograd - pixel tile| / max |pixel tile|. */
static double difference(struct kcpu_threads *th, struct layer *l)
{
    const int64_t yn = (int64_t)l->p.n * l->p.oc * l->p.oh * l->p.ow;
    run_pix(th, l);
    run_wino(th, l);
    double diff = 0, top = 1e-30;
    for (int64_t i = 0; i < yn; i++) {
        diff = fmax(diff, fabs((double)l->y_wino[i] - l->y_pix[i]));
        top = fmax(top, fabs((double)l->y_pix[i]));
    }
    return diff / top;
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
            fprintf(stderr, "usage: bench_winograd [--threads N] [--repeats R] [--batch B]\n");
            return 2;
        }
    }
    if (kcpu_isa() == KCPU_ISA_SCALAR) {
        printf("bench_winograd: skipped: this CPU has neither AVX2 nor AVX-512 (no pixel-tile kernel to compare)\n");
        return 0;
    }
    struct kcpu_threads *th = threads > 1 ? kcpu_threads_create(threads) : NULL;
    if (threads > 1 && !th) {
        fprintf(stderr, "bench_winograd: could not start %d threads\n", threads);
        return 1;
    }
    printf("FP32 3x3 convolution, pixel tile against Winograd F(2x2, 3x3): %s, %d thread%s, batch %d, "
           "median of %d rounds\n\n",
           kcpu_isa_name(kcpu_isa()), threads, threads > 1 ? "s" : "", batch, repeats);
    printf("| layer | channels | map | pixel tile us | Winograd us | pixel / Winograd | difference | taken |\n");
    printf("|---|--:|--:|--:|--:|--:|--:|---|\n");
    const int nshapes = (int)(sizeof(SHAPES) / sizeof(SHAPES[0]));
    int failed = 0;
    for (int i = 0; i < nshapes; i++) {
        const struct shape *s = &SHAPES[i];
        struct layer l;
        layer_init(&l, s, batch, threads, 1234u + (uint32_t)i);
        if (!kcpu_convpix_applies(&l.p)) {   /* AVX-512's rules leave some shapes to the GEMM */
            printf("| %s | %d -> %d | %dx%d | (not a pixel-tile shape on %s) | | | | %s |\n", s->name, s->c, s->oc,
                   s->hw, s->hw, kcpu_isa_name(kcpu_isa()), kcpu_wino_applies(&l.p) ? "yes" : "no");
            layer_free(&l);
            continue;
        }
        const double diff = difference(th, &l);
        if (!(diff <= BOUND)) {
            fprintf(stderr, "bench_winograd: %s: the outputs differ by %.3g (bound %g)\n", s->name, diff, BOUND);
            failed = 1;
            layer_free(&l);
            continue;
        }
        double t_pix[MAX_REPEATS] = {0}, t_wino[MAX_REPEATS] = {0}, ratio[MAX_REPEATS] = {0};
        for (int r = 0; r < repeats; r++) {
            t_pix[r] = window(th, &l, run_pix);
            t_wino[r] = window(th, &l, run_wino);
            ratio[r] = t_pix[r] / t_wino[r];
        }
        printf("| %s | %d -> %d | %dx%d | %.1f | %.1f | %.2f | %.1e | %s |\n", s->name, s->c, s->oc, s->hw, s->hw,
               bench_median(t_pix, repeats) * 1e6, bench_median(t_wino, repeats) * 1e6, bench_median(ratio, repeats), diff,
               kcpu_wino_applies(&l.p) ? "yes" : "no");
        fflush(stdout);
        layer_free(&l);
    }
    char load[64];
    printf("\nload average after (/proc/loadavg): %s\n", bench_load_average(load, sizeof(load)));
    kcpu_threads_free(th);
    return failed;
}
