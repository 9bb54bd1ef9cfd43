/*
 * gemm_q8_avx512.c - the AVX-512 VNNI INT8 GEMM kernel (KQ8_MR x KQ8_NR =
 * 8 x 32) and its requantising epilogue. Compiled with the AVX-512 flags;
 * entered only through kq8_block_run after the run-time ISA and VNNI checks.
 *
 * Per depth quad the kernel loads two 64-byte B vectors (packed with their
 * sign bits flipped: vpdpbusd takes unsigned bytes, x + 128), broadcasts
 * eight weight quads and issues 16 vpdpbusd (1024 multiply-adds) into 16
 * accumulators, which start at bias[row] - 128 * wsum[row] (the offset
 * undone). The epilogue requantises them where they are, in registers,
 * with kcpu_q8_avx512.h (exactly k_q8_apply), packs two rows to bytes at
 * a time and stores each output run with a byte mask. MobileNetV2's 1x1
 * layers reduce over 4-24 depth quads, so the epilogue's cost is of the
 * order of the multiply-adds'.
 */
#include <immintrin.h>
#include <string.h>

#include "kcpu_q8_avx512.h"
#include "kcpu_q8_impl.h"

static inline __m512i broadcast_quad(const int8_t *a)
{
    int32_t v;
    memcpy(&v, a, sizeof(v));
    return _mm512_set1_epi32(v);
}

/* The epilogue's forms, each compiled apart (no per-row branches): int32
 * output, or int8 through the shift >= 33 form (every row of the block) or
 * the general one, with or without a residual (kcpu_q8_avx512.h). */
enum { EPI_I32, EPI_HI33, EPI_HI33_RES, EPI_GEN, EPI_GEN_RES };

static int epi_kind(const struct kq8_block *b)
{
    if (b->e->out_i32)
        return EPI_I32;
    int hi33 = !b->res || b->e->res_mult.shift >= 8;   /* the residual's hi form */
    for (int i = 0; i < b->m && hi33; i++)
        hi33 = kq8_hi33_path(b->mult[i]);
    if (hi33)
        return b->res ? EPI_HI33_RES : EPI_HI33;
    return b->res ? EPI_GEN_RES : EPI_GEN;
}

/* The block's epilogue constants. */
struct epi {
    struct kq8_mult512_hi rh;   /* the residual's, hi forms */
    struct kq8_mult512 rv;      /* the residual's, general form */
    __m512i lo64, hi64, lo8, hi8;
};

static struct epi epi_of(const struct kq8_block *b)
{
    const struct k_q8_epilogue *e = b->e;
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult rm = b->res ? e->res_mult : (struct k_q8_mult){0, 1};
    struct epi ep = {.rh = kq8_mult512_hi_of(rm), .rv = kq8_mult512_of(rm),
                     .lo64 = _mm512_set1_epi64(e->lo), .hi64 = _mm512_set1_epi64(e->hi),
                     .lo8 = _mm512_set1_epi8((char)e->lo), .hi8 = _mm512_set1_epi8((char)e->hi)};
    return ep;
}

/* A panel's rows: where their accumulators start and their multipliers
 * (rows past the block's get harmless ones; their results are dropped). */
struct panel {
    int32_t init[KQ8_MR];   /* bias - 128 * wsum: vpdpbusd's offset undone, the bias added */
    struct kq8_mult512_hi33 mh[KQ8_MR];
    struct kq8_mult512 mv[KQ8_MR];
};

static inline __attribute__((always_inline)) void panel_of(const struct kq8_block *b, int i0, int mr,
                                                           const int kind, struct panel *pn)
{
    for (int i = 0; i < KQ8_MR; i++) {
        const struct k_q8_mult m = i < mr ? b->mult[i0 + i] : (struct k_q8_mult){0, 33};
        /* unsigned: the sum may wrap on the way, the final value fits */
        pn->init[i] = i < mr ? (int32_t)((uint32_t)b->bias[i0 + i] - 128u * (uint32_t)b->wsum[i0 + i]) : 0;
        if (kind == EPI_HI33 || kind == EPI_HI33_RES)
            pn->mh[i] = kq8_mult512_hi33_of(m);
        else if (kind != EPI_I32)
            pn->mv[i] = kq8_mult512_of(m);
    }
}

