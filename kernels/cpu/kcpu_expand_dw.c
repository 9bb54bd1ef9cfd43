/*
 * kcpu_expand_dw.c - a 1x1 convolution and the depthwise 3x3 after it in
 * one pass (MobileNetV2's expansion and depthwise layers), NCHW in and out.
 *
 * Apart, the 1x1 layer writes its whole output (MobileNetV2's 16 -> 96 on
 * 112x112 maps: 4.8 MB, more than L2 by far) and the depthwise layer reads
 * it back. Here a task takes one image and a band of expanded channels:
 * the GEMM writes the band into its thread's scratch (sized to stay in
 * L2), and the depthwise kernel reads it from there, channel by channel,
 * into the output. The expanded tensor never exists whole. Each band reads
 * all of the image's input again, but that input has few channels (it is
 * the narrow end of an inverted residual block). The sums are those of
 * the two layers apart, in the same order.
 */
#include "kcpu_convpix.h"
#include "kcpu_dwconv.h"
#include "kcpu_impl.h"

/* Expanded floats a band may hold: half of Zen 1's and Zen 3's 512 KiB L2
 * a core (a band is at least one panel of KCPU_MR channels, whatever the
 * map). */
#define BAND_BYTES ((int64_t)256 * 1024)

static int is_clamp(enum k_act act) { return act == K_ACT_NONE || act == K_ACT_RELU || act == K_ACT_RELU6; }

/* Not where the 1x1 alone would take the pixel tile (on AVX-512, 128 or
 * more input channels on maps up to 14x14: MobileNetV2's last expansions),
 * chosen there over the GEMM the chain runs; the two were not measured
 * against each other (no AVX-512 on the machine that built this). */
bool kcpu_expand_dw_applies(const struct k_conv2d *pw, const struct k_conv2d *dw)
{
    return !kcpu_convpix_applies(pw) && pw->kh == 1 && pw->kw == 1 && pw->stride_h == 1 && pw->stride_w == 1 &&
           pw->pad_t == 0 && pw->pad_l == 0 && pw->groups == 1 && pw->oh == pw->h && pw->ow == pw->w &&
           is_clamp(pw->act) &&
           dw->n == pw->n && dw->c == pw->oc && dw->oc == dw->c && dw->groups == dw->c && dw->h == pw->oh &&
           dw->w == pw->ow && dw->kh == 3 && dw->kw == 3 && dw->dil_h == 1 && dw->dil_w == 1 &&
           dw->stride_h == dw->stride_w && (dw->stride_h == 1 || dw->stride_h == 2) && is_clamp(dw->act);
}

/* Channels a band holds at most: whole panels, within BAND_BYTES. */
static int64_t band_cap(const struct k_conv2d *pw)
{
    int64_t plane = (int64_t)pw->oh * pw->ow * (int64_t)sizeof(float);
    int64_t fit = BAND_BYTES / kcpu_max64(1, plane) / KCPU_MR * KCPU_MR;
    return kcpu_min64(kcpu_max64(KCPU_MR, fit), kcpu_ceil_div(pw->oc, KCPU_MR) * KCPU_MR);
}

size_t kcpu_expand_dw_packed_floats(const struct k_conv2d *pw)
{
    return (size_t)kcpu_ceil_div(pw->oc, KCPU_MR) * KCPU_MR * (size_t)pw->c;
}

/* Plain KCPU_MR-row panels (kcpu_impl.h), whatever kcpu_conv2d_pack would
 * choose for the layer alone. */
void kcpu_expand_dw_pack(const struct k_conv2d *pw, const float *w, float *packed)
{
    kcpu_gemm_pack_a(w, pw->oc, pw->c, KCPU_MR, packed);
}

/* Per thread: the band. */
static int64_t band_floats(const struct k_conv2d *pw)
{
    return kcpu_ceil_div(band_cap(pw) * pw->oh * pw->ow, 16) * 16;
}

size_t kcpu_expand_dw_scratch_bytes(const struct k_conv2d *pw, int threads)
{
    return (size_t)(threads * band_floats(pw)) * sizeof(float) + 64;
}

/* One channel's depthwise 3x3 without vectors: the taps in kcpu_dwconv's
 * order, bias first. */
