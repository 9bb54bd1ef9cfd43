/*
 * q8_nhwc_avx2.c - the channels-last INT8 convolution's tile and its
 * epilogue constants (kcpu_q8_nhwc.h), on AVX2, for CPUs without AVX-512
 * VNNI. Entered only through kcpu_conv2d_q8_nhwc after the run-time ISA
 * check.
 *
 * A tile is one block of 16 output channels (two ymm of weights: 8
 * channels by 4 input channels each) by up to 5 pixels. The padded x is not
 * sign-flipped here (padding is 0). Per tap and input quad, each pixel's
 * four bytes are broadcast and multiplied as gemm_q8_avx2.c does: where
 * the rows the tile reads hold no negative byte (a ReLU's output),
 * vpmaddubsw(x, w) directly; otherwise vpmaddubsw(|x|, sign(w, x)). |x|,
 * |w| <= 127 keeps each pair sum within int16, and vpmaddwd by ones makes
 * the int32 sums exact. The signed form needs two more registers, so its
 * tiles are 4 pixels wide at most.
 */
#include "kcpu_q8_avx2.h"
#include "kcpu_q8_nhwc.h"

_Static_assert(sizeof(struct kq8_lane_epi8) <= KQ8_NHWC_EPI_BYTES, "the epilogue's shared constants fit");
_Static_assert(2 * sizeof(struct kq8_lanes8) <= KQ8_NHWC_LANES_BYTES, "a block's lanes fit");

/* Output channels 8k .. 8k + 7's constants: half of block k / 2's room. */
static const struct kq8_lanes8 *lanes_of(const void *consts, int64_t k)
{
    return (const struct kq8_lanes8 *)((const uint8_t *)consts + KQ8_NHWC_CONSTS_BYTES(k / 2)) + k % 2;
}

void kq8_nhwc_consts_avx2(const int32_t *bias, const struct k_q8_mult *mult, int oc, const struct k_q8_epilogue *e,
                          int has_res, void *consts)
{
    *(struct kq8_lane_epi8 *)consts = kq8_lane_epi8_of(e, has_res);
    for (int64_t k = 0; k * 8 < oc; k++)
        kq8_lanes8_of(bias + k * 8, mult + k * 8, (int)kcpu_min64(8, oc - k * 8),
                      (struct kq8_lanes8 *)lanes_of(consts, k));
}

static inline __attribute__((always_inline)) void tile(const int pixels, const int nonneg,
                                                       const struct kq8_nhwc_tile *t)
{
    __m256i acc[2][KQ8_NHWC_AVX2_MAX_PIX];
#pragma GCC unroll 5
    for (int r = 0; r < pixels; r++)
        acc[0][r] = acc[1][r] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    const int64_t xs = t->xs, quads = t->quads;
    const int8_t *w = t->w;
    for (int k = 0; k < t->taps; k++) {
        const uint8_t *x = t->x + t->toff[k];
        for (int64_t q = 0; q < quads; q++, x += 4, w += 64) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)w);
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 32));
#pragma GCC unroll 5
            for (int r = 0; r < pixels; r++) {
                int32_t quad;
                __builtin_memcpy(&quad, x + r * xs, 4);
                const __m256i b = _mm256_set1_epi32(quad);
                __m256i p0, p1;
                if (nonneg) {
                    p0 = _mm256_maddubs_epi16(b, w0);
                    p1 = _mm256_maddubs_epi16(b, w1);
                } else {
                    const __m256i ab = _mm256_abs_epi8(b);
                    p0 = _mm256_maddubs_epi16(ab, _mm256_sign_epi8(w0, b));
                    p1 = _mm256_maddubs_epi16(ab, _mm256_sign_epi8(w1, b));
                }
                acc[0][r] = _mm256_add_epi32(acc[0][r], _mm256_madd_epi16(p0, ones));
                acc[1][r] = _mm256_add_epi32(acc[1][r], _mm256_madd_epi16(p1, ones));
            }
        }
    }
    const struct kq8_lane_epi8 *ep = t->consts;
    const struct kq8_lanes8 *l0 = lanes_of(t->consts, 2 * (int64_t)t->block0), *l1 = l0 + 1;
    const int n = t->oc_left < 16 ? t->oc_left : 16;
#pragma GCC unroll 5
    for (int r = 0; r < pixels; r++) {
        const __m256i s0 = _mm256_add_epi32(acc[0][r], l0->init), s1 = _mm256_add_epi32(acc[1][r], l1->init);
        const int64_t at = r * t->oc;
        if (t->e->out_i32) {
            kq8_store8_epi32((int32_t *)t->y + at, s0, n);
            if (n > 8)
                kq8_store8_epi32((int32_t *)t->y + at + 8, s1, n - 8);
            continue;
        }
        __m256i r0 = _mm256_setzero_si256(), r1 = r0;
        if (ep->has_res) {
            r0 = kq8_load8_epi8(t->res + at, n);
            r1 = n > 8 ? kq8_load8_epi8(t->res + at + 8, n - 8) : r1;
        }
        kq8_store_bytes((int8_t *)t->y + at,
                        kq8_pack16_epi8(kq8_lanes8_requant(s0, l0, ep, r0), kq8_lanes8_requant(s1, l1, ep, r1)), n);
    }
}

