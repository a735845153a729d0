#!/bin/sh
# The figures of docs/study.md from finished sweeps (scripts/sweep.sh, each
# aggregated by `murmur report --sweep`): every setting of every sweep on
# one accuracy-against-consensus-distance plot, the shape of Kong et al.'s
# curve (ICML 2021: accuracy flat below a critical consensus distance,
# falling above it), whether the points come from topologies or from
# consensus targets. Writes into OUT:
#
#   study.csv    one row per setting: sweep, setting, seeds done, accuracy
#                mean and sample sd over seeds, the consensus distance
#                averaged over the run (mean, sd), MB sent per peer (mean)
#   study.png    accuracy against the averaged consensus distance (log),
#                error bars of one sd over seeds both ways, one point
#                style per sweep, each point labelled with its setting
#                (',consensus-target=X' shortened to ' X=X')
#
#   scripts/study-figures.sh OUT SWEEP_DIR...
#
# TITLE sets the plot's title. POSIX sh, awk, gnuplot (without gnuplot the
# CSV alone).
set -eu
case ${1:-} in -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
out=$1; shift
mkdir -p "$out"

echo "sweep,setting,seeds_done,acc_mean,acc_sd,consensus_avg_mean,consensus_avg_sd,mb_sent_per_peer" \
    > "$out/study.csv"
for dir in "$@"; do
    [ -f "$dir/sweep.csv" ] || { echo "study-figures: $dir/sweep.csv missing (murmur report --sweep $dir)" >&2; exit 1; }
    # sweep.csv quotes its strings (a setting name holds commas): split by hand
    awk -v sweep="$(basename "$dir")" '
        function split_csv(line, f,    n, i, c, q, cur) {
            n = 0; q = 0; cur = ""
            for (i = 1; i <= length(line); i++) {
                c = substr(line, i, 1)
                if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur c; i++ } else q = 0 } else cur = cur c }
                else if (c == "\"") q = 1
                else if (c == ",") { f[++n] = cur; cur = "" }
                else cur = cur c
            }
            f[++n] = cur
            return n
        }
        NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i
                  split("setting seeds_done acc_mean acc_sd consensus_avg_mean consensus_avg_sd bytes_sent_per_peer_mean", need, " ")
                  for (k in need) if (!(need[k] in col)) { print "study-figures: no column " need[k] > "/dev/stderr"; exit 1 }
                  next }
        { split_csv($0, v)
          if (v[col["seeds_done"]] + 0 == 0) next
          mb = v[col["bytes_sent_per_peer_mean"]] / 1e6
          printf "%s,\"%s\",%s,%s,%s,%s,%s,%.3f\n", sweep, v[col["setting"]], v[col["seeds_done"]],
                 v[col["acc_mean"]], v[col["acc_sd"]], v[col["consensus_avg_mean"]],
                 v[col["consensus_avg_sd"]], mb }' "$dir/sweep.csv" >> "$out/study.csv"
done
echo "csv: $out/study.csv"

command -v gnuplot >/dev/null 2>&1 || { echo "study-figures: no gnuplot: the CSV only" >&2; exit 0; }
# one data block per sweep: x, y, xsd, ysd, label
awk -F, 'NR > 1 { s = $1; if (!(s in seen)) { seen[s] = ++n; name[n] = s }
        lab = $0; sub(/^[^"]*"/, "", lab); sub(/".*$/, "", lab); gsub(/,consensus-target=/, " X=", lab)
        rows[seen[s]] = rows[seen[s]] sprintf("%s %s %s %s \"%s\"\n", $(NF - 2), $(NF - 4),
            ($(NF - 1) == "" ? 0 : $(NF - 1)), ($(NF - 3) == "" ? 0 : $(NF - 3)), lab) }
    END { for (k = 1; k <= n; k++) { printf "# %s\n%s\n\n", name[k], rows[k] } }' "$out/study.csv" \
    > "$out/study.dat"
nblocks=$(grep -c '^# ' "$out/study.dat")
plots=""
i=0
for name in $(sed -n 's/^# //p' "$out/study.dat"); do
    plots="$plots 'study.dat' index $i using 1:2:(\$1-\$3 > 0 ? \$1-\$3 : \$1):(\$1+\$3):(\$2-\$4):(\$2+\$4) with xyerrorbars pt $((i + 5)) ps 1.5 title '$name',"
    plots="$plots 'study.dat' index $i using 1:2:5 with labels offset 0,1 font ',9' notitle,"
    i=$((i + 1))
done
[ "$i" -eq "$nblocks" ] || { echo "study-figures: a sweep's name has a space" >&2; exit 1; }
cat > "$out/study.gp" <<EOF
set terminal pngcairo size 1000,650
set output 'study.png'
set logscale x
set xlabel 'consensus distance, mean over the run (exact where snapshots allow)'
set ylabel 'final validation accuracy (mean over peers)'
set title '${TITLE:-accuracy against consensus distance: mean and sd over seeds}'
set key top right
set offsets graph 0.1, graph 0.05, graph 0.05, graph 0.02
set grid
plot ${plots%,}
EOF
(cd "$out" && gnuplot study.gp)
echo "plot: $out/study.png"
