/*
 * srv_log.h - the daemon's log: one line per event on stderr,
 *
 *     2024-05-01T12:00:00.123Z INFO  [req 00000001a] POST /v2/models/lenet5/infer 200 1.2 ms
 *
 * with UTC time, level and, when the line belongs to a request, its id.
 * Lines below the configured level cost one comparison. Thread-safe: each
 * line is formatted into a local buffer and written with one write(2).
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stdbool.h>

enum srv_log_level { SRV_LOG_ERROR = 0, SRV_LOG_WARN, SRV_LOG_INFO, SRV_LOG_DEBUG };

/* Names in level order, for the config table: "error", "warn", "info", "debug". */
extern const char *const SRV_LOG_LEVEL_NAMES[];

void srv_log_set_level(enum srv_log_level level);
bool srv_log_enabled(enum srv_log_level level);

/* req_id may be NULL for lines that belong to no request. */
void srv_log(enum srv_log_level level, const char *req_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define srv_log_error(...) srv_log(SRV_LOG_ERROR, NULL, __VA_ARGS__)
#define srv_log_warn(...) srv_log(SRV_LOG_WARN, NULL, __VA_ARGS__)
#define srv_log_info(...) srv_log(SRV_LOG_INFO, NULL, __VA_ARGS__)

#endif /* SRV_LOG_H */