typedef void (*tile_fn)(const struct kq8_nhwc_tile *t);
#define TILE_FN(P, S) \
    static void tile_##S##_##P(const struct kq8_nhwc_tile *t) { tile(P, S, t); }
#define UP_TO_4(X, S) X(1, S) X(2, S) X(3, S) X(4, S)
UP_TO_4(TILE_FN, 0)
UP_TO_4(TILE_FN, 1)
TILE_FN(5, 1)

#define TILE_ENTRY(P, S) tile_##S##_##P,
static const tile_fn SIGNED[] = {UP_TO_4(TILE_ENTRY, 0)};
static const tile_fn NONNEG[] = {UP_TO_4(TILE_ENTRY, 1) TILE_ENTRY(5, 1)};

void kq8_nhwc_tile_avx2(const struct kq8_nhwc_tile *t, int pixels, int nonneg)
{
    if (nonneg)
        NONNEG[pixels - 1](t);
    else
        SIGNED[pixels - 1](t);
}

/* 64 bytes a step, the OR of every byte read kept beside (the portable
 * 8-byte loop took 38 % of a 256 -> 64 1x1 layer on AMX, whose tiles need
 * no padding but take x unsigned). */
uint8_t kq8_nhwc_copy_flip_avx2(uint8_t *dst, const uint8_t *src, int64_t n, uint8_t flip)
{
    const __m256i f = _mm256_set1_epi8((char)flip);
    __m256i any = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 32));
        any = _mm256_or_si256(any, _mm256_or_si256(a, b));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_xor_si256(a, f));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i + 32), _mm256_xor_si256(b, f));
    }
    uint8_t neg = _mm256_movemask_epi8(any) ? 0x80 : 0;
    for (; i < n; i++) {
        neg |= src[i] & 0x80;
        dst[i] = src[i] ^ flip;
    }
    return neg;
}

/* Pixels [0, pixels) of rows of c NCHW planes (src: channel 0's row, plane
 * bytes apart) into row, cp bytes a pixel (channels past c zero), each
 * byte ^ flip: 8 channels by 16 pixels at a time, a byte transpose by
 * unpacking (8 x 16 in three rounds). Returns the OR of the bytes read. */
uint8_t kq8_nhwc_rows_from_nchw_avx2(const uint8_t *src, int64_t plane, int64_t c, int64_t cp, int64_t pixels,
                                     uint8_t flip, uint8_t *row)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    __m128i any = _mm_setzero_si128();
    int64_t ch = 0;
    for (; ch + 8 <= c; ch += 8) {
        const uint8_t *s = src + ch * plane;
        int64_t iw = 0;
        for (; iw + 16 <= pixels; iw += 16) {
            __m128i r[8], a[8], b[8];
            for (int i = 0; i < 8; i++) {
                r[i] = _mm_loadu_si128((const __m128i *)(s + i * plane + iw));
                any = _mm_or_si128(any, r[i]);
                r[i] = _mm_xor_si128(r[i], f);
            }
            for (ptrdiff_t i = 0; i < 4; i++) {   /* channel pairs, pixels 0-7 and 8-15 */
                a[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
                a[i + 4] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
            }
            for (ptrdiff_t h = 0; h < 2; h++) {   /* channel quads, four pixels each */
                b[4 * h] = _mm_unpacklo_epi16(a[4 * h], a[4 * h + 1]);
                b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h], a[4 * h + 1]);
                b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 2], a[4 * h + 3]);
                b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 2], a[4 * h + 3]);
            }
            for (ptrdiff_t q = 0; q < 4; q++) {   /* four pixels' eight channels, two pixels a vector */
                const ptrdiff_t lo = q / 2 * 4 + q % 2;   /* channels 0-3 of these four pixels */
                const __m128i p01 = _mm_unpacklo_epi32(b[lo], b[lo + 2]);
                const __m128i p23 = _mm_unpackhi_epi32(b[lo], b[lo + 2]);
                uint8_t *d = row + (iw + 4 * q) * cp + ch;
                _mm_storel_epi64((__m128i *)d, p01);
                _mm_storel_epi64((__m128i *)(d + cp), _mm_unpackhi_epi64(p01, p01));
                _mm_storel_epi64((__m128i *)(d + 2 * cp), p23);
                _mm_storel_epi64((__m128i *)(d + 3 * cp), _mm_unpackhi_epi64(p23, p23));
            }
        }
        for (; iw < pixels; iw++)
            for (int64_t k = 0; k < 8; k++) {
                const uint8_t v = s[k * plane + iw];
                any = _mm_or_si128(any, _mm_cvtsi32_si128(v));
                row[iw * cp + ch + k] = v ^ flip;
            }
    }
    for (; ch < cp; ch++)
        for (int64_t iw = 0; iw < pixels; iw++) {
            const uint8_t v = ch < c ? src[ch * plane + iw] : 0;
            any = _mm_or_si128(any, _mm_cvtsi32_si128(v));
            row[iw * cp + ch] = v ^ flip;
        }
    return (uint8_t)(_mm_movemask_epi8(any) ? 0x80 : 0);
}
