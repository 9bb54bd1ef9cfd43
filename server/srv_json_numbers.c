/* srv_json_numbers.c - tensor data taken out of JSON before cJSON (see srv_json_numbers.h). */
#include "srv_json_numbers.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "srv_uint128.h"

/* One cut per input at most. */
_Static_assert(SRV_JSON_NUMBERS_MAX_INPUTS <= SRV_JSON_MAX_CUTS, "a cut for every input");

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* (n + a fraction that is non-zero when sticky) * 2^exp2, correctly rounded
 * to a double (ties to even). n has at least 54 bits, or is exact. */
static double round_to_double(srv_u128 n, bool sticky, int exp2)
{
    int drop = srv_bit_length(n) - 53;
    if (drop <= 0)
        return ldexp((double)(uint64_t)n, exp2);   /* exact (sticky is false here) */
    uint64_t sig = (uint64_t)(n >> drop);
    srv_u128 rest = n & (((srv_u128)1 << drop) - 1), half = (srv_u128)1 << (drop - 1);
    if (rest > half || (rest == half && (sticky || (sig & 1))))
        sig++;                                      /* 2^53 at most: still exact */
    return ldexp((double)sig, exp2 + drop);
}

/* mant * 10^exp10 correctly rounded, for mantissas of up to 19 digits
 * (beyond Clinger's 15) and -22 <= exp10 <= 19, in 128-bit integers: a
 * product rounded once, or a quotient with enough bits and the remainder as
 * the sticky bit. False outside that range. */
