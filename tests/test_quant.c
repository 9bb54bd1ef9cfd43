/*
 * test_quant.c - the INT8 number rules (kernels/kernel_quant.h) and the
 * load-time numbers derived from scales (runtime/precision/quant.h), against
 * exact references: 128-bit integer arithmetic for requantisation, the
 * definitions themselves for rounding, and known distributions for the
 * calibration methods.
 */
#include <stdlib.h>

#include "kernels/kernel_quant.h"
#include "runtime/precision/calib.h"
#include "runtime/precision/quant.h"
#include "test.h"

/* floor((x * m + 2^(s-1)) / 2^s) in 128 bits, the definition of k_q8_apply. */
static __int128 apply_exact(int32_t x, struct k_q8_mult q)
{
    __int128 t = (__int128)x * q.m + ((__int128)1 << (q.shift - 1));
    __int128 d = (__int128)1 << q.shift;
    __int128 f = t / d;
    return (t % d != 0 && t < 0) ? f - 1 : f;   /* C division truncates: floor it */
}

static int32_t rand_i32(void)
{
    switch (test_rand_int(0, 3)) {
    case 0:
        return (int32_t)test_rand_u64();                     /* anything, extremes included */
    case 1:
        return test_rand_int(-2000000, 2000000);             /* typical accumulators */
    case 2:
        return test_rand_int(-127, 127);                     /* int8 operands */
    default:
        return test_rand_int(0, 1) ? INT32_MIN : INT32_MAX;
    }
}

static struct k_q8_mult rand_mult(void)
{
    struct k_q8_mult q = {(int32_t)((1u << 30) + (uint32_t)(test_rand_u64() % (1u << 30))), test_rand_int(1, 62)};
    if (test_rand_int(0, 9) == 0)
        q.m = 0;
    return q;
}

TEST(quant_requant_matches_128bit_reference)
{
    for (int i = 0; i < 400000; i++) {
        int32_t x = rand_i32();
        struct k_q8_mult q = rand_mult();
        __int128 want = apply_exact(x, q);
        int64_t got = k_q8_apply(x, q);
        TEST_FAIL_IF(got != (int64_t)want, "apply(%d, m=%d, s=%d) = %lld, want %lld", x, q.m, q.shift,
                     (long long)got, (long long)want);
        int32_t lo = test_rand_int(0, 1) ? 0 : K_Q8_MIN, hi = test_rand_int(1, K_Q8_MAX);
        int64_t c = want < lo ? lo : want > hi ? hi : (int64_t)want;
        ASSERT_EQ_INT(k_q8_clamp(got, lo, hi), c);
    }
    return TEST_PASS;
}

TEST(quant_requant_rounding_and_saturation)
{
    struct k_q8_mult half = {1 << 30, 31};    /* M = 1/2 exactly */
    /* halves round toward +infinity, negative ones included */
    ASSERT_EQ_INT(k_q8_apply(5, half), 3);    /* 2.5 */
    ASSERT_EQ_INT(k_q8_apply(-5, half), -2);  /* -2.5 */
    ASSERT_EQ_INT(k_q8_apply(-1, half), 0);   /* -0.5 */
    ASSERT_EQ_INT(k_q8_apply(-3, half), -1);  /* -1.5 */
    ASSERT_EQ_INT(k_q8_apply(1, half), 1);    /* 0.5 */
    ASSERT_EQ_INT(k_q8_apply(-7, (struct k_q8_mult){1 << 30, 32}), -2);   /* -1.75 */
    /* the identity M = 1 */
    for (int x = -300; x <= 300; x++)
        ASSERT_EQ_INT(k_q8_apply(x, rt_q8_mult(1.0)), x);
    /* huge M: every nonzero input saturates, in both directions */
    struct k_q8_mult huge = rt_q8_mult(1e12);
    ASSERT_EQ_INT(huge.shift, 1);
    ASSERT_EQ_INT(k_q8_requant(1, 0, huge, K_Q8_MIN, K_Q8_MAX), 127);
    ASSERT_EQ_INT(k_q8_requant(-1, 0, huge, K_Q8_MIN, K_Q8_MAX), -127);
    ASSERT_EQ_INT(k_q8_requant(INT32_MIN + (1 << 30), -(1 << 30), huge, K_Q8_MIN, K_Q8_MAX), -127);
    ASSERT_EQ_INT(k_q8_requant(0, 0, huge, K_Q8_MIN, K_Q8_MAX), 0);
    /* tiny M: everything rounds to 0, the extremes included */
    struct k_q8_mult tiny = rt_q8_mult(1e-12);
    ASSERT_EQ_INT(tiny.m, 0);
    ASSERT_EQ_INT(k_q8_apply(INT32_MIN, tiny), 0);
    ASSERT_EQ_INT(k_q8_apply(INT32_MAX, tiny), 0);
    struct k_q8_mult small = rt_q8_mult(3e-10);   /* just above the m = 0 cut */
    ASSERT_TRUE(small.m >= 1 << 30);
    ASSERT_EQ_INT(k_q8_apply(INT32_MAX, small), 1);
    ASSERT_EQ_INT(k_q8_apply(INT32_MIN, small), -1);
    /* the clamp bounds of ReLU / ReLU6 */
    ASSERT_EQ_INT(k_q8_requant(-1000, 0, half, 0, 127), 0);
    ASSERT_EQ_INT(k_q8_requant(1000, 0, half, 0, 60), 60);
    /* a residual adds after both rescalings, before the clamp */
    ASSERT_EQ_INT(k_q8_requant_res(200, 0, half, -127, huge, K_Q8_MIN, K_Q8_MAX), -127);
    ASSERT_EQ_INT(k_q8_requant_res(201, -1, half, 10, rt_q8_mult(1.0), K_Q8_MIN, K_Q8_MAX), 110);
    return TEST_PASS;
}

