/* This process's own peak resident memory (base/peak_rss.h). */
#include "base/peak_rss.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

long mm_peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && kib < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0 && sscanf(line + 6, "%ld", &kib) != 1)
            kib = -1;
    if (f)
        fclose(f);
    if (kib >= 0)
        return kib;
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}