static bool exact_long_mantissa(uint64_t mant, int exp10, double *out)
{
    if (mant == 0)
        return false;            /* the caller's fast path has it; and a shift below needs a set bit */
    if (exp10 >= 0 && exp10 <= 19) {
        *out = round_to_double((srv_u128)mant * srv_pow10_u128(exp10), false, 0);
        return true;
    }
    if (exp10 < 0 && exp10 >= -22) {
#if LDBL_MANT_DIG == 64
        /* x87's 64-bit division first: mant and 10^22 are exact there, and
         * rounding its quotient to 53 bits gives the correctly rounded
         * double unless the quotient sits exactly halfway between two
         * doubles (rounding to 64 bits never crosses such a midpoint, it can
         * only land on one). Only then the 128-bit division decides. */
        long double q64 = (long double)mant / (long double)POW10[-exp10];
        double d = (double)q64;
        long double off = 2 * fabsl(q64 - (long double)d);
        if (off != (long double)(nextafter(d, INFINITY) - d) && off != (long double)(d - nextafter(d, 0))) {
            *out = d;
            return true;
        }
#endif
        /* mant * 2^s fills 128 bits; over 10^22 < 2^73.1 the quotient keeps
         * 54 bits or more, one past a double's 53 for the rounding. */
        int s = 128 - srv_bit_length(mant);
        srv_u128 num = (srv_u128)mant << s, den = srv_pow10_u128(-exp10);
        srv_u128 q = num / den;
        *out = round_to_double(q, num - q * den != 0, -s);
        return true;
    }
    return false;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The value of eight digits 0..9 held one per byte, the first (most
 * significant) in the lowest byte: pairs, then quads, then all eight, each
 * step one multiply instead of a chain of eight. */
static uint64_t eight_digits(uint64_t v)
{
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFu;
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFu;
    return (v * 10000 + (v >> 32)) & 0xFFFFFFFFu;
}

/* Reads a run of digits into *mant, keeping at most 19 significant ones;
 * *exp10 moves by each digit dropped from an integer part or kept from a
 * fraction. Eight at a time while eight digits follow (the %.17g text of
 * numpy and Python floats), a shorter run before a non-digit in one step
 * too (the %.7g text of C clients: a loop over its digits mispredicts
 * where each number ends), else one by one. Always inlined: through
 * pointers to its caller's locals it costs a third more per number. */
static inline __attribute__((always_inline)) const char *read_digits(const char *p, const char *end, bool fraction, uint64_t *mant,
                               int *digits, int *exp10)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    static const uint64_t TEN_TO[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    while (end - p >= 8 && *digits <= 11) {
        uint64_t chunk;
        memcpy(&chunk, p, sizeof(chunk));
        /* Byte by byte minus '0': a digit becomes 0..9; any other byte has
         * its top bit set, or gets it when 0x76 is added. A borrow only
         * reaches bytes after the first non-digit, which are not used. */
        uint64_t x = chunk - 0x3030303030303030u;
        uint64_t other = (x | (x + 0x7676767676767676u)) & 0x8080808080808080u;
        if (other) {
            /* n < 8 digits, then a non-digit: shifted up to the top bytes,
             * below them zeros, they are an eight-digit number. */
            int n = __builtin_ctzll(other) / 8;
            if (n > 0) {
                *mant = *mant * TEN_TO[n] + eight_digits(x << (8 * (8 - n)));
                *digits += n;
                *exp10 -= fraction ? n : 0;
                p += n;
            }
            return p;
        }
        *mant = *mant * 100000000u + eight_digits(x);
        *digits += 8;
        *exp10 -= fraction ? 8 : 0;
        p += 8;
    }
#endif
    for (; p < end && is_digit(*p); p++, ++*digits) {
        if (*digits < 19) {
            *mant = *mant * 10 + (uint64_t)(*p - '0');
            *exp10 -= fraction;
        } else {
            *exp10 += !fraction;
        }
    }
    return p;
}

/* NaN, Inf and Infinity after an optional '-' (p points past it): the
 * tokens RapidJSON's kParseNanAndInfFlag takes (Triton parses with it;
 * perf_analyzer's random data holds them). "-NaN" is NaN, as there. The
 * whole run of letters must be the token. */
static const char *nan_or_inf(const char *p, const char *end, bool neg, double *out)
{
    const char *q = p;
    while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
        q++;
    size_t len = (size_t)(q - p);
    if (len == 3 && memcmp(p, "NaN", 3) == 0)
        *out = NAN;
    else if ((len == 3 && memcmp(p, "Inf", 3) == 0) || (len == 8 && memcmp(p, "Infinity", 8) == 0))
        *out = neg ? -INFINITY : INFINITY;
    else
        return NULL;
    return q;
}

/* Reads the JSON number (or NaN / Infinity token) at s, in one pass, as
 * strtod would; returns where it ends, or NULL when there is none (or it is
 * past a double's range). The caller checks what follows. */
static const char *parse_number(const char *s, const char *end, double *out)
{
    const char *p = s;
    bool neg = p < end && *p == '-';
    p += neg;
    if (p < end && (*p == 'N' || *p == 'I'))
        return nan_or_inf(p, end, neg, out);
    if (p == end || !is_digit(*p))
        return NULL;
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;   /* significant digits; mant * 10^exp10 */
    if (*p == '0') {
        p++;
        if (p < end && is_digit(*p))
            return NULL;         /* no leading zeros */
    } else {
        p = read_digits(p, end, false, &mant, &digits, &exp10);
    }
    if (p < end && *p == '.') {
        p++;
        if (p == end || !is_digit(*p))
            return NULL;
        if (digits == 0) {
            for (; p < end && *p == '0'; p++)
                exp10--;         /* zeros before the first significant digit */
        }
        p = read_digits(p, end, true, &mant, &digits, &exp10);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = p < end && *p == '-';
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return NULL;
        int e = 0;
        for (; p < end && is_digit(*p); p++)
            e = e < 10000 ? e * 10 + (*p - '0') : e;
        exp10 += eneg ? -e : e;
    }
    double v;
    if (mant == 0) {
        v = 0;
    } else if (digits <= 15 && exp10 >= -22 && exp10 <= 22) {
        /* Clinger's fast path: both operands exact, one correctly rounded op. */
        v = exp10 < 0 ? (double)mant / POW10[-exp10] : (double)mant * POW10[exp10];
    } else if (digits > 19 || !exact_long_mantissa(mant, exp10, &v)) {
        char tmp[64];
        size_t len = (size_t)(p - s);
        if (len >= sizeof(tmp))
            return NULL;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        v = strtod(tmp, NULL);
        /* A literal past the double range (1e400) is left to cJSON, whose
         * infinity the range check refuses: only the tokens above are
         * infinities here. */
        if (isinf(v))
            return NULL;
        *out = v;
        return p;
    }
    *out = neg ? -v : v;
    return p;
}

bool srv_json_number(const char *text, size_t len, double *out)
{
    double v;
    const char *end = parse_number(text, text + len, &v);
    if (end != text + len)
        return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------ scanning */

struct scan {
    char *text, *p, *end;
    int64_t budget;             /* numbers that may still be taken */
};

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Inlined: between the numbers of a data array it usually finds nothing
 * to skip, and a call there cost more than the check. */
static inline __attribute__((always_inline)) void skip_ws(struct scan *s)
{
    while (s->p < s->end && is_ws(*s->p))
        s->p++;
}

/* Skips a string starting at '"'; *escaped tells whether it held a backslash. */
static bool skip_string(struct scan *s, bool *escaped)
{
    *escaped = false;
    for (s->p++; s->p < s->end; s->p++) {
        if (*s->p == '\\') {
            *escaped = true;
            s->p++;
        } else if (*s->p == '"') {
            s->p++;
            return true;
        }
    }
    return false;
}

/* Skips any value: strings, containers by bracket counting (iteratively, so
 * depth costs nothing), scalars up to the next delimiter. */
static bool skip_value(struct scan *s)
{
    bool esc;
    if (s->p >= s->end)
        return false;
    if (*s->p == '"')
        return skip_string(s, &esc);
    if (*s->p == '[' || *s->p == '{') {
        int depth = 0;
        while (s->p < s->end) {
            char c = *s->p;
            if (c == '"') {
                if (!skip_string(s, &esc))
                    return false;
                continue;
            }
            if (c == '[' || c == '{') {
                depth++;
            } else if ((c == ']' || c == '}') && --depth == 0) {
                s->p++;
                return true;
            }
            s->p++;
        }
        return false;
    }
    while (s->p < s->end && *s->p != ',' && *s->p != ']' && *s->p != '}' && !is_ws(*s->p))
        s->p++;
    return true;
}

struct numbers {
    bool as_float;              /* into f (FP32 and BF16 inputs), else into d */
    float *f;
    double *d;
    int64_t n, cap;
    int depth;                  /* the deepest nesting seen, 1 for a flat array */
};

/* Room for more numbers (twice as many); false when out of memory. */
static bool numbers_grow(struct numbers *out)
{
    int64_t cap = out->cap ? out->cap * 2 : 1024;
    size_t size = out->as_float ? sizeof(float) : sizeof(double);
    void *v = realloc(out->as_float ? (void *)out->f : (void *)out->d, (size_t)cap * size);
    if (!v)
        return false;
    if (out->as_float)
        out->f = v;
    else
        out->d = v;
    out->cap = cap;
    return true;
}

/* Parses a (nested) array of numbers at '['; false when anything else is in it. */
static bool take_array(struct scan *s, struct numbers *out, int depth)
{
    if (depth > 64)
        return false;
    if (depth + 1 > out->depth)
        out->depth = depth + 1;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return true;
    }
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end)
            return false;
        if (*s->p == '[') {
            if (!take_array(s, out, depth + 1))
                return false;
        } else {
            if (out->n >= s->budget || (out->n == out->cap && !numbers_grow(out)))
                return false;
            double v;
            const char *stop = parse_number(s->p, s->end, &v);
            if (!stop)
                return false;
            if (out->as_float) {
                /* A finite literal that FP32 rounds to infinity (from
                 * 2^128 - 2^103 up, 1e39): left for cJSON, whose path
                 * reports it. */
                if (fabs(v) >= 0x1.ffffffp127 && !isinf(v))
                    return false;
                out->f[out->n] = (float)v;
            } else {
                out->d[out->n] = v;
            }
            s->p = (char *)stop;
            out->n++;
        }
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return true;
        }
        return false;
    }
}

