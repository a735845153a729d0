/* The kernel's ephemeral port range, and what to say when listen ports
 * fall inside it (net/ports.h). */
#include "net/ports.h"

#include <stdio.h>
#include <string.h>

#define RANGE_FILE "/proc/sys/net/ipv4/ip_local_port_range"

bool mm_ephemeral_range(int *lo, int *hi)
{
    FILE *f = fopen(RANGE_FILE, "r");
    if (!f)
        return false;
    int ok = fscanf(f, "%d %d", lo, hi) == 2 && *lo > 0 && *lo <= *hi;
    fclose(f);
    return ok;
}

/* Ports to suggest: below the range when there is room there, else above. */
static void advice(int lo, int hi, int n, char *out, size_t len)
{
    if (lo > 1024 + n)
        snprintf(out, len, "choose listen ports below %d (e.g. --base-port %d)", lo,
                 lo > 20000 + n ? 20000 : 1024);
    else if (hi < 65535 - n)
        snprintf(out, len, "choose listen ports above %d", hi);
    else
        snprintf(out, len, "narrow the range (sysctl net.ipv4.ip_local_port_range) to "
                 "leave room for listen ports");
}

bool mm_ports_in_ephemeral(int first, int last, char *msg, size_t msglen)
{
    int lo, hi;
    if (!mm_ephemeral_range(&lo, &hi) || last < lo || first > hi)
        return false;
    char adv[160];
    advice(lo, hi, last - first + 1, adv, sizeof adv);
    char ports[40];
    if (first == last)
        snprintf(ports, sizeof ports, "listen port %d is", first);
    else
        snprintf(ports, sizeof ports, "listen ports %d..%d are", first, last);
    snprintf(msg, msglen, "%s inside this machine's ephemeral port range %d..%d (%s), from "
             "which the kernel picks the local port of every outgoing connection: one of "
             "them may take such a port before its peer listens, and that peer then fails "
             "with \"address already in use\"; %s (docs/launching.md, \"Choosing ports\")",
             ports, lo, hi, RANGE_FILE, adv);
    return true;
}

bool mm_ports_explain_in_use(int port, char *msg, size_t msglen)
{
    int lo, hi;
    if (!mm_ephemeral_range(&lo, &hi) || port < lo || port > hi)
        return false;
    char adv[160];
    advice(lo, hi, 1, adv, sizeof adv);
    size_t used = strlen(msg);
    if (used >= msglen)
        return false;
    snprintf(msg + used, msglen - used, "; port %d is inside this machine's ephemeral port "
             "range %d..%d (%s), from which the kernel picks the local port of every "
             "outgoing connection, so it may be held by one (another peer's connection: "
             "ss -tanp 'sport = :%d' shows it); %s (docs/launching.md, \"Choosing ports\")",
             port, lo, hi, RANGE_FILE, port, adv);
    return true;
}
