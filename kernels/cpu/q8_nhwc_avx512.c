/*
 * q8_nhwc_avx512.c - the channels-last INT8 convolution's tile and its
 * epilogue constants (kcpu_q8_nhwc.h), on AVX-512 VNNI. Entered only
 * through kcpu_conv2d_q8_nhwc after the run-time ISA check.
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
        kq8_lanes16_of(bias + b * 16, wsum + b * 16, mult + b * 16, (int)kcpu_min64(16, oc - b * 16),
                       (struct kq8_lanes16 *)(c + KQ8_NHWC_CONSTS_BYTES(b)));
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
    const uint8_t *c = t->consts;
    const struct kq8_lane_epi *ep = (const struct kq8_lane_epi *)c;
#pragma GCC unroll 4
    for (int64_t v = 0; v < vecs; v++) {
        const struct kq8_lanes16 *l = (const struct kq8_lanes16 *)(c + KQ8_NHWC_CONSTS_BYTES((int64_t)t->block0 + v));
        const int left = t->oc_left - 16 * (int)v;
        const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 24
        for (int64_t r = 0; r < pixels; r++) {
            const __m512i s = _mm512_add_epi32(acc[v][r], l->init);
            const int64_t at = r * t->oc + 16 * v;
            if (t->e->out_i32) {
                _mm512_mask_storeu_epi32((int32_t *)t->y + at, m, s);
                continue;
            }
            const __m512i res = ep->has_res ? _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, t->res + at))
                                            : _mm512_setzero_si512();
            _mm_mask_storeu_epi8((int8_t *)t->y + at, m, _mm512_cvtepi32_epi8(kq8_lanes_requant(s, l, ep, res)));
        }
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