/* Reads one key ("...":) of an object; false on malformed input. */
static bool read_key(struct scan *s, const char **key, size_t *klen, bool *escaped)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != '"')
        return false;
    *key = s->p + 1;
    if (!skip_string(s, escaped))
        return false;
    *klen = (size_t)(s->p - 1 - *key);
    skip_ws(s);
    if (s->p >= s->end || *s->p != ':')
        return false;
    s->p++;
    skip_ws(s);
    return s->p < s->end;
}

/* After a member: ',' (true, more follow) or the closing brace (false, *done). */
static bool next_member(struct scan *s, char close, bool *done)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == ',') {
        s->p++;
        return true;
    }
    *done = s->p < s->end && *s->p == close;
    if (*done)
        s->p++;
    return false;
}

/* Whether the value at s->p (a "datatype" key's) is the plain string FP32 or
 * BF16: the datatypes whose numbers are taken as floats. */
static bool float_datatype(const struct scan *s)
{
    struct scan sub = *s;
    bool esc;
    if (*sub.p != '"' || !skip_string(&sub, &esc) || esc)
        return false;
    size_t len = (size_t)(sub.p - s->p);
    return len == 6 && (memcmp(s->p, "\"FP32\"", 6) == 0 || memcmp(s->p, "\"BF16\"", 6) == 0);
}

/* One object of the inputs array. Its first "data" key is the one cJSON
 * will return; it is taken when it holds only numbers and no escaped key
 * (which cJSON might decode to "data") comes before it: as floats when the
 * object's first "datatype" key, read the same way, came before it and
 * said FP32 or BF16, else as doubles. */
