#!/bin/sh
# Where gossip beats all-reduce, by the runtime model (murmur plan,
# docs/runtime.md): for every pair (uplink rate between the two hosts,
# probability of a slow step), the predicted time per round of the ring
# all-reduce (--overlap, as murmur node runs it) and of D-PSGD on ring,
# one-peer-exp and exp, and their ratio all-reduce / best gossip (above 1:
# gossip is faster per round). Pure model: no network, no lab, seconds.
#
#   sh scripts/regime-map.sh [OUT]             (default OUT build/regime-map)
#
#   REGIME_N=8  REGIME_HOSTS=2  REGIME_INTRA=1gbit  REGIME_LEN=250000 (1 MB)
#   REGIME_STEP=0.1 (s, mean step)  REGIME_SLOW=0.3 (s, the long-tail delay)
#   REGIME_INTER="25mbit 50mbit 100mbit 200mbit 400mbit 800mbit 1600mbit"
#   REGIME_P="0 0.02 0.05 0.1 0.2 0.3"  (probability of a slow step)
#   REGIME_TCP_SHARE=1  (murmur plan --tcp-share; scripts/validate-plan.sh
#   measures this lab's)
#   REGIME_ROUNDS_RATIO=R: rounds gossip needs to a target loss over the
#   rounds all-reduce needs (scripts/runtime-finding.sh measures it); adds
#   the ratio of times to that target, all-reduce / (R x best gossip round).
# Writes OUT.csv (one row a cell), OUT.txt (the map as a table) and, with
# gnuplot, OUT.png (the ratio as colours, 1 marked).
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MURMUR=${MURMUR:-$ROOT/murmur}
OUT=${1:-$ROOT/build/regime-map}
N=${REGIME_N:-8}
HOSTS=${REGIME_HOSTS:-2}
INTRA=${REGIME_INTRA:-1gbit}
LEN=${REGIME_LEN:-250000}
STEP=${REGIME_STEP:-0.1}
SLOW=${REGIME_SLOW:-0.3}
INTER=${REGIME_INTER:-25mbit 50mbit 100mbit 200mbit 400mbit 800mbit 1600mbit}
PS=${REGIME_P:-0 0.02 0.05 0.1 0.2 0.3}
SHARE=${REGIME_TCP_SHARE:-1}
RR=${REGIME_ROUNDS_RATIO:-}
[ -x "$MURMUR" ] || { echo "regime-map: $MURMUR not built (make)" >&2; exit 2; }
[ $((N % HOSTS)) -eq 0 ] || { echo "regime-map: $N peers do not split into $HOSTS hosts" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
per=$((N / HOSTS))
round_s() { "$MURMUR" plan "$@" --vector-len "$LEN" --step-time "$STEP" --tcp-share "$SHARE" --json |
            sed -n 's/.*"round_s":\([0-9.e+-]*\).*/\1/p'; }
echo "inter,p_slow,allreduce_s,ring_s,onepeer_exp_s,exp_s,best_gossip,ratio_round${RR:+,ratio_target}" > "$OUT.csv"
for inter in $INTER; do
    for p in $PS; do
        jit=none; [ "$p" = 0 ] || jit="longtail:$p:$SLOW"
        links="${HOSTS}x$per:intra=$INTRA,inter=$inter"
        ar=$(round_s --peers "$N" --algo allreduce --overlap --links "$links" --jitter "$jit")
        best=""; bt=""; row=""
        for topo in ring onepeer-exp exp; do
            t=$(round_s --topology "$ROOT/topologies/$topo-$N.topo" --links "$links" --jitter "$jit")
            row="$row,$t"
            if [ -z "$bt" ] || awk -v a="$t" -v b="$bt" 'BEGIN { exit !(a < b) }'; then bt=$t; best=$topo; fi
        done
        ratio=$(awk -v a="$ar" -v g="$bt" 'BEGIN { printf "%.3f", a / g }')
        extra=""; [ -z "$RR" ] || extra=,$(awk -v a="$ar" -v g="$bt" -v r="$RR" 'BEGIN { printf "%.3f", a / (r * g) }')
        echo "$inter,$p,$ar$row,$best,$ratio$extra" >> "$OUT.csv"
    done
done
{
    echo "all-reduce time per round / best gossip's (> 1: gossip faster), $N peers in $HOSTS hosts, intra $INTRA,"
    echo "vector $LEN floats, step $STEP s + $SLOW s with probability p, tcp share $SHARE${RR:+; in brackets: time to target with gossip needing $RR x the rounds}"
    printf '%-10s' "inter \\ p"; for p in $PS; do printf ' %14s' "$p"; done; echo
    for inter in $INTER; do
        printf '%-10s' "$inter"
        for p in $PS; do
            awk -F, -v i="$inter" -v p="$p" '$1 == i && $2 == p { b = $7 == "onepeer-exp" ? "1pe" : $7
                printf " %14s", sprintf("%.2f %s%s", $8, b, NF > 8 ? " [" sprintf("%.2f", $9) "]" : "") }' "$OUT.csv"
        done
        echo
    done
} > "$OUT.txt"
cat "$OUT.txt"
if command -v gnuplot > /dev/null 2>&1; then
    # cells in index order: x = column of the uplink rate, y = row of p
    awk -F, -v L="$INTER" -v P="$PS" 'BEGIN { ni = split(L, li, " "); np = split(P, lp, " ")
            for (k = 1; k <= ni; k++) xi[li[k]] = k - 1; for (k = 1; k <= np; k++) yi[lp[k]] = k - 1 }
        NR > 1 { printf "%d %d %s %s\n", xi[$1], yi[$2], $8, (NF > 8 ? $9 : $8) }' "$OUT.csv" > "$OUT.dat"
    xt=$(echo "$INTER" | awk '{ for (k = 1; k <= NF; k++) printf "%s\"%s\" %d", (k > 1 ? ", " : ""), $k, k - 1 }')
    yt=$(echo "$PS" | awk '{ for (k = 1; k <= NF; k++) printf "%s\"%s\" %d", (k > 1 ? ", " : ""), $k, k - 1 }')
    gnuplot -e "set terminal png noenhanced size 900,600; set output '$OUT.png';
        set title 'all-reduce / best gossip, time per round ($N peers, $HOSTS hosts, intra $INTRA, $LEN floats, step $STEP s)';
        set xlabel 'uplink between hosts'; set ylabel 'probability of a $SLOW s slow step';
        set xtics ($xt); set ytics ($yt); set cblabel 'ratio (> 1: gossip faster)';
        set palette defined (0.5 'blue', 1 'white', 2 'red'); set cbrange [0.5:2];
        plot '$OUT.dat' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f', \$3)) with labels notitle" &&
        echo "plot: $OUT.png"
fi
