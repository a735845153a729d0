/* The names of the algorithms (the table in net/algo.h). */
#include "net/algo.h"

#include <stddef.h>
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
