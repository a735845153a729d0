/* Monotonic time in seconds, for durations and deadlines (never the wall
 * clock, which can jump). */
#ifndef MURMUR_CLOCK_H
#define MURMUR_CLOCK_H

#include <time.h>

static inline double mm_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
