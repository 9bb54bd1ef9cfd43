/* srv_float_text.c - shortest round-trip text of a float (see srv_float_text.h). */
#include "srv_float_text.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_uint128.h"

/* Operands stay below 2^124, so 2r, 4r and 2 * scale below fit 128 bits. */
enum { MAX_BITS = 124 };

int srv_float_text_printf(char *out, float v)
{
    for (int prec = 6; prec <= 9; prec++) {
        int n = snprintf(out, SRV_FLOAT_TEXT_MAX, "%.*g", prec, (double)v);
        if (prec == 9 || strtof(out, NULL) == v)
            return n;
    }
    return 0;
}

/* v = m * 2^e scaled by 10^q: numerator m * scale, denominator den. */
struct scaled {
    srv_u128 scale, den;        /* scale = 2^max(e,0) 10^max(q,0), den = 2^max(-e,0) 10^max(-q,0) */
};

static bool scale_for(int e, int q, struct scaled *s)
{
    if (q > 37 || q < -37)
        return false;
    srv_u128 ten = srv_pow10_u128(q < 0 ? -q : 0), up = srv_pow10_u128(q > 0 ? q : 0);
    int up_bits = srv_bit_length(up) + (e > 0 ? e : 0);
    int den_bits = srv_bit_length(ten) + (e < 0 ? -e : 0);
    if (up_bits + 24 > MAX_BITS || den_bits > MAX_BITS)
        return false;
    s->scale = up << (e > 0 ? e : 0);
    s->den = ten << (e < 0 ? -e : 0);
    return s->den != 0;   /* never zero within the budget; said for the analyser */
}

/* The P significant digits of m * 2^e, rounded half to even: the integer
 * *d in [10^(P-1), 10^P) times 10^(*x - P + 1). *k is the decimal exponent
 * of v itself (corrected here when the estimate was off by one); *x is k,
 * or k + 1 when rounding carried into a new digit (9.9999 -> 10.000).
 * *dist is |d - v * 10^q| times den, *above whether d is above v. */
static bool round_digits(uint32_t m, int e, int P, int *k, int *x, uint64_t *d, srv_u128 *dist,
                         bool *above, struct scaled *s)
{
    for (int tries = 0; tries < 4; tries++) {
        if (!scale_for(e, P - 1 - *k, s))
            return false;
        srv_u128 a = (srv_u128)m * s->scale, q = a / s->den, r = a - q * s->den;
        if (q >= srv_pow10_u128(P)) {
            ++*k;
            continue;
        }
        if (q < srv_pow10_u128(P - 1)) {
            --*k;
            continue;
        }
        bool up = 2 * r > s->den || (2 * r == s->den && (q & 1));
        q += up;
        *x = *k;
        if (q == srv_pow10_u128(P)) {
            q /= 10;
            ++*x;
        }
        *d = (uint64_t)q;
        *dist = up ? s->den - r : r;
        *above = up;
        return true;
    }
    return false;
}

/* Whether the decimal (dist and side from round_digits) reads back as v:
 * inside v's rounding interval, whose lower half is narrower at a power of
 * two; a tie reads back as the float with the even mantissa. */
static bool reads_back(uint32_t m, bool narrow_below, bool above, srv_u128 dist, srv_u128 scale)
{
    srv_u128 lhs = (above || !narrow_below ? 2 : 4) * dist;
    return lhs < scale || (lhs == scale && (m & 1) == 0);
}

/* "%.{P}g" of d * 10^(k - P + 1): trailing zeros dropped. */
static int format_g(char *out, bool neg, uint64_t d, int P, int k)
{
    char dig[16] = {0};
    for (int i = P - 1; i >= 0; i--, d /= 10)
        dig[i] = (char)('0' + d % 10);
    int nd = P;
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (k < -4 || k >= P) {
        *o++ = dig[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, dig + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        o += snprintf(o, 6, "e%c%02d", k < 0 ? '-' : '+', abs(k));   /* |k| <= 38 */
    } else if (k >= 0) {
        for (int i = 0; i <= k; i++)
            *o++ = (char)(i < nd ? dig[i] : '0');
        if (nd > k + 1) {
            *o++ = '.';
            memcpy(o, dig + k + 1, (size_t)(nd - k - 1));
            o += nd - k - 1;
        }
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -k - 1; i++)
            *o++ = '0';
        memcpy(o, dig, (size_t)nd);
        o += nd;
    }
    *o = '\0';
    return (int)(o - out);
}

int srv_float_text(char *out, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    bool neg = bits >> 31;
    int biased = (int)((bits >> 23) & 0xff);
    uint32_t m = bits & 0x7fffff;
    if (biased == 0 && m == 0)
        return format_g(out, neg, 0, 1, 0);
    int e = biased ? biased - 150 : -149;
    if (biased)
        m |= 1u << 23;
    bool narrow_below = m == (1u << 23) && biased > 1;
    int k = (int)floor(log10(fabs((double)v)));
    for (int P = 6; P <= 9; P++) {
        uint64_t d;
        srv_u128 dist;
        bool above;
        int x;
        struct scaled s;
        if (!round_digits(m, e, P, &k, &x, &d, &dist, &above, &s))
            return srv_float_text_printf(out, v);
        if (P == 9 || reads_back(m, narrow_below, above, dist, s.scale))
            return format_g(out, neg, d, P, x);
    }
    return 0;
}
