#!/bin/sh
# make bench-allreduce: Open MPI's MPI_Allreduce over TCP (--mca pml ob1
# --mca btl tcp,self: no shared memory even on one machine) for 1, 4, 16
# and 64 MB float vectors on 4 and 8 ranks of this machine, REPS timed
# repetitions each after a warm-up (tests/bench_allreduce.c). Writes every
# repetition to the CSV and prints, per ranks and size, the median
# algorithm bandwidth (vector bytes / seconds of one all-reduce, slowest
# rank; docs/runtime.md) with its range, and the load average before and
# after. Draws a PNG of the CSV when gnuplot is there.
#   BENCH_RANKS="4 8"  BENCH_SIZES=1,4,16,64  BENCH_REPS=5
#   BENCH_CSV=build/bench-allreduce.csv
# The CSV is long-format (impl,ranks,vector_mb,bytes,rep,seconds,algbw_gbs,
# busbw_gbs): murmur's own all-reduce adds rows with impl=murmur, and the
# table gets a column per impl found.
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
BUILD=${BUILD:-build}
BIN=${BIN:-$BUILD/bench_allreduce}
RANKS=${BENCH_RANKS:-4 8}
SIZES=${BENCH_SIZES:-1,4,16,64}
REPS=${BENCH_REPS:-5}
CSV=${BENCH_CSV:-$BUILD/bench-allreduce.csv}
[ -x "$BIN" ] || { echo "bench-allreduce: $BIN not built (make bench-allreduce)" >&2; exit 2; }
asroot=""; [ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
echo "impl,ranks,vector_mb,bytes,rep,seconds,algbw_gbs,busbw_gbs" > "$CSV"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-allreduce: MPI_Allreduce (sum, float, in place) over TCP loopback;" \
     "ranks: $RANKS; sizes: $SIZES MB; $REPS reps after 1 warm-up; $(nproc) cores; load $load0"
for n in $RANKS; do
    timeout -k 10 900 mpirun $asroot --oversubscribe -np "$n" --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include lo "$BIN" --sizes "$SIZES" --reps "$REPS" --csv "$CSV" > "$BUILD/bench-allreduce-$n.log" 2>&1 ||
        { tail -20 "$BUILD/bench-allreduce-$n.log" >&2; echo "bench-allreduce: mpirun -np $n failed" >&2; exit 1; }
    echo "  $n ranks done ($(grep -c rep "$BUILD/bench-allreduce-$n.log") repetitions)"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "algorithm bandwidth, GB/s: median (min-max) of $REPS repetitions; load $load0 before, $load1 after"
# one column per implementation in the CSV, in order of appearance
awk -F, 'NR > 1 { k = $2 "," $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
                 if (!($1 in isimpl)) { isimpl[$1] = 1; impls[++ni] = $1 }
                 c = k "," $1; v[c, ++cnt[c]] = $7 }
    function med(c,   n, i, j, t, a) { n = cnt[c]; for (i = 1; i <= n; i++) a[i] = v[c, i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END {
        printf "%5s %7s", "ranks", "vector"
        for (i = 1; i <= ni; i++) printf "  %-22s", impls[i]
        if (ni > 1) printf "  %s/%s", impls[2], impls[1]
        printf "\n"
        for (q = 1; q <= nk; q++) {
            split(keys[q], f, ","); printf "%5s %4s MB", f[1], f[2]
            for (i = 1; i <= ni; i++) { c = keys[q] "," impls[i]
                if (cnt[c]) { m[i] = med(c); printf "  %6.3f (%.3f-%.3f)   ", m[i], lo, hi } else { m[i] = 0; printf "  %-22s", "-" } }
            if (ni > 1 && m[1] > 0) printf "  %5.0f%%", 100 * m[2] / m[1]
            printf "\n"
        }
    }' "$CSV"
echo "every repetition: $CSV"
if command -v gnuplot > /dev/null 2>&1; then
    png=${CSV%.csv}.png
    plots=""
    for n in $RANKS; do
        plots="$plots${plots:+, }'$CSV' using (\$2 == $n ? \$3 : 1/0):7 with points pt 7 title 'MPI_Allreduce, $n ranks'"
    done
    gnuplot -e "set terminal png noenhanced size 800,500; set output '$png'; set datafile separator ',';
        set logscale x 2; set xlabel 'vector (MB)'; set ylabel 'algorithm bandwidth (GB/s)';
        set key below; set title 'MPI_Allreduce over TCP loopback (load $load0)'; plot $plots" 2>/dev/null &&
        echo "plot: $png"
fi
