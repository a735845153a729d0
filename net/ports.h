/* Listening ports and the kernel's ephemeral port range: the range from
 * which Linux picks the local port of every outgoing connection
 * (/proc/sys/net/ipv4/ip_local_port_range). A listen port inside it can be
 * taken by an outgoing connection (another peer's, on the same machine)
 * before its peer binds it; docs/launching.md, "Choosing ports". */
#ifndef MURMUR_PORTS_H
#define MURMUR_PORTS_H

#include <stdbool.h>
#include <stddef.h>

/* The ephemeral range in *lo..*hi; false when it cannot be read. */
bool mm_ephemeral_range(int *lo, int *hi);

/* When ports first..last overlap the ephemeral range: true, with a
 * warning in msg (what, why, which ports to choose instead). */
bool mm_ports_in_ephemeral(int first, int last, char *msg, size_t msglen);

/* Why binding port failed with "address already in use", when port lies in
 * the ephemeral range (appended to msg); false (msg untouched) otherwise. */
bool mm_ports_explain_in_use(int port, char *msg, size_t msglen);

#endif
