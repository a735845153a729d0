#include "net/hosts.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mm_hosts_free(char **addrs, unsigned n)
{
    if (!addrs)
        return;
    for (unsigned i = 0; i < n; i++)
        free(addrs[i]);
    free(addrs);
}

static int valid_hostport(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return 0;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    return !errno && *end == 0 && port > 0 && port < 65536;
}

char **mm_hosts_read(const char *path, unsigned n, unsigned *count, char *err, size_t errlen)
{
    bool counting = n == 0;
    if (counting) {
        n = MM_HOSTS_MAX;
        *count = 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char **addrs = calloc(n, sizeof *addrs);
    char line[512];
    unsigned lineno = 0, next = 0;
    int ok = addrs != NULL;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char a[256], b[256];
        int fields = sscanf(line, "%255s %255s", a, b);
        if (fields <= 0)
            continue;
        unsigned id;
        const char *hp;
        if (fields == 2) {
            char *end;
            unsigned long v = strtoul(a, &end, 10);
            if (*end || !isdigit((unsigned char)a[0])) {
                snprintf(err, errlen, "%s:%u: expected 'ID HOST:PORT' or 'HOST:PORT'", path, lineno);
                ok = 0;
                break;
            }
            id = (unsigned)v;
            hp = b;
        } else {
            id = next;
            hp = a;
        }
        next = id + 1;
        if (counting && id + 1 > *count)
            *count = id + 1;
        if (id >= n) {
            if (counting)
                snprintf(err, errlen, "%s:%u: peer %u is out of range (at most %u peers)", path,
                         lineno, id, n);
            else
                snprintf(err, errlen, "%s:%u: peer %u is out of range (the topology has %u "
                         "peers)", path, lineno, id, n);
            ok = 0;
        } else if (addrs[id]) {
            snprintf(err, errlen, "%s:%u: peer %u is listed twice", path, lineno, id);
            ok = 0;
        } else if (!valid_hostport(hp)) {
            snprintf(err, errlen, "%s:%u: '%s' is not HOST:PORT", path, lineno, hp);
            ok = 0;
        } else if (!(addrs[id] = strdup(hp))) {
            ok = 0;
        }
    }
    fclose(f);
    if (counting) {
        n = *count;
        if (ok && n == 0) {
            snprintf(err, errlen, "%s: lists no peer", path);
            ok = 0;
        }
    }
    for (unsigned i = 0; ok && i < n; i++) {
        if (!addrs[i]) {
            snprintf(err, errlen, "%s: no address for peer %u", path, i);
            ok = 0;
        }
    }
    if (!ok) {
        mm_hosts_free(addrs, counting ? MM_HOSTS_MAX : n);
        return NULL;
    }
    return addrs;
}
