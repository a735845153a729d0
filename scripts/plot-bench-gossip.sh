#!/bin/sh
# Draws a CSV of `make bench-gossip` as a PNG:
#  build/bench-gossip.csv: throughput against vector size for the raw copy,
#    plaintext, TLS, OpenSSL's own loop and the bound the cipher sets;
#  build/bench-gossip-codecs.csv: per codec, the parameters moved per second
#    over TLS against fp32 over TLS, and each codec's per-core speeds.
#   scripts/plot-bench-gossip.sh [CSV [PNG]]
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
csv=${1:-build/bench-gossip.csv}
png=${2:-${csv%.csv}.png}
[ -r "$csv" ] || { echo "plot-bench-gossip: no $csv (run make bench-gossip)" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 || { echo "plot-bench-gossip: gnuplot not found; the figures stay in $csv" >&2; exit 0; }
case "$(head -1 "$csv")" in
floats,codec,*)
    # one block of rows per vector length: plot each as its own pair of panels
    sizes=$(tail -n +2 "$csv" | cut -d, -f1 | sort -un | tr '\n' ' ')
    rows=$(echo $sizes | wc -w)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    plots=""
    for n in $sizes; do
        awk -F, -v n="$n" 'NR > 1 && $1 == n' "$csv" > "$tmp/$n.csv"
        plots="$plots
set title 'parameters per second over TLS, $n floats (fp32-equivalent GB/s)'
plot '$tmp/$n.csv' using 8:xtic(2) with boxes fill solid 0.5 title 'codec over TLS (sum of parts)', \
     '' using 0:(\$21 > 0 ? \$21 : 1/0) with points pt 7 ps 1.5 title 'measured, sequential', \
     '' using 0:(\$22 > 0 ? \$22 : 1/0) with points pt 9 ps 1.5 title 'measured, streamed', \
     '' using 0:9 with lines dashtype 2 lw 2 title 'fp32 over TLS (today)', \
     '' using 0:(\$9*2.5) with lines dashtype 3 title 'int8 target: 2.5x fp32'
set title 'per-core speed, $n floats (GB/s of float32 input)'
plot '$tmp/$n.csv' using (\$0-0.3):4:(0.2) with boxes fill solid 0.4 title 'encode', \
     '' using (\$0-0.1):5:(0.2) with boxes fill solid 0.6 title 'encode+ref (CHOCO)', \
     '' using (\$0+0.1):6:(0.2):xtic(2) with boxes fill solid 0.8 title 'decode', \
     '' using (\$0+0.3):7:(0.2) with boxes fill solid 1.0 title 'apply (CHOCO)', \
     2 with lines dashtype 3 title 'target 2 GB/s'"
    done
    gnuplot <<GP
set datafile separator ','
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1200,$((rows * 420)) noenhanced } else { set terminal png size 1200,$((rows * 420)) noenhanced }
set output '$png'
set multiplot layout $rows,2
set style fill solid border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set key below
set xtics rotate by -30
$plots
unset multiplot
GP
    ;;
*)
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
    ;;
esac
echo "plot: $png"
