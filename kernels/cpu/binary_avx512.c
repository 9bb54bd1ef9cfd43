/*
 * binary_avx512.c - a row of an element-wise binary op on AVX-512
 * (kcpu_binary.c): add, sub, mul and div, each operand contiguous or one
 * broadcast value, the tail through masked loads and stores. Each lane is
 * the one IEEE operation the scalar loop does, so the results are the same.
 */
#include <immintrin.h>

#include "kcpu_impl.h"

static inline __attribute__((always_inline)) __m512 apply(enum k_binop op, __m512 x, __m512 z)
{
    switch (op) {
    case K_BIN_ADD: return _mm512_add_ps(x, z);
    case K_BIN_SUB: return _mm512_sub_ps(x, z);
    case K_BIN_MUL: return _mm512_mul_ps(x, z);
    default: return _mm512_div_ps(x, z);
    }
}

/* sa, sb: 1 (contiguous) or 0 (one value), constants where it is inlined. */
static inline __attribute__((always_inline)) void
row(enum k_binop op, int64_t len, const float *a, int sa, const float *b, int sb, float *y)
{
    const __m512 va = _mm512_set1_ps(a[0]), vb = _mm512_set1_ps(b[0]);
    int64_t i = 0;
    for (; i + 16 <= len; i += 16)
        _mm512_storeu_ps(y + i, apply(op, sa ? _mm512_loadu_ps(a + i) : va, sb ? _mm512_loadu_ps(b + i) : vb));
    if (i < len) {
        const __mmask16 m = (__mmask16)((1u << (len - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, apply(op, sa ? _mm512_maskz_loadu_ps(m, a + i) : va,
                                              sb ? _mm512_maskz_loadu_ps(m, b + i) : vb));
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

int kcpu_binary_row_avx512(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb,
                           float *y)
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