/* acc[2 * i + h] = acc + bias of row i, lanes 16h .. 16h + 15. The 16
 * accumulators are named variables: as an array GCC shuffled them between
 * registers on every depth step. */
static inline __attribute__((always_inline)) void
tile(int64_t kq, const int8_t *a, const int8_t *b, const int32_t *init, __m512i *acc)
{
    __m512i c00 = _mm512_set1_epi32(init[0]), c01 = c00, c10 = _mm512_set1_epi32(init[1]), c11 = c10,
            c20 = _mm512_set1_epi32(init[2]), c21 = c20, c30 = _mm512_set1_epi32(init[3]), c31 = c30,
            c40 = _mm512_set1_epi32(init[4]), c41 = c40, c50 = _mm512_set1_epi32(init[5]), c51 = c50,
            c60 = _mm512_set1_epi32(init[6]), c61 = c60, c70 = _mm512_set1_epi32(init[7]), c71 = c70;
    for (int64_t q = 0; q < kq; q++) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
#define ROW(i, x0, x1)                                      \
        {                                                   \
            __m512i ai = broadcast_quad(a + 4 * (ptrdiff_t)(i)); \
            (x0) = _mm512_dpbusd_epi32((x0), b0, ai);       \
            (x1) = _mm512_dpbusd_epi32((x1), b1, ai);       \
        }
        ROW(0, c00, c01) ROW(1, c10, c11) ROW(2, c20, c21) ROW(3, c30, c31)
        ROW(4, c40, c41) ROW(5, c50, c51) ROW(6, c60, c61) ROW(7, c70, c71)
#undef ROW
        a += KQ8_PANEL_QUAD;
        b += KQ8_STRIP_QUAD;
    }
    acc[0] = c00, acc[1] = c01, acc[2] = c10, acc[3] = c11, acc[4] = c20, acc[5] = c21, acc[6] = c30, acc[7] = c31;
    acc[8] = c40, acc[9] = c41, acc[10] = c50, acc[11] = c51, acc[12] = c60, acc[13] = c61, acc[14] = c70,
    acc[15] = c71;
}

static inline __mmask16 lanes_mask(int from, int to)
{
    return (__mmask16)(((1u << to) - 1) & ~((1u << from) - 1));
}

/* A run's share of one 16-lane half: lanes `src` of half h hold outputs
 * that go, compressed to the bottom, to the bytes `dst` at y + off. */
struct seg {
    __mmask16 src, dst;
    int h;
    int64_t off;
};

/* Where a tile's lanes go, read off its strip map once per tile; no
 * address before a run's start is ever formed. In a convolution the valid
 * lanes' outputs follow one another in memory (row after row of one
 * channel): each half's valid lanes are compressed down and stored as one
 * piece, and the residual loaded as one piece and expanded into them; when
 * they are lanes [0, n) (no dropped columns: a 1x1 convolution) nothing
 * needs compressing and a row is one 32-byte masked store. In a linear
 * layer each lane is a sample of its own, one run each, lane_step bytes
 * apart: the tile is turned round (store_lanes). Otherwise each run's
 * share of each half is a segment of its own. */
struct layout {
    int contiguous, prefix;
    int lanes;
    int64_t lane_step;  /* > 0: lane t's outputs at lane_off + t * lane_step (one run a lane) */
    int64_t lane_off;
    __mmask16 m0, m1;   /* valid lanes of each half */
    int n0, n1;
    int64_t off;        /* of the first run when contiguous, else 0 */
    int nseg;
    struct seg segs[2 * KQ8_NR];
};

/* segs: whether the segments are wanted when the lanes are per-sample
 * (store_lanes does without). */
