/*
 * kcpu_q8_nhwc.c - the channels-last INT8 convolution (see kcpu_q8_nhwc.h
 * for the layouts): weight packing, the padded copy of x, the task split
 * over (image, block group, output row), the plain-C tile for the scalar
 * ISA, and max and global average pooling on channels-last tensors.
 */
#include <string.h>

#include "kcpu_q8_dwn.h"
#include "kcpu_q8_nhwc.h"

struct geom {
    int64_t cp;                /* padded x's bytes per pixel */
    int64_t hp, wp;            /* padded x's rows and pixels per row */
    int taps;
    int64_t blocks;            /* blocks of 16 output channels */
    int64_t wblock;            /* packed bytes per block */
};

static struct geom geom_of(const struct k_conv2d *p)
{
    struct geom d;
    d.cp = kcpu_ceil_div(p->c, 4) * 4;
    d.hp = kcpu_max64((int64_t)p->h + p->pad_t, (int64_t)(p->oh - 1) * p->stride_h + (int64_t)(p->kh - 1) * p->dil_h + 1);
    d.wp = kcpu_max64((int64_t)p->w + p->pad_l, (int64_t)(p->ow - 1) * p->stride_w + (int64_t)(p->kw - 1) * p->dil_w + 1);
    d.taps = p->kh * p->kw;
    d.blocks = kcpu_ceil_div(p->oc, 16);
    d.wblock = d.taps * d.cp * 16;
    return d;
}

int kcpu_conv2d_q8_nhwc_takes(const struct k_conv2d *p)
{
    const int depthwise = kq8_dwn_applies(p);
    if (p->groups != 1 && !depthwise)
        return 0;
    const enum kq8_nhwc_path path = kq8_nhwc_path();
    const int64_t map = (int64_t)p->h * p->w;
    if (path == KQ8_NHWC_AVX512)
        return depthwise ? map <= KQ8_NHWC_AVX512_DW_MAX_MAP
                         : p->c >= KQ8_NHWC_AVX512_MIN_C || map <= KQ8_NHWC_AVX512_STEM_MAP;
    return path == KQ8_NHWC_AVX2 && map <= KQ8_NHWC_AVX2_MAX_MAP;
}

size_t kcpu_conv2d_q8_nhwc_packed_bytes(const struct k_conv2d *p)
{
    if (kq8_dwn_applies(p))
        return kq8_dwn_packed_bytes(p);
    struct geom d = geom_of(p);
    return (size_t)(d.blocks * d.wblock + d.blocks * 16 * 4);
}

void kcpu_conv2d_q8_nhwc_pack(const struct k_conv2d *p, const int8_t *w, void *packed)
{
    if (kq8_dwn_applies(p)) {
        kq8_dwn_pack(p, w, packed);
        return;
    }
    struct geom d = geom_of(p);
    int8_t *a = packed;
    int32_t *wsum = (int32_t *)(a + d.blocks * d.wblock);
    const int64_t taps = d.taps, quads = d.cp / 4;
    for (int64_t b = 0; b < d.blocks; b++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t q = 0; q < quads; q++)
                for (int64_t l = 0; l < 16; l++)
                    for (int64_t j = 0; j < 4; j++) {
                        int64_t o = b * 16 + l, ch = 4 * q + j;
                        int8_t v = 0;
                        if (o < p->oc && ch < p->c)
                            v = w[(o * p->c + ch) * taps + t];
                        a[b * d.wblock + ((t * quads + q) * 16 + l) * 4 + j] = v;
                    }
    for (int64_t o = 0; o < d.blocks * 16; o++) {
        int32_t s = 0;
        for (int64_t k = 0; o < p->oc && k < (int64_t)p->c * taps; k++)
            s += w[o * p->c * taps + k];
        wsum[o] = s;
    }
}

static int64_t padded_bytes(const struct k_conv2d *p, const struct geom *d)
{
    return (p->n * d->hp * d->wp * d->cp + 63) / 64 * 64;
}

