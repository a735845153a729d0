#!/bin/sh
# Draws the CSV of `make bench-gossip` (build/bench-gossip.csv) as a PNG:
# throughput against vector size for the raw copy, plaintext, TLS, OpenSSL's
# own loop and the bound the cipher sets.
#   scripts/plot-bench-gossip.sh [CSV [PNG]]
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
csv=${1:-build/bench-gossip.csv}
png=${2:-${csv%.csv}.png}
[ -r "$csv" ] || { echo "plot-bench-gossip: no $csv (run make bench-gossip)" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 || { echo "plot-bench-gossip: gnuplot not found; the figures stay in $csv" >&2; exit 0; }
gnuplot <<GP
set datafile separator ','
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 800,500 noenhanced } else { set terminal png size 800,500 noenhanced }
set output '$png'
set title 'murmur transport, one direction over loopback (best of trials)'
set xlabel 'vector (MB)'
set ylabel 'GB/s'
set logscale x 2
set xtics (1, 4, 16, 64)
set key top right
set grid
plot '$csv' using 1:2 skip 1 with linespoints title 'raw TCP copy', \
     '' using 1:3 skip 1 with linespoints title 'plaintext', \
     '' using 1:4 skip 1 with linespoints title 'TLS', \
     '' using 1:5 skip 1 with linespoints title 'OpenSSL blocking loop', \
     '' using 1:8 skip 1 with linespoints dashtype 2 title 'TLS bound (cipher + raw CPU)', \
     '' using 1:(\$2*0.5) skip 1 with lines dashtype 3 title 'TLS target: 50% of raw'
GP
echo "plot: $png"
