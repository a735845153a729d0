/* Small helpers shared by the unit tests (header only). */
#ifndef MURMUR_TESTUTIL_H
#define MURMUR_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Removes a test's temporary directory and everything in it; 0 on success. */
static inline int tu_rm_rf(const char *dir)
{
    char cmd[1100];
    if ((size_t)snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= sizeof cmd)
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

/* The reference consensus distance sqrt(1/n sum_i ||x_i - xbar||^2) of n
 * rows of dim floats, in double: the tests' oracle, independent of the
 * report's own code. */
static inline double tu_xi(const float *const *rows, int n, size_t dim)
{
    double s = 0;
    for (size_t p = 0; p < dim; p++) {
        double mean = 0;
        for (int i = 0; i < n; i++)
            mean += rows[i][p];
        mean /= n;
        for (int i = 0; i < n; i++) {
            double d = rows[i][p] - mean;
            s += d * d;
        }
    }
    return sqrt(s / n);
}

#endif
