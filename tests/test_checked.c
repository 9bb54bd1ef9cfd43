/*
 * test_checked.c - runtime/rt_checked.h on the overflow boundaries: every
 * helper at the largest value that fits, one past it, and the identities
 * (zero, one) a parser meets with empty or scalar tensors.
 */
#include "runtime/rt_checked.h"
#include "test.h"

TEST(checked_mul_size_boundaries)
{
    size_t r = 7;
    ASSERT_TRUE(rt_mul_size(0, SIZE_MAX, &r));
    ASSERT_EQ_INT(r, 0);
    ASSERT_TRUE(rt_mul_size(1, SIZE_MAX, &r));
    ASSERT_TRUE(r == SIZE_MAX);
    ASSERT_TRUE(rt_mul_size(SIZE_MAX / 2, 2, &r));
    ASSERT_TRUE(r == SIZE_MAX - 1);
    r = 7;
    ASSERT_FALSE(rt_mul_size(SIZE_MAX / 2 + 1, 2, &r));
    ASSERT_EQ_INT(r, 7); /* untouched on overflow */
    ASSERT_FALSE(rt_mul_size((size_t)1 << 32, (size_t)1 << 32, &r));
    ASSERT_TRUE(rt_mul_size((size_t)1 << 31, (size_t)1 << 32, &r));
    ASSERT_TRUE(r == (size_t)1 << 63);
    return TEST_PASS;
}

TEST(checked_add_size_boundaries)
{
    size_t r = 7;
    ASSERT_TRUE(rt_add_size(SIZE_MAX - 1, 1, &r));
    ASSERT_TRUE(r == SIZE_MAX);
    r = 7;
    ASSERT_FALSE(rt_add_size(SIZE_MAX, 1, &r));
    ASSERT_FALSE(rt_add_size(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1, &r));
    ASSERT_EQ_INT(r, 7);
    ASSERT_TRUE(rt_add_size(0, 0, &r));
    ASSERT_EQ_INT(r, 0);
    return TEST_PASS;
}

TEST(checked_dims_product_boundaries)
{
    int64_t p = 7;
    ASSERT_TRUE(rt_dims_product(NULL, 0, &p)); /* a scalar holds one element */
    ASSERT_EQ_INT(p, 1);
    const int64_t zero[] = {3, 0, INT64_MAX};
    ASSERT_TRUE(rt_dims_product(zero, 3, &p));
    ASSERT_EQ_INT(p, 0);
    const int64_t fits[] = {INT64_MAX / 3, 3};
    ASSERT_TRUE(rt_dims_product(fits, 2, &p));
    ASSERT_EQ_INT(p, INT64_MAX / 3 * 3);
    const int64_t wraps[] = {INT64_MAX / 3 + 1, 3};
    p = 7;
    ASSERT_FALSE(rt_dims_product(wraps, 2, &p));
    /* 2^21 cubed is 2^63: one past INT64_MAX, which a 64-bit wrap would make negative. */
    const int64_t cube[] = {INT64_C(1) << 21, INT64_C(1) << 21, INT64_C(1) << 21};
    ASSERT_FALSE(rt_dims_product(cube, 3, &p));
    const int64_t negative[] = {4, -1};
    ASSERT_FALSE(rt_dims_product(negative, 2, &p));
    ASSERT_EQ_INT(p, 7);
    return TEST_PASS;
}

TEST(checked_align_size_boundaries)
{
    size_t r = 7;
    ASSERT_TRUE(rt_align_size(0, 64, &r));
    ASSERT_EQ_INT(r, 0);
    ASSERT_TRUE(rt_align_size(65, 64, &r));
    ASSERT_EQ_INT(r, 128);
    ASSERT_TRUE(rt_align_size(SIZE_MAX - 63, 64, &r));
    ASSERT_TRUE(r == SIZE_MAX - 63);
    r = 7;
    ASSERT_FALSE(rt_align_size(SIZE_MAX - 62, 64, &r));
    ASSERT_EQ_INT(r, 7);
    return TEST_PASS;
}
