/* Logging shared by gossip/ and node/: one line per event, to stderr and
 * optionally to a file, with a wall-clock timestamp and the peer id. */
#ifndef MURMUR_LOG_H
#define MURMUR_LOG_H

#include <stdio.h>

enum mm_log_level { MM_LOG_DEBUG, MM_LOG_INFO, MM_LOG_WARN, MM_LOG_ERROR };

/* Process-wide settings: the peer id printed in every line (-1: none), the
 * lowest level printed, and an optional second sink (a run directory's log). */
void mm_log_set_peer(int peer_id);
void mm_log_set_level(enum mm_log_level level);
void mm_log_set_file(FILE *f);

void mm_log(enum mm_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define mm_debug(...) mm_log(MM_LOG_DEBUG, __VA_ARGS__)
#define mm_info(...)  mm_log(MM_LOG_INFO, __VA_ARGS__)
#define mm_warn(...)  mm_log(MM_LOG_WARN, __VA_ARGS__)
#define mm_error(...) mm_log(MM_LOG_ERROR, __VA_ARGS__)

#endif
