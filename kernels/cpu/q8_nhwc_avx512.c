/*
 * q8_nhwc_avx512.c - the channels-last INT8 convolution's tiles and their
 * epilogue (kcpu_q8_nhwc.h) on AVX-512 VNNI, and the same tiles' sums in
 * AMX tile registers where the CPU has AMX-INT8 (the section AMX below).
 * Entered only through kcpu_conv2d_q8_nhwc after the run-time ISA check.
 *
 * Per tap and input quad: one 64-byte weight vector per block (16 output
 * channels by 4 input channels), one 32-bit broadcast per pixel (its four
 * input bytes, already sign-flipped), vecs * pixels vpdpbusd. vpdpbusd's
 * broadcast operand is the signed one, so the pixel's unsigned bytes are
 * broadcast by a separate load. Each (vecs, pixels) is its own function so
 * the accumulators stay in registers.
 */
#include "kcpu_q8_avx512.h"
#include "kcpu_q8_nhwc.h"

_Static_assert(sizeof(struct kq8_lane_epi) <= KQ8_NHWC_EPI_BYTES, "the epilogue's shared constants fit");
_Static_assert(sizeof(struct kq8_lanes16) <= KQ8_NHWC_LANES_BYTES, "a block's lanes fit");

void kq8_nhwc_consts_avx512(const int32_t *bias, const int32_t *wsum, const struct k_q8_mult *mult, int oc,
                            const struct k_q8_epilogue *e, int has_res, void *consts)
{
    uint8_t *c = consts;
    *(struct kq8_lane_epi *)c = kq8_lane_epi_of(e, has_res);
    for (int64_t b = 0; b * 16 < oc; b++)
        kq8_lanes16_of(bias + b * 16, wsum ? wsum + b * 16 : NULL, mult + b * 16, (int)kcpu_min64(16, oc - b * 16),
                       (struct kq8_lanes16 *)(c + KQ8_NHWC_CONSTS_BYTES(b)));
}

/* The epilogue of one block over pixels, its form fixed: the 32-bit
 * requantisation or the 64-bit one, with or without a residual. */
static inline __attribute__((always_inline)) void block_loop(const int hi33, const int has_res, const int32_t *sums,
                                                             int pixels, const struct kq8_lanes16 *l,
                                                             const struct kq8_lane_epi *ep, __mmask16 m, int64_t oc,
                                                             const int8_t *res, int8_t *y)
{
    /* all 16 lanes: plain loads and stores, masked ones took a quarter of a
     * 64 -> 256 1x1 layer's time on Zen 5 (docs/performance.md) */
    const int full = m == 0xFFFF;
    for (int64_t r = 0; r < pixels; r++) {
        const __m512i s = _mm512_add_epi32(_mm512_load_si512(sums + 16 * r), l->init);
        const __m512i rv = has_res ? _mm512_cvtepi8_epi32(full ? _mm_loadu_si128((const __m128i *)(res + r * oc))
                                                               : _mm_maskz_loadu_epi8(m, res + r * oc))
                                   : _mm512_setzero_si512();
        const __m512i q =
            hi33 ? kq8_lanes_requant_hi33(s, l, ep, has_res, rv) : kq8_lanes_requant_wide(s, l, ep, has_res, rv);
        if (full)
            _mm_storeu_si128((__m128i *)(y + r * oc), _mm512_cvtepi32_epi8(q));
        else
            _mm_mask_storeu_epi8(y + r * oc, m, _mm512_cvtepi32_epi8(q));
    }
}

/* Block v of tile t through the epilogue: each pixel's 16 sums (sums, 16
 * int32 apart) plus bias and the sign flip's correction, requantised, with
 * the residual, clamped, stored (lanes past oc masked off). What it reads
 * of t and of the consts is copied to locals first (an int8 store may
 * alias anything, and the compiler reloaded every field around each one),
 * and the loop is one of four, its form fixed outside it. */
