#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_peer = -1;
static enum mm_log_level log_level = MM_LOG_INFO;
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void mm_log_set_peer(int peer_id) { log_peer = peer_id; }
void mm_log_set_level(enum mm_log_level level) { log_level = level; }
void mm_log_set_file(FILE *f) { log_file = f; }

/* Writes all of line to fd, retrying short writes and EINTR. */
static void write_all(int fd, const char *line, size_t len)
{
    while (len > 0) {
        ssize_t k = write(fd, line, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        line += k;
        len -= (size_t)k;
    }
}

/* The whole line (prefix, message, newline) is formatted first and then
 * written in one call, so lines of processes sharing one pipe (mpirun's
 * forwarded stderr) never interleave within a line: a write of at most
 * PIPE_BUF (4096) bytes to a pipe is atomic. */
static void emit(FILE *file, const char *line, size_t len)
{
    if (!file) {
        fflush(stderr);
        write_all(STDERR_FILENO, line, len);
        return;
    }
    fwrite(line, 1, len, file);
    fflush(file);
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

    char buf[2048], *line = buf;
    size_t plen = strlen(prefix);
    memcpy(buf, prefix, plen);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + plen, sizeof buf - plen, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = plen + (size_t)m;
    if (len + 2 > sizeof buf && (line = malloc(len + 2)) != NULL) {
        memcpy(line, prefix, plen);
        va_start(ap, fmt);
        vsnprintf(line + plen, len + 1 - plen, fmt, ap);
        va_end(ap);
    } else if (!line) {
        line = buf; /* out of memory: the line cut to what fits */
        len = sizeof buf - 2;
    }
    line[len++] = '\n';

    pthread_mutex_lock(&log_lock);
    emit(NULL, line, len);
    if (log_file)
        emit(log_file, line, len);
    pthread_mutex_unlock(&log_lock);
    if (line != buf)
        free(line);
}
