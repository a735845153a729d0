#!/bin/sh
# The figures of docs/node.md "Consensus control, measured": from finished
# runs (scripts/consensus-runs.sh, each with `murmur report` done and
# --snapshot-every, so the consensus distance is exact), writes into OUT:
#
#   xi.csv       round, then per run the exact Xi; for runs with consensus
#                control also the peers' estimate and the mean exchanges
#   xi.png       Xi against round (log), every run, the target and +-25 %
#   summary.csv  per run: exchanges per round and MB sent per peer over the
#                run; over the second half (rounds >= last/2): Xi min, mean,
#                max, the fraction of snapshots within +-25 % of the target,
#                and the mean ratio estimate/exact where there is one
#   calib.csv    per run and snapshot round: exact Xi, the root mean square
#                neighbour distance of the round's first exchange (the `dist`
#                of every round line), their ratio, and the run's mean
#                exchanges per round: what the estimator's correction must
#                turn one into the other
#
#   scripts/consensus-figures.sh OUT TARGET RUN_DIR...
#
# A run's name is its directory's last component; TITLE sets the plot's title.
# POSIX sh, awk, gnuplot.
set -eu
case ${1:-} in -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 3 ] || { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
out=$1 target=$2; shift 2
mkdir -p "$out"

# col CSV NAME...: the named columns of a CSV with a header, comma-separated
col() {
    f=$1; shift
    awk -F, -v names="$*" 'NR == 1 { n = split(names, want, " ")
        for (i = 1; i <= NF; i++) h[$i] = i
        for (k = 1; k <= n; k++) if (!(want[k] in h)) { print "no column " want[k] > "/dev/stderr"; exit 1 }
        next }
        { line = ""; for (k = 1; k <= n; k++) line = line (k > 1 ? "," : "") $h[want[k]]; print line }' "$f"
}

: > "$out/calib.csv.tmp"
printf 'run,exchanges_per_round,mb_sent_per_peer,xi_min_2nd,xi_mean_2nd,xi_max_2nd,in_band_2nd,est_over_exact_2nd\n' \
    > "$out/summary.csv"
names=""
for run in "$@"; do
    name=$(basename "$run")
    names="$names $name"
    [ -f "$run/report.csv" ] || { echo "consensus-figures: $run/report.csv missing (run murmur report)" >&2; exit 1; }
    col "$run/report.csv" round method consensus_exact xi_est exchanges exchanges_avg bytes_sent_per_peer |
        awk -F, '$2 == "exact"' > "$out/$name.rows"
    last=$(tail -n 1 "$out/$name.rows" | cut -d, -f1)
    awk -F, -v name="$name" -v X="$target" -v half=$((last / 2)) '
        { avg = $6; mb = $7 / 1e6 }
        $1 >= half && $1 > 0 {
            n++; s += $3; if (min == "" || $3 < min) min = $3; if ($3 > max) max = $3
            if ($3 >= 0.75 * X && $3 <= 1.25 * X) inb++
            if ($4 != "") { ne++; r += $4 / $3 }
        }
        END { printf "%s,%.3f,%.3f,%.5g,%.5g,%.5g,%.3f,%s\n", name, avg, mb, min, s / n, max,
                     inb / n, ne ? sprintf("%.3f", r / ne) : "" }' "$out/$name.rows" >> "$out/summary.csv"
    # rms of the first exchange's neighbour distances, per round, over all peers
    cat "$run"/node-*/metrics.jsonl | awk '/"ev":"round"/ {
        match($0, /"round":[0-9]+/); r = substr($0, RSTART + 8, RLENGTH - 8)
        if (!match($0, /"dist":\{[^}]*\}/)) next
        o = substr($0, RSTART + 8, RLENGTH - 9); n = split(o, kv, ",")
        for (k = 1; k <= n; k++) { split(kv[k], p, ":"); s[r] += p[2] * p[2]; c[r]++ }
    } END { for (r in s) printf "%d,%.9g\n", r, sqrt(s[r] / c[r]) }' | sort -t, -k1,1n > "$out/$name.dist"
    awk -F, -v name="$name" 'NR == FNR { d[$1] = $2; next }
        $1 > 0 && ($1 in d) && $3 > 0 { printf "%s,%d,%.6g,%.6g,%.4f,%s\n", name, $1, $3, d[$1], $3 / d[$1], $6 }' \
        "$out/$name.dist" "$out/$name.rows" >> "$out/calib.csv.tmp"
done
{ echo "run,round,xi_exact,rms_nbr_dist,xi_over_rms_dist,exchanges_avg"; cat "$out/calib.csv.tmp"; } > "$out/calib.csv"
rm -f "$out/calib.csv.tmp"

# xi.csv: one row per round, columns per run (exact Xi; estimate and G where present)
awk -F, -v names="$names" -v dir="$out" 'BEGIN {
    n = split(names, run, " ")
    hdr = "round"
    for (k = 1; k <= n; k++) {
        f = dir "/" run[k] ".rows"
        while ((getline line < f) > 0) {
            split(line, v, ","); rounds[v[1]] = 1
            xi[k, v[1]] = v[3]; est[k, v[1]] = v[4]; ex[k, v[1]] = v[5]
            if (v[4] != "") has_est[k] = 1
        }
        hdr = hdr "," run[k]
        if (has_est[k]) hdr = hdr "," run[k] "_estimate," run[k] "_exchanges"
    }
    print hdr
    m = 0; for (r in rounds) list[++m] = r + 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
    for (i = 1; i <= m; i++) {
        r = list[i]; line = r
        for (k = 1; k <= n; k++) {
            line = line "," xi[k, r]
            if (has_est[k]) line = line "," est[k, r] "," ex[k, r]
        }
        print line
    }
}' > "$out/xi.csv"
rm -f "$out"/*.rows "$out"/*.dist

if command -v gnuplot >/dev/null 2>&1; then
    plots=""
    k=0
    for name in $names; do
        k=$((k + 1))
        c=$(head -n 1 "$out/xi.csv" | tr ',' '\n' | grep -nx "$name" | cut -d: -f1)
        plots="$plots '$out/xi.csv' using 1:(\$$c > 0 ? \$$c : 1/0) with linespoints title '$name',"
    done
    gnuplot <<EOF
set terminal pngcairo size 1000,600
set output '$out/xi.png'
set datafile separator ','
set key outside right
set logscale y
set xlabel 'round'
set ylabel 'consensus distance Xi (exact, from snapshots)'
set title '${TITLE:-consensus distance against round, target $target}'
plot $plots $target with lines lw 2 dt 1 lc rgb 'black' title 'target X', \
     0.75*$target with lines dt 2 lc rgb 'black' title '-25 %', \
     1.25*$target with lines dt 2 lc rgb 'black' title '+25 %'
EOF
    echo "plot: $out/xi.png"
fi
cat "$out/summary.csv"
