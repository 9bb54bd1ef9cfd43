/* rt_status.c - status names and error message helpers. */
#include "runtime/rt_status.h"

#include <stdarg.h>
#include <string.h>

static const char *const STATUS_NAMES[] = {
#define RT_STATUS_NAME(name, text) text,
    RT_STATUS_LIST(RT_STATUS_NAME)
#undef RT_STATUS_NAME
};
_Static_assert(sizeof(STATUS_NAMES) / sizeof(STATUS_NAMES[0]) == RT_STATUS_COUNT,
               "one name per status");

const char *rt_status_name(enum rt_status s)
{
    if ((unsigned)s >= RT_STATUS_COUNT)
        return "unknown status";
    return STATUS_NAMES[s];
}

enum rt_status rt_error_set(struct rt_error *err, enum rt_status status, const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return status;
}

enum rt_status rt_error_prefix(struct rt_error *err, const char *fmt, ...)
{
    if (!err)
        return RT_ERR_INTERNAL;
    char prefix[RT_ERROR_MSG_MAX];
    char old[RT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    return err->status;
}
