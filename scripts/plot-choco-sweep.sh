#!/bin/sh
# Draws the CSV of `make choco-sweep` (build/choco-sweep.csv) as a PNG:
# rounds for CHOCO-Gossip to come within the tolerance of the average,
# against gamma, one line per codec (the worst seed; a gamma where some
# seed never got there is left out), and prints the same as a table
# (- : some seed did not get there in time, x : some seed diverged).
#   scripts/plot-choco-sweep.sh [CSV [PNG]]
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
csv=${1:-build/choco-sweep.csv}
png=${2:-${csv%.csv}.png}
[ -r "$csv" ] || { echo "plot-choco-sweep: no $csv (run make choco-sweep)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# codec,gamma -> worst rounds_to_tol over seeds: -1 if a seed never got
# there, -2 if a seed ended farther from the average than it started
awk -F, 'NR > 1 && $3 == 1 {
    k = $1 "," $2; r = $9 + 0
    if (r < 0 && $12 + 0 > 1) r = -2
    if (!(k in worst)) { worst[k] = r; order[++n] = k }
    else if (r == -2 || (worst[k] >= 0 && (r < 0 || r > worst[k]))) worst[k] = r
} END { for (i = 1; i <= n; i++) print order[i] "," worst[order[i]] }' "$csv" > "$tmp/worst.csv"
codecs=$(cut -d, -f1 "$tmp/worst.csv" | awk '!seen[$0]++')
echo "rounds to reach the tolerance (worst seed; - = some seed never did, x = some seed diverged), by gamma:"
printf '%-11s' codec
cut -d, -f2 "$tmp/worst.csv" | awk '!seen[$0]++' | tr '\n' ' ' | xargs printf '%7s'
echo
for c in $codecs; do
    printf '%-11s' "$c"
    awk -F, -v c="$c" '$1 == c { printf "%7s", ($3 == -2 ? "x" : $3 < 0 ? "-" : $3) }' "$tmp/worst.csv"
    echo
    awk -F, -v c="$c" '$1 == c && $3 >= 0 { print $2, $3 }' "$tmp/worst.csv" > "$tmp/$(echo "$c" | tr ':' '_').dat"
done
command -v gnuplot >/dev/null 2>&1 || { echo "plot-choco-sweep: gnuplot not found; the figures stay in $csv" >&2; exit 0; }
plots=""
for c in $codecs; do
    f="$tmp/$(echo "$c" | tr ':' '_').dat"
    [ -s "$f" ] && plots="$plots${plots:+, }'$f' using 1:2 with linespoints title '$c'"
done
gnuplot <<GP
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 900,560 noenhanced } else { set terminal png size 900,560 noenhanced }
set output '$png'
set title 'CHOCO-Gossip on a ring: rounds to reach the average (worst of the seeds)'
set xlabel 'consensus step gamma'
set ylabel 'rounds'
set logscale xy
set grid
set key outside right
plot $plots
GP
echo "plot: $png"
