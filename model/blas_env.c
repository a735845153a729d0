/* OpenBLAS picks its kernel once, when the library is loaded, from
 * OPENBLAS_CORETYPE or its own CPU detection. Debian's 0.3.21 does not know
 * recent CPUs and falls back to the generic Prescott kernel; setting the
 * variable after load changes nothing, hence the re-exec. The re-exec is
 * silent: what happened is kept for mm_blas_log_note, which the commands
 * call where it helps (a peer's log, train's start-up lines), never before
 * help text or a usage error. */
#include "model/blas_env.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/log.h"

/* Set in the re-executed process, to the kernel OpenBLAS had chosen, so
 * that the note can say what was fixed and a kernel OpenBLAS still refuses
 * cannot make us re-exec forever. */
#define REEXEC_MARK "MURMUR_BLAS_REEXEC"

/* What mm_blas_fix_kernel did, for mm_blas_log_note; empty: nothing. */
static char note[320];
static enum mm_log_level note_level = MM_LOG_INFO;

const char *mm_blas_kernel(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

/* Tests only: MURMUR_BLAS_PRETEND_CPU="avx2 fma" (words as in
 * /proc/cpuinfo's flags) stands for the CPU's features, so that every
 * branch below runs on every machine (tests/e2e/blas_kernel.sh). */
static bool pretend_has(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
            return true;
    return false;
}

static bool cpu_has(const char *flag)
{
    const char *pretend = getenv("MURMUR_BLAS_PRETEND_CPU");
    if (pretend)
        return pretend_has(pretend, flag);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* __builtin_cpu_supports wants a literal */
    if (!strcmp(flag, "avx512f")) return __builtin_cpu_supports("avx512f");
    if (!strcmp(flag, "avx512bw")) return __builtin_cpu_supports("avx512bw");
    if (!strcmp(flag, "avx512vl")) return __builtin_cpu_supports("avx512vl");
    if (!strcmp(flag, "avx2")) return __builtin_cpu_supports("avx2");
    if (!strcmp(flag, "fma")) return __builtin_cpu_supports("fma");
#endif
    return false;
}

/* The best kernel this CPU can run that OpenBLAS 0.3.21 ships, or NULL. */
static const char *best_kernel(void)
{
    if (cpu_has("avx512f") && cpu_has("avx512bw") && cpu_has("avx512vl"))
        return "SkylakeX";
    if (cpu_has("avx2") && cpu_has("fma"))
        return "Haswell";
    return NULL;
}

void mm_blas_fix_kernel(int argc, char **argv)
{
    (void)argc;
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *mark = getenv(REEXEC_MARK);
    const char *off = getenv("MURMUR_NO_BLAS_FIX");
    /* Tests only: act as if OpenBLAS had chosen this kernel. */
    const char *pretend = getenv("MURMUR_BLAS_PRETEND_KERNEL");
    const char *chosen = pretend && *pretend ? pretend : mm_blas_kernel();

    if (mark) {
        /* We are the re-executed process: note whether it helped, and hide
         * the marker from anything we start ourselves. */
        if (!user || strcasecmp(mm_blas_kernel(), user) != 0) {
            note_level = MM_LOG_WARN;
            snprintf(note, sizeof note, "OpenBLAS kernel: %s although OPENBLAS_CORETYPE=%s was set; "
                     "continuing with it", mm_blas_kernel(), user ? user : "(unset)");
        } else {
            snprintf(note, sizeof note, "OpenBLAS chose its generic %s kernel but this CPU supports %s: "
                     "re-executed with OPENBLAS_CORETYPE=%s (MURMUR_NO_BLAS_FIX=1 disables this)",
                     *mark && strcmp(mark, "1") ? mark : "Prescott", user, user);
        }
        unsetenv(REEXEC_MARK);
        return;
    }
    if (off && *off && strcmp(off, "0") != 0)
        return;
    if (user && *user)
        return; /* the user's choice wins, even a slow one */
    if (strcasecmp(chosen, "Prescott") != 0)
        return;
    const char *best = best_kernel();
    if (!best)
        return;
    if (setenv("OPENBLAS_CORETYPE", best, 1) != 0 || setenv(REEXEC_MARK, chosen, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc, say): carry on with the slow kernel. */
    note_level = MM_LOG_WARN;
    snprintf(note, sizeof note, "OpenBLAS chose its generic %s kernel; re-executing with "
             "OPENBLAS_CORETYPE=%s failed, continuing with it", chosen, best);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(REEXEC_MARK);
}

void mm_blas_log_note(void)
{
    if (note[0])
        mm_log(note_level, "%s", note);
}