static inline __attribute__((always_inline)) void block_out(const struct kq8_nhwc_tile *t, int v, const int32_t *sums,
                                                            int pixels)
{
    const uint8_t *c = t->consts;
    const struct kq8_lane_epi ep = *(const struct kq8_lane_epi *)c;
    const struct kq8_lanes16 l = *(const struct kq8_lanes16 *)(c + KQ8_NHWC_CONSTS_BYTES((int64_t)t->block0 + v));
    const int left = t->oc_left - 16 * v;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    const int64_t oc = t->oc;
    if (t->e->out_i32) {
        int32_t *y = (int32_t *)t->y + 16 * (int64_t)v;
        for (int64_t r = 0; r < pixels; r++)
            _mm512_mask_storeu_epi32(y + r * oc, m, _mm512_add_epi32(_mm512_load_si512(sums + 16 * r), l.init));
        return;
    }
    int8_t *y = (int8_t *)t->y + 16 * (int64_t)v;
    const int8_t *res = ep.has_res ? t->res + 16 * (int64_t)v : NULL;
    if (kq8_lanes_hi33(&l, &ep)) {
        if (res)
            block_loop(1, 1, sums, pixels, &l, &ep, m, oc, res, y);
        else
            block_loop(1, 0, sums, pixels, &l, &ep, m, oc, res, y);
    } else if (res) {
        block_loop(0, 1, sums, pixels, &l, &ep, m, oc, res, y);
    } else {
        block_loop(0, 0, sums, pixels, &l, &ep, m, oc, res, y);
    }
}

static inline __attribute__((always_inline)) void tile(const int vecs, const int pixels,
                                                       const struct kq8_nhwc_tile *t)
{
    __m512i acc[4][KQ8_NHWC_MAX_PIX];
#pragma GCC unroll 24
    for (int64_t r = 0; r < pixels; r++)
#pragma GCC unroll 4
        for (int64_t v = 0; v < vecs; v++)
            acc[v][r] = _mm512_setzero_si512();
    const int64_t xs = t->xs, quads = t->quads, wb = t->wblock;
    const int8_t *w = t->w;
    for (int k = 0; k < t->taps; k++) {
        const uint8_t *x = t->x + t->toff[k];
        for (int64_t q = 0; q < quads; q++, x += 4, w += 64) {
            __m512i wv[4];
#pragma GCC unroll 4
            for (int64_t v = 0; v < vecs; v++)
                wv[v] = _mm512_loadu_si512(w + v * wb);
#pragma GCC unroll 24
            for (int64_t r = 0; r < pixels; r++) {
                int32_t quad;
                __builtin_memcpy(&quad, x + r * xs, 4);
                const __m512i b = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
                for (int64_t v = 0; v < vecs; v++)
                    acc[v][r] = _mm512_dpbusd_epi32(acc[v][r], b, wv[v]);
            }
        }
    }
    int32_t sums[KQ8_NHWC_MAX_PIX][16] __attribute__((aligned(64)));
#pragma GCC unroll 4
    for (int64_t v = 0; v < vecs; v++) {
#pragma GCC unroll 24
        for (int64_t r = 0; r < pixels; r++)
            _mm512_store_si512(sums[r], acc[v][r]);
        block_out(t, (int)v, sums[0], pixels);
    }
}

typedef void (*tile_fn)(const struct kq8_nhwc_tile *t);
#define TILE_FN(V, P) \
    static void tile_##V##_##P(const struct kq8_nhwc_tile *t) { tile(V, P, t); }
#define UP_TO_6(X, V) X(V, 1) X(V, 2) X(V, 3) X(V, 4) X(V, 5) X(V, 6)
#define UP_TO_8(X, V) UP_TO_6(X, V) X(V, 7) X(V, 8)
#define UP_TO_12(X, V) UP_TO_8(X, V) X(V, 9) X(V, 10) X(V, 11) X(V, 12)
#define UP_TO_24(X, V) UP_TO_12(X, V) X(V, 13) X(V, 14) X(V, 15) X(V, 16) X(V, 17) X(V, 18) \
    X(V, 19) X(V, 20) X(V, 21) X(V, 22) X(V, 23) X(V, 24)
UP_TO_24(TILE_FN, 1)
UP_TO_12(TILE_FN, 2)
UP_TO_8(TILE_FN, 3)
UP_TO_6(TILE_FN, 4)

#define TILE_ENTRY(V, P) tile_##V##_##P,
static const tile_fn TILES1[] = {UP_TO_24(TILE_ENTRY, 1)};
static const tile_fn TILES2[] = {UP_TO_12(TILE_ENTRY, 2)};
static const tile_fn TILES3[] = {UP_TO_8(TILE_ENTRY, 3)};
static const tile_fn TILES4[] = {UP_TO_6(TILE_ENTRY, 4)};
static const tile_fn *const TILES[5] = {NULL, TILES1, TILES2, TILES3, TILES4};

