/* Monotonic time in seconds, for durations and deadlines (never the wall
 * clock, which can jump). */
#ifndef MURMUR_CLOCK_H
#define MURMUR_CLOCK_H

#include <errno.h>
#include <time.h>

static inline double mm_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps `seconds` of monotonic time, on through signals to the same end
 * (the lab's slept delays: --compute-jitter, --lab-slow). */
static inline void mm_sleep(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double end = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + seconds;
    ts.tv_sec = (time_t)end;
    ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ; /* sleep on to the same end */
}

#endif
