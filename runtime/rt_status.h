/*
 * rt_status.h - the runtime's error channel.
 *
 * Anything caused by input, files, memory or the device is reported as an
 * enum rt_status plus a message in a caller-owned struct rt_error; the HTTP
 * layer turns the status into a response code in one place. Broken
 * invariants (bugs) abort through RT_ASSERT instead.
 *
 * One list generates both the enum and its strings.
 */
#ifndef RT_STATUS_H
#define RT_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#define RT_STATUS_LIST(X)                                                  \
    X(RT_OK, "ok")                                                         \
    X(RT_ERR_INVALID, "invalid input")        /* malformed request data */ \
    X(RT_ERR_NOT_FOUND, "not found")                                       \
    X(RT_ERR_UNSUPPORTED, "unsupported")      /* valid but not handled */  \
    X(RT_ERR_TOO_LARGE, "too large")          /* over a configured limit */\
    X(RT_ERR_BAD_MODEL, "invalid model")      /* model files rejected */   \
    X(RT_ERR_IO, "i/o error")                                              \
    X(RT_ERR_NO_MEMORY, "out of memory")                                   \
    X(RT_ERR_UNAVAILABLE, "unavailable")      /* busy, timed out, not ready */ \
    X(RT_ERR_DEVICE, "device error")                                       \
    X(RT_ERR_INTERNAL, "internal error")

enum rt_status {
#define RT_STATUS_ENUM(name, text) name,
    RT_STATUS_LIST(RT_STATUS_ENUM)
#undef RT_STATUS_ENUM
    RT_STATUS_COUNT
};

#define RT_ERROR_MSG_MAX 320

/* A status with a human-readable message. Messages never hold host paths
 * unless the caller passed them in (model loading names the model folder's
 * files relative to it). */
struct rt_error {
    enum rt_status status;
    char msg[RT_ERROR_MSG_MAX];
};

const char *rt_status_name(enum rt_status s);

/* Records status and message in err (which may be NULL) and returns status,
 * so callers can write `return rt_error_set(err, RT_ERR_INVALID, "...")`. */
enum rt_status rt_error_set(struct rt_error *err, enum rt_status status,
                            const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with "prefix: ". Returns err->status. */
enum rt_status rt_error_prefix(struct rt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Invariant check: aborts with file and line. Not for input validation. */
#define RT_ASSERT(cond)                                                          \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                             \
        }                                                                        \
    } while (0)

#endif /* RT_STATUS_H */