/* A byte per padded row: whether it holds a negative byte (unflipped x). */
static int64_t neg_bytes(const struct k_conv2d *p, const struct geom *d)
{
    return (p->n * d->hp + 63) / 64 * 64;
}

/* A depthwise layer's x turned NHWC (when it comes NCHW), then its own. */
static int64_t dw_x_bytes(const struct k_conv2d *p) { return ((int64_t)p->n * p->c * p->h * p->w + 63) / 64 * 64; }

size_t kcpu_conv2d_q8_nhwc_scratch_bytes(const struct k_conv2d *p, int threads)
{
    if (kq8_dwn_applies(p))
        return (size_t)dw_x_bytes(p) + kq8_dwn_scratch_bytes(p, threads) + 64;
    struct geom d = geom_of(p);
    return (size_t)(padded_bytes(p, &d) + neg_bytes(p, &d) + KQ8_NHWC_CONSTS_BYTES(d.blocks) +
                    ((int64_t)d.taps * 8 + 63) / 64 * 64 + 64);
}

/* ------------------------------------------------------------ padded x */

struct pad_job {
    const struct k_conv2d *p;
    struct geom d;
    const int8_t *x;
    int x_nchw;
    int avx2;                  /* AVX2 code may run (the NCHW rows' transpose) */
    uint8_t flip;              /* 0x80 (AVX-512: sign bits flipped) or 0 */
    uint8_t *xp;
    uint8_t *neg;              /* per padded row: whether it holds a negative byte (unflipped) */
};

/* dst = src ^ flip (flip 0 or 0x80 in every byte), 8 bytes a step (the
 * byte loop's aliasing keeps GCC from vectorising it at -O2); returns the
 * OR of src's bytes in each byte of the result. */
static uint64_t copy_flip(uint8_t *dst, const uint8_t *src, int64_t n, uint64_t flip)
{
    uint64_t any = 0, v;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, src + i, 8);
        any |= v;
        v ^= flip;
        memcpy(dst + i, &v, 8);
    }
    for (; i < n; i++) {
        any |= src[i];
        dst[i] = src[i] ^ (uint8_t)flip;
    }
    return any;
}

/* Padded row r of image i: its pixels' bytes ^ flip, flip around (a zero
 * either way). */
static void pad_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct pad_job *j = arg;
    const struct k_conv2d *p = j->p;
    const int64_t cp = j->d.cp, wp = j->d.wp, img = task / j->d.hp, r = task % j->d.hp, ih = r - p->pad_t;
    const int64_t c = p->c, w = p->w;
    const uint8_t flip = j->flip;
    uint8_t *dst = j->xp + task * wp * cp;
    if (ih < 0 || ih >= p->h) {
        memset(dst, flip, (size_t)(wp * cp));
        j->neg[task] = 0;
        return;
    }
    const int64_t left = p->pad_l * cp, used = kcpu_min64(w, wp - p->pad_l) * cp;
    memset(dst, flip, (size_t)left);
    memset(dst + left + used, flip, (size_t)(wp * cp - left - used));
    uint8_t *row = dst + left;
    const int64_t pixels = used / cp;
    uint8_t any = 0;   /* the OR of the bytes read: bit 7 where one is negative */
    if (j->x_nchw && j->avx2) {
        const uint8_t *src = (const uint8_t *)j->x + (img * c * p->h + ih) * w;
        any = kq8_nhwc_rows_from_nchw_avx2(src, p->h * w, c, cp, pixels, flip, row);
    } else if (j->x_nchw) {   /* channel by channel: each reads one row of its plane */
        const uint8_t *src = (const uint8_t *)j->x + (img * c * p->h + ih) * w;
        for (int64_t ch = 0; ch < cp; ch++)
            for (int64_t iw = 0; iw < pixels; iw++) {
                const uint8_t v = ch < c ? src[ch * p->h * w + iw] : 0;
                any |= v;
                row[iw * cp + ch] = v ^ flip;
            }
    } else if (cp == c && j->avx2) {
        any = kq8_nhwc_copy_flip_avx2(row, (const uint8_t *)j->x + (img * p->h + ih) * w * c, used, flip);
    } else if (cp == c) {
        const uint8_t *src = (const uint8_t *)j->x + (img * p->h + ih) * w * c;
        any = (copy_flip(row, src, used, flip * 0x0101010101010101u) & 0x8080808080808080u) ? 0x80 : 0;
    } else {
        const uint8_t *src = (const uint8_t *)j->x + (img * p->h + ih) * w * c;
        for (int64_t iw = 0; iw < pixels; iw++) {
            for (int64_t ch = 0; ch < c; ch++) {
                any |= src[iw * c + ch];
                row[iw * cp + ch] = src[iw * c + ch] ^ flip;
            }
            for (int64_t ch = c; ch < cp; ch++)
                row[iw * cp + ch] = flip;
        }
    }
    j->neg[task] = any >> 7;
}

