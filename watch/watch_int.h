/* What watch.c and watch_hosts.c share (the mm__ prefix: internal to
 * watch/). */
#ifndef MURMUR_WATCH_INT_H
#define MURMUR_WATCH_INT_H

#include <stdbool.h>

#include "base/text.h"

/* Whether a peer in this state may still be at work (starting, running,
 * waiting, isolated while it runs). */
bool mm__watch_at_work(const char *state);
/* A peer whose process or endpoint is gone, or cannot be told from one
 * that is (killed, dead, silent): its links are missing. */
bool mm__watch_gone(const char *state);
/* The run's status from its n peers' states, of expected: "running" while
 * one may be at work (or one expected has not started), "finished" when
 * every expected peer ended with an end line (done, refused, isolated),
 * else "stopped" (some died without one). */
const char *mm__watch_run_status(const char *const *states, const bool *ended, int n,
                                 int expected);
/* A peer's ",\"pace\":{...}" of the document (its last round's deadline,
 * wait, batch, local steps and who set its pace: docs/node.md, "Uneven
 * peers"), or ",\"pace\":null" when paced_by < 0 (a run without them). */
void mm__watch_pace_json(mm_text *t, double deadline, double waited, double batch, double steps,
                         long long paced_by);

#endif