TEST(quant_fixed_point_multipliers)
{
    for (int i = 0; i < 200000; i++) {
        double M = pow(2.0, test_rand_float(-40.0f, 35.0f));
        struct k_q8_mult q = rt_q8_mult(M);
        ASSERT_TRUE(q.shift >= 1 && q.shift <= 62);
        if (q.m == 0) {   /* only below 2^-32 */
            ASSERT_LE(M, pow(2.0, -31));
            continue;
        }
        ASSERT_TRUE(q.m >= 1 << 30);
        double back = ldexp((double)q.m, -q.shift);
        if (M < pow(2.0, 30))
            TEST_FAIL_IF(fabs(back - M) > M * pow(2.0, -31), "M %.17g -> m %d shift %d (%.17g)", M, q.m, q.shift, back);
        /* against the real-valued product: off by at most one */
        int32_t x = test_rand_int(-1000000, 1000000);
        double ideal = floor((double)x * M + 0.5);
        if (fabs(ideal) < 1e6)
            ASSERT_LE(fabs((double)k_q8_apply(x, q) - ideal), 1);
    }
    /* non-positive or non-finite M gives the zero multiplier */
    ASSERT_EQ_INT(rt_q8_mult(0).m, 0);
    ASSERT_EQ_INT(rt_q8_mult(-1).m, 0);
    ASSERT_EQ_INT(rt_q8_mult(NAN).m, 0);
    return TEST_PASS;
}

