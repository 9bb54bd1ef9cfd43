/*
 * icl_impl.h - internals of the client library shared by its files: the
 * client struct, a growable byte buffer, error helpers and JSON field
 * readers. Not part of the public interface (icl.h).
 */
#ifndef ICL_IMPL_H
#define ICL_IMPL_H

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "icl.h"

struct icl_client {
    CURL *curl;              /* reused, so its connection is kept alive */
    char url[512];           /* normalised base, no trailing slash */
    struct icl_options opts;
};

/* A growable buffer; on allocation failure it sets failed and drops further
 * writes, so encoders check once at the end. */
struct icl_buf {
    uint8_t *data;
    size_t len, cap;
    bool failed;
};

bool icl_buf_reserve(struct icl_buf *b, size_t extra);
void icl_buf_append(struct icl_buf *b, const void *p, size_t n);
void icl_buf_puts(struct icl_buf *b, const char *s);
void icl_buf_printf(struct icl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string literal, quotes included. */
void icl_buf_json_str(struct icl_buf *b, const char *s, size_t len);
void icl_buf_free(struct icl_buf *b);

/* Records status and message in err (may be NULL); returns status. */
enum icl_status icl_fail(struct icl_error *err, enum icl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void icl_error_clear(struct icl_error *err);

/* Copies s into dst (cap bytes), truncating; false when it did not fit. */
bool icl_copy(char *dst, size_t cap, const char *s);

/* GET or POST path, expecting a JSON object answer: parses it into *root
 * (caller deletes). A non-2xx answer is ICL_ERR_HTTP with the server's
 * message; a 2xx body that is not a JSON object is ICL_ERR_PROTOCOL. */
enum icl_status icl_get_json(struct icl_client *c, const char *method, const char *path,
                             const char *body, cJSON **root, struct icl_error *err);

/* POSTs an inference body to path: JSON when header_len == len, else the
 * JSON header and binary tensor data with Inference-Header-Content-Length. */
enum icl_status icl_exchange_binary(struct icl_client *c, const char *path, const void *body,
                                    size_t len, size_t header_len, struct icl_response *resp,
                                    struct icl_error *err);

/* Writes "/v2/models/<escaped model>" + suffix into dst. False (and
 * ICL_ERR_INVALID in err) when model is empty or dst is too small. */
bool icl_model_path(char *dst, size_t cap, const char *model, const char *suffix,
                    struct icl_error *err);

/* Member name of obj as a string copied to dst; false when absent or of
 * another type (dst then empty). */
bool icl_json_str(const cJSON *obj, const char *name, char *dst, size_t cap);
/* A tensor description {name, datatype, shape} into t. */
bool icl_json_tensor_desc(const cJSON *obj, struct icl_tensor *t);

#endif /* ICL_IMPL_H */
