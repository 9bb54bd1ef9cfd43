/* srv_json_numbers.c - tensor data taken out of JSON before cJSON (see srv_json_numbers.h). */
#include "srv_json_numbers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* NaN, Inf and Infinity after an optional '-': the tokens RapidJSON's
 * kParseNanAndInfFlag takes (Triton parses with it; perf_analyzer's random
 * data holds them). "-NaN" is NaN, as there. */
static bool nan_or_inf(const char *p, size_t len, bool neg, double *out)
{
    if (len == 3 && memcmp(p, "NaN", 3) == 0)
        *out = NAN;
    else if ((len == 3 && memcmp(p, "Inf", 3) == 0) || (len == 8 && memcmp(p, "Infinity", 8) == 0))
        *out = neg ? -INFINITY : INFINITY;
    else
        return false;
    return true;
}

bool srv_json_number(const char *s, size_t len, double *out)
{
    const char *p = s, *end = s + len;
    bool neg = p < end && *p == '-';
    p += neg;
    if (p < end && (*p == 'N' || *p == 'I'))
        return nan_or_inf(p, (size_t)(end - p), neg, out);
    if (p == end || !is_digit(*p) || (*p == '0' && p + 1 < end && is_digit(p[1])))
        return false;
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;
    for (; p < end && is_digit(*p); p++) {
        if (mant || *p != '0')
            digits++;
        if (digits <= 19)
            mant = mant * 10 + (uint64_t)(*p - '0');
        else
            exp10++;
    }
    if (p < end && *p == '.') {
        p++;
        if (p == end || !is_digit(*p))
            return false;
        for (; p < end && is_digit(*p); p++) {
            if (mant || *p != '0')
                digits++;
            if (digits <= 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                exp10--;
            }
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = p < end && *p == '-';
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return false;
        int e = 0;
        for (; p < end && is_digit(*p); p++)
            e = e < 10000 ? e * 10 + (*p - '0') : e;
        exp10 += eneg ? -e : e;
    }
    if (p != end)
        return false;
    double v;
    if (mant == 0) {
        v = 0;
    } else if (digits <= 15 && exp10 >= -22 && exp10 <= 22) {
        /* Clinger's fast path: both operands exact, one correctly rounded op. */
        v = exp10 < 0 ? (double)mant / POW10[-exp10] : (double)mant * POW10[exp10];
    } else {
        char tmp[64];
        if (len >= sizeof(tmp))
            return false;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        v = strtod(tmp, NULL);
        /* A literal past the double range (1e400) is left to cJSON, whose
         * infinity the range check refuses: only the tokens above are
         * infinities here. */
        if (isinf(v))
            return false;
        *out = v;
        return true;
    }
    *out = neg ? -v : v;
    return true;
}

/* ------------------------------------------------------------ scanning */

struct scan {
    char *p, *end;
    int64_t budget;             /* numbers that may still be taken */
};

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_ws(struct scan *s)
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
    double *v;
    int64_t n, cap;
};

/* Parses a (nested) array of numbers at '['; false when anything else is in it. */
static bool take_array(struct scan *s, struct numbers *out, int depth)
{
    if (depth > 64)
        return false;
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
            char *tok = s->p;
            while (s->p < s->end && *s->p != ',' && *s->p != ']' && !is_ws(*s->p))
                s->p++;
            if (out->n >= s->budget)
                return false;
            if (out->n == out->cap) {
                int64_t cap = out->cap ? out->cap * 2 : 1024;
                double *v = realloc(out->v, (size_t)cap * sizeof(double));
                if (!v)
                    return false;
                out->v = v;
                out->cap = cap;
            }
            if (!srv_json_number(tok, (size_t)(s->p - tok), &out->v[out->n]))
                return false;
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

/* One object of the inputs array. Its first "data" key is the one cJSON
 * will return; it is taken when it holds only numbers and no escaped key
 * (which cJSON might decode to "data") comes before it. */
static bool scan_input(struct scan *s, int index, struct srv_json_numbers *out, bool *all_taken)
{
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    bool escaped_before = false, data_seen = false, done = false;
    do {
        const char *key;
        size_t klen;
        bool esc;
        if (!read_key(s, &key, &klen, &esc))
            return false;
        escaped_before |= esc;
        bool is_data = !esc && klen == 4 && memcmp(key, "data", 4) == 0 && !data_seen;
        data_seen |= is_data;
        if (is_data && !escaped_before && *s->p == '[' && index < SRV_JSON_NUMBERS_MAX_INPUTS) {
            struct numbers nums = {0};
            struct scan sub = *s;
            if (take_array(&sub, &nums, 0)) {
                /* Blank the array's inside: cJSON sees "[   ]". */
                memset(s->p + 1, ' ', (size_t)(sub.p - s->p - 2));
                s->p = sub.p;
                out->values[index] = nums.v ? nums.v : malloc(sizeof(double));
                out->count[index] = nums.n;
                s->budget -= nums.n;
                continue;
            }
            free(nums.v);
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

void srv_json_numbers_take(char *text, size_t len, int64_t max_elems, struct srv_json_numbers *out)
{
    memset(out, 0, sizeof(*out));
    struct scan s = {text, text + len, max_elems};
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

void srv_json_numbers_free(struct srv_json_numbers *n)
{
    for (int i = 0; i < SRV_JSON_NUMBERS_MAX_INPUTS; i++)
        free(n->values[i]);
    memset(n, 0, sizeof(*n));
}
