#!/bin/sh
# The report's speed on large runs (make bench-report; see mk/bench-report.mk).
# For each PEERSxROUNDS[xDEGREE] in BENCH_RUNS: generates the run once into
# $BUILD/bench-report/ (again when gen_run is newer), then BENCH_TRIALS times,
# runs interleaved: cat of the metrics files (the I/O floor) and
# `murmur report --no-plots`, with the 1-minute load average before each.
# Writes $BUILD/bench-report.csv, prints per run the best wall time, the
# median CPU time, MB/s of CPU, the ratio to cat and the peak RSS, and draws
# $BUILD/bench-report.png when gnuplot is there.
set -eu
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    ?*) echo "bench-report: no arguments (settings come from the environment; --help)" >&2; exit 2 ;;
esac
BUILD=${BUILD:-build}
RUNS=${BENCH_RUNS:-32x5000 32x20000 256x2000x8}
TRIALS=${BENCH_TRIALS:-3}
MURMUR=${MURMUR:-./murmur}
GEN=$BUILD/tests/tools/gen_run
csv=$BUILD/bench-report.csv
png=$BUILD/bench-report.png
dir=$BUILD/bench-report
die() { echo "bench-report: $*" >&2; exit 1; }
[ -x "$GEN" ] || die "no $GEN (run make bench-report)"
[ -x /usr/bin/time ] || die "no /usr/bin/time (apt-get install time)"
mkdir -p "$dir"

for spec in $RUNS; do
    case $spec in *[!0-9x]*|x*|*x|*xx*) die "bad run '$spec' (PEERSxROUNDS[xDEGREE])" ;; esac
    set -- $(echo "$spec" | tr x ' ')
    [ $# -ge 2 ] && [ $# -le 3 ] || die "bad run '$spec' (PEERSxROUNDS[xDEGREE])"
    run=$dir/run-$spec
    if [ ! -f "$run/.done" ] || [ "$GEN" -nt "$run/.done" ]; then
        rm -rf "$run"
        echo "bench-report: generating $run"
        "$GEN" "$run" "$1" "$2" 20 --degree "${3:-2}" --faults || die "gen_run failed"
        touch "$run/.done"
    fi
done

echo "run,peers,rounds,degree,mb,trial,load1,cat_wall_s,report_wall_s,report_cpu_s,maxrss_kb,warnings" > "$csv"
t=1
while [ "$t" -le "$TRIALS" ]; do
    for spec in $RUNS; do
        set -- $(echo "$spec" | tr x ' ')
        run=$dir/run-$spec
        mb=$(cat "$run"/node-*/metrics.jsonl | wc -c | awk '{ printf "%.1f", $1 / 1e6 }')
        load=$(cut -d' ' -f1 /proc/loadavg)
        c0=$(date +%s.%N)
        cat "$run"/node-*/metrics.jsonl > /dev/null
        c1=$(date +%s.%N)
        /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" "$MURMUR" report --no-plots "$run" \
            > "$dir/report.out" 2> "$dir/report.err" || die "murmur report failed on $run: $(tail -3 "$dir/report.err")"
        read -r wall user sys rss < "$dir/time.txt"
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
        catw=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
        warn=$(grep -c 'warning' "$dir/report.err" || true)
        echo "$spec,$1,$2,${3:-2},$mb,$t,$load,$catw,$wall,$cpu,$rss,$warn" >> "$csv"
        printf '  trial %d %-12s load %5s  cat %6.3f s  report wall %6.2f s cpu %6.2f s\n' \
            "$t" "$spec" "$load" "$catw" "$wall" "$cpu"
    done
    t=$((t + 1))
done

echo
echo "murmur report --no-plots (best wall, median CPU over $TRIALS trials; cat = reading the files):"
printf '%-12s %8s %9s %9s %10s %9s %9s %8s %s\n' run MB wall_s cpu_s cpu_MB/s cat_s report/cat rss_MB load1
for spec in $RUNS; do
    grep "^$spec," "$csv" | sort -t, -k10,10g | awk -F, -v n="$TRIALS" -v spec="$spec" '
        { cpu[NR] = $10; if (NR == 1 || $9 < w) w = $9; if (NR == 1 || $8 < c) c = $8;
          if (NR == 1 || $7 < lo) lo = $7; if (NR == 1 || $7 > hi) hi = $7; mb = $5; rss = $11 }
        END { m = cpu[int((NR + 1) / 2)];
              printf "%-12s %8.1f %9.2f %9.2f %10.1f %9.3f %9.0fx %8.1f %s-%s\n",
                     spec, mb, w, m, mb / m, c, w / (c > 0.001 ? c : 0.001), rss / 1024, lo, hi }'
done
echo "csv: $csv"

command -v gnuplot >/dev/null 2>&1 || { echo "bench-report: gnuplot not found; the figures stay in $csv" >&2; exit 0; }
gnuplot <<GP
set datafile separator ','
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 800,500 noenhanced } else { set terminal png size 800,500 noenhanced }
set output '$png'
set title 'murmur report --no-plots on generated runs (every trial)'
set xlabel 'metrics (MB)'
set ylabel 'seconds'
set key top left
set grid
plot '$csv' using 5:10 skip 1 with points pt 7 title 'report CPU (user+sys)', \
     '' using 5:9 skip 1 with points pt 6 title 'report wall', \
     '' using 5:8 skip 1 with points pt 2 title 'cat of the same files (wall)'
GP
echo "plot: $png"
