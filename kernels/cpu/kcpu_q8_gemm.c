/*
 * kcpu_q8_gemm.c - the INT8 GEMM block: ISA dispatch, the plain-C kernel,
 * the scalar epilogue and the B-strip interleave (see kcpu_q8_impl.h).
 */
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && !defined(KCPU_EMULATED_AVX512)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kcpu_q8_impl.h"

static atomic_int vnni = -1;   /* cached kq8_has_vnni(), -1 until first asked */

int kq8_has_vnni(void)
{
    int v = atomic_load_explicit(&vnni, memory_order_relaxed);
    if (v < 0) {
#if defined(KCPU_EMULATED_AVX512)
        v = 1;
#elif defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512vnni") != 0;
#else
        v = 0;
#endif
        atomic_store_explicit(&vnni, v, memory_order_relaxed);
    }
    return v;
}

static atomic_int amx = -1;         /* cached kcpu_q8_amx_usable() */
static atomic_int amx_allowed = 1;  /* kcpu_q8_amx_allow's switch */

/* AMX-TILE and AMX-INT8 in CPUID leaf 7, their state enabled in XCR0, and
 * Linux's permission to use it (the tile data is not in a thread's
 * signal frame until the process asks: arch_prctl ARCH_REQ_XCOMP_PERM). */
static int detect_amx(void)
{
#if defined(KCPU_EMULATED_AVX512)
    return 1;   /* tests/emu/immintrin.h emulates the tile instructions too */
#elif defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25)))
        return 0;   /* no AMX-TILE or AMX-INT8 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
        return 0;   /* no OSXSAVE: xgetbv would fault */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17))   /* XTILECFG and XTILEDATA */
        return 0;
    const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}

int kcpu_q8_amx_usable(void)
{
    int v = atomic_load_explicit(&amx, memory_order_relaxed);
    if (v < 0) {
        v = detect_amx();
        atomic_store_explicit(&amx, v, memory_order_relaxed);
    }
    return v;
}

void kcpu_q8_amx_allow(int allow)
{
    atomic_store_explicit(&amx_allowed, allow != 0, memory_order_relaxed);
}

int kq8_amx(void)
{
    return kq8_b_flipped() && atomic_load_explicit(&amx_allowed, memory_order_relaxed) && kcpu_q8_amx_usable();
}

void kq8_block_run(const struct kq8_block *b)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        /* AVX-512 without VNNI gains nothing over the AVX2 kernel */
        if (kq8_has_vnni()) {
            kq8_block_avx512(b);
            return;
        }
        kq8_block_avx2(b);
        return;
    case KCPU_ISA_AVX2:
        kq8_block_avx2(b);
        return;
    case KCPU_ISA_SCALAR:
        break;
    }
    kq8_block_scalar(b);
}

const char *kcpu_q8_kernel_name(void)
{
    switch (kcpu_isa()) {
    case KCPU_ISA_AVX512:
        return kq8_has_vnni() ? "avx512-vnni" : "avx2";
    case KCPU_ISA_AVX2:
        return "avx2";
    case KCPU_ISA_SCALAR:
        break;
    }
    return "scalar";
}

void kq8_gather_row(const struct kq8_block *b, int i, const struct kq8_strip *map, int8_t *lanes)
{
    memset(lanes, 0, KQ8_NR);
    for (int r = 0; r < map->nruns; r++) {
        const struct kq8_run *run = &map->runs[r];
        kq8_copy_short(lanes + run->l0, b->res + run->off + i * b->ldc, run->l1 - run->l0);
    }
}

void kq8_scatter_row(const struct kq8_block *b, int i, const struct kq8_strip *map, const int8_t *lanes)
{
    int8_t *y = b->y;
    for (int r = 0; r < map->nruns; r++) {
        const struct kq8_run *run = &map->runs[r];
        kq8_copy_short(y + run->off + i * b->ldc, lanes + run->l0, run->l1 - run->l0);
    }
}

