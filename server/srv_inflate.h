/*
 * srv_inflate.h - request bodies sent compressed (Content-Encoding: gzip or
 * deflate, as tritonclient's request_compression_algorithm sends them),
 * decoded with zlib under the same size limit as a plain body.
 *
 *     uint8_t *plain; size_t len;
 *     switch (srv_inflate(body, n, SRV_ENCODING_GZIP, max_body_bytes, &plain, &len)) { ... }
 */
#ifndef SRV_INFLATE_H
#define SRV_INFLATE_H

#include <stddef.h>
#include <stdint.h>

enum srv_encoding { SRV_ENCODING_IDENTITY = 0, SRV_ENCODING_GZIP, SRV_ENCODING_DEFLATE };

enum srv_inflate_result {
    SRV_INFLATE_OK = 0,
    SRV_INFLATE_BAD,        /* not a valid stream of that encoding, or trailing bytes */
    SRV_INFLATE_TOO_LARGE,  /* decodes to more than limit bytes */
    SRV_INFLATE_NO_MEMORY,
};

/* A Content-Encoding header's value ("gzip", "x-gzip", "deflate",
 * "identity", any case, surrounding spaces ignored); -1 for any other. */
int srv_encoding_parse(const char *value);

/* Decodes in[0..n) into *out (malloc'd, *out_len bytes, at most limit).
 * deflate accepts the zlib format HTTP specifies and the raw one some
 * clients send. */
enum srv_inflate_result srv_inflate(const uint8_t *in, size_t n, enum srv_encoding enc, size_t limit,
                                    uint8_t **out, size_t *out_len);

#endif /* SRV_INFLATE_H */