void kq8_nhwc_tile_avx512(const struct kq8_nhwc_tile *t, int vecs, int pixels)
{
    TILES[vecs][pixels - 1](t);
}

/* ------------------------------------------------------------ AMX */
/* A layer whose quads are a multiple of 16 runs pairs of pixel tiles by
 * two blocks: tiles 0-3 the sums (pixel tile i, block v in tile 2 i + v),
 * 4 and 5 the two pixel tiles' 64 bytes of a step (A), 6 and 7 the two
 * blocks' weights for it (B): four loads feed four TDPBUSD, and each
 * block's weights serve 32 pixels (against single tiles: 0.99-1.08x per
 * ResNet-50 layer at batch 16, 0.97-1.04x at batch 1; what limits AMX here
 * is not known, docs/performance.md). Otherwise one pixel tile by up to
 * four blocks:
 * 0-3 the sums, 4 and 5 a whole step's A and B (B reloaded per block), 6
 * and 7 the last, partial step (A: tail quads a row; B: tail rows). */
struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

static void amx_shape(struct amx_config *c, int tile, int rows, int colsb)
{
    c->rows[tile] = (uint8_t)rows;
    c->colsb[tile] = (uint16_t)colsb;
}

/* What this thread's tile registers were last configured as: LDTILECFG
 * zeroes every tile and costs more than a small tile's work, so a thread
 * reloads only when a layer's shapes differ from the last one's. */
static _Thread_local struct amx_config loaded;

static void amx_configure(int pixels, int tail, int pairs)
{
    struct amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 4; i++)
        amx_shape(&c, i, pixels, 64);
    amx_shape(&c, 4, pixels, 64);
    if (pairs) {
        amx_shape(&c, 5, pixels, 64);
        amx_shape(&c, 6, 16, 64);
        amx_shape(&c, 7, 16, 64);
    } else {
        amx_shape(&c, 5, 16, 64);
        if (tail) {
            amx_shape(&c, 6, pixels, 4 * tail);
            amx_shape(&c, 7, tail, 64);
        }
    }
    if (memcmp(&c, &loaded, sizeof c) != 0) {
        _tile_loadconfig(&c);
        loaded = c;
    }
}

/* The sums of tile register R (pixels rows of 16 lanes) through the
 * epilogue as block v of tile t. */
#define AMX_OUT(R, T, V, PIXELS)                             \
    do {                                                     \
        int32_t sums_[16][16] __attribute__((aligned(64))); \
        _tile_stored(R, sums_, 64);                          \
        block_out(T, V, sums_[0], PIXELS);                   \
    } while (0)

/* C += A B, A's bytes signed (sx: x as it is) or flipped to unsigned. */
#define AMX_DP(C, A, B)              \
    do {                             \
        if (sx)                      \
            _tile_dpbssd(C, A, B);   \
        else                         \
            _tile_dpbusd(C, A, B);   \
    } while (0)

/* One pixel tile by vecs blocks; B for block V into tile B, then C[V] += A B. */
#define AMX_STEP(V, A, B, W)                                               \
    if (vecs > (V)) {                                                      \
        _tile_loadd(B, (W) + (V) * wb, 64);                                \
        AMX_DP(V, A, B);                                                   \
    }

static inline __attribute__((always_inline)) void amx_single(const int vecs, const int sx,
                                                             const struct kq8_nhwc_tile *t, int pixels)
{
    const int64_t whole = t->quads / 16, tail = t->quads % 16, xs = t->xs, wb = t->wblock;
    amx_configure(pixels, (int)tail, 0);
    _tile_zero(0);
    if (vecs > 1)
        _tile_zero(1);
    if (vecs > 2)
        _tile_zero(2);
    if (vecs > 3)
        _tile_zero(3);
    for (int k = 0; k < t->taps; k++) {
        const uint8_t *x = t->x + t->toff[k];
        const int8_t *w = t->w + (int64_t)k * t->quads * 64;
        for (int64_t s = 0; s < whole; s++, x += 64, w += (int64_t)16 * 64) {
            _tile_loadd(4, x, xs);
            AMX_STEP(0, 4, 5, w)
            AMX_STEP(1, 4, 5, w)
            AMX_STEP(2, 4, 5, w)
            AMX_STEP(3, 4, 5, w)
        }
        if (tail) {
            _tile_loadd(6, x, xs);
            AMX_STEP(0, 6, 7, w)
            AMX_STEP(1, 6, 7, w)
            AMX_STEP(2, 6, 7, w)
            AMX_STEP(3, 6, 7, w)
        }
    }
    AMX_OUT(0, t, 0, pixels);
    if (vecs > 1)
        AMX_OUT(1, t, 1, pixels);
    if (vecs > 2)
        AMX_OUT(2, t, 2, pixels);
    if (vecs > 3)
        AMX_OUT(3, t, 3, pixels);
}

