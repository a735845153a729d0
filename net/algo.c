/* The names of the algorithms (the table in net/algo.h). */
#include "net/algo.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char *mm_algo_name(mm_algo a)
{
    switch (a) {
#define MM_X(NAME, code, name) case MM_ALGO_##NAME: return name;
    MM_ALGOS(MM_X)
#undef MM_X
    }
    return NULL;
}

const char *mm_algo_variant_name(mm_algo a, uint8_t variant)
{
    if (a != MM_ALGO_ALLREDUCE)
        return variant == 0 ? "" : NULL;
    switch (variant) {
#define MM_X(NAME, code, name) case code: return name;
    MM_AR_SCHEDULES(MM_X)
#undef MM_X
    }
    return NULL;
}

int mm_algo_parse(const char *s)
{
#define MM_X(NAME, code, name) if (!strcmp(s, name)) return MM_ALGO_##NAME;
    MM_ALGOS(MM_X)
#undef MM_X
    return -1;
}

bool mm_wire_weight_ok(mm_weight_rule rule, double w, uint32_t n_peers,
                       char *why, size_t whylen)
{
    bool ok;
    switch (rule) {
    case MM_WEIGHT_ONE: ok = w == 1.0; break;
    case MM_WEIGHT_PUSHSUM: ok = w >= MM_PUSHSUM_W_MIN && w <= (double)n_peers; break;
    default: ok = isfinite(w); break;
    }
    if (!ok && why) {
        if (rule == MM_WEIGHT_ONE)
            snprintf(why, whylen, "weight %.17g, but this peer runs dpsgd or async, where "
                     "the weight is exactly 1 (is the sender running --algo pushsum?)", w);
        else if (rule == MM_WEIGHT_PUSHSUM)
            snprintf(why, whylen, "push-sum weight %.17g is outside [2^-30, %u] (finite, "
                     "positive, at most the number of peers)", w, n_peers);
        else
            snprintf(why, whylen, "weight is not finite");
    }
    return ok;
}
