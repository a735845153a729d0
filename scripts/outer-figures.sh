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
#   OUT/runs.csv     every run: label, seed, val_loss, acc, xi, mb (all
#                    R rounds' sends, below), mb_counter (the report's)
#   OUT/curves.csv   per method and evaluation: MB sent per peer by then
#                    and val loss, each the mean over peers then seeds
#   OUT/loss-mb.png  val loss against MB sent per peer, one line per method
#                    (log x; a method that sends nothing is a level line)
#
# Bytes: the round line prints the counters as the loop thread last
# published them (node/round_lines.c, not fresh), which in every run here
# hold the sends of rounds 0..r-1 at round r's line (line 1: one round's
# vectors), so the report's bytes_sent_per_peer misses the last round. The bytes
# after R rounds are taken from round line R, and for the last evaluation
# (no line R) extrapolated by the last round's bytes: line R-1 + (line R-1
# - line R-2), exact when every round sends the same (all the settings
# here). The paired tables give the mean difference, its sample sd, the
# 95 % t interval of the mean (mean +- t(0.975, k-1) sd / sqrt k) and in
# how many of the k seeds the sign holds.
#
# BASELINES: labels separated by ';' to pair with, one table each (default
# the first method). PLAN_COMMON: flags given to every `murmur plan` (the link profile, the
# model and its step time). TITLE: the plot's title. YRANGE: its loss axis in
# gnuplot's form, e.g. "[2.4:3.6]" (default the data's, which one diverging
# method can flatten; a curve beyond it leaves the plot). MURMUR: the binary
# (default ./murmur). POSIX sh, awk, gnuplot (without gnuplot no PNG).
set -eu
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
case ${1:-} in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
out=$1; methods=$2
MURMUR=${MURMUR:-./murmur}
PLAN_COMMON=${PLAN_COMMON:-}
mkdir -p "$out"
: > "$out/runs.csv.tmp"; : > "$out/curves.csv.tmp"; : > "$out/plan.tmp"; : > "$out/final.tmp"

trim() { printf '%s' "$1" | sed 's/^[ 	]*//; s/[ 	]*$//'; }
grep -v '^[ 	]*#' "$methods" | grep -v '^[ 	]*$' | while IFS='|' read -r label dir setting plan; do
    label=$(trim "$label"); dir=$(trim "$dir"); setting=$(trim "$setting"); plan=$(trim "$plan")
    case $label in *,*|*\'*) echo "outer-figures: a label may hold no comma or quote: '$label'" >&2; exit 2 ;; esac
    [ -f "$dir/sweep-runs.csv" ] || { echo "outer-figures: $dir/sweep-runs.csv missing (the sweep has not aggregated): $label left out" >&2; continue; }
    # the runs of this setting: seed, val_loss, acc, consensus_final, bytes (sweep-runs.csv,
    # whose strings are quoted and may hold commas: ring-16,outer-momentum=0.5)
    awk -F, -v s="$setting" -v l="$label" '
        function quoted_commas(line,    out, i, c, q) { # commas inside quotes -> \034
            out = ""; q = 0
            for (i = 1; i <= length(line); i++) {
                c = substr(line, i, 1)
                if (c == "\"") q = !q; else if (c == "," && q) c = "\034"
                out = out c }
            return out }
        BEGIN { gsub(",", "\034", s); s = "\"" s "\"" }
        { $0 = quoted_commas($0) }
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["setting"] == s && $col["status"] == "done" {
            printf "%s,%s,%s,%s,%s,%.3f\n", l, $col["seed"], $col["val_loss"], $col["acc"],
                   $col["consensus_final"], $col["bytes_sent_per_peer"] / 1e6 }' \
        "$dir/sweep-runs.csv" >> "$out/runs.csv.tmp"
    # the loss-against-bytes curve: per run, per evaluation round R, the mean
    # over peers of val_loss and of the bytes sent in rounds 0..R-1 (header);
    # the last evaluation's bytes also go to final.tmp (label, seed, MB)
    for run in "$dir/$setting"/s[0-9]*; do
        [ -d "$run" ] && [ -f "$run/sweep.done" ] || continue
        cat "$run"/node-*/metrics.jsonl | awk -v l="$label" -v run="$run" -v final="$out/final.tmp" '
            function num(k,    s) { s = $0; if (!sub(".*\"" k "\":", "", s)) return ""; sub("[,}].*", "", s); return s }
            function sent(p, R) { # bytes peer p sent in rounds 0..R-1
                if (R == 0) return 0
                if ((p, R) in b) return b[p, R]
                if (R >= 2 && ((p, R - 1) in b) && ((p, R - 2) in b)) return 2 * b[p, R - 1] - b[p, R - 2]
                if (R == 1 && ((p, 0) in b)) return b[p, 0]
                bad = 1; return 0 }
            /"ev":"round"/ { b[num("peer"), num("round")] = num("bytes_sent") }
            /"ev":"eval"/ { r = num("round"); v = num("val_loss"); if (v != "" && v != "null") { ev[num("peer"), r] = v; rs[r] = 1 } }
            END {
                last = -1; runkey = run; gsub(",", ";", runkey) # a field of curves.csv.tmp
                for (r in rs) {
                    n = 0; sl = 0; sb = 0
                    for (key in ev) { split(key, k, SUBSEP); if (k[2] == r) { n++; sl += ev[key]; sb += sent(k[1], r + 0) } }
                    if (n) printf "%s,%s,%d,%.6f,%.6f\n", l, runkey, r, sb / n / 1e6, sl / n
                    if (n && r + 0 > last) { last = r + 0; lastmb = sb / n / 1e6 }
                }
                if (bad) { print "outer-figures: " run ": no round lines to count its bytes" > "/dev/stderr"; exit 1 }
                seed = run; sub(".*/s", "", seed)
                if (last >= 0) printf "%s,%s,%.3f\n", l, seed, lastmb >> final }' >> "$out/curves.csv.tmp"
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
# runs.csv: the report's figures, mb = all R rounds' sends (final.tmp),
# mb_counter = the report's bytes_sent_per_peer
echo "label,seed,val_loss,acc,xi,mb,mb_counter" > "$out/runs.csv"
awk -F, 'NR == FNR { mb[$1, $2] = $3; next }
    { if (!(($1, $2) in mb)) { print "outer-figures: no evaluation curve for " $1 " seed " $2 > "/dev/stderr"; exit 1 }
      print $1 "," $2 "," $3 "," $4 "," $5 "," mb[$1, $2] "," $6 }' \
    "$out/final.tmp" "$out/runs.csv.tmp" >> "$out/runs.csv"
