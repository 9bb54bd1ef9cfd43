/*
 * gemm_q8_avx512.c - the AVX-512 VNNI INT8 GEMM kernel (KQ8_MR x KQ8_NR =
 * 8 x 32) and its requantising epilogue. Compiled with the AVX-512 flags;
 * entered only through kq8_block_run after the run-time ISA and VNNI checks.
 *
 * Per depth quad the kernel loads two 64-byte B vectors (packed with their
 * sign bits flipped: vpdpbusd takes unsigned bytes, x + 128), broadcasts
 * eight weight quads and issues 16 vpdpbusd (1024 multiply-adds) into 16
 * accumulators; 128 * wsum[row] then removes the offset. The epilogue
 * requantises with kcpu_q8_avx512.h, exactly k_q8_apply, and stores each
 * output run with a byte mask.
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

/* acc[2 * i + h] = exact sums of row i, lanes 16h .. 16h + 15. The 16
 * accumulators are named variables: as an array GCC shuffled them between
 * registers on every depth step. */
static inline __attribute__((always_inline)) void
tile(int64_t kq, const int8_t *a, const int8_t *b, const int32_t *wsum, int mr, __m512i *acc)
{
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
            c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
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
    __m512i c[2 * KQ8_MR] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71};
    for (ptrdiff_t i = 0; i < mr; i++) {
        __m512i corr = _mm512_set1_epi32(128 * wsum[i]);
        acc[2 * i] = _mm512_sub_epi32(c[2 * i], corr);
        acc[2 * i + 1] = _mm512_sub_epi32(c[2 * i + 1], corr);
    }
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

/* The map's runs cut at the halves: computed once per tile, used per row. */
static int segments(const struct kq8_strip *map, struct seg *out)
{
    int n = 0;
    for (int k = 0; k < map->nruns; k++) {
        const struct kq8_run *run = &map->runs[k];
        for (int h = 0; h < 2; h++) {
            int a = run->l0 > 16 * h ? run->l0 : 16 * h, b = run->l1 < 16 * h + 16 ? run->l1 : 16 * h + 16;
            if (a < b)
                out[n++] = (struct seg){lanes_mask(a - 16 * h, b - 16 * h), lanes_mask(0, b - a), h,
                                        run->off + (a - run->l0)};
        }
    }
    return n;
}

static void store_tile(const struct kq8_block *b, const __m512i *acc, int i0, int mr,
                       const struct kq8_strip *map)
{
    const struct k_q8_epilogue *e = b->e;
    if (e->out_i32) {   /* the last layer only: not worth a vector path */
        int32_t tmp[KQ8_MR * KQ8_NR];
        for (ptrdiff_t i = 0; i < mr; i++) {
            _mm512_storeu_si512(tmp + i * KQ8_NR, acc[2 * i]);
            _mm512_storeu_si512(tmp + i * KQ8_NR + 16, acc[2 * i + 1]);
        }
        kq8_store_tile(b, tmp, i0, mr, map);
        return;
    }
    /* Outputs go where the map says, and no address before a run's start
     * is ever formed. In a convolution the valid lanes' outputs follow one
     * another in memory (row after row of one channel): each half's valid
     * lanes are compressed down and stored as one piece, and the residual
     * loaded as one piece and expanded into them. Otherwise (linear) each
     * run's share of each half is a segment of its own. */
    uint32_t valid = 0;
    int contiguous = 1;
    for (int k = 0; k < map->nruns; k++) {
        const struct kq8_run *run = &map->runs[k];
        valid |= (uint32_t)(((uint64_t)1 << run->l1) - ((uint64_t)1 << run->l0));
        if (k && run->off != map->runs[k - 1].off + (map->runs[k - 1].l1 - map->runs[k - 1].l0))
            contiguous = 0;
    }
    const __mmask16 m0 = (__mmask16)valid, m1 = (__mmask16)(valid >> 16);
    const int n0 = __builtin_popcount(m0), n1 = __builtin_popcount(m1);
    struct seg segs[2 * KQ8_NR];
    const int nseg = contiguous ? 0 : segments(map, segs);
    const int64_t off0 = contiguous && map->nruns ? map->runs[0].off : 0;
    const __m512i lo = _mm512_set1_epi64(e->lo), hi = _mm512_set1_epi64(e->hi);
    const __m512i lo32 = _mm512_set1_epi32(e->lo), hi32 = _mm512_set1_epi32(e->hi);
    /* the residual multiplier means nothing (may be zeroed) without a residual */
    const struct k_q8_mult res_mult = b->res ? e->res_mult : (struct k_q8_mult){0, 1};
    const struct kq8_mult512 rv = kq8_mult512_of(res_mult);
    const struct kq8_mult512_hi rh = kq8_mult512_hi_of(res_mult);
    for (ptrdiff_t i = 0; i < mr; i++) {
        ptrdiff_t row = i0 + i;
        const int8_t *res = b->res ? b->res + row * b->ldc + off0 : NULL;
        int8_t *y = (int8_t *)b->y + row * b->ldc + off0;
        __m512i bias = _mm512_set1_epi32(b->bias[row]), r[2] = {bias, bias}, q[2];
        if (res && contiguous) {
            r[0] = _mm512_maskz_expand_epi32(m0, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes_mask(0, n0), res)));
            r[1] = _mm512_maskz_expand_epi32(m1, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes_mask(0, n1), res + n0)));
        } else if (res) {
            r[0] = r[1] = _mm512_setzero_si512();
            for (int k = 0; k < nseg; k++)
                r[segs[k].h] = _mm512_or_si512(r[segs[k].h], _mm512_maskz_expand_epi32(segs[k].src,
                                   _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(segs[k].dst, res + segs[k].off))));
        }
        if (kq8_hi_path(b->mult[row], res != NULL, e->res_mult)) {
            struct kq8_mult512_hi mh = kq8_mult512_hi_of(b->mult[row]);
            for (int h = 0; h < 2; h++) {
                __m512i v = kq8_apply_hi512(_mm512_add_epi32(acc[2 * i + h], bias), &mh, 0);
                if (res)
                    v = _mm512_add_epi32(v, kq8_apply_hi512(r[h], &rh, 1));
                q[h] = _mm512_min_epi32(_mm512_max_epi32(v, lo32), hi32);
            }
        } else {
            struct kq8_mult512 mv = kq8_mult512_of(b->mult[row]);
            q[0] = kq8_requant16(_mm512_add_epi32(acc[2 * i], bias), &mv, res != NULL, r[0], &rv, lo, hi);
            q[1] = kq8_requant16(_mm512_add_epi32(acc[2 * i + 1], bias), &mv, res != NULL, r[1], &rv, lo, hi);
        }
        if (contiguous) {
            _mm_mask_storeu_epi8(y, lanes_mask(0, n0), _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(m0, q[0])));
            _mm_mask_storeu_epi8(y + n0, lanes_mask(0, n1), _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(m1, q[1])));
            continue;
        }
        for (int k = 0; k < nseg; k++)
            _mm_mask_storeu_epi8(y + segs[k].off, segs[k].dst,
                                 _mm512_cvtepi32_epi8(_mm512_maskz_compress_epi32(segs[k].src, q[segs[k].h])));
    }
}

