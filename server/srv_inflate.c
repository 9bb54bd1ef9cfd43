/* srv_inflate.c - gzip / deflate request bodies through zlib (srv_inflate.h). */
#include "srv_inflate.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

int srv_encoding_parse(const char *value)
{
    while (*value == ' ' || *value == '\t')
        value++;
    size_t len = strlen(value);
    while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    static const struct {
        const char *name;
        enum srv_encoding enc;
    } NAMES[] = {{"gzip", SRV_ENCODING_GZIP},
                 {"x-gzip", SRV_ENCODING_GZIP},
                 {"deflate", SRV_ENCODING_DEFLATE},
                 {"identity", SRV_ENCODING_IDENTITY}};
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++)
        if (strlen(NAMES[i].name) == len && strncasecmp(value, NAMES[i].name, len) == 0)
            return (int)NAMES[i].enc;
    return -1;
}

/* One decode with zlib's window_bits (31: gzip, 15: zlib, -15: raw). */
static enum srv_inflate_result decode(const uint8_t *in, size_t n, int window_bits, size_t limit, uint8_t **out,
                                      size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, window_bits) != Z_OK)
        return SRV_INFLATE_NO_MEMORY;
    size_t cap = n * 4 < limit ? (n * 4 > 4096 ? n * 4 : 4096) : limit;
    uint8_t *buf = malloc(cap > 0 ? cap : 1);
    enum srv_inflate_result res = buf ? SRV_INFLATE_OK : SRV_INFLATE_NO_MEMORY;
    z.next_in = (Bytef *)(uintptr_t)in;   /* zlib's API is not const; it only reads */
    size_t done = 0;
    int zr = Z_OK;
    while (res == SRV_INFLATE_OK && zr != Z_STREAM_END) {
        if (done == cap) {
            if (cap >= limit) {
                res = SRV_INFLATE_TOO_LARGE;
                break;
            }
            size_t grown = cap * 2 < limit ? cap * 2 : limit;
            uint8_t *p = realloc(buf, grown);
            if (!p) {
                res = SRV_INFLATE_NO_MEMORY;
                break;
            }
            buf = p;
            cap = grown;
        }
        /* zlib counts in uInt: feed and drain at most 1 GiB per call */
        size_t in_left = n - (size_t)(z.next_in - (const Bytef *)in);
        z.avail_in = (uInt)(in_left < (1u << 30) ? in_left : (1u << 30));
        z.next_out = buf + done;
        z.avail_out = (uInt)(cap - done < (1u << 30) ? cap - done : (1u << 30));
        uInt before = z.avail_out;
        zr = inflate(&z, Z_NO_FLUSH);
        done += before - z.avail_out;
        if (zr == Z_MEM_ERROR)
            res = SRV_INFLATE_NO_MEMORY;
        else if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && z.avail_out == 0))
            res = SRV_INFLATE_BAD;   /* a data error, or input ended before the stream did */
    }
    if (res == SRV_INFLATE_OK && (size_t)(z.next_in - (const Bytef *)in) != n)
        res = SRV_INFLATE_BAD;   /* bytes after the stream's end */
    inflateEnd(&z);
    if (res != SRV_INFLATE_OK) {
        free(buf);
        return res;
    }
    *out = buf;
    *out_len = done;
    return SRV_INFLATE_OK;
}

enum srv_inflate_result srv_inflate(const uint8_t *in, size_t n, enum srv_encoding enc, size_t limit,
                                    uint8_t **out, size_t *out_len)
{
    if (enc == SRV_ENCODING_GZIP)
        return decode(in, n, 15 + 16, limit, out, out_len);
    enum srv_inflate_result r = decode(in, n, 15, limit, out, out_len);
    /* zlib's two-byte header is a checksum that raw deflate fails */
    return r == SRV_INFLATE_BAD ? decode(in, n, -15, limit, out, out_len) : r;
}
