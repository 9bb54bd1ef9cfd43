/*
 * srv_multipart.c - multipart/form-data parsing (see srv_multipart.h).
 *
 * Body grammar (RFC 2046 section 5.1.1), as accepted here:
 *
 *     preamble  "--" boundary *(SP/HT) CRLF
 *     part-headers CRLF  content  CRLF "--" boundary *(SP/HT) CRLF
 *     ...
 *     content   CRLF "--" boundary "--"  epilogue
 *
 * The first delimiter may start the body or follow a CRLF; content runs up
 * to the next CRLF "--" boundary. Every length is checked against the end.
 */
#include "srv_multipart.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PART_HEADERS_MAX 8192

static bool is_bchar(char c)
{
    /* RFC 2046 bcharsnospace plus space. */
    return isalnum((unsigned char)c) || strchr("'()+_,-./:=? ", c) != NULL;
}

enum rt_status srv_multipart_boundary(const char *ct, char *out, struct rt_error *err)
{
    const char *p = ct;
    while ((p = strchr(p, ';'))) {
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncasecmp(p, "boundary=", 9) != 0)
            continue;
        p += 9;
        size_t n = 0;
        if (*p == '"') {
            p++;
            while (p[n] && p[n] != '"')
                n++;
            if (p[n] != '"')
                return rt_error_set(err, RT_ERR_INVALID, "multipart boundary has no closing quote");
        } else {
            while (p[n] && p[n] != ';' && p[n] != ' ' && p[n] != '\t')
                n++;
        }
        if (n == 0 || n > SRV_MULTIPART_BOUNDARY_MAX || p[n - 1] == ' ')
            return rt_error_set(err, RT_ERR_INVALID, "multipart boundary must be 1..70 characters");
        for (size_t i = 0; i < n; i++) {
            if (!is_bchar(p[i]))
                return rt_error_set(err, RT_ERR_INVALID, "invalid character in multipart boundary");
        }
        memcpy(out, p, n);
        out[n] = '\0';
        return RT_OK;
    }
    return rt_error_set(err, RT_ERR_INVALID, "multipart/form-data without a boundary");
}

/* Copies the value of param (e.g. name=) from a header value, quoted or not. */
static void header_param(const char *v, size_t vlen, const char *param, char *out, size_t cap)
{
    size_t pl = strlen(param);
    out[0] = '\0';
    for (size_t i = 0; i + pl <= vlen; i++) {
        bool boundary_ok = i == 0 || v[i - 1] == ';' || v[i - 1] == ' ' || v[i - 1] == '\t';
        if (!boundary_ok || strncasecmp(v + i, param, pl) != 0)
            continue;
        const char *s = v + i + pl, *end = v + vlen;
        size_t n = 0;
        if (s < end && *s == '"') {
            s++;
            while (s + n < end && s[n] != '"')
                n++;
        } else {
            while (s + n < end && s[n] != ';' && s[n] != ' ')
                n++;
        }
        if (n >= cap)
            n = cap - 1;
        memcpy(out, s, n);
        out[n] = '\0';
        return;
    }
}

/* Parses the header block [p, end) of one part (lines separated by CRLF). */
static void part_headers(const char *p, const char *end, struct srv_part *part)
{
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol)
            eol = end;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon) {
            size_t nlen = (size_t)(colon - p);
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t vlen = (size_t)(eol - v);
            if (nlen == 19 && strncasecmp(p, "Content-Disposition", 19) == 0) {
                header_param(v, vlen, "name=", part->name, sizeof(part->name));
            } else if (nlen == 12 && strncasecmp(p, "Content-Type", 12) == 0) {
                size_t n = vlen < sizeof(part->content_type) - 1 ? vlen
                                                                 : sizeof(part->content_type) - 1;
                memcpy(part->content_type, v, n);
                part->content_type[n] = '\0';
            }
        }
        p = eol == end ? end : eol + 2;
    }
}

enum rt_status srv_multipart_parse(const uint8_t *body, size_t len, const char *boundary,
                                   struct srv_part *parts, int max_parts, int *n_parts,
                                   struct rt_error *err)
{
    char delim[SRV_MULTIPART_BOUNDARY_MAX + 5];  /* CRLF "--" boundary */
    int dl = snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
    const char *s = (const char *)body, *end = s + len;
    *n_parts = 0;

    /* The first delimiter: at the very start, or after a CRLF in the preamble. */
    const char *p;
    if (len >= (size_t)dl - 2 && memcmp(s, delim + 2, (size_t)dl - 2) == 0)
        p = s + dl - 2;
    else if ((p = memmem(s, len, delim, (size_t)dl)))
        p += dl;
    else
        return rt_error_set(err, RT_ERR_INVALID, "the multipart body has no boundary line");

    for (;;) {
        /* After a delimiter: "--" ends the body; else padding and CRLF. */
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            break;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            return rt_error_set(err, RT_ERR_INVALID, "malformed multipart boundary line");
        p += 2;
        if (*n_parts >= max_parts)
            return rt_error_set(err, RT_ERR_TOO_LARGE, "more than %d parts", max_parts);
        struct srv_part *part = &parts[*n_parts];
        memset(part, 0, sizeof(*part));
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
            p += 2; /* an empty header block */
        } else {
            size_t span = (size_t)(end - p) < PART_HEADERS_MAX ? (size_t)(end - p) : PART_HEADERS_MAX;
            const char *hdr_end = memmem(p, span, "\r\n\r\n", 4);
            if (!hdr_end)
                return rt_error_set(err, RT_ERR_INVALID, "a multipart part's headers never end");
            part_headers(p, hdr_end, part);
            p = hdr_end + 4;
        }
        const char *next = memmem(p, (size_t)(end - p), delim, (size_t)dl);
        if (!next)
            return rt_error_set(err, RT_ERR_INVALID, "unterminated multipart part");
        part->data = (const uint8_t *)p;
        part->len = (size_t)(next - p);
        (*n_parts)++;
        p = next + dl;
    }
    if (*n_parts == 0)
        return rt_error_set(err, RT_ERR_INVALID, "the multipart body has no parts");
    return RT_OK;
}
