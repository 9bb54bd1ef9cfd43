/*
 * convpix_avx512.c - the pixel-tile convolution microkernel (see
 * kcpu_convpix.h) and its epilogue. Compiled with the AVX-512 flags;
 * entered only through kcpu_convpix_f32 after the run-time ISA check.
 *
 * Per reduction step: one 16-channel weight vector per channel vector
 * (a panel pair's step: one load), one broadcast per pixel (folded into the
 * FMAs), vecs * pixels FMAs into as many accumulators (up to 28 of the 32
 * registers). Each (vectors, pixels, stride) is its own function, so the
 * accumulators stay in registers and the pixels' offsets are constants.
 * The epilogue turns the tile round, 16 channels at a time, with an
 * in-register transpose, so each channel's pixels leave in one masked
 * store. The band copy is here too, with the padded-row copy inline
 * (kcpu_pad_avx512.h).
 */
#include <string.h>

#include "kcpu_convpix.h"
#include "kcpu_math_avx512.h"
#include "kcpu_pad_avx512.h"

/* Depth steps k0 .. k1 - 1 of a tile. Pixel r reads its window at
 * in + r * stride, or, in a two-row tile (split > 0), pixels from split on
 * read the next output row's at in + next_row + (r - split) * stride.
 * With fetch > 0 the weights fetch steps ahead are fetched too: the first
 * tile of a group does it for the next chunk, whose weights in a model are
 * in L3 (ResNet-18's 256 -> 512 stride-2 layer at batch 1: 443 -> 360 us). */
static inline __attribute__((always_inline)) void
steps(const int vecs, const int rows, const int stride, const int split, const int fetching,
      const struct kcpu_pix_tile *t, int64_t k0, int64_t k1, int64_t fetch, __m512 acc[4][KCPU_PIX_MAX])
{
    const float *w = t->w + k0 * KCPU_PAIR;
    const int64_t ps = t->pair_stride, next = split ? t->next_row : 0;
    const int first = split ? split : rows;   /* pixels of the first row */
    for (int64_t k = k0; k < k1; k++, w += KCPU_PAIR) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int64_t v = 0; v < vecs; v++)
            wv[v] = _mm512_loadu_ps(w + v * ps);
        if (fetching)   /* past the end only for the last chunk's steps: a fetch never faults */
#pragma GCC unroll 4
            for (int64_t v = 0; v < vecs; v++)
                _mm_prefetch((const char *)(w + fetch * KCPU_PAIR + v * ps), _MM_HINT_T0);
        const float *in = t->origin + t->boff[k];
        if (k + KCPU_PIX_AHEAD < t->k) {   /* see KCPU_PIX_AHEAD */
            const float *ahead = t->origin + t->boff[k + KCPU_PIX_AHEAD];
            _mm_prefetch((const char *)ahead, _MM_HINT_T0);
            _mm_prefetch((const char *)(ahead + (int64_t)(first - 1) * stride), _MM_HINT_T0);
            if (split) {
                _mm_prefetch((const char *)(ahead + next), _MM_HINT_T0);
                _mm_prefetch((const char *)(ahead + next + (int64_t)(rows - split - 1) * stride), _MM_HINT_T0);
            }
        }
#pragma GCC unroll 16
        for (int64_t r = 0; r < rows; r++) {
            __m512 b = _mm512_set1_ps(r < first ? in[r * stride] : in[next + (r - first) * stride]);
#pragma GCC unroll 4
            for (int64_t v = 0; v < vecs; v++)
                acc[v][r] = _mm512_fmadd_ps(wv[v], b, acc[v][r]);
        }
    }
}

static inline __attribute__((always_inline)) void
accumulate(const int vecs, const int rows, const int stride, const int split, const struct kcpu_pix_tile *t,
           int64_t k0, int64_t k1, int64_t fetch, float *out /* [rows][vecs * 16]: added to when k0 > 0 */)
{
    __m512 acc[4][KCPU_PIX_MAX];
#pragma GCC unroll 16
    for (int64_t r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int64_t v = 0; v < vecs; v++)
            acc[v][r] = _mm512_setzero_ps();
    if (fetch)
        steps(vecs, rows, stride, split, 1, t, k0, k1, fetch, acc);
    else
        steps(vecs, rows, stride, split, 0, t, k0, k1, 0, acc);
#pragma GCC unroll 16
    for (int64_t r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int64_t v = 0; v < vecs; v++) {
            float *o = out + r * vecs * 16 + v * 16;
            _mm512_store_ps(o, k0 == 0 ? acc[v][r] : _mm512_add_ps(acc[v][r], _mm512_load_ps(o)));
        }
}

/* One function per (vectors, pixels, stride): the pixel counts a row may
 * split into; and the two-row tiles of 7-wide maps. */
