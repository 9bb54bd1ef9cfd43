/* srv_pbtxt.c - the protobuf text format reader (see srv_pbtxt.h). */
#include "srv_pbtxt.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *s;
    size_t len, pos;
    int line, col;
    const char *label;
    struct srv_pb_doc *doc;
    int cap;                    /* nodes allocated */
    int *tail;                  /* last child of each node, for appending in order */
    size_t used;                /* arena bytes used */
    struct rt_error *err;
};

static enum rt_status fail_at(struct parser *p, int line, int col, enum rt_status st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum rt_status fail_at(struct parser *p, int line, int col, enum rt_status st, const char *fmt, ...)
{
    char what[RT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    rt_error_set(p->err, st, "%s:%d:%d: %s", p->label, line, col, what);
    return st;
}

#define FAIL(p, ...) fail_at((p), (p)->line, (p)->col, RT_ERR_BAD_MODEL, __VA_ARGS__)

static int peek(const struct parser *p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }

static void advance(struct parser *p)
{
    if (p->s[p->pos] == '\n') {
        p->line++;
        p->col = 1;
    } else {
        p->col++;
    }
    p->pos++;
}

static void skip_space(struct parser *p)
{
    for (int c; (c = peek(p)) >= 0;) {
        if (c == '#') {
            while (peek(p) >= 0 && peek(p) != '\n')
                advance(p);
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance(p);
        } else {
            return;
        }
    }
}

static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident(int c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_word(int c) { return is_ident(c) || c == '.' || c == '+' || c == '-'; }

/* Room for every token was reserved up front (see srv_pbtxt_parse). */
static char *arena_put(struct parser *p, const char *text, size_t n)
{
    char *dst = p->doc->arena + p->used;
    memcpy(dst, text, n);
    dst[n] = '\0';
    p->used += n + 1;
    return dst;
}

/* The new node's index, or -1 with the reason in p->err. */
static int new_node(struct parser *p, int parent, const char *name, int line, int col)
{
    struct srv_pb_doc *d = p->doc;
    if (d->n == SRV_PBTXT_MAX_NODES) {
        fail_at(p, line, col, RT_ERR_TOO_LARGE, "more than %d fields", SRV_PBTXT_MAX_NODES);
        return -1;
    }
    if (d->n == p->cap || !d->nodes || !p->tail) {
        int cap = p->cap ? p->cap * 2 : 64;
        struct srv_pb_node *nodes = realloc(d->nodes, (size_t)cap * sizeof(*nodes));
        if (nodes)
            d->nodes = nodes;
        int *tail = nodes ? realloc(p->tail, (size_t)cap * sizeof(*tail)) : NULL;
        if (!tail) {
            rt_error_set(p->err, RT_ERR_NO_MEMORY, "out of memory");
            return -1;
        }
        p->tail = tail;
        p->cap = cap;
    }
    int i = d->n++;
    d->nodes[i] = (struct srv_pb_node){.name = name, .kind = SRV_PB_MESSAGE, .line = line, .col = col,
                                       .first_child = -1, .next = -1};
    p->tail[i] = -1;
    if (parent >= 0) {
        if (p->tail[parent] < 0)
            d->nodes[parent].first_child = i;
        else
            d->nodes[p->tail[parent]].next = i;
        p->tail[parent] = i;
    }
    return i;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One escape after the backslash; the byte it stands for, or -1. */
static int read_escape(struct parser *p)
{
    int c = peek(p);
    static const char FROM[] = "ntr\\'\"abfv?", TO[] = "\n\t\r\\'\"\a\b\f\v?";
    const char *hit = c > 0 ? strchr(FROM, c) : NULL;
    if (hit) {
        advance(p);
        return (unsigned char)TO[hit - FROM];
    }
    int v = 0, digits = 0;
    if (c == 'x') {
        advance(p);
        for (int h; digits < 2 && (h = hex_digit(peek(p))) >= 0; digits++, advance(p))
            v = v * 16 + h;
    } else {
        for (; digits < 3 && peek(p) >= '0' && peek(p) <= '7'; digits++, advance(p))
            v = v * 8 + (peek(p) - '0');
    }
    return digits > 0 && v > 0 && v < 256 ? v : -1;
}

static enum rt_status read_string(struct parser *p, const char **out)
{
    int quote = peek(p), line = p->line, col = p->col;
    advance(p);
    char *dst = p->doc->arena + p->used;
    size_t n = 0;
    for (;;) {
        int c = peek(p);
        if (c < 0 || c == '\n')
            return fail_at(p, line, col, RT_ERR_BAD_MODEL, "string not closed on its line");
        advance(p);
        if (c == quote)
            break;
        if (c == '\0')
            return FAIL(p, "a NUL byte in a string");
        if (c == '\\') {
            c = read_escape(p);
            if (c < 0)
                return FAIL(p, "unknown escape in a string (\\0 is refused)");
        }
        dst[n++] = (char)c;
    }
    dst[n] = '\0';
    p->used += n + 1;
    *out = dst;
    return RT_OK;
}

static enum rt_status parse_message(struct parser *p, int node, int depth, int closer, int line, int col);

/* A value of field `name`: a message, a string or a word (one list item);
 * the node is placed at (line, col). */
static enum rt_status parse_value(struct parser *p, int parent, const char *name, int depth, bool colon, int line,
                                  int col)
{
    int c = peek(p), i = new_node(p, parent, name, line, col);
    if (i < 0)
        return p->err->status;
    struct srv_pb_node *n = &p->doc->nodes[i];
    if (c == '{' || c == '<') {
        advance(p);
        return parse_message(p, i, depth + 1, c == '{' ? '}' : '>', line, col);
    }
    if (!colon)
        return FAIL(p, "expected ':' or '{' after '%s'", name);
    if (c == '"' || c == '\'') {
        n->kind = SRV_PB_STRING;
        return read_string(p, &p->doc->nodes[i].text);
    }
    if (c < 0 || !is_word(c))
        return c < 0 ? FAIL(p, "unexpected end of text: a value for '%s'", name)
                     : FAIL(p, "unexpected '%c': a value for '%s'", c, name);
    size_t start = p->pos;
    while (is_word(peek(p)))
        advance(p);
    n->kind = SRV_PB_WORD;
    n->text = arena_put(p, p->s + start, p->pos - start);
    return RT_OK;
}

static enum rt_status parse_field(struct parser *p, int parent, int depth)
{
    int line = p->line, col = p->col;
    if (!is_ident_start(peek(p)))
        return peek(p) == '['
                   ? FAIL(p, "extension and Any fields ([...]) are not supported")
                   : FAIL(p, "expected a field name, found '%c'", peek(p));
    size_t start = p->pos;
    while (is_ident(peek(p)))
        advance(p);
    const char *name = arena_put(p, p->s + start, p->pos - start);
    skip_space(p);
    bool colon = peek(p) == ':';
    if (colon) {
        advance(p);
        skip_space(p);
    }
    enum rt_status st;
    if (peek(p) != '[') {
        st = parse_value(p, parent, name, depth, colon, line, col);
    } else {
        advance(p);
        skip_space(p);
        for (bool first = true; peek(p) != ']'; first = false) {
            if (!first) {
                if (peek(p) != ',')
                    return peek(p) < 0 ? fail_at(p, line, col, RT_ERR_BAD_MODEL, "list '%s' not closed with ']'", name)
                                       : FAIL(p, "expected ',' or ']' in the list '%s'", name);
                advance(p);
                skip_space(p);
            }
            if ((st = parse_value(p, parent, name, depth, true, line, col)) != RT_OK)
                return st;
            skip_space(p);
        }
        advance(p);
        st = RT_OK;
    }
    if (st != RT_OK)
        return st;
    skip_space(p);
    if (peek(p) == ',' || peek(p) == ';')
        advance(p);
    return RT_OK;
}

/* Fields up to closer (0: the end of the text). (line, col): where the
 * message opened, for an unclosed one. */
static enum rt_status parse_message(struct parser *p, int node, int depth, int closer, int line, int col)
{
    if (depth > SRV_PBTXT_MAX_DEPTH)
        return fail_at(p, line, col, RT_ERR_TOO_LARGE, "messages nested deeper than %d", SRV_PBTXT_MAX_DEPTH);
    for (;;) {
        skip_space(p);
        int c = peek(p);
        if (c < 0) {
            if (closer)
                return fail_at(p, line, col, RT_ERR_BAD_MODEL, "'%c' not closed with '%c'", closer == '}' ? '{' : '<',
                               closer);
            return RT_OK;
        }
        if (c == closer) {
            advance(p);
            return RT_OK;
        }
        enum rt_status st = parse_field(p, node, depth);
        if (st != RT_OK)
            return st;
    }
}

enum rt_status srv_pbtxt_parse(const char *text, size_t len, const char *label, struct srv_pb_doc *out,
                               struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    if (len > SRV_PBTXT_MAX_BYTES)
        return rt_error_set(err, RT_ERR_TOO_LARGE, "%s: larger than %d bytes", label, SRV_PBTXT_MAX_BYTES);
    /* every token is copied once with a NUL: k >= 1 source bytes take at
     * most k + 1 <= 2k arena bytes, so 2 * len + 2 hold them all */
    out->arena = malloc(2 * len + 2);
    if (!out->arena)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    struct parser p = {.s = text, .len = len, .line = 1, .col = 1, .label = label, .doc = out, .err = err};
    int root = new_node(&p, -1, "", 1, 1);
    enum rt_status st = root < 0 ? err->status : parse_message(&p, root, 0, 0, 1, 1);
    free(p.tail);
    if (st != RT_OK)
        srv_pbtxt_free(out);
    return st;
}

void srv_pbtxt_free(struct srv_pb_doc *doc)
{
    free(doc->nodes);
    free(doc->arena);
    memset(doc, 0, sizeof(*doc));
}
