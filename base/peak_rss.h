/* This process's own peak resident memory, for the `end` lines of
 * `murmur node` (max_rss_kb) and `murmur train` (peak_rss_kib). */
#ifndef MURMUR_PEAK_RSS_H
#define MURMUR_PEAK_RSS_H

/* KiB: VmHWM of /proc/self/status, the high-water mark of this process
 * image since its exec. Not getrusage()'s ru_maxrss: Linux keeps that
 * across fork and execve, so it also counts what the parent held when it
 * forked (a node started from a process holding 150 MB reported 167 MB
 * while its own set was ~7 MB) and what murmur held before its OpenBLAS
 * re-exec. ru_maxrss only where /proc is missing. */
long mm_peak_rss_kib(void);

#endif