/* ------------------------------------------------------------ tiles */

struct conv_job {
    const struct k_conv2d *p;
    struct geom d;
    const uint8_t *xp;
    const int8_t *w;
    const int32_t *wsum;
    const int64_t *toff;
    const void *consts;
    const struct k_q8_epilogue *e;
    const int8_t *res;
    void *y;
    const uint8_t *neg;        /* pad_job's */
    int vecs;                  /* blocks per tile */
    int64_t groups;            /* block groups: ceil(blocks / vecs) */
    enum kq8_nhwc_path path;
    int amx;                   /* AVX-512's tiles in AMX tile registers (amx_takes) */
    int amx_pairs;             /* and two pixel tiles a call (quads a multiple of 16) */
    int x_signed;              /* and x read as it is (kq8_nhwc_tile's x_signed) */
    int64_t rows_per_task;     /* output rows a task takes: 1, or 2 for AMX pairs on rows of <= 16 */
    int64_t row_tasks;         /* ceil(oh / rows_per_task) */
    int groups_inner;          /* consecutive tasks: a row's block groups, else a group's rows */
};

/* AMX takes a layer of at least 16 input channels (4 quads): with fewer,
 * each tap's step is a tile instruction for 4 to 12 bytes of K, and the
 * VNNI tile ran the stems faster (3 -> 64 7x7: 0.40x, 1 -> 16: 0.82x on AMX,
 * build/bench_int8_layout, docs/performance.md). */
#define AMX_MIN_QUADS 4

static int amx_takes(const struct geom *d)
{
    return d->cp / 4 >= AMX_MIN_QUADS && kq8_amx();
}

int kcpu_conv2d_q8_nhwc_on_amx(const struct k_conv2d *p)
{
    const struct geom d = geom_of(p);
    return !kq8_dwn_applies(p) && amx_takes(&d);
}

/* The plain-C tile: the same sums (unflipped bytes, from the bias) and
 * the epilogue of kernel_quant.h. */
static void tile_scalar(const struct conv_job *j, const struct kq8_nhwc_tile *t, int vecs, int pixels)
{
    const struct k_q8_epilogue *e = j->e;
    for (int r = 0; r < pixels; r++)
        for (int l = 0; l < vecs * 16 && l < t->oc_left; l++) {
            const int64_t o = (int64_t)t->block0 * 16 + l, b = o / 16;
            int32_t acc = e->bias[o];
            for (int k = 0; k < t->taps; k++)
                for (int64_t q = 0; q < t->quads; q++)
                    for (int i = 0; i < 4; i++)
                        acc += (int8_t)t->x[r * t->xs + t->toff[k] + 4 * q + i] *
                               j->w[b * j->d.wblock + ((k * t->quads + q) * 16 + o % 16) * 4 + i];
            const int64_t at = r * t->oc + l;
            if (e->out_i32)
                ((int32_t *)t->y)[at] = acc;
            else if (t->res)
                ((int8_t *)t->y)[at] = k_q8_requant_res(acc, 0, e->mult[o], t->res[at], e->res_mult, e->lo, e->hi);
            else
                ((int8_t *)t->y)[at] = k_q8_requant(acc, 0, e->mult[o], e->lo, e->hi);
        }
}