static void layout_of(const struct kq8_strip *map, int segs, struct layout *l)
{
    uint32_t valid = 0;
    l->contiguous = 1;
    for (int k = 0; k < map->nruns; k++) {
        const struct kq8_run *run = &map->runs[k];
        valid |= (uint32_t)(((uint64_t)1 << run->l1) - ((uint64_t)1 << run->l0));
        if (k && run->off != map->runs[k - 1].off + (map->runs[k - 1].l1 - map->runs[k - 1].l0))
            l->contiguous = 0;
    }
    l->prefix = l->contiguous && (valid & (valid + 1)) == 0;
    l->m0 = (__mmask16)valid, l->m1 = (__mmask16)(valid >> 16);
    l->n0 = __builtin_popcount(l->m0), l->n1 = __builtin_popcount(l->m1);
    l->off = l->contiguous && map->nruns ? map->runs[0].off : 0;
    l->nseg = 0;
    l->lanes = map->nruns;
    l->lane_step = map->nruns >= 2 ? map->runs[1].off - map->runs[0].off : 0;
    for (int k = 0; k < map->nruns && l->lane_step >= KQ8_MR; k++) {
        const struct kq8_run *run = &map->runs[k];
        if (run->l0 != k || run->l1 != k + 1 || run->off != map->runs[0].off + k * l->lane_step)
            l->lane_step = 0;
    }
    if (l->lane_step < KQ8_MR)
        l->lane_step = 0;
    l->lane_off = l->lane_step ? map->runs[0].off : 0;
    if (l->contiguous || (l->lane_step && !segs))
        return;
    for (int k = 0; k < map->nruns; k++) {
        const struct kq8_run *run = &map->runs[k];
        for (int h = 0; h < 2; h++) {
            int a = run->l0 > 16 * h ? run->l0 : 16 * h, b = run->l1 < 16 * h + 16 ? run->l1 : 16 * h + 16;
            if (a < b)
                l->segs[l->nseg++] = (struct seg){lanes_mask(a - 16 * h, b - 16 * h), lanes_mask(0, b - a), h,
                                                  run->off + (a - run->l0)};
        }
    }
}

/* Residual bytes of one row (res: the row's, plus l->off) into int32 lanes. */
static inline __attribute__((always_inline)) void load_res(const struct layout *l, const int8_t *res, __m512i *r)
{
    if (l->prefix) {
        __m256i v = _mm256_maskz_loadu_epi8(l->m0 | (__mmask32)l->m1 << 16, res);
        r[0] = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(v));
        r[1] = _mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1));
    } else if (l->contiguous) {
        r[0] = _mm512_maskz_expand_epi32(l->m0, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes_mask(0, l->n0), res)));
        r[1] = _mm512_maskz_expand_epi32(l->m1,
                                         _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes_mask(0, l->n1), res + l->n0)));
    } else {
        r[0] = r[1] = _mm512_setzero_si512();
        for (int k = 0; k < l->nseg; k++) {
            const struct seg *g = &l->segs[k];
            r[g->h] = _mm512_or_si512(r[g->h], _mm512_maskz_expand_epi32(g->src,
                                          _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(g->dst, res + g->off))));
        }
    }
}

/* One row's 32 int8 results (lane order) to y (the row's, plus l->off). */
static inline __attribute__((always_inline)) void store_row(const struct layout *l, int8_t *y, __m256i q)
{
    if (l->prefix) {
        _mm256_mask_storeu_epi8(y, l->m0 | (__mmask32)l->m1 << 16, q);
        return;
    }
    const __m512i h[2] = {_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)),
                          _mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))};
    if (l->contiguous) {
        _mm_mask_storeu_epi8(y, lanes_mask(0, l->n0), _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(l->m0, h[0])));
        _mm_mask_storeu_epi8(y + l->n0, lanes_mask(0, l->n1),
                             _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(l->m1, h[1])));
        return;
    }
    for (int k = 0; k < l->nseg; k++)
        _mm_mask_storeu_epi8(y + l->segs[k].off, l->segs[k].dst,
                             _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(l->segs[k].src, h[l->segs[k].h])));
}