void kq8_store_tile(const struct kq8_block *b, const int32_t *acc, int i0, int mr,
                    const struct kq8_strip *map)
{
    const struct k_q8_epilogue *e = b->e;
    for (int i = i0; i < i0 + mr; i++) {
        const int32_t *row = acc + (ptrdiff_t)(i - i0) * KQ8_NR;
        int32_t bias = b->bias[i];
        if (e->out_i32) {
            int32_t *y = b->y;
            for (int r = 0; r < map->nruns; r++) {
                const struct kq8_run *run = &map->runs[r];
                for (int t = run->l0; t < run->l1; t++)
                    y[run->off + i * b->ldc + (t - run->l0)] = row[t] + bias;
            }
            continue;
        }
        int8_t res[KQ8_NR], out[KQ8_NR];
        if (b->res)
            kq8_gather_row(b, i, map, res);
        for (int t = 0; t < KQ8_NR; t++) {
            if (b->res)
                out[t] = k_q8_requant_res(row[t], bias, b->mult[i], res[t], e->res_mult, e->lo, e->hi);
            else
                out[t] = k_q8_requant(row[t], bias, b->mult[i], e->lo, e->hi);
        }
        kq8_scatter_row(b, i, map, out);
    }
}

void kq8_block_scalar(const struct kq8_block *b)
{
    int32_t acc[KQ8_MR * KQ8_NR];
    for (int i0 = 0; i0 < b->m; i0 += KQ8_MR) {
        int mr = (int)kcpu_min64(KQ8_MR, b->m - i0);
        const int8_t *a = b->a + (int64_t)(i0 / KQ8_MR) * b->kq * KQ8_PANEL_QUAD;
        for (int s = 0; s < b->nstrips; s++) {
            const int8_t *bs = b->b + (int64_t)s * b->kq * KQ8_STRIP_QUAD;
            for (ptrdiff_t i = 0; i < mr; i++)
                for (ptrdiff_t t = 0; t < KQ8_NR; t++) {
                    int32_t sum = 0;
                    for (int64_t q = 0; q < b->kq; q++) {
                        const int8_t *aq = a + q * KQ8_PANEL_QUAD + i * 4;
                        const int8_t *bq = bs + q * KQ8_STRIP_QUAD + t * 4;
                        sum += aq[0] * bq[0] + aq[1] * bq[1] + aq[2] * bq[2] + aq[3] * bq[3];
                    }
                    acc[i * KQ8_NR + t] = sum;
                }
            kq8_store_tile(b, acc, i0, mr, &b->maps[s]);
        }
    }
}

void kq8_interleave4(const int8_t *r0, const int8_t *r1, const int8_t *r2, const int8_t *r3,
                     int8_t *dst)
{
#if defined(__SSE2__)
    /* bytes -> (r0,r1) pairs -> (r0,r1,r2,r3) quads, 16 columns at a time */
    for (int h = 0; h < KQ8_NR; h += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(r0 + h)), b = _mm_loadu_si128((const __m128i *)(r1 + h));
        __m128i c = _mm_loadu_si128((const __m128i *)(r2 + h)), d = _mm_loadu_si128((const __m128i *)(r3 + h));
        __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
        __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
        __m128i *o = (__m128i *)(dst + (ptrdiff_t)h * 4);
        _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
#else
    for (int t = 0; t < KQ8_NR; t++) {
        dst[t * 4 + 0] = r0[t];
        dst[t * 4 + 1] = r1[t];
        dst[t * 4 + 2] = r2[t];
        dst[t * 4 + 3] = r3[t];
    }
#endif
}

void kq8_pack_slices(const int8_t *base, const int64_t *koff, int64_t kg, int flip, int8_t *dst)
{
    static const int8_t zeros[KQ8_NR];
    if (kcpu_isa() >= KCPU_ISA_AVX2) {
        kq8_pack_slices_avx2(base, koff, kg, flip, dst);
        return;
    }
    int8_t *start = dst;
    for (int64_t k = 0; k < kg; k += 4, dst += KQ8_STRIP_QUAD) {
        const int8_t *r[4];
        for (int t = 0; t < 4; t++)
            r[t] = k + t < kg ? base + koff[k + t] : zeros;
        kq8_interleave4(r[0], r[1], r[2], r[3], dst);
    }
    if (flip)
        kq8_flip(start, dst - start);
}

int kq8_b_flipped(void)
{
    return kcpu_isa() == KCPU_ISA_AVX512 && kq8_has_vnni();
}

void kq8_flip(int8_t *b, int64_t bytes)
{
    uint8_t *u = (uint8_t *)b;
    int64_t i = 0;
#if defined(__SSE2__)
    /* GCC left this a byte-at-a-time loop: 16 times the stores */
    const __m128i f = _mm_set1_epi8((char)0x80);
    for (; i + 16 <= bytes; i += 16)
        _mm_storeu_si128((__m128i *)(u + i), _mm_xor_si128(_mm_loadu_si128((const __m128i *)(u + i)), f));
#endif
    for (; i < bytes; i++)
        u[i] ^= 0x80;
}
