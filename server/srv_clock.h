/* srv_clock.h - monotonic time in nanoseconds, for deadlines and durations. */
#ifndef SRV_CLOCK_H
#define SRV_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t srv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* SRV_CLOCK_H */
