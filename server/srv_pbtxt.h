/*
 * srv_pbtxt.h - a reader for the protobuf text format, the subset Triton's
 * config.pbtxt files are written in: `name: value` fields (numbers, enum
 * words, "quoted" or 'quoted' strings with C escapes), nested messages
 * `name { ... }` or `name: { ... }`, lists `name: [ v, v ]` and
 * `name [ { ... }, { ... } ]` (a list is the field repeated, as protoc
 * reads it), optional `,` or `;` after a field, and `#` comments.
 *
 *     struct srv_pb_doc doc;
 *     if (srv_pbtxt_parse(text, len, "m/config.pbtxt", &doc, &err) != RT_OK) ...;
 *     for (int i = doc.nodes[0].first_child; i >= 0; i = doc.nodes[i].next) ...;
 *     srv_pbtxt_free(&doc);
 *
 * The text is untrusted: its size, nesting depth and field count are
 * bounded, and every error says "label:line:column: what".
 */
#ifndef SRV_PBTXT_H
#define SRV_PBTXT_H

#include <stddef.h>

#include "runtime/rt_status.h"

#define SRV_PBTXT_MAX_BYTES (1 << 20)
#define SRV_PBTXT_MAX_DEPTH 16
#define SRV_PBTXT_MAX_NODES 20000

enum srv_pb_kind { SRV_PB_MESSAGE = 0, SRV_PB_WORD, SRV_PB_STRING };

/* One field occurrence. A WORD is a number or an enum value as written
 * ("8", "-1", "TYPE_FP32", "true"); a STRING is the decoded text. */
struct srv_pb_node {
    const char *name;           /* "" for the root */
    const char *text;           /* WORD or STRING; NULL for a message */
    enum srv_pb_kind kind;
    int line, col;              /* where the field's name starts (1-based) */
    int first_child, next;      /* node indices; -1 for none */
};

/* nodes[0] is the root message. Owns every string it points to. */
struct srv_pb_doc {
    struct srv_pb_node *nodes;
    int n;
    char *arena;
};

/* Parses text (len bytes; need not be NUL-terminated). label prefixes
 * every error message. RT_ERR_BAD_MODEL for malformed text,
 * RT_ERR_TOO_LARGE past the limits above, RT_ERR_NO_MEMORY. On failure
 * out is left empty (srv_pbtxt_free is still safe). */
enum rt_status srv_pbtxt_parse(const char *text, size_t len, const char *label, struct srv_pb_doc *out,
                               struct rt_error *err);
void srv_pbtxt_free(struct srv_pb_doc *doc);

#endif /* SRV_PBTXT_H */
