/* Where peers live: a hosts file ("K host:port" per line, or "host:port" in
 * id order; # comments), or 127.0.0.1:base_port+K; and which peer we are,
 * from --id or a cluster launcher's environment. */
#ifndef MURMUR_PEERS_H
#define MURMUR_PEERS_H

#include <stddef.h>

#include "node/node.h"

/* n "host:port" strings (free with mm_peer_addrs_free), or NULL with err. */
char **mm_peer_addrs(const mm_node_config *c, unsigned n, char *err, size_t errlen);
void mm_peer_addrs_free(char **addrs, unsigned n);

/* A hosts file's "host:port" of every peer it lists, ids 0 .. *n - 1, *n
 * set to their number (each id once, none missing; at most
 * MM_PEER_HOSTS_MAX), or NULL with err. Free with mm_peer_addrs_free(addrs,
 * *n). */
#define MM_PEER_HOSTS_MAX 4096u
char **mm_peer_hosts_read(const char *path, unsigned *n, char *err, size_t errlen);

/* The address to listen on: --listen as given, else NULL (the transport
 * then listens on our own entry). */
const char *mm_peer_listen_addr(const mm_node_config *c, const char *own);

/* Rank and size from Open MPI, PMI or Slurm. Returns the name of the
 * variable used, or NULL when none is set. */
const char *mm_peer_env_rank(int *rank, int *size);

#endif
