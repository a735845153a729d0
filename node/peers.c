#include "node/peers.h"

#include "net/hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char **mm_peer_addrs(const mm_node_config *c, unsigned n, char *err, size_t errlen)
{
    if (c->hosts_file)
        return mm_hosts_read(c->hosts_file, n, NULL, err, errlen);
    if (c->base_port <= 0 || c->base_port + (long)n > 65536) {
        snprintf(err, errlen, "--base-port %d leaves no room for %u peers", c->base_port, n);
        return NULL;
    }
    char **addrs = calloc(n, sizeof *addrs);
    if (!addrs)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "127.0.0.1:%d", c->base_port + (int)i);
        if (!(addrs[i] = strdup(buf))) {
            mm_hosts_free(addrs, n);
            return NULL;
        }
    }
    return addrs;
}

const char *mm_peer_listen_addr(const mm_node_config *c, const char *own)
{
    (void)own;
    return c->bind_host;
}

const char *mm_peer_env_rank(int *rank, int *size)
{
    static const char *pairs[][2] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *r = getenv(pairs[i][0]), *s = getenv(pairs[i][1]);
        if (r && *r) {
            *rank = atoi(r);
            *size = s && *s ? atoi(s) : 0;
            return pairs[i][0];
        }
    }
    return NULL;
}
