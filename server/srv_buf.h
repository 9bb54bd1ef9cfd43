/*
 * srv_buf.h - a growable byte buffer and the JSON writing the responses use.
 *
 * Responses are written straight into a buffer (no intermediate JSON tree).
 * Allocation failure is sticky: the buffer records it in `failed` and every
 * later append is a no-op, so writers check once at the end. A finished
 * buffer's memory is handed to libmicrohttpd with srv_buf_take().
 */
#ifndef SRV_BUF_H
#define SRV_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_buf {
    char *data;
    size_t len, cap;
    bool failed;
};

/* A zeroed struct is an empty buffer; free releases whatever it holds. */
void srv_buf_free(struct srv_buf *b);
bool srv_buf_reserve(struct srv_buf *b, size_t extra);
void srv_buf_append(struct srv_buf *b, const void *data, size_t n);
void srv_buf_puts(struct srv_buf *b, const char *s);
void srv_buf_putc(struct srv_buf *b, char c);
void srv_buf_printf(struct srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the malloc'd bytes (ownership moves to the caller) and empties b;
 * NULL when the buffer failed. A zero-length result is still non-NULL. */
char *srv_buf_take(struct srv_buf *b, size_t *len);

/* JSON pieces: a quoted, escaped string; a number. */
void srv_buf_json_str(struct srv_buf *b, const char *s);
void srv_buf_json_strn(struct srv_buf *b, const char *s, size_t n);
/* Shortest decimal that reads back as the same float; null for NaN/inf. */
void srv_buf_json_float(struct srv_buf *b, float v);
void srv_buf_json_i64(struct srv_buf *b, int64_t v);

#endif /* SRV_BUF_H */
