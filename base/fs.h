/* Files and directories every room needs: mkdir -p, writing a file so that
 * a crash leaves either the old or the new version, reading a whole file
 * with a size limit, and cleaning up after writers that died mid-write.
 * Errors come back as a message in err (which names the path). */
#ifndef MURMUR_FS_H
#define MURMUR_FS_H

#include <stddef.h>

/* mkdir -p with mode 0755. 0, or -1 with "PATH: cannot create: why" in err
 * (a path longer than PATH_MAX is an error, never silently cut). */
int mm_mkdir_p(const char *path, char *err, size_t errlen);

/* Write len bytes to path atomically: PATH.tmp.PID, write, fsync, rename
 * over PATH, fsync of the directory. Used for every file whose loss would
 * hurt (checkpoints, snapshots, prepared corpora). */
int mm_write_atomic(const char *path, const void *data, size_t len,
                    char *err, size_t errlen);

/* Remove PATH.tmp.PID files in dir whose writer (PID) is gone: a process
 * killed inside mm_write_atomic leaves one behind, a whole file's worth of
 * disk. Temp files of live processes are left alone. Returns how many were
 * removed; each is reported through the optional callback. */
int mm_remove_stale_temps(const char *dir, void (*removed)(const char *path));

/* Read a whole file into a NUL-terminated buffer (caller frees *out),
 * refusing one larger than limit bytes. 0 or -1 with the reason in err. */
int mm_read_file(const char *path, char **out, size_t *len, size_t limit,
                 char *err, size_t errlen);

#endif
