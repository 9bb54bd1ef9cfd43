/*
 * test.h - the test harness: one registry, assertions that print both sides.
 *
 * A test is a function declared with TEST(name) at the start of a line in any
 * .c file in tests/; the Makefile collects those lines into build/test_list.h,
 * the single registry the runner walks. Inside a test:
 *
 *     ASSERT_TRUE(cond);  ASSERT_EQ_INT(a, b);  ASSERT_NEAR(a, b, tol);
 *     ASSERT_STR_EQ(a, b);  SKIP("why");
 *
 * A failed assertion returns from the test and the runner reports it with
 * file, line and both values. SKIP prints its reason and counts as skipped,
 * never as passed. Random data comes from test_rand_*() seeded by the runner
 * with a printed seed (INFERD_TEST_SEED overrides it). Each test runs under
 * the runner's time limit (120 s; INFERD_TEST_TIMEOUT overrides it).
 */
#ifndef TEST_H
#define TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum test_result { TEST_PASS = 0, TEST_FAIL, TEST_SKIP };

#define TEST(name) enum test_result test_##name(void); enum test_result test_##name(void)

void test_fail_msg(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TEST_FAIL_IF(cond, ...) do { if (cond) { test_fail_msg(__FILE__, __LINE__, __VA_ARGS__); return TEST_FAIL; } } while (0)

#define ASSERT_TRUE(c) TEST_FAIL_IF(!(c), "expected true: %s", #c)
#define ASSERT_FALSE(c) TEST_FAIL_IF((c), "expected false: %s", #c)
#define ASSERT_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    TEST_FAIL_IF(a_ != b_, "%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_NE_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    TEST_FAIL_IF(a_ == b_, "%s != %s: both %lld", #a, #b, a_); } while (0)
#define ASSERT_GE(a, b) do { double a_ = (double)(a), b_ = (double)(b); \
    TEST_FAIL_IF(!(a_ >= b_), "%s >= %s: %.9g < %.9g", #a, #b, a_, b_); } while (0)
#define ASSERT_LE(a, b) do { double a_ = (double)(a), b_ = (double)(b); \
    TEST_FAIL_IF(!(a_ <= b_), "%s <= %s: %.9g > %.9g", #a, #b, a_, b_); } while (0)
#define ASSERT_NEAR(a, b, tol) do { double a_ = (double)(a), b_ = (double)(b); \
    TEST_FAIL_IF(!(fabs(a_ - b_) <= (tol)), "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol)); } while (0)
#define ASSERT_STR_EQ(a, b) do { const char *a_ = (a), *b_ = (b); \
    TEST_FAIL_IF(!a_ || !b_ || strcmp(a_, b_) != 0, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)
#define ASSERT_STR_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    TEST_FAIL_IF(!h_ || !strstr(h_, n_), "%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); } while (0)
#define SKIP(...) do { printf("  skip: "); printf(__VA_ARGS__); printf("\n"); return TEST_SKIP; } while (0)

/* Deterministic random numbers (xorshift), seeded per test by the runner. */
uint64_t test_rand_u64(void);
int test_rand_int(int lo, int hi);               /* inclusive */
float test_rand_float(float lo, float hi);
void test_rand_fill(float *x, int64_t count, float lo, float hi); /* never all zero */

/* Whether two buffers hold the same bytes: for floats that must match bit
 * for bit (a comparison of values would call -0.0 and 0.0 equal, NaN not). */
static inline bool test_same_bits(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

/* max_i |a_i - b_i| / max(max_i |b_i|, tiny): the relative error of a vs a reference b. */
double test_rel_error(const float *a, const float *b, int64_t count);
/* max_i |got_i - want_i| / max(max_i |scale_i|, tiny); infinite where got
 * and want differ in NaN. With scale the pre-activation reference of a conv
 * or linear layer: float rounding of a k-term sum is proportional to the
 * sum's own size, and a saturating activation (tanh, sigmoid) shrinks the
 * output to 1 without shrinking that error, while no activation here has a
 * slope above 1.5 (hardswish), so the bound carries through. */
double test_scaled_error(const float *got, const float *want, const float *scale, int64_t count);
/* Count of NaN or infinity in x. */
int64_t test_count_nonfinite(const float *x, int64_t count);

/* Milliseconds on the monotonic clock (for timeouts and durations). */
double test_now_ms(void);

/* Whether a GPU suite was requested (run-tests --gpu). */
bool test_gpu_requested(void);

/* Whether the large-model tests (large_*: generated ImageNet-scale models)
 * were requested (run-tests --large, as make test-large does). */
bool test_large_requested(void);

/* Path of the project root (tests run from it; set by the runner). */
const char *test_root(void);

#endif /* TEST_H */