static void dw3x3_scalar(const struct k_conv2d *p, const float *x, const float *w9, float bias, float *y)
{
    for (int r = 0; r < p->oh; r++)
        for (int c = 0; c < p->ow; c++) {
            float sum = bias;
            for (int ki = 0; ki < 3; ki++)
                for (int kj = 0; kj < 3; kj++) {
                    int ih = r * p->stride_h - p->pad_t + ki, iw = c * p->stride_w - p->pad_l + kj;
                    if (ih >= 0 && ih < p->h && iw >= 0 && iw < p->w)
                        sum += w9[ki * 3 + kj] * x[ih * p->w + iw];
                }
            y[r * p->ow + c] = kcpu_act1(p->act, sum);
        }
}

struct expand_dw_job {
    const struct k_conv2d *pw, *dw;
    const float *x, *packed, *pw_bias, *dw_w, *dw_bias;
    float *y;
    float *base;               /* thread t's scratch at base + t * per_thread */
    int64_t per_thread;
    int64_t band, bands;       /* channels a task expands; tasks per image */
};

static void expand_dw_task(void *arg, int64_t task, int thread)
{
    const struct expand_dw_job *j = arg;
    const struct k_conv2d *pw = j->pw, *dw = j->dw;
    const int64_t img = task / j->bands, ch0 = task % j->bands * j->band;
    const int64_t rows = kcpu_min64(j->band, pw->oc - ch0);
    const int64_t plane = (int64_t)pw->oh * pw->ow, plane_out = (int64_t)dw->oh * dw->ow;
    float *band = j->base + thread * j->per_thread;
    struct kcpu_gemm gm = {
        .m = (int)rows, .k = pw->c,
        .a = j->packed + ch0 * pw->c, .a_step = KCPU_MR,
        .b = j->x + img * pw->c * plane, .ldb = plane, .b_strip = KCPU_NR,
        .j0 = 0, .n = plane,
        .seg_len = plane, .seg_stride = plane, .row_len = plane, .row_valid = plane, .rows_valid = 1,
        .ldc = plane, .c = band,
        .bias_row = j->pw_bias ? j->pw_bias + ch0 : NULL,
        .act = pw->act,
    };
    kcpu_gemm_run(&gm);
    const enum kcpu_isa isa = kcpu_isa();
    for (int64_t o = 0; o < rows; o++) {
        const int64_t ch = ch0 + o;
        const float *w9 = j->dw_w + ch * 9, *x = band + o * plane;
        const float bias = j->dw_bias ? j->dw_bias[ch] : 0.0f;
        float *y = j->y + (img * dw->oc + ch) * plane_out;
        if (isa == KCPU_ISA_AVX512)
            kcpu_dw3x3_avx512(dw, x, w9, bias, NULL, y);
        else if (isa == KCPU_ISA_AVX2)
            kcpu_dw3x3_avx2(dw, x, w9, bias, NULL, y);
        else
            dw3x3_scalar(dw, x, w9, bias, y);
    }
}

void kcpu_expand_dw_f32(struct kcpu_threads *th, const struct k_conv2d *pw, const struct k_conv2d *dw,
                        const float *x, const float *packed, const float *pw_bias, const float *dw_w,
                        const float *dw_bias, float *y, void *scratch)
{
    if (pw->n <= 0 || pw->oc <= 0)
        return;
    struct expand_dw_job j = {.pw = pw, .dw = dw, .x = x, .packed = packed, .pw_bias = pw_bias, .dw_w = dw_w,
                              .dw_bias = dw_bias, .y = y, .base = kcpu_align64(scratch),
                              .per_thread = band_floats(pw)};
    /* Bands as large as L2 allows, but four tasks per thread where the
     * channels give that many. */
    int64_t want = kcpu_ceil_div(4 * (int64_t)kcpu_threads_count(th), pw->n);
    int64_t even = kcpu_ceil_div(kcpu_ceil_div(pw->oc, want), KCPU_MR) * KCPU_MR;
    j.band = kcpu_min64(band_cap(pw), kcpu_max64(KCPU_MR, even));
    j.bands = kcpu_ceil_div(pw->oc, j.band);
    kcpu_threads_run(th, pw->n * j.bands, expand_dw_task, &j);
}
