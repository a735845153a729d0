/* The command-line flags `murmur train` and `murmur node` share -- the
 * model's shape, the optimizer, the data -- as one table (base/opt.h), so
 * both commands accept the same names with the same limits, defaults and
 * help text. Each command appends these entries to its own. */
#ifndef MURMUR_OPTIONS_H
#define MURMUR_OPTIONS_H

#include <stdbool.h>

#include "base/jitter.h"
#include "base/opt.h"
#include "node/replica.h"

/* Which shared flags were given (a resumed `murmur train` refuses flags
 * that contradict its checkpoint; defaults that depend on other flags are
 * applied only to flags not given). */
typedef struct {
    bool layers, width, heads, ctx;
    bool batch, lr, min_lr, warmup, weight_decay, clip, seed, data;
} mm_replica_given;

/* Writes the shared entries, bound to c and g, to out (room for
 * MM_REPLICA_OPTS entries); returns how many were written. */
#define MM_REPLICA_OPTS 18
int mm_replica_opts(mm_replica_config *c, mm_replica_given *g, mm_opt *out);

/* After parsing: --min-lr defaults to lr/10, the warm-up to at most a tenth
 * of total_steps (the schedule's length), a Dirichlet partition without its
 * own seed draws from --seed, and the model shape is checked.
 * 0, or -1 with the reason in err. */
int mm_replica_config_finish(mm_replica_config *c, const mm_replica_given *g, long total_steps,
                             char *err, size_t errlen);

/* --lab-slow / --slow and --lab-stretch / --stretch (base/jitter.h):
 * CUSTOM parsers appending to the mm_slowdown at dst (the two flags share
 * it, and each may be given more than once). */
int mm_cli_parse_slow(const char *arg, void *dst, char *err, size_t errlen);
int mm_cli_parse_stretch(const char *arg, void *dst, char *err, size_t errlen);

#endif
