/* Where peers live: a hosts file (net/hosts.h) or 127.0.0.1:base_port+K;
 * and which peer we are, from --id or a cluster launcher's environment. */
#ifndef MURMUR_PEERS_H
#define MURMUR_PEERS_H

#include <stddef.h>

#include "node/node.h"

/* n "host:port" strings: --hosts's file (net/hosts.h), else
 * 127.0.0.1:base_port+K. Free with mm_hosts_free(addrs, n); NULL with err. */
char **mm_peer_addrs(const mm_node_config *c, unsigned n, char *err, size_t errlen);

/* The address to listen on: --listen as given, else NULL (the transport
 * then listens on our own entry). */
const char *mm_peer_listen_addr(const mm_node_config *c, const char *own);

/* Rank and size from Open MPI, PMI or Slurm. Returns the name of the
 * variable used, or NULL when none is set. */
const char *mm_peer_env_rank(int *rank, int *size);

#endif