/* A per-lane tile's rows q[0 .. 7] (byte t of q[i]: row i of lane t) turned round
 * 16 lanes at a time with byte, word and dword unpacks, so that each
 * lane's mr bytes leave in one masked store at y + t * step (step >= 8: a
 * pair of lanes shares a vector, the second lane's bytes in its upper
 * half). Storing each lane's byte of each row as a segment of its own
 * took most of a small linear layer's time. */
static void store_lanes(int8_t *y, int64_t step, int lanes, int mr, const __m256i *q)
{
    const __mmask16 lo = (__mmask16)((1u << mr) - 1), hi = (__mmask16)(lo << 8);
    for (ptrdiff_t half = 0; half < 2 && 16 * half < lanes; half++) {
        __m128i r[KQ8_MR], t[KQ8_MR], u[KQ8_MR], v[KQ8_MR];
        for (ptrdiff_t i = 0; i < KQ8_MR; i++)
            r[i] = half ? _mm256_extracti128_si256(q[i], 1) : _mm256_castsi256_si128(q[i]);
        for (ptrdiff_t i = 0; i < KQ8_MR; i += 2) {   /* t[i]: lanes 0-7, t[i + 1]: 8-15; rows i, i + 1 */
            t[i] = _mm_unpacklo_epi8(r[i], r[i + 1]);
            t[i + 1] = _mm_unpackhi_epi8(r[i], r[i + 1]);
        }
        for (ptrdiff_t g = 0; g < 2; g++) {           /* u[4g + 2h + c]: lanes 8h + 4c .. +3, rows 4g .. 4g + 3 */
            for (ptrdiff_t h = 0; h < 2; h++) {
                u[4 * g + 2 * h] = _mm_unpacklo_epi16(t[4 * g + h], t[4 * g + 2 + h]);
                u[4 * g + 2 * h + 1] = _mm_unpackhi_epi16(t[4 * g + h], t[4 * g + 2 + h]);
            }
        }
        for (ptrdiff_t c = 0; c < 4; c++) {           /* v[2c]: lanes 4c, 4c + 1; v[2c + 1]: 4c + 2, 4c + 3 */
            v[2 * c] = _mm_unpacklo_epi32(u[c], u[c + 4]);
            v[2 * c + 1] = _mm_unpackhi_epi32(u[c], u[c + 4]);
        }
        for (ptrdiff_t w = 0; w < KQ8_MR; w++) {
            const ptrdiff_t lane = 16 * half + 2 * w;
            if (lane < lanes)
                _mm_mask_storeu_epi8(y + lane * step, lo, v[w]);
            if (lane + 1 < lanes)
                _mm_mask_storeu_epi8(y + (lane + 1) * step - 8, hi, v[w]);
        }
    }
}

/* The same for one row of int32 results (the last layer only). */
static void store_row_i32(const struct layout *l, int32_t *y, __m512i v0, __m512i v1)
{
    if (l->contiguous) {
        _mm512_mask_storeu_epi32(y, lanes_mask(0, l->n0), _mm512_maskz_compress_epi32(l->m0, v0));
        _mm512_mask_storeu_epi32(y + l->n0, lanes_mask(0, l->n1), _mm512_maskz_compress_epi32(l->m1, v1));
        return;
    }
    for (int k = 0; k < l->nseg; k++)
        _mm512_mask_storeu_epi32(y + l->segs[k].off, l->segs[k].dst,
                                 _mm512_maskz_compress_epi32(l->segs[k].src, l->segs[k].h ? v1 : v0));
}

/* 16 outputs of row i from their acc + bias lanes and residual lanes: in
 * [lo, hi] (general form) or any int32 (hi33, clamped after packing). */
static inline __attribute__((always_inline)) __m512i requant(const struct epi *ep, const struct panel *pn, ptrdiff_t i,
                                                             __m512i v, __m512i r, const int kind)
{
    if (kind == EPI_HI33 || kind == EPI_HI33_RES) {
        __m512i q = kq8_apply_hi33_512(v, &pn->mh[i]);
        return kind == EPI_HI33_RES ? _mm512_add_epi32(q, kq8_apply_hi512(r, &ep->rh, 1)) : q;
    }
    return kq8_requant16(v, &pn->mv[i], kind == EPI_GEN_RES, r, &ep->rv, ep->lo64, ep->hi64);
}