/* A 1x1 stride-1 unpadded layer on channels-last input is one GEMM over
 * the batch's pixels, which lie as rows of any width would. AMX tiles take
 * up to 16 pixels of one row, so on AMX rows of at most 8 (a 7x7 map: 7
 * of 16) are cut anew: the fewest images g that divide the batch and whose
 * pixels make rows wider, each as wide as divides them, at most 16 (g = 2
 * on 7x7 maps: 7 rows of 14). A task still reads one such image's input
 * (the whole batch as one image read it again for every block group:
 * ResNet-50's 1024 -> 256 layers at batch 16 ran 1.7x slower, and on
 * 14x14 maps, 14 of 16 lanes full already, the layers gained nothing).
 * The same bytes in the same places; p itself where nothing changes. */
static const struct k_conv2d *flat_1x1(const struct k_conv2d *p, struct k_conv2d *flat)
{
    const struct geom d = geom_of(p);
    if (p->kh != 1 || p->kw != 1 || p->stride_h != 1 || p->stride_w != 1 || p->pad_t != 0 || p->pad_l != 0 ||
        p->oh != p->h || p->ow != p->w || 2 * p->ow > KQ8_NHWC_AMX_PIX || !amx_takes(&d))
        return p;
    for (int64_t g = 1; g <= p->n; g++) {
        const int64_t pixels = g * p->oh * p->ow;
        for (int64_t width = KQ8_NHWC_AMX_PIX; p->n % g == 0 && width > p->ow; width--)
            if (pixels % width == 0) {
                *flat = *p;
                flat->n = (int)(p->n / g);
                flat->h = flat->oh = (int)(pixels / width);
                flat->w = flat->ow = (int)width;
                return flat;
            }
    }
    return p;
}

/* AMX: output rows [row, row + rows) of image img for the block group
 * from b0, in tiles of min(16, ow) pixels (one tile configuration per
 * layer): a row's last tile ends at its end and recomputes outputs its
 * neighbour wrote, with the same bytes (y is never x or the residual: the
 * plan gives a step's output a buffer of its own). With pairs, the tiles
 * run two at a time, across rows where a row holds one. */
static void amx_row_tiles(const struct conv_job *j, const struct kq8_nhwc_tile *proto, int64_t img, int64_t row,
                          int64_t rows, int64_t b0, int vecs)
{
    const struct k_conv2d *p = j->p;
    const int pixels = (int)kcpu_min64(KQ8_NHWC_AMX_PIX, p->ow);
    const int elem = j->e->out_i32 ? 4 : 1;
    struct kq8_nhwc_tile t[2] = {*proto, *proto};
    int pending = 0;
    for (int64_t r = row; r < row + rows; r++)
        for (int64_t c0 = 0; c0 < p->ow; c0 += pixels) {
            const int64_t col = kcpu_min64(c0, p->ow - pixels);
            const int64_t out = ((img * p->oh + r) * p->ow + col) * p->oc + b0 * 16;
            struct kq8_nhwc_tile *u = &t[pending];
            u->x = j->xp + ((img * j->d.hp + r * p->stride_h) * j->d.wp) * j->d.cp + col * u->xs;
            u->res = j->res ? j->res + out : NULL;
            u->y = (int8_t *)j->y + out * elem;
            if (!j->amx_pairs)
                kq8_nhwc_tile_amx(u, vecs, pixels);
            else if (++pending == 2) {
                kq8_nhwc_pair_amx(&t[0], &t[1], vecs, pixels);
                pending = 0;
            }
        }
    if (pending)
        kq8_nhwc_pair_amx(&t[0], NULL, vecs, pixels);
}