typedef void (*tile_fn)(const struct kcpu_pix_tile *t, int64_t k0, int64_t k1, int64_t fetch, float *out);
#define TILE_FN(V, R, S)                                                                              \
    static void tile_##V##_##R##_##S(const struct kcpu_pix_tile *t, int64_t k0, int64_t k1, int64_t fetch, \
                                     float *out)                                                      \
    {                                                                                                 \
        accumulate(V, R, S, 0, t, k0, k1, fetch, out);                                                \
    }
#define TWO_ROW_FN(S)                                                                                 \
    static void two_rows_of_7_##S(const struct kcpu_pix_tile *t, int64_t k0, int64_t k1, int64_t fetch, \
                                  float *out)                                                         \
    {                                                                                                 \
        accumulate(2, 14, S, 7, t, k0, k1, fetch, out);                                               \
    }
TWO_ROW_FN(1)
TWO_ROW_FN(2)
static const tile_fn TWO_ROW_FNS[2] = {two_rows_of_7_1, two_rows_of_7_2};   /* [stride - 1] */
#define UP_TO_7(X, V, S) X(V, 1, S) X(V, 2, S) X(V, 3, S) X(V, 4, S) X(V, 5, S) X(V, 6, S) X(V, 7, S)
#define UP_TO_9(X, V, S) UP_TO_7(X, V, S) X(V, 8, S) X(V, 9, S)
#define UP_TO_14(X, V, S) UP_TO_9(X, V, S) X(V, 10, S) X(V, 11, S) X(V, 12, S) X(V, 13, S) X(V, 14, S)
#define UP_TO_16(X, V, S) UP_TO_14(X, V, S) X(V, 15, S) X(V, 16, S)
UP_TO_16(TILE_FN, 1, 1)
UP_TO_16(TILE_FN, 1, 2)
UP_TO_14(TILE_FN, 2, 1)
UP_TO_14(TILE_FN, 2, 2)
UP_TO_9(TILE_FN, 3, 1)
UP_TO_9(TILE_FN, 3, 2)
UP_TO_7(TILE_FN, 4, 1)
UP_TO_7(TILE_FN, 4, 2)
#define TILE_ENTRY(V, R, S) tile_##V##_##R##_##S,
static const tile_fn TILE_FNS[4][2][KCPU_PIX_MAX + 1] = {  /* [vecs - 1][stride - 1][pixels] */
    {{NULL, UP_TO_16(TILE_ENTRY, 1, 1)}, {NULL, UP_TO_16(TILE_ENTRY, 1, 2)}},
    {{NULL, UP_TO_14(TILE_ENTRY, 2, 1)}, {NULL, UP_TO_14(TILE_ENTRY, 2, 2)}},
    {{NULL, UP_TO_9(TILE_ENTRY, 3, 1)}, {NULL, UP_TO_9(TILE_ENTRY, 3, 2)}},
    {{NULL, UP_TO_7(TILE_ENTRY, 4, 1)}, {NULL, UP_TO_7(TILE_ENTRY, 4, 2)}},
};

