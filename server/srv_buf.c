/* srv_buf.c - growable buffer and JSON writing (see srv_buf.h). */
#include "srv_buf.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_float_text.h"

void srv_buf_free(struct srv_buf *b)
{
    free(b->data);
    *b = (struct srv_buf){0};
}

bool srv_buf_reserve(struct srv_buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    size_t need = b->len + extra;
    if (need < b->len) {
        b->failed = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void srv_buf_append(struct srv_buf *b, const void *data, size_t n)
{
    if (n == 0 || !srv_buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void srv_buf_puts(struct srv_buf *b, const char *s) { srv_buf_append(b, s, strlen(s)); }

void srv_buf_putc(struct srv_buf *b, char c) { srv_buf_append(b, &c, 1); }

void srv_buf_printf(struct srv_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        srv_buf_append(b, small, (size_t)n);
        return;
    }
    if (!srv_buf_reserve(b, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *srv_buf_take(struct srv_buf *b, size_t *len)
{
    if (b->failed || !srv_buf_reserve(b, 1)) {
        srv_buf_free(b);
        *len = 0;
        return NULL;
    }
    char *p = b->data;
    *len = b->len;
    *b = (struct srv_buf){0};
    return p;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlongs, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    }
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

void srv_buf_json_strn(struct srv_buf *b, const char *s, size_t n)
{
    static const char HEX[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    srv_buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
            continue;
        if (c >= 0x80) {
            size_t len = utf8_len(u + i, n - i);
            if (len) {
                i += len - 1;   /* well-formed: copied as it is */
                continue;
            }
        }
        srv_buf_append(b, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]};
        switch (c) {
        case '"': srv_buf_append(b, "\\\"", 2); break;
        case '\\': srv_buf_append(b, "\\\\", 2); break;
        case '\n': srv_buf_append(b, "\\n", 2); break;
        case '\r': srv_buf_append(b, "\\r", 2); break;
        case '\t': srv_buf_append(b, "\\t", 2); break;
        default:
            if (c >= 0x80)
                srv_buf_append(b, "\xef\xbf\xbd", 3);   /* not UTF-8 (or cut mid-character): U+FFFD */
            else
                srv_buf_append(b, esc, 6);
            break;
        }
    }
    srv_buf_append(b, s + run, n - run);
    srv_buf_putc(b, '"');
}

void srv_buf_json_str(struct srv_buf *b, const char *s) { srv_buf_json_strn(b, s, strlen(s)); }

void srv_buf_json_float(struct srv_buf *b, float v)
{
    if (!isfinite(v)) {
        srv_buf_puts(b, "null");
        return;
    }
    char tmp[SRV_FLOAT_TEXT_MAX] = "";
    srv_buf_append(b, tmp, (size_t)srv_float_text(tmp, v));
}

void srv_buf_json_i64(struct srv_buf *b, int64_t v) { srv_buf_printf(b, "%" PRId64, v); }
