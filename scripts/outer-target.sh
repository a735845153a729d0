#!/bin/sh
# Which method reaches a baseline's final loss, and with how few bytes
# (docs/outer.md, "Fewer bytes per outer step"): for every method of a
# METHODS_FILE (scripts/outer-figures.sh's format) and every seed, the
# first evaluation at which the method's validation loss (mean over its
# peers) is at or below the baseline's final loss in the same seed, and
# the MB each peer had sent by then.
#
#   scripts/outer-target.sh OUT_DIR METHODS_FILE BASELINE_LABEL
#
# OUT_DIR is scripts/outer-figures.sh's output (its runs.csv gives each
# run's final loss and MB, the MB of all R rounds' sends); each run's
# report.csv (murmur report, which the sweep ran) gives the loss at every
# evaluation. MB by evaluation round r: the run's MB times r / R, every
# round of these runs sending the same bytes (CHOCO's RESETs of the first
# round aside: under 1 % here). Prints a markdown table: per method the
# seeds that reach the target, the evaluation round and MB in each, and
# their mean. POSIX sh and awk.
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
[ $# -eq 3 ] || { sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2; exit 2; }
out=$1; methods=$2; base=$3
[ -f "$out/runs.csv" ] || { echo "outer-target: $out/runs.csv missing (run scripts/outer-figures.sh first)" >&2; exit 2; }
trim() { printf '%s' "$1" | sed 's/^[ 	]*//; s/[ 	]*$//'; }

echo "| method | target reached in | round (seed 1, 2, 3) | MB sent / peer then (seed 1, 2, 3) | mean MB (seeds that reach it) |"
echo "| --- | --- | --- | --- | --- |"
grep -v '^[ 	]*#' "$methods" | grep -v '^[ 	]*$' | while IFS='|' read -r label dir setting plan; do
    label=$(trim "$label"); dir=$(trim "$dir"); setting=$(trim "$setting")
    [ "$label" = "$base" ] && continue
    rounds=""; mbs=""; reached=0; seeds=0; sum=0
    for s in 1 2 3; do
        run=$dir/$setting/s$s
        [ -f "$run/report.csv" ] || continue
        seeds=$((seeds + 1))
        target=$(awk -F, -v l="$base" -v s=$s '$1 == l && $2 == s { print $3 }' "$out/runs.csv")
        total=$(awk -F, -v l="$label" -v s=$s '$1 == l && $2 == s { print $6 }' "$out/runs.csv")
        R=$(tail -1 "$run/report.csv" | cut -d, -f1)
        hit=$(awk -F, -v t="$target" 'NR > 1 && $11 != "" && $11 + 0 <= t + 0 { print $1; exit }' "$run/report.csv")
        if [ -n "$hit" ] && [ -n "$total" ]; then
            mb=$(awk -v m="$total" -v r="$hit" -v R="$R" 'BEGIN { printf "%.1f", m * r / R }')
            rounds="$rounds $hit"; mbs="$mbs $mb"; reached=$((reached + 1))
            sum=$(awk -v a="$sum" -v b="$mb" 'BEGIN { printf "%.1f", a + b }')
        else
            rounds="$rounds -"; mbs="$mbs -"
        fi
    done
    [ $seeds -gt 0 ] || { echo "outer-target: $label: no runs in $dir/$setting" >&2; continue; }
    mean=-; [ $reached -gt 0 ] && mean=$(awk -v a="$sum" -v n=$reached 'BEGIN { printf "%.1f", a / n }')
    echo "| $label | $reached of $seeds |$rounds |$mbs | $mean |"
done