/* One output row of one image for one block group, in tiles of as even a
 * width as the row allows. */
static void conv_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct conv_job *j = arg;
    const struct k_conv2d *p = j->p;
    const int64_t g = j->groups_inner ? task % j->groups : task / j->row_tasks % j->groups;
    const int64_t oh = p->oh, row = (j->groups_inner ? task / j->groups : task) % j->row_tasks * j->rows_per_task,
                  img = task / j->row_tasks / j->groups;
    const int64_t b0 = g * j->vecs;
    const int vecs = (int)kcpu_min64(j->vecs, j->d.blocks - b0);
    /* AVX2: the unsigned form where no row the tile reads has a negative byte */
    int nonneg = 1;
    for (int64_t ki = 0; j->path == KQ8_NHWC_AVX2 && ki < p->kh; ki++)
        nonneg &= !j->neg[img * j->d.hp + row * p->stride_h + ki * p->dil_h];
    const int64_t most = j->path != KQ8_NHWC_AVX2 ? kq8_nhwc_max_pixels(vecs)
                         : nonneg             ? KQ8_NHWC_AVX2_MAX_PIX
                                              : KQ8_NHWC_AVX2_MAX_PIX_SIGNED;
    const int64_t ntiles = kcpu_ceil_div(p->ow, most);
    const int64_t out0 = ((img * oh + row) * p->ow) * p->oc + b0 * 16;
    struct kq8_nhwc_tile t = {
        .xs = (int64_t)p->stride_w * j->d.cp,
        .toff = j->toff,
        .taps = j->d.taps,
        .quads = j->d.cp / 4,
        .w = j->w + b0 * j->d.wblock,
        .wblock = j->d.wblock,
        .consts = j->consts,
        .block0 = (int)b0,
        .e = j->e,
        .oc = p->oc,
        .oc_left = (int)(p->oc - b0 * 16),
        .x_signed = j->x_signed,
    };
    const uint8_t *xrow = j->xp + ((img * j->d.hp + row * p->stride_h) * j->d.wp) * j->d.cp;
    const int elem = j->e->out_i32 ? 4 : 1;
    if (j->amx) {
        amx_row_tiles(j, &t, img, row, kcpu_min64(j->rows_per_task, oh - row), b0, vecs);
        return;
    }
    for (int64_t i = 0, col = 0; i < ntiles; i++) {
        const int pixels = (int)(p->ow / ntiles + (i < p->ow % ntiles));
        t.x = xrow + col * t.xs;
        t.res = j->res ? j->res + out0 + col * p->oc : NULL;
        t.y = (int8_t *)j->y + (out0 + col * p->oc) * elem;
        if (j->path == KQ8_NHWC_AVX512)
            kq8_nhwc_tile_avx512(&t, vecs, pixels);
        else if (j->path == KQ8_NHWC_AVX2)
            kq8_nhwc_tile_avx2(&t, pixels, nonneg);
        else
            tile_scalar(j, &t, vecs, pixels);
        col += pixels;
    }
}

