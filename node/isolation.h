/* Whether a peer mixes with its neighbours, and what it says when it does
 * not (docs/node.md, "Isolation and refused neighbours"):
 *   - per neighbour, how many exchanges mixed its vector;
 *   - a peer that mixed with none of its in-neighbours for longer than the
 *     limit (mm__isolation_limit) warns at once, naming each neighbour and why it
 *     did not mix (its refusal, if any), and again at most every
 *     max(limit, 10 s) while it lasts;
 *   - at the end, a verdict: REFUSED when a neighbour was refused for a
 *     configuration that differs (never up with it) or two processes
 *     claimed one id; ISOLATED when the peer, for a whole run longer than
 *     the limit, mixed with none of its in-neighbours and none was
 *     refused (they never appeared).
 * The training thread's alone; what the transport said comes through the
 * mailbox. Internal to node/ (the mm__ prefix). */
#ifndef MURMUR_ISOLATION_H
#define MURMUR_ISOLATION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/metrics.h"
#include "gossip/topology.h"
#include "node/mailbox.h"

typedef struct mm__isolation mm__isolation;

typedef enum { MM__VERDICT_OK, MM__VERDICT_REFUSED, MM__VERDICT_ISOLATED } mm__isolation_verdict;

/* How long a peer may mix with none of its neighbours before it says so:
 * max(--start-timeout, --peer-timeout + --round-timeout), in seconds. The
 * start timeout is how long a peer waits for neighbours that have not
 * appeared; peer + round timeout how long a neighbour that stopped can go
 * unnoticed and unmixed. */
double mm__isolation_limit(int start_timeout_ms, int peer_timeout_ms, int round_timeout_ms);

/* n peers, this one self. NULL when out of memory. */
mm__isolation *mm__isolation_new(uint32_t n, uint32_t self, double limit_s);
void mm__isolation_free(mm__isolation *s);
/* The peer starts (its clock of being alone starts too). */
void mm__isolation_start(mm__isolation *s, double now);
/* A round's neighbours, before its exchanges. */
void mm__isolation_round(mm__isolation *s, const mm_round_view *v);
/* An in-neighbour's vector was mixed. */
void mm__isolation_mixed(mm__isolation *s, uint32_t peer, double now);
/* After a round: logs the warning when one is due; true then (the caller
 * writes an `isolated` metrics line with mm__isolation_fields). */
bool mm__isolation_check(mm__isolation *s, mm__mbox *mb, double now);
/* The verdict at the end (now: when the peer stops). */
mm__isolation_verdict mm__isolation_verdict_at(mm__isolation *s, mm__mbox *mb, double now);
/* Logs the verdict's ERROR lines; for OK, a warning when the peer was
 * alone longer than the limit at a stretch (it mixed before or after). */
void mm__isolation_log_verdict(mm__isolation *s, mm__mbox *mb, mm__isolation_verdict v, double now);
/* Metrics fields (docs/metrics.md): "mixed" always; with a verdict or for
 * an `isolated` line (alone_s >= 0) "refusals", "why" and
 * "refused_unknown"; the end line (alone_s < 0) "rounds_alone",
 * "rounds_with_nbrs", "longest_alone_s" (the longest stretch without a mix,
 * up to now_s) and "alone_limit_s". */
void mm__isolation_fields(mm__isolation *s, mm__mbox *mb, mm_metrics *m,
                          mm__isolation_verdict v, double alone_s, double now_s);
/* Seconds since the peer last mixed with anyone (or started). */
double mm__isolation_alone(const mm__isolation *s, double now);

#endif