static bool scan_input(struct scan *s, int index, struct srv_json_numbers *out, bool *all_taken)
{
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    bool escaped_before = false, data_seen = false, datatype_seen = false, as_float = false;
    bool done = false;
    do {
        const char *key;
        size_t klen;
        bool esc;
        if (!read_key(s, &key, &klen, &esc))
            return false;
        escaped_before |= esc;
        bool is_datatype = !esc && klen == 8 && memcmp(key, "datatype", 8) == 0 && !datatype_seen;
        datatype_seen |= is_datatype;
        if (is_datatype && !escaped_before)
            as_float = float_datatype(s);
        bool is_data = !esc && klen == 4 && memcmp(key, "data", 4) == 0 && !data_seen;
        data_seen |= is_data;
        if (is_data && !escaped_before && *s->p == '[' && index < SRV_JSON_NUMBERS_MAX_INPUTS) {
            struct numbers nums = {.as_float = as_float};
            struct scan sub = *s;
            if (take_array(&sub, &nums, 0) && (nums.cap > 0 || numbers_grow(&nums))) {
                /* The array's inside is cut out (when the scan ends): cJSON sees "[]". */
                out->cuts.at[out->cuts.n] = (size_t)(s->p + 1 - s->text);
                out->cuts.len[out->cuts.n++] = (size_t)(sub.p - s->p - 2);
                s->p = sub.p;
                out->floats[index] = nums.f;
                out->doubles[index] = nums.d;
                out->count[index] = nums.n;
                /* inputs[i].data sits three levels down: {, [, { */
                if (3 + nums.depth > out->depth)
                    out->depth = 3 + nums.depth;
                s->budget -= nums.n;
                continue;
            }
            free(nums.f);
            free(nums.d);
        }
        if (is_data)
            *all_taken = false;
        if (!skip_value(s))
            return false;
    } while (next_member(s, '}', &done));
    /* With no plain "data" key, an escaped one might decode to it. */
    *all_taken &= data_seen || !escaped_before;
    return done;
}

static void scan_inputs(struct scan *s, struct srv_json_numbers *out)
{
    s->p++;
    bool all_taken = true;
    for (int index = 0;; index++) {
        skip_ws(s);
        if (s->p >= s->end || *s->p == ']') {
            out->complete = all_taken && s->p < s->end;
            return;
        }
        bool ok = *s->p == '{' ? scan_input(s, index, out, &all_taken) : skip_value(s);
        bool done = false;
        if (!ok || !next_member(s, ']', &done)) {
            out->complete = all_taken && done;
            return;
        }
    }
}

static void scan_top(struct scan *sp, struct srv_json_numbers *out)
{
    struct scan s = *sp;
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return;
    /* The first plainly spelled "inputs" key is the one cJSON returns, unless
     * an escaped key before it decodes to "inputs": then nothing is taken. */
    s.p++;
    bool done = false;
    do {
        const char *key;
        size_t klen;
        bool esc;
        if (!read_key(&s, &key, &klen, &esc) || esc)
            return;
        if (klen == 6 && memcmp(key, "inputs", 6) == 0) {
            if (*s.p == '[')
                scan_inputs(&s, out);
            return;
        }
        if (!skip_value(&s))
            return;
    } while (next_member(&s, '}', &done));
}

/* Removes the cut ranges (recorded as offsets into the uncut text) in one
 * pass and turns their offsets into the cut text's. */
static size_t apply_cuts(char *text, size_t len, struct srv_json_cuts *c)
{
    size_t w = 0, r = 0;
    for (int i = 0; i < c->n; i++) {
        memmove(text + w, text + r, c->at[i] - r);
        w += c->at[i] - r;
        r = c->at[i] + c->len[i];
        c->at[i] = w;
    }
    memmove(text + w, text + r, len - r);
    return w + len - r;
}

size_t srv_json_numbers_take(char *text, size_t len, int64_t max_elems, struct srv_json_numbers *out)
{
    memset(out, 0, sizeof(*out));
    scan_top(&(struct scan){text, text, text + len, max_elems}, out);
    return apply_cuts(text, len, &out->cuts);
}

void srv_json_numbers_free(struct srv_json_numbers *n)
{
    for (int i = 0; i < SRV_JSON_NUMBERS_MAX_INPUTS; i++) {
        free(n->floats[i]);
        free(n->doubles[i]);
    }
    memset(n, 0, sizeof(*n));
}
