#!/bin/sh
# The comparison of docs/outer.md from finished sweeps: one row per method
# (a setting of a sweep), its runs paired by seed with a baseline method.
#
#   scripts/outer-figures.sh OUT METHODS_FILE
#
# METHODS_FILE: one method per line, '#' comments, four fields split by '|':
#   LABEL | SWEEP_DIR | SETTING | murmur plan flags
# The first method is the baseline of the paired differences. Writes:
#
#   OUT/outer.md     the table (markdown): per method the seeds, final val
#                    loss and accuracy (mean ± sample sd over seeds, each
#                    seed's value the mean over its peers), the exact
#                    consensus distance of the evaluated parameters at the
#                    end (murmur report's), MB sent per peer, the round and
#                    the whole run's time from `murmur plan FLAGS`; then
#                    the paired differences with the baseline: mean, sd,
#                    and in how many seeds the method's loss is lower
#   OUT/runs.csv     every run: label, seed, val_loss, acc, xi, mb
#   OUT/curves.csv   per method and evaluation: MB sent per peer by then
#                    and val loss, each the mean over peers then seeds
#   OUT/loss-mb.png  val loss against MB sent per peer, one line per method
#                    (log x; a method that sends nothing is a level line)
#
# BASELINES: labels separated by ';' to pair with, one table each (default
# the first method). PLAN_COMMON: flags given to every `murmur plan` (the link profile, the
# model and its step time). MURMUR: the binary (default ./murmur). POSIX sh,
# awk, gnuplot (without gnuplot no PNG).
set -eu
case ${1:-} in -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 2 ] || { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
out=$1; methods=$2
MURMUR=${MURMUR:-./murmur}
PLAN_COMMON=${PLAN_COMMON:-}
mkdir -p "$out"
: > "$out/runs.csv.tmp"; : > "$out/curves.csv.tmp"; : > "$out/plan.tmp"

trim() { printf '%s' "$1" | sed 's/^[ 	]*//; s/[ 	]*$//'; }
grep -v '^[ 	]*#' "$methods" | grep -v '^[ 	]*$' | while IFS='|' read -r label dir setting plan; do
    label=$(trim "$label"); dir=$(trim "$dir"); setting=$(trim "$setting"); plan=$(trim "$plan")
    case $label in *,*|*\'*) echo "outer-figures: a label may hold no comma or quote: '$label'" >&2; exit 2 ;; esac
    [ -f "$dir/sweep-runs.csv" ] || { echo "outer-figures: $dir/sweep-runs.csv missing" >&2; exit 1; }
    # the runs of this setting: seed, val_loss, acc, consensus_final, bytes (sweep-runs.csv,
    # whose strings are quoted: the setting is field 2, quoted, without commas here)
    awk -F, -v s="\"$setting\"" -v l="$label" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["setting"] == s && $col["status"] == "done" {
            printf "%s,%s,%s,%s,%s,%.3f\n", l, $col["seed"], $col["val_loss"], $col["acc"],
                   $col["consensus_final"], $col["bytes_sent_per_peer"] / 1e6 }' \
        "$dir/sweep-runs.csv" >> "$out/runs.csv.tmp"
    # the loss-against-bytes curve: per run, per evaluation round R, the mean
    # over peers of val_loss and of bytes_sent after R rounds
    for run in "$dir/$setting"/s*; do
        [ -d "$run" ] || continue
        cat "$run"/node-*/metrics.jsonl | awk -v l="$label" -v run="$run" '
            function num(k,    s) { s = $0; if (!sub(".*\"" k "\":", "", s)) return ""; sub("[,}].*", "", s); return s }
            /"ev":"round"/ { b[num("peer"), num("round") + 1] = num("bytes_sent") }
            /"ev":"eval"/ { r = num("round"); v = num("val_loss"); if (v != "" && v != "null") { ev[num("peer"), r] = v; rs[r] = 1 } }
            END {
                for (r in rs) {
                    n = 0; sl = 0; sb = 0
                    for (key in ev) { split(key, k, SUBSEP); if (k[2] == r) { n++; sl += ev[key]; sb += (r == 0 ? 0 : b[k[1], r]) } }
                    if (n) printf "%s,%s,%d,%.6f,%.6f\n", l, run, r, sb / n / 1e6, sl / n
                } }' >> "$out/curves.csv.tmp"
    done
    if [ -n "$plan" ]; then
        # shellcheck disable=SC2086
        "$MURMUR" plan $PLAN_COMMON $plan --json > "$out/plan.json.tmp" 2>/dev/null ||
            { echo "outer-figures: murmur plan $PLAN_COMMON $plan failed" >&2; exit 1; }
        r=$(sed -n 's/.*"round_s":\([0-9.e+-]*\).*/\1/p' "$out/plan.json.tmp")
        h=$(sed -n 's/.*"local_steps":\([0-9]*\).*/\1/p' "$out/plan.json.tmp")
        printf '%s|%s|%s\n' "$label" "$r" "$h" >> "$out/plan.tmp"
    else
        printf '%s||\n' "$label" >> "$out/plan.tmp"
    fi
done
echo "label,seed,val_loss,acc,xi,mb" > "$out/runs.csv"
cat "$out/runs.csv.tmp" >> "$out/runs.csv"
rm -f "$out/runs.csv.tmp" "$out/plan.json.tmp"

# curves: mean over the seeds of each method at each evaluation round
echo "label,round,mb,val_loss,seeds" > "$out/curves.csv"
awk -F, '{ k = $1 SUBSEP $3; n[k]++; mb[k] += $4; vl[k] += $5; lab[$1] = 1; if (!(k in first)) { first[k] = NR; order[NR] = k } }
    END { for (i = 1; i <= NR; i++) if (i in order) { k = order[i]; split(k, p, SUBSEP)
          printf "%s,%d,%.4f,%.5f,%d\n", p[1], p[2], mb[k] / n[k], vl[k] / n[k], n[k] } }' \
    "$out/curves.csv.tmp" | sort -t, -k1,1 -s -k2,2n > "$out/curves.body"
# keep the methods in the file's order
grep -v '^[ 	]*#' "$methods" | grep -v '^[ 	]*$' | cut -d'|' -f1 | sed 's/^[ 	]*//; s/[ 	]*$//' > "$out/labels"
while IFS= read -r l; do grep -F "$l," "$out/curves.body" | awk -F, -v l="$l" '$1 == l' ; done \
    < "$out/labels" >> "$out/curves.csv"
rm -f "$out/curves.csv.tmp" "$out/curves.body"

# the table, and the paired differences with the first method
awk -F, -v labels="$out/labels" -v planf="$out/plan.tmp" -v baselines="${BASELINES:-}" '
    function mean(a, n,    i, s) { s = 0; for (i = 1; i <= n; i++) s += a[i]; return n ? s / n : 0 }
    function sd(a, n,    i, m, s) { if (n < 2) return 0; m = mean(a, n); s = 0; for (i = 1; i <= n; i++) s += (a[i] - m)^2; return sqrt(s / (n - 1)) }
    BEGIN {
        while ((getline l < labels) > 0) order[++nl] = l
        while ((getline p < planf) > 0) { split(p, f, "|"); rt[f[1]] = f[2]; hh[f[1]] = f[3] }
    }
    NR > 1 { loss[$1, $2] = $3; acc[$1, $2] = $4; xi[$1, $2] = $5; mb[$1, $2] = $6; seeds[$1] = seeds[$1] " " $2; has[$1, $2] = 1 }
    END {
        print "| method | seeds | val loss | accuracy | Xi final | MB sent / peer | round (plan) | 400 steps (plan) |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- |"
        for (o = 1; o <= nl; o++) {
            m = order[o]; n = split(seeds[m], s, " ")
            for (i = 1; i <= n; i++) { L[i] = loss[m, s[i]]; A[i] = acc[m, s[i]]; X[i] = xi[m, s[i]]; B[i] = mb[m, s[i]] }
            rtime = rt[m] != "" ? sprintf("%.4f s", rt[m]) : "-"
            run = rt[m] != "" && hh[m] > 0 ? sprintf("%.1f s", rt[m] * 400 / hh[m]) : "-"
            printf "| %s | %s | %.3f ± %.3f | %.4f ± %.4f | %.3g ± %.2g | %.0f | %s | %s |\n", m, substr(seeds[m], 2),
                   mean(L, n), sd(L, n), mean(A, n), sd(A, n), mean(X, n), sd(X, n), mean(B, n), rtime, run
        }
        nb = split(baselines, bl, ";")
        if (nb == 0 || baselines == "") { nb = 1; bl[1] = order[1] }
        for (q = 1; q <= nb; q++) {
            base = bl[q]
            print ""
            printf "Paired by seed with **%s** (method minus baseline, over the seeds both have): ", base
            print "mean ± sample sd of the difference, and in how many seeds the method is better (lower loss, higher accuracy)."
            print ""
            print "| method | seeds paired | Δ val loss | lower in | Δ accuracy | higher in |"
            print "| --- | --- | --- | --- | --- | --- |"
            for (o = 1; o <= nl; o++) {
                m = order[o]; if (m == base) continue
                n = split(seeds[m], s, " "); k = 0; lw = 0; hi = 0
                for (i = 1; i <= n; i++) if (has[base, s[i]]) {
                    k++; DL[k] = loss[m, s[i]] - loss[base, s[i]]; DA[k] = acc[m, s[i]] - acc[base, s[i]]
                    lw += DL[k] < 0; hi += DA[k] > 0 }
                printf "| %s | %d | %+.3f ± %.3f | %d of %d | %+.4f ± %.4f | %d of %d |\n", m, k, mean(DL, k), sd(DL, k), lw, k,
                       mean(DA, k), sd(DA, k), hi, k
            }
        }
    }' "$out/runs.csv" > "$out/outer.md"
rm -f "$out/plan.tmp"
cat "$out/outer.md"

command -v gnuplot >/dev/null 2>&1 || { echo "outer-figures: no gnuplot: $out/curves.csv only" >&2; rm -f "$out/labels"; exit 0; }
plot=""; i=0
while IFS= read -r l; do
    i=$((i + 1))
    awk -F, -v l="$l" 'NR > 1 && $1 == l { print $3, $4 }' "$out/curves.csv" > "$out/curve$i.dat"
    if awk '$1 > 0 { found = 1 } END { exit !found }' "$out/curve$i.dat"; then
        plot="$plot${plot:+, }'$out/curve$i.dat' using (\$1 > 0 ? \$1 : 1/0):2 with linespoints title '$l'"
    else # sends nothing: its final loss as a level line
        last=$(tail -1 "$out/curve$i.dat" | cut -d' ' -f2)
        plot="$plot${plot:+, }$last with lines dashtype 2 title '$l (0 MB)'"
    fi
done < "$out/labels"
gnuplot <<EOF
set terminal pngcairo size 1100,700
set output '$out/loss-mb.png'
set logscale x
set xlabel 'MB sent per peer (mean over peers and seeds)'
set ylabel 'validation loss (mean over peers and seeds)'
set title '${TITLE:-16 peers, genre partition, demo model: validation loss against bytes}'
set key outside right
set grid
plot $plot
EOF
rm -f "$out"/curve*.dat "$out/labels"
echo "outer-figures: $out/outer.md, $out/runs.csv, $out/curves.csv, $out/loss-mb.png"