void kq8_block_avx512(const struct kq8_block *b)
{
    __m512i acc[2 * KQ8_MR];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        for (int s = 0; s < b->nstrips; s++) {
            tile(b->kq, a, b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD, b->wsum + i0, mr, acc);
            store_tile(b, acc, i0, mr, &b->maps[s]);
        }
    }
}

/* Exact sums of the block's rows [i0, i0 + 8) against one sample's bytes
 * x (k of them), lanes = rows: per depth quad one 8-row weight quad (32
 * bytes of the panel) against the sample's quad, sign bits flipped and
 * broadcast. Four chains over the quads hide vpdpbusd's latency. */
static __m256i panel_dot(const int8_t *panel, int64_t kq, const int8_t *x, int64_t k)
{
    __m256i c[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
    int64_t full = k / 4;   /* quads wholly inside x; the rest is zero-padded */
    for (int64_t q = 0; q < kq; q++) {
        int32_t v = 0;
        if (q < full)
            memcpy(&v, x + 4 * q, sizeof(v));
        else
            memcpy(&v, x + 4 * q, (size_t)(k - 4 * q));   /* weights past k are zero */
        __m256i xq = _mm256_set1_epi32((int32_t)((uint32_t)v ^ 0x80808080u));
        c[q & 3] = _mm256_dpbusd_epi32(c[q & 3], xq, _mm256_loadu_si256((const __m256i *)(panel + q * KQ8_PANEL_QUAD)));
    }
    return _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
}

void kq8_gemv_avx512(const struct kq8_block *b, const int8_t *x, int n, int64_t k)
{
    int32_t sums[KQ8_MR * KQ8_NR];   /* [row][lane], lane t = sample t */
    __m512i acc[2 * KQ8_MR];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *panel = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        memset(sums, 0, sizeof(sums));
        __m256i corr = _mm256_mullo_epi32(_mm256_set1_epi32(128),
                                          _mm256_maskz_loadu_epi32((__mmask8)((1u << mr) - 1), b->wsum + i0));
        for (ptrdiff_t t = 0; t < n; t++) {
            int32_t rows[KQ8_MR];
            _mm256_storeu_si256((__m256i *)rows, _mm256_sub_epi32(panel_dot(panel, b->kq, x + t * k, k), corr));
            for (ptrdiff_t i = 0; i < mr; i++)
                sums[i * KQ8_NR + t] = rows[i];
        }
        for (ptrdiff_t i = 0; i < mr; i++) {
            acc[2 * i] = _mm512_loadu_si512(sums + i * KQ8_NR);
            acc[2 * i + 1] = _mm512_loadu_si512(sums + i * KQ8_NR + 16);
        }
        store_tile(b, acc, i0, mr, &b->maps[0]);
    }
}