void kcpu_conv2d_q8_nhwc(struct kcpu_threads *th, const struct k_conv2d *p, const int8_t *x, int x_nchw,
                         const void *packed_w, const struct k_q8_epilogue *e, const int8_t *residual, void *y,
                         void *scratch)
{
    if (kq8_dwn_applies(p)) {
        int8_t *xt = kcpu_align64(scratch);
        const int64_t hw = (int64_t)p->h * p->w;
        for (int64_t i = 0; x_nchw && i < p->n; i++) {
            const int8_t *src = x + i * p->c * hw;
            int8_t *dst = xt + i * hw * p->c;
            if (kq8_nhwc_path() != KQ8_NHWC_SCALAR)
                kq8_nhwc_rows_from_nchw_avx2((const uint8_t *)src, hw, p->c, p->c, hw, 0, (uint8_t *)dst);
            else
                for (int64_t ch = 0; ch < p->c; ch++)
                    for (int64_t px = 0; px < hw; px++)
                        dst[px * p->c + ch] = src[ch * hw + px];
        }
        kq8_dwn_conv(th, p, x_nchw ? xt : x, packed_w, e, residual, y, xt + dw_x_bytes(p));
        return;
    }
    if (p->n <= 0 || p->oc <= 0 || p->oh <= 0 || p->ow <= 0)
        return;
    struct k_conv2d flat;
    if (!x_nchw)
        p = flat_1x1(p, &flat);
    struct geom d = geom_of(p);
    const enum kq8_nhwc_path path = kq8_nhwc_path();
    uint8_t *s = kcpu_align64(scratch);
    const int amx = amx_takes(&d);
    /* AMX multiplies signed bytes too (TDPBSSD): where the padded copy
     * would be x itself (channels last, no padding, channels whole quads)
     * the tiles read x as it is, and the consts leave out the sign flip's
     * correction. The copy was a pass over the input of its own: 38 % of a
     * 256 -> 64 1x1 layer on a 56x56 map, 30 % at 64 bytes a step. */
    const int x_signed = amx && !x_nchw && d.cp == p->c && d.hp == p->h && d.wp == p->w;
    struct pad_job pj = {.p = p, .d = d, .x = x, .x_nchw = x_nchw, .avx2 = path != KQ8_NHWC_SCALAR, .flip = path == KQ8_NHWC_AVX512 ? 0x80 : 0,
                         .xp = s, .neg = s + padded_bytes(p, &d)};
    if (!x_signed)   /* (so are the rows' sign flags, pj.neg: only the AVX2 tile reads them) */
        kcpu_threads_run(th, p->n * d.hp, pad_task, &pj);
    s += padded_bytes(p, &d) + neg_bytes(p, &d);

    struct conv_job j = {.p = p, .d = d, .xp = x_signed ? (const uint8_t *)x : pj.xp, .w = packed_w, .e = e, .res = residual, .y = y,
                         .neg = pj.neg, .path = path, .amx = amx, .x_signed = x_signed};
    j.wsum = (const int32_t *)(j.w + d.blocks * d.wblock);
    if (path == KQ8_NHWC_AVX512)
        kq8_nhwc_consts_avx512(e->bias, x_signed ? NULL : j.wsum, e->mult, p->oc, e, residual != NULL, s);
    else if (path == KQ8_NHWC_AVX2)
        kq8_nhwc_consts_avx2(e->bias, e->mult, p->oc, e, residual != NULL, s);
    j.consts = s;
    s += KQ8_NHWC_CONSTS_BYTES(d.blocks);
    int64_t *toff = (int64_t *)s;
    for (int ki = 0; ki < p->kh; ki++)
        for (int kj = 0; kj < p->kw; kj++)
            toff[ki * p->kw + kj] = ((int64_t)ki * p->dil_h * d.wp + (int64_t)kj * p->dil_w) * d.cp;
    j.toff = toff;
    /* widest tiles, unless that leaves too few tasks to share */
    const int64_t want = 4 * (int64_t)kcpu_threads_count(th);
    j.amx_pairs = j.amx && d.cp % 64 == 0;
    j.rows_per_task = j.amx_pairs && p->ow <= KQ8_NHWC_AMX_PIX ? 2 : 1;
    j.row_tasks = kcpu_ceil_div(p->oh, j.rows_per_task);
    j.vecs = path == KQ8_NHWC_AVX2 ? 1 : (int)kcpu_min64(j.amx_pairs ? 2 : 4, d.blocks);
    while (j.vecs > 1 && (int64_t)p->n * j.row_tasks * kcpu_ceil_div(d.blocks, j.vecs) < want)
        j.vecs--;
    j.groups = kcpu_ceil_div(d.blocks, j.vecs);
    /* The operand read again is the smaller: with a row's groups in turn,
     * every row task reads all the weights; with a group's rows in turn,
     * every group reads the image's output lines (each holds 4 blocks'
     * bytes, or 1 as int32) and its residual. */
    const int64_t act_bytes = (int64_t)p->oh * p->ow * p->oc * ((e->out_i32 ? 4 : 1) + (residual != NULL));
    j.groups_inner = j.row_tasks * d.blocks * d.wblock < j.groups * act_bytes;
    kcpu_threads_run(th, p->n * j.groups * j.row_tasks, conv_task, &j);
}