/* r[i] lane j <- r[j] lane i: unpacks, then in-lane and cross-lane
 * shuffles, 64 in all. (It replaced 16 gathers per 16 channels, which
 * held a fifth of the tile function's samples in `perf`; resnet-mini on
 * one thread ran 3.5 % faster.) */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16])
{
    __m512 t[16];
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < 4; k++) {
        r[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        r[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
        r[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        r[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; i++) {
        int64_t k = i / 4 * 8 + i % 4;
        t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
        t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xDD);
    }
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}

/* The activation over n vectors, its choice made once. */
static void act_vectors(enum k_act act, __m512 *v, int64_t n)
{
    if (act == K_ACT_NONE)
        return;
    if (act == K_ACT_RELU) {
        for (int64_t i = 0; i < n; i++)
            v[i] = _mm512_max_ps(v[i], _mm512_setzero_ps());
        return;
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = kv16_act(act, v[i]);
}

/* Per channel vector: the tile's rows (pixels) turned into channels'
 * rows, then bias, residual, activation and one masked store each. */
static void store(const struct kcpu_pix_tile *t, const float *acc /* [pixels][vecs * 16] */)
{
    const int64_t ch = (int64_t)t->vecs * 16;
    const __mmask16 m = (__mmask16)((1u << t->pixels) - 1);
    for (int64_t v = 0; v < t->vecs; v++) {
        __m512 c[16];
        for (int64_t r = 0; r < 16; r++)
            c[r] = r < t->pixels ? _mm512_load_ps(acc + r * ch + v * 16) : _mm512_setzero_ps();
        transpose16(c);
        for (int64_t i = 0; i < 16; i++) {
            int64_t o = v * 16 + i;
            if (t->bias)
                c[i] = _mm512_add_ps(c[i], _mm512_set1_ps(t->bias[o]));
            if (t->res)
                c[i] = _mm512_add_ps(c[i], _mm512_maskz_loadu_ps(m, t->res + o * t->ldy));
        }
        act_vectors(t->act, c, 16);
        for (int64_t i = 0; i < 16; i++)
            _mm512_mask_storeu_ps(t->y + (v * 16 + i) * t->ldy, m, c[i]);
    }
}

static tile_fn tile_of(const struct kcpu_pix_tile *t)
{
    return t->next_row ? TWO_ROW_FNS[t->stride - 1] : TILE_FNS[t->vecs - 1][t->stride - 1][t->pixels];
}

/* Weight bytes of a group's depth chunk: it stays in L1 while every tile
 * of the group passes over it. A block whose weights take at most two
 * chunks' bytes goes in one pass (they stay in L1 anyway; 16 -> 32
 * channels, 3x3, in chunks of 128 and 16 steps took 1.1x the time). */
#define CHUNK_BYTES ((int64_t)16 * 1024)

void kcpu_pix_tiles_avx512(const struct kcpu_pix_tile *tiles, int count)
{
    float out[KCPU_PIX_GROUP][28 * 16] __attribute__((aligned(64)));  /* pixels * vecs <= 28 vectors */
    const struct kcpu_pix_tile *t = tiles;
    const int64_t bytes = t->k * t->vecs * 16 * (int64_t)sizeof(float);
    if (bytes <= 2 * CHUNK_BYTES) {   /* each tile leaves at once, its sums in L1 */
        for (int i = 0; i < count; i++) {
            tile_of(&tiles[i])(&tiles[i], 0, t->k, 0, out[0]);
            store(&tiles[i], out[0]);
        }
        return;
    }
    const int64_t kc = kcpu_ceil_div(t->k, kcpu_ceil_div(bytes, CHUNK_BYTES));
    for (int64_t k0 = 0; k0 < t->k; k0 += kc)
        for (int i = 0; i < count; i++)
            tile_of(&tiles[i])(&tiles[i], k0, kcpu_min64(t->k, k0 + kc), i == 0 ? kc : 0, out[i]);
    for (int i = 0; i < count; i++)
        store(&tiles[i], out[i]);
}

/* Row chunks whose masks kcpu_pix_band_avx512 works out once: slices up
 * to 1024 floats wide; wider ones go row by row through kv_pad_row. */
#define BAND_CHUNKS 64
/* Channels ahead whose band input is fetched: resnet-mini at batch 1 (2
 * threads, each copying the band of rows the other core's previous layer
 * partly wrote) 199.4 -> 190.9 / 191.3 / 194.0 us at 1 / 2 / 4; batch 64
 * and ResNet-50 batch 1 within noise. */
#define BAND_AHEAD 2

void kcpu_pix_band_avx512(const struct kcpu_pix_band *b)
{
    /* Every row of the band has the same columns: each 16-float chunk's
     * load mask (the input columns that exist) and store mask (the slice's)
     * found once. The copy was 16 % of resnet-mini's time at batch 1 with
     * them found per row (kv_pad_row); once per band, the model ran 217 ->
     * 199 us. */
    const int64_t chunks = kcpu_ceil_div(b->gw, 16);
    __mmask16 in[BAND_CHUNKS] = {0}, out[BAND_CHUNKS] = {0};   /* read only when chunks fit */
    for (int64_t k = 0; k < chunks && chunks <= BAND_CHUNKS; k++) {
        const int64_t first = 16 * k - b->pad_l;
        in[k] = (__mmask16)kv_lane_bits((int)kcpu_max64(-first, -1), (int)kcpu_min64(b->w - first, 17));
        out[k] = (__mmask16)kv_lane_bits(0, (int)kcpu_min64(b->gw - 16 * k, 16));
    }
    /* The input rows a channel's band reads, one block: that of channel
     * ci + BAND_AHEAD is fetched while channel ci is copied. */
    const int64_t r0 = kcpu_max64(0, b->g0 - b->pad_t), r1 = kcpu_min64(b->h, b->g0 - b->pad_t + b->rows);
    const int64_t block = (r1 - r0) * b->w;
    for (int64_t ci = 0; ci < b->c; ci++) {
        if (ci + BAND_AHEAD < b->c && block > 0) {
            const char *ahead = (const char *)(b->x + ((ci + BAND_AHEAD) * b->h + r0) * b->w);
            for (int64_t at = 0; at < block * (int64_t)sizeof(float); at += 64)
                _mm_prefetch(ahead + at, _MM_HINT_T0);
        }
        for (int64_t r = 0; r < b->rows; r++) {
            float *dst = b->slice + (ci * b->gh + r) * b->gw;
            const int64_t ih = b->g0 + r - b->pad_t;
            if (ih < 0 || ih >= b->h) {
                memset(dst, 0, (size_t)b->gw * sizeof(float));
                continue;
            }
            const float *src = b->x + (ci * b->h + ih) * b->w;
            if (chunks > BAND_CHUNKS) {
                kv_pad_row(src, (int)b->w, (int)-b->pad_l, 1, dst, b->gw);
            } else {
                for (int64_t k = 0; k < chunks; k++)
                    _mm512_mask_storeu_ps(dst + 16 * k, out[k],
                                          _mm512_maskz_loadu_ps(in[k], kv_at(src, 16 * k - b->pad_l)));
            }
        }
    }
}