rm -f "$out/runs.csv.tmp" "$out/plan.json.tmp" "$out/final.tmp"

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
    function tq(df) { # t(0.975, df) for df 1..10; beyond, the value at df = 10 (conservative)
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", t, " ")
        return t[df < 10 ? df : 10] }
    function interval(a, n, f,    h) { if (n < 2) return "-"; h = tq(n - 1) * sd(a, n) / sqrt(n)
        return sprintf("[" f ", " f "]", mean(a, n) - h, mean(a, n) + h) }
    BEGIN {
        while ((getline l < labels) > 0) order[++nl] = l
        while ((getline p < planf) > 0) { split(p, f, "|"); rt[f[1]] = f[2]; hh[f[1]] = f[3] }
    }
    NR > 1 { loss[$1, $2] = $3; acc[$1, $2] = $4; xi[$1, $2] = $5; mb[$1, $2] = $6; seeds[$1] = seeds[$1] " " $2; has[$1, $2] = 1 }
    END {
        print "| method | seeds | val loss | accuracy | Xi final | MB sent / peer | round (plan) | per 400 steps (plan) |"
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
            print "mean ± sample sd of the difference, its 95 % t interval, and in how many seeds the method is better (lower loss, higher accuracy)."
            print ""
            print "| method | seeds paired | Δ val loss | 95 % interval | lower in | Δ accuracy | 95 % interval | higher in |"
            print "| --- | --- | --- | --- | --- | --- | --- | --- |"
            for (o = 1; o <= nl; o++) {
                m = order[o]; if (m == base) continue
                n = split(seeds[m], s, " "); k = 0; lw = 0; hi = 0
                for (i = 1; i <= n; i++) if (has[base, s[i]]) {
                    k++; DL[k] = loss[m, s[i]] - loss[base, s[i]]; DA[k] = acc[m, s[i]] - acc[base, s[i]]
                    lw += DL[k] < 0; hi += DA[k] > 0 }
                if (k == 0) { printf "| %s | 0 | - | - | - | - | - | - |\n", m; continue }
                printf "| %s | %d | %+.3f ± %.3f | %s | %d of %d | %+.4f ± %.4f | %s | %d of %d |\n", m, k,
                       mean(DL, k), sd(DL, k), interval(DL, k, "%+.3f"), lw, k,
                       mean(DA, k), sd(DA, k), interval(DA, k, "%+.4f"), hi, k
            }
        }
    }' "$out/runs.csv" > "$out/outer.md"
rm -f "$out/plan.tmp"
cat "$out/outer.md"

command -v gnuplot >/dev/null 2>&1 || { echo "outer-figures: no gnuplot: $out/curves.csv only" >&2; rm -f "$out/labels"; exit 0; }
# one colour per method (12, then they repeat with another dash), the
# first method's final loss as a grey level line: the target to reach
plot=""; i=0; target=""
while IFS= read -r l; do
    i=$((i + 1))
    awk -F, -v l="$l" 'NR > 1 && $1 == l { print $3, $4 }' "$out/curves.csv" > "$out/curve$i.dat"
    last=$(tail -1 "$out/curve$i.dat" | cut -d' ' -f2)
    [ -n "$target" ] || target="$last with lines lc rgb '#999999' dashtype 3 title 'final loss of $l'"
    lt=$(( (i - 1) % 12 + 1 )); dt=$(( (i - 1) / 12 + 1 ))
    if awk '$1 > 0 { found = 1 } END { exit !found }' "$out/curve$i.dat"; then
        plot="$plot${plot:+, }'$out/curve$i.dat' using (\$1 > 0 ? \$1 : 1/0):2 with linespoints lt $lt dashtype $dt pt $i title '$l'"
    else # sends nothing: its final loss as a level line
        plot="$plot${plot:+, }$last with lines lt $lt dashtype 2 title '$l (0 MB)'"
    fi
done < "$out/labels"
gnuplot <<EOF
set terminal pngcairo size 1300,750
set output '$out/loss-mb.png'
colours = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf #000000 #aa8800"
do for [k = 1:12] { set linetype k lc rgb word(colours, k) lw 1.5 }
set logscale x
set yrange ${YRANGE:-[*:*]}
set xlabel 'MB sent per peer (mean over peers and seeds)'
set ylabel 'validation loss (mean over peers and seeds)'
set title '${TITLE:-16 peers, genre partition, demo model: validation loss against bytes}'
set key outside right
set grid
plot $plot, $target
EOF
rm -f "$out"/curve*.dat "$out/labels"
echo "outer-figures: $out/outer.md, $out/runs.csv, $out/curves.csv, $out/loss-mb.png"
