/* OpenBLAS picks its kernel once, when the library is loaded, from
 * OPENBLAS_CORETYPE or its own CPU detection. Debian's 0.3.21 does not know
 * recent CPUs and falls back to the generic Prescott kernel; setting the
 * variable after load changes nothing, hence the re-exec. */
#include "node/blas_env.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/log.h"

/* Set in the re-executed process so that a kernel OpenBLAS still refuses
 * cannot make us re-exec forever. */
#define REEXEC_MARK "MURMUR_BLAS_REEXEC"

const char *mm_blas_kernel(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

/* The best kernel this CPU can run that OpenBLAS 0.3.21 ships, or NULL. */
static const char *best_kernel(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

void mm_blas_fix_kernel(int argc, char **argv)
{
    (void)argc;
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *mark = getenv(REEXEC_MARK);
    const char *off = getenv("MURMUR_NO_BLAS_FIX");

    if (mark) {
        /* We are the re-executed process: complain if it did not help, and
         * hide the marker from anything we start ourselves. */
        unsetenv(REEXEC_MARK);
        if (!user || strcasecmp(mm_blas_kernel(), user) != 0)
            mm_warn("OpenBLAS kernel: %s although OPENBLAS_CORETYPE=%s was set; "
                    "continuing with it", mm_blas_kernel(), user ? user : "(unset)");
        return;
    }
    if (off && *off && strcmp(off, "0") != 0)
        return;
    if (user && *user)
        return; /* the user's choice wins, even a slow one */
    if (strcasecmp(mm_blas_kernel(), "Prescott") != 0)
        return;
    const char *best = best_kernel();
    if (!best)
        return;

    mm_info("OpenBLAS chose its generic %s kernel but this CPU supports %s: "
            "re-executing with OPENBLAS_CORETYPE=%s (MURMUR_NO_BLAS_FIX=1 disables this)",
            mm_blas_kernel(), best, best);
    if (setenv("OPENBLAS_CORETYPE", best, 1) != 0 || setenv(REEXEC_MARK, "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc, say): carry on with the slow kernel. */
    mm_warn("re-exec for the OpenBLAS kernel failed; continuing with %s", mm_blas_kernel());
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(REEXEC_MARK);
}
