#!/bin/sh
# How `murmur topo info` scales: wall time and peak memory (GNU time's
# "Maximum resident set size") on generated rings and exponential graphs of
# growing size, for this murmur and optionally another build to compare
# against (e.g. one from before a change), with the load average at each
# run. Writes a CSV and, when gnuplot is there, a log-log PNG of time
# against peers; prints the median of each cell as a table.
#
#   scripts/bench-topo-info.sh [-o DIR] [-r REPS] [-n "1000 4000 10000"]
#                              [-k "ring exp"] [-b OTHER_MURMUR] [-B MAX_N]
#
#   -o DIR    where bench.csv and bench.png go (default runs/bench-topo-TIME)
#   -r REPS   runs of each cell (default 3)
#   -n SIZES  peer counts (default "1000 4000 10000")
#   -k KINDS  topology kinds, as `murmur topo gen` names them (default "ring exp")
#   -b PATH   another murmur binary, measured the same way ("other" rows),
#             once per cell above 1000 peers (a dense O(n^3) build takes
#             minutes at 10,000)
#   -B MAX_N  run the other binary only up to MAX_N peers
# Needs /usr/bin/time (Debian package time). Long: run it under
# `flock /work/locks/heavy nice -n 10` on a shared machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
MURMUR=${MURMUR:-$here/../murmur}
out="runs/bench-topo-$(date +%Y%m%d-%H%M%S)" reps=3 sizes="1000 4000 10000" kinds="ring exp"
other="" other_max=1000000000
while [ $# -gt 0 ]; do
    case $1 in
    -o) out=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -n) sizes=$2; shift 2 ;;
    -k) kinds=$2; shift 2 ;;
    -b) other=$2; shift 2 ;;
    -B) other_max=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench-topo-info: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "bench-topo-info: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
mkdir -p "$out"
csv=$out/bench.csv
echo "binary,kind,peers,rep,seconds,max_rss_kb,load1,rho" > "$csv"
# measure LABEL BINARY KIND N REP
measure() {
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$2" topo info --json "$out/$3-$4.topo" \
        > "$out/info.json" 2> "$out/err.txt" || { cat "$out/err.txt" >&2; exit 1; }
    rho=$(sed -n 's/.*"rho": \([-0-9.e+]*\),.*/\1/p' "$out/info.json")
    set -- "$1" "$3" "$4" "$5" $(tail -n 1 "$out/time.txt")
    echo "$1,$2,$3,$4,$5,$6,$load,$rho" >> "$csv"
    echo "bench-topo-info: $1 $2-$3 run $4: $5 s, $(($6 / 1024)) MiB, load $load" >&2
}
for n in $sizes; do
    for k in $kinds; do
        "$MURMUR" topo gen "$k" -n "$n" > "$out/$k-$n.topo"
        r=1
        while [ "$r" -le "$reps" ]; do
            measure this "$MURMUR" "$k" "$n" "$r"
            if [ -n "$other" ] && [ "$n" -le "$other_max" ] && { [ "$n" -le 1000 ] || [ "$r" = 1 ]; }; then
                measure other "$other" "$k" "$n" "$r"
            fi
            r=$((r + 1))
        done
    done
done
rm -f "$out/time.txt" "$out/info.json" "$out/err.txt"
echo "csv: $csv"
# The median of each cell, and the load average at each of its runs.
printf "%-6s %-5s %7s %5s %10s %9s  %s\n" binary kind peers runs seconds MiB "load1 of each run"
awk -F, 'NR > 1 { key = $1 "," $2 "," $3; t[key] = t[key] " " $5; m[key] = m[key] " " $6; l[key] = l[key] " " $7 }
    function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x } return a[int((n + 1) / 2)] }
    END { for (k in t) { split(k, f, ","); printf "%-6s %-5s %7d %5d %10.2f %9.0f  %s\n", f[1], f[2], f[3], split(t[k], x, " "), med(t[k]), med(m[k]) / 1024, l[k] } }' "$csv" |
    sort -k1,1r -k2,2 -k3,3n
if command -v gnuplot > /dev/null 2>&1; then
    for b in this other; do
        for k in $kinds; do
            awk -F, -v b=$b -v k=$k 'NR > 1 && $1 == b && $2 == k { print $3, $5 }' "$csv" > "$out/$b-$k.dat"
        done
    done
    {
        echo "set terminal png size 800,500; set output '$out/bench.png'"
        echo "set logscale xy; set xlabel 'peers'; set ylabel 'seconds'; set key left top"
        echo "set title 'murmur topo info: wall time'"
        printf 'plot '
        sep=''
        for b in this other; do
            for k in $kinds; do
                [ -s "$out/$b-$k.dat" ] && printf "%s'%s' using 1:2 title '%s %s' with points pt 7" "$sep" "$out/$b-$k.dat" "$b" "$k" && sep=', '
            done
        done
        echo
    } | gnuplot && echo "png: $out/bench.png"
fi