/* ------------------------------------------------------------ pooling */

struct pool_job {
    const struct k_pool2d *p;
    const int8_t *x;
    int8_t *y;
    struct k_q8_mult mult;
    int64_t hw, c;
};

/* One output row of one image: every channel of each pixel at once. */
static void max_pool_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct pool_job *j = arg;
    const struct k_pool2d *p = j->p;
    const int64_t c = p->c, img = task / p->oh, oy = task % p->oh;
    const int8_t *x = j->x + img * p->h * p->w * c;
    int8_t *out = j->y + task * p->ow * c;
    if (kcpu_isa() == KCPU_ISA_AVX512) {
        kcpu_max_pool_nhwc_row_q8_avx512(p, x, oy, out);
        return;
    }
    for (int64_t ox = 0; ox < p->ow; ox++, out += c) {
        memset(out, K_Q8_MIN, (size_t)c);
        for (int64_t ki = 0; ki < p->kh; ki++) {
            const int64_t ih = oy * p->stride_h - p->pad_t + ki * p->dil_h;
            if (ih < 0 || ih >= p->h)
                continue;
            for (int64_t kj = 0; kj < p->kw; kj++) {
                const int64_t iw = ox * p->stride_w - p->pad_l + kj * p->dil_w;
                if (iw < 0 || iw >= p->w)
                    continue;
                const int8_t *in = x + (ih * p->w + iw) * c;
                for (int64_t ch = 0; ch < c; ch++)
                    if (in[ch] > out[ch])
                        out[ch] = in[ch];
            }
        }
    }
}

void kcpu_max_pool2d_q8_nhwc(struct kcpu_threads *th, const struct k_pool2d *p, const int8_t *x, int8_t *y)
{
    struct pool_job j = {.p = p, .x = x, .y = y};
    kcpu_threads_run(th, (int64_t)p->n * p->oh, max_pool_task, &j);
}

#define GAP_CHANNELS 256   /* channels summed at once, on the stack */

/* Up to GAP_CHANNELS channels of one image. */
static void global_avg_task(void *arg, int64_t task, int thread)
{
    (void)thread;
    const struct pool_job *j = arg;
    const int64_t chunks = kcpu_ceil_div(j->c, GAP_CHANNELS), img = task / chunks;
    const int64_t c0 = task % chunks * GAP_CHANNELS, nc = kcpu_min64(GAP_CHANNELS, j->c - c0);
    int32_t sum[GAP_CHANNELS] = {0};
    const int8_t *x = j->x + img * j->hw * j->c;
    if (kcpu_isa() == KCPU_ISA_AVX512)
        kcpu_sum_pixels_nhwc_q8_avx512(j->hw, j->c, x, c0, nc, sum);
    else
        for (int64_t i = 0; i < j->hw; i++)
            for (int64_t ch = 0; ch < nc; ch++)
                sum[ch] += x[i * j->c + c0 + ch];
    for (int64_t ch = 0; ch < nc; ch++)
        j->y[img * j->c + c0 + ch] = k_q8_clamp(k_q8_apply(sum[ch], j->mult), K_Q8_MIN, K_Q8_MAX);
}

void kcpu_global_avg_pool_q8_nhwc(struct kcpu_threads *th, int n, int c, int64_t hw, struct k_q8_mult mult,
                                  const int8_t *x, int8_t *y)
{
    struct pool_job j = {.x = x, .y = y, .mult = mult, .hw = hw, .c = c};
    kcpu_threads_run(th, n * kcpu_ceil_div(c, GAP_CHANNELS), global_avg_task, &j);
}
