/* OpenBLAS kernel selection. Debian's OpenBLAS 0.3.21 does not recognise
 * some recent CPUs and falls back to its generic "Prescott" kernel, about 6x
 * slower. The kernel is chosen when the library loads, so the only cure from
 * inside the program is to set OPENBLAS_CORETYPE and re-execute ourselves. */
#ifndef MURMUR_BLAS_ENV_H
#define MURMUR_BLAS_ENV_H

/* Called first thing in main(). If OpenBLAS runs its generic kernel on a CPU
 * that a better kernel supports, and the user has not set OPENBLAS_CORETYPE,
 * sets it and re-executes argv, silently. Returns normally otherwise.
 * MURMUR_NO_BLAS_FIX=1 turns it off; MURMUR_BLAS_PRETEND_KERNEL=NAME (for
 * tests) acts as if OpenBLAS had chosen NAME, MURMUR_BLAS_PRETEND_CPU="FLAG
 * ..." as if the CPU had exactly these /proc/cpuinfo flags. */
void mm_blas_fix_kernel(int argc, char **argv);

/* Logs what mm_blas_fix_kernel did (re-executed, or why it could not), once
 * the command has somewhere useful to say it: a peer's log, train's
 * start-up lines. Nothing when it did nothing. */
void mm_blas_log_note(void);

/* The kernel OpenBLAS runs now ("Haswell", "SkylakeX", "Prescott", ...). */
const char *mm_blas_kernel(void);

#endif