/* Two pixel tiles (t1 NULL: t0 alone) by vecs (1 or 2) blocks, quads a
 * multiple of 16. Both tiles share the weights and consts; only x, y and
 * res differ. */
static inline __attribute__((always_inline)) void amx_pair(const int vecs, const int sx,
                                                           const struct kq8_nhwc_tile *t0,
                                                           const struct kq8_nhwc_tile *t1, int pixels)
{
    const int64_t steps = t0->quads / 16, xs = t0->xs, wb = t0->wblock;
    amx_configure(pixels, 0, 1);
    _tile_zero(0);
    if (vecs > 1)
        _tile_zero(1);
    if (t1) {
        _tile_zero(2);
        if (vecs > 1)
            _tile_zero(3);
    }
    for (int k = 0; k < t0->taps; k++) {
        const uint8_t *x0 = t0->x + t0->toff[k], *x1 = t1 ? t1->x + t0->toff[k] : NULL;
        const int8_t *w = t0->w + (int64_t)k * t0->quads * 64;
        for (int64_t s = 0; s < steps; s++, w += (int64_t)16 * 64) {
            _tile_loadd(4, x0 + 64 * s, xs);
            _tile_loadd(6, w, 64);
            AMX_DP(0, 4, 6);
            if (vecs > 1) {
                _tile_loadd(7, w + wb, 64);
                AMX_DP(1, 4, 7);
            }
            if (t1) {
                _tile_loadd(5, x1 + 64 * s, xs);
                AMX_DP(2, 5, 6);
                if (vecs > 1)
                    AMX_DP(3, 5, 7);
            }
        }
    }
    AMX_OUT(0, t0, 0, pixels);
    if (vecs > 1)
        AMX_OUT(1, t0, 1, pixels);
    if (t1) {
        AMX_OUT(2, t1, 0, pixels);
        if (vecs > 1)
            AMX_OUT(3, t1, 1, pixels);
    }
}

#define AMX_SINGLE(V, SX) \
    static void amx_single_##V##_##SX(const struct kq8_nhwc_tile *t, int pixels) { amx_single(V, SX, t, pixels); }
AMX_SINGLE(1, 0)
AMX_SINGLE(2, 0)
AMX_SINGLE(3, 0)
AMX_SINGLE(4, 0)
AMX_SINGLE(1, 1)
AMX_SINGLE(2, 1)
AMX_SINGLE(3, 1)
AMX_SINGLE(4, 1)
#undef AMX_SINGLE

void kq8_nhwc_tile_amx(const struct kq8_nhwc_tile *t, int vecs, int pixels)
{
    static void (*const SINGLE[2][5])(const struct kq8_nhwc_tile *, int) = {
        {NULL, amx_single_1_0, amx_single_2_0, amx_single_3_0, amx_single_4_0},
        {NULL, amx_single_1_1, amx_single_2_1, amx_single_3_1, amx_single_4_1}};
    SINGLE[t->x_signed != 0][vecs](t, pixels);
}

void kq8_nhwc_pair_amx(const struct kq8_nhwc_tile *t0, const struct kq8_nhwc_tile *t1, int vecs, int pixels)
{
    if (t0->x_signed && vecs == 1)
        amx_pair(1, 1, t0, t1, pixels);
    else if (t0->x_signed)
        amx_pair(2, 1, t0, t1, pixels);
    else if (vecs == 1)
        amx_pair(1, 0, t0, t1, pixels);
    else
        amx_pair(2, 0, t0, t1, pixels);
}
