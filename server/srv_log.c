/* srv_log.c - timestamped, levelled, escaped log lines on stderr (see srv_log.h). */
#include "srv_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

const char *const SRV_LOG_LEVEL_NAMES[] = {"error", "warn", "info", "debug", NULL};
static const char *const LEVEL_TAGS[] = {"ERROR", "WARN ", "INFO ", "DEBUG"};

static atomic_int current_level = SRV_LOG_INFO;

void srv_log_set_level(enum srv_log_level level) { atomic_store(&current_level, (int)level); }

bool srv_log_enabled(enum srv_log_level level) { return (int)level <= atomic_load(&current_level); }

void srv_log(enum srv_log_level level, const char *req_id, const char *fmt, ...)
{
    if (!srv_log_enabled(level))
        return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03ldZ %s ", ts.tv_nsec / 1000000L,
                  LEVEL_TAGS[level]);
    if (req_id)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "[req %s] ", req_id);
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Messages carry client bytes (paths, names): anything but printable
     * ASCII is written as \xNN, so no one can forge or break a log line. */
    size_t len = (size_t)n;
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
    for (size_t i = 0; i < mlen && len + 4 < sizeof(line) - 1; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            line[len++] = (char)c;
        } else {
            len += (size_t)snprintf(line + len, 5, "\\x%02x", c);
        }
    }
    line[len++] = '\n';
    /* One write per line keeps lines whole when threads log at once. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
