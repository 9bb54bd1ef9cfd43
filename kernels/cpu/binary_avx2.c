/*
 * binary_avx2.c - a row of an element-wise binary op on AVX2
 * (kcpu_binary.c): add, sub, mul and div, each operand contiguous or one
 * broadcast value, the tail through maskload and maskstore. Each lane is
 * the one IEEE operation the scalar loop does, so the results are the same.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

static inline __attribute__((always_inline)) __m256 apply(enum k_binop op, __m256 x, __m256 z)
{
    switch (op) {
    case K_BIN_ADD: return _mm256_add_ps(x, z);
    case K_BIN_SUB: return _mm256_sub_ps(x, z);
    case K_BIN_MUL: return _mm256_mul_ps(x, z);
    default: return _mm256_div_ps(x, z);
    }
}

/* sa, sb: 1 (contiguous) or 0 (one value), constants where it is inlined. */
static inline __attribute__((always_inline)) void
row(enum k_binop op, int64_t len, const float *a, int sa, const float *b, int sb, float *y)
{
    const __m256 va = _mm256_set1_ps(a[0]), vb = _mm256_set1_ps(b[0]);
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
        _mm256_storeu_ps(y + i, apply(op, sa ? _mm256_loadu_ps(a + i) : va, sb ? _mm256_loadu_ps(b + i) : vb));
    if (i < len) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(len - i)), lane);   /* lanes < len - i */
        _mm256_maskstore_ps(y + i, m, apply(op, sa ? _mm256_maskload_ps(a + i, m) : va,
                                            sb ? _mm256_maskload_ps(b + i, m) : vb));
    }
}

/* The strides as constants too. */
static inline __attribute__((always_inline)) void
rows(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb, float *y)
{
    if (sa && sb)
        row(op, len, a, 1, b, 1, y);
    else if (sa)
        row(op, len, a, 1, b, 0, y);
    else
        row(op, len, a, 0, b, 1, y);
}

int kcpu_binary_row_avx2(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb, float *y)
{
    if (!kcpu_binary_row_vectors(op, sa, sb))
        return -1;
    switch (op) {   /* each case its own loops, the op a constant in them */
    case K_BIN_ADD: rows(K_BIN_ADD, len, a, sa, b, sb, y); break;
    case K_BIN_SUB: rows(K_BIN_SUB, len, a, sa, b, sb, y); break;
    case K_BIN_MUL: rows(K_BIN_MUL, len, a, sa, b, sb, y); break;
    default: rows(K_BIN_DIV, len, a, sa, b, sb, y); break;
    }
    return 0;
}