/* The epilogue of one tile (rows i0 .. i0 + mr - 1), two rows at a time:
 * their four vectors packed to bytes with saturation (which keeps the
 * clamp's result: lo and hi lie within int8), clamped, and one dword
 * permute puts each row's 32 bytes in lane order (vpmovdb to memory is
 * slow on Zen 4). */
static inline __attribute__((always_inline)) void store_tile(const struct kq8_block *b, const struct epi *ep,
                                                             const struct panel *pn, const __m512i *acc, int i0,
                                                             int mr, const struct kq8_strip *map, const int kind)
{
    const int has_res = kind == EPI_HI33_RES || kind == EPI_GEN_RES;
    struct layout l;
    layout_of(map, kind == EPI_I32 || has_res || b->ldc != 1, &l);
    if (kind == EPI_I32) {
        for (ptrdiff_t i = 0; i < mr; i++)
            store_row_i32(&l, (int32_t *)b->y + (i0 + i) * b->ldc + l.off, acc[2 * i], acc[2 * i + 1]);
        return;
    }
    const int per_lane = l.lane_step && b->ldc == 1 && !has_res;
    __m256i rows[KQ8_MR];   /* per_lane: the rows' bytes, turned round at the end */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#pragma GCC unroll 4
    for (ptrdiff_t i = 0; i < KQ8_MR; i += 2) {
        if (i >= mr)
            break;
        const int64_t at = (i0 + i) * b->ldc + l.off;
        __m512i r[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                        _mm512_setzero_si512()};
        if (has_res) {
            load_res(&l, b->res + at, r);
            if (i + 1 < mr)
                load_res(&l, b->res + at + b->ldc, r + 2);
        }
        __m512i p = _mm512_packs_epi16(_mm512_packs_epi32(requant(ep, pn, i, acc[2 * i], r[0], kind),
                                                          requant(ep, pn, i, acc[2 * i + 1], r[1], kind)),
                                       _mm512_packs_epi32(requant(ep, pn, i + 1, acc[2 * i + 2], r[2], kind),
                                                          requant(ep, pn, i + 1, acc[2 * i + 3], r[3], kind)));
        p = _mm512_permutexvar_epi32(order, _mm512_min_epi8(_mm512_max_epi8(p, ep->lo8), ep->hi8));
        if (per_lane) {
            rows[i] = _mm512_castsi512_si256(p);
            rows[i + 1] = _mm512_extracti64x4_epi64(p, 1);
            continue;
        }
        int8_t *y = (int8_t *)b->y + at;
        store_row(&l, y, _mm512_castsi512_si256(p));
        if (i + 1 < mr)
            store_row(&l, y + b->ldc, _mm512_extracti64x4_epi64(p, 1));
    }
    if (per_lane) {
        for (int i = (mr + 1) / 2 * 2; i < KQ8_MR; i++)
            rows[i] = _mm256_setzero_si256();
        store_lanes((int8_t *)b->y + i0 + l.lane_off, l.lane_step, l.lanes, mr, rows);
    }
}

static inline __attribute__((always_inline)) void block(const struct kq8_block *b, const int kind)
{
    const struct epi ep = epi_of(b);
    struct panel pn;
    __m512i acc[2 * KQ8_MR];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        panel_of(b, i0, mr, kind, &pn);
        for (int s = 0; s < b->nstrips; s++) {
            tile(b->kq, a, b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD, pn.init, acc);
            store_tile(b, &ep, &pn, acc, i0, mr, &b->maps[s], kind);
        }
    }
}

void kq8_block_avx512(const struct kq8_block *b)
{
    switch (epi_kind(b)) {
    case EPI_I32: block(b, EPI_I32); break;
    case EPI_HI33: block(b, EPI_HI33); break;
    case EPI_HI33_RES: block(b, EPI_HI33_RES); break;
    case EPI_GEN: block(b, EPI_GEN); break;
    default: block(b, EPI_GEN_RES); break;
    }
}
