/* OpenBLAS kernel selection. Debian's OpenBLAS 0.3.21 does not recognise
 * some recent CPUs and falls back to its generic "Prescott" kernel, about 6x
 * slower. The kernel is chosen when the library loads, so the only cure from
 * inside the program is to set OPENBLAS_CORETYPE and re-execute ourselves. */
#ifndef MURMUR_BLAS_ENV_H
#define MURMUR_BLAS_ENV_H

/* Called first thing in main(). If OpenBLAS runs its generic kernel on a CPU
 * that a better kernel supports, and the user has not set OPENBLAS_CORETYPE,
 * sets it and re-executes argv (logging what it did). Returns normally
 * otherwise. */
void mm_blas_fix_kernel(int argc, char **argv);

/* The kernel OpenBLAS runs now ("Haswell", "SkylakeX", "Prescott", ...). */
const char *mm_blas_kernel(void);

#endif
