/* The hosts file: where each peer listens, "K HOST:PORT" per line, or
 * "HOST:PORT" in id order ('#' starts a comment; docs/launching.md, "The
 * hosts file"). Read by the peer (--hosts, node/peers.c) and by murmur
 * watch --hosts (watch/watch_hosts.c). */
#ifndef MURMUR_HOSTS_H
#define MURMUR_HOSTS_H

#include <stddef.h>

#define MM_HOSTS_MAX 4096u

/* The "host:port" of peers 0 .. n - 1 as the hosts file at path lists
 * them (each id once, none missing, none at n or beyond), or NULL with
 * err. n 0: as many peers as the file lists (its highest id + 1, at most
 * MM_HOSTS_MAX), set in *count. Free with mm_hosts_free(addrs, n or
 * *count). */
char **mm_hosts_read(const char *path, unsigned n, unsigned *count, char *err, size_t errlen);
void mm_hosts_free(char **addrs, unsigned n);

#endif
