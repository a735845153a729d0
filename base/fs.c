/* base/fs.h: mkdir -p, atomic writes, whole-file reads, stale temp files. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mm_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) {
        snprintf(err, errlen, "%.64s...: cannot create: path longer than %d bytes", path,
                 PATH_MAX);
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot create: %s", buf, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create: %s", buf, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: exists and is not a directory", buf);
        return -1;
    }
    return 0;
}

int mm_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    const unsigned char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "%s: write failed: %s", tmp, w < 0 ? strerror(errno) : "no progress");
            close(fd);
            unlink(tmp);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, errlen, "%s: fsync/close failed: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: rename to %s failed: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* The rename is durable only once the directory entry is on disk. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int mm_remove_stale_temps(const char *dir, void (*removed)(const char *path))
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t || !t[5])
            continue;
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
            continue;
        if (unlink(path) == 0) {
            n++;
            if (removed)
                removed(path);
        }
    }
    closedir(d);
    return n;
}

int mm_read_file(const char *path, char **out, size_t *len, size_t limit, char *err,
                 size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    /* Read at most limit + 1 bytes: one byte past the limit proves the
     * file too large, exactly, whatever the limit. */
    size_t cap = limit < (1u << 16) ? limit + 1 : (size_t)1 << 16, n = 0;
    char *p = malloc(cap + 1);
    while (p) {
        n += fread(p + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (n > limit) {
            free(p);
            fclose(f);
            snprintf(err, errlen, "%s: larger than %zu bytes", path, limit);
            return -1;
        }
        cap = cap > limit / 2 ? limit + 1 : cap * 2;
        char *q = realloc(p, cap + 1);
        if (!q)
            free(p);
        p = q;
    }
    int bad = ferror(f);
    fclose(f);
    if (!p || bad) {
        snprintf(err, errlen, "%s: %s", path, p ? "read error" : "out of memory");
        free(p);
        return -1;
    }
    p[n] = '\0';
    *out = p;
    *len = n;
    return 0;
}
