/*
 * rt_checked.h - checked arithmetic for sizes, counts and offsets.
 *
 * Every parser and allocator computes element counts, byte sizes and offsets
 * through these, so an attacker-chosen dimension cannot wrap a size. Each
 * returns true on success and leaves *out untouched on overflow.
 */
#ifndef RT_CHECKED_H
#define RT_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool rt_mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

static inline bool rt_add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

/* Product of n non-negative dimensions; false if any is negative or the
 * product overflows int64 (and so size_t on 64-bit hosts). */
static inline bool rt_dims_product(const int64_t *dims, int n, int64_t *out)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || __builtin_mul_overflow(p, dims[i], &p))
            return false;
    }
    *out = p;
    return true;
}

/* Rounds v up to a multiple of align (a power of two); false on overflow. */
static inline bool rt_align_size(size_t v, size_t align, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(v, align - 1, &r))
        return false;
    *out = r & ~(align - 1);
    return true;
}

#endif /* RT_CHECKED_H */
