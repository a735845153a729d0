/* base/jitter.h: the --compute-jitter / --jitter distribution. */
#include "base/jitter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mm_jitter_parse(const char *s, mm_jitter *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char tail;
    if (!strcmp(s, "none"))
        return 0;
    if (sscanf(s, "uniform:%lf%c", &out->a, &tail) == 1 && out->a >= 0 && isfinite(out->a)) {
        out->kind = MM_JITTER_UNIFORM;
        return 0;
    }
    if (sscanf(s, "longtail:%lf:%lf%c", &out->p, &out->a, &tail) == 2 && out->p >= 0 &&
        out->p <= 1 && out->a >= 0 && isfinite(out->a)) {
        out->kind = MM_JITTER_LONGTAIL;
        return 0;
    }
    snprintf(err, errlen, "jitter '%s': expected none, uniform:SECONDS or longtail:P:SECONDS "
                          "(P in [0, 1])", s);
    return -1;
}