TEST(quant_quantize_dequantize_round_trip)
{
    /* round half away from zero, saturating, NaN -> 0 */
    static const struct {
        float x;
        int q;
    } cases[] = {{2.5f, 3}, {-2.5f, -3}, {0.5f, 1}, {-0.5f, -1}, {0.49999997f, 0}, {-0.49999997f, 0},
                 {1.5f, 2}, {126.5f, 127}, {126.49999f, 126}, {127.4f, 127}, {-127.6f, -127}, {1e9f, 127},
                 {-1e9f, -127}, {INFINITY, 127}, {-INFINITY, -127}, {NAN, 0}, {0.0f, 0}, {-0.0f, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        TEST_FAIL_IF(k_q8_quantize(cases[i].x, 1.0f) != cases[i].q, "quantize(%g) = %d, want %d",
                     (double)cases[i].x, k_q8_quantize(cases[i].x, 1.0f), cases[i].q);
    for (int it = 0; it < 2000; it++) {
        float s = powf(2.0f, test_rand_float(-20, 10)), inv = (float)(1.0 / s);
        /* every int8 value survives dequantise -> quantise */
        for (int q = K_Q8_MIN; q <= K_Q8_MAX; q++)
            TEST_FAIL_IF(k_q8_quantize(k_q8_dequantize(q, s), inv) != q, "scale %g: %d does not round-trip", (double)s, q);
        /* and a float in range comes back within half a step, give or take
         * three float roundings of values up to 127 steps (inv, x * inv and
         * q * s, each under 127 * 2^-24 steps; 1e-6 of a half step was too
         * tight for some seeds) */
        float x = test_rand_float(-127 * s, 127 * s);
        float back = k_q8_dequantize(k_q8_quantize(x, inv), s);
        ASSERT_LE(fabs((double)back - x), s * (0.5 + 3 * 127.0 * 0x1p-24));
    }
    return TEST_PASS;
}

TEST(quant_bias_rounding_and_tables)
{
    ASSERT_EQ_INT(rt_q8_bias(2.5, 1.0), 3);
    ASSERT_EQ_INT(rt_q8_bias(-2.5, 1.0), -3);
    ASSERT_EQ_INT(rt_q8_bias(1.0, 0.25), 4);
    ASSERT_EQ_INT(rt_q8_bias(1e30, 1e-10), K_Q8_BIAS_MAX);
    ASSERT_EQ_INT(rt_q8_bias(-1e30, 1e-10), -K_Q8_BIAS_MAX);
    ASSERT_EQ_INT(rt_q8_round(0.75, 0.5), 2);   /* 1.5 away from zero */
    ASSERT_EQ_INT(rt_q8_round(-0.75, 0.5), -2);
    int8_t lut[256];
    rt_q8_lut(K_ACT_RELU, 0.1, 0.05, lut);
    for (int q = -127; q <= 127; q++)
        ASSERT_EQ_INT(k_q8_lut(lut, (int8_t)q), q < 0 ? 0 : (q * 2 > 127 ? 127 : q * 2));
    rt_q8_lut(K_ACT_RELU6, 0.1, 0.1, lut);
    ASSERT_EQ_INT(k_q8_lut(lut, 100), 60);
    rt_q8_lut(K_ACT_SIGMOID, 0.05, 1.0 / 127, lut);
    ASSERT_EQ_INT(k_q8_lut(lut, 0), 64);      /* 0.5 * 127 = 63.5 -> 64 */
    for (int q = -126; q <= 127; q++)
        ASSERT_TRUE(k_q8_lut(lut, (int8_t)q) >= k_q8_lut(lut, (int8_t)(q - 1)));
    /* per-channel weights: the largest magnitude of each row maps to 127 */
    float w[2 * 3] = {0.5f, -1.0f, 0.25f, 0, 0, 0};
    int8_t q[6];
    float scale[2];
    rt_q8_quantize_weights(w, 2, 3, q, scale);
    ASSERT_NEAR(scale[0], 1.0 / 127, 1e-9);
    ASSERT_EQ_INT(q[0], 64);
    ASSERT_EQ_INT(q[1], -127);
    ASSERT_EQ_INT(q[2], 32);
    ASSERT_EQ_INT(scale[1], 1);   /* an all-zero row gets scale 1, zeros */
    ASSERT_EQ_INT(q[4], 0);
    return TEST_PASS;
}

TEST(quant_calibration_methods)
{
    enum { N = 200000 };
    struct rt_calib c;
    ASSERT_TRUE(rt_calib_init(&c, 3));
    float *x = malloc(sizeof(float) * N);
    RT_ASSERT(x);
    /* tensor 0: uniform [-1, 1]; 1: gaussian with ten outliers at 50;
     * 2: a ReLU output (half exact zeros) */
    for (int pass = 0; pass < 2; pass++) {
        test_rand_fill(x, N, -1, 1);
        rt_calib_add(&c, 0, x, N);
        for (int i = 0; i < N; i++) {
            float u1 = test_rand_float(1e-7f, 1), u2 = test_rand_float(0, 1);
            x[i] = sqrtf(-2 * logf(u1)) * cosf(6.2831853f * u2);
        }
        for (int i = 0; i < 10; i++)
            x[(size_t)i * 1000] = 50;
        rt_calib_add(&c, 1, x, N);
        for (int i = 0; i < N; i++)
            x[i] = x[i] < 0 ? 0 : x[i];
        rt_calib_add(&c, 2, x, N);
        rt_calib_next_pass(&c);
    }
    free(x);
    ASSERT_NEAR(rt_calib_scale(&c, 0, RT_CALIB_MAX, 0) * 127, 1.0, 1e-3);
    ASSERT_NEAR(rt_calib_scale(&c, 0, RT_CALIB_PERCENTILE, 99.99) * 127, 1.0, 2e-3);
    ASSERT_GE(rt_calib_scale(&c, 0, RT_CALIB_ENTROPY, 0) * 127, 0.85);
    ASSERT_NEAR(rt_calib_scale(&c, 1, RT_CALIB_MAX, 0) * 127, 50, 1e-3);
    /* the 99.9th percentile of |N(0,1)| is 3.29 */
    ASSERT_NEAR(rt_calib_scale(&c, 1, RT_CALIB_PERCENTILE, 99.9) * 127, 3.29, 0.1);
    double ent = rt_calib_scale(&c, 1, RT_CALIB_ENTROPY, 0) * 127;
    printf("  gaussian with outliers: max 50, entropy threshold %.2f\n", ent);
    ASSERT_TRUE(ent > 2.5 && ent < 10);
    double relu = rt_calib_scale(&c, 2, RT_CALIB_ENTROPY, 0) * 127;
    ASSERT_TRUE(relu > 2.0 && relu < 10);   /* the zero spike does not pull it down */
    rt_calib_free(&c);
    /* method names */
    enum rt_calib_method m;
    ASSERT_TRUE(rt_calib_method_parse("entropy", &m) && m == RT_CALIB_ENTROPY);
    ASSERT_FALSE(rt_calib_method_parse("kl", &m));
    ASSERT_STR_EQ(rt_calib_method_name(RT_CALIB_PERCENTILE), "percentile");
    return TEST_PASS;
}
