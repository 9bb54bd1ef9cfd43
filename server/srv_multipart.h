/*
 * srv_multipart.h - a multipart/form-data (RFC 7578 / RFC 2046) body split
 * into its parts, without copying: each part points into the body.
 *
 *     char boundary[SRV_MULTIPART_BOUNDARY_MAX + 1];
 *     if (srv_multipart_boundary(content_type, boundary, &err) == RT_OK &&
 *         srv_multipart_parse(body, len, boundary, parts, max, &n, &err) == RT_OK) ...
 *
 * Malformed input (no boundary, no parts, a part that never ends, headers
 * without their blank line) is RT_ERR_INVALID; more than max parts is
 * RT_ERR_TOO_LARGE.
 */
#ifndef SRV_MULTIPART_H
#define SRV_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/rt_status.h"

#define SRV_MULTIPART_BOUNDARY_MAX 70   /* RFC 2046 */

struct srv_part {
    const uint8_t *data;   /* points into the body */
    size_t len;
    char name[64];         /* Content-Disposition name, "" when absent */
    char content_type[64]; /* the part's Content-Type, "" when absent */
};

/* The boundary parameter of a multipart Content-Type header value. */
enum rt_status srv_multipart_boundary(const char *content_type, char *out, struct rt_error *err);

enum rt_status srv_multipart_parse(const uint8_t *body, size_t len, const char *boundary,
                                   struct srv_part *parts, int max_parts, int *n_parts,
                                   struct rt_error *err);

#endif /* SRV_MULTIPART_H */
