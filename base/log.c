#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <time.h>

static int log_peer = -1;
static enum mm_log_level log_level = MM_LOG_INFO;
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void mm_log_set_peer(int peer_id) { log_peer = peer_id; }
void mm_log_set_level(enum mm_log_level level) { log_level = level; }
void mm_log_set_file(FILE *f) { log_file = f; }

static void emit(FILE *out, const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, out);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
}

void mm_log(enum mm_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "WARN", "ERROR"};
    if (level < log_level)
        return;

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char prefix[96];
    int n = (int)strftime(prefix, sizeof prefix, "%H:%M:%S", &tm);
    if (log_peer >= 0)
        snprintf(prefix + n, sizeof prefix - (size_t)n, ".%03ld [peer %d] %s: ",
                 ts.tv_nsec / 1000000, log_peer, names[level]);
    else
        snprintf(prefix + n, sizeof prefix - (size_t)n, ".%03ld %s: ",
                 ts.tv_nsec / 1000000, names[level]);

    pthread_mutex_lock(&log_lock);
    va_list ap;
    va_start(ap, fmt);
    emit(stderr, prefix, fmt, ap);
    va_end(ap);
    if (log_file) {
        va_start(ap, fmt);
        emit(log_file, prefix, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&log_lock);
}
