#!/bin/sh
# Validates the runtime model (murmur plan, docs/runtime.md) in the
# network-namespace lab: runs a grid of pure-gossip configurations (no
# training: a round's compute is --compute-jitter's slept delay, so 8-16
# peers do not fight over this machine's cores), measures the time per
# round from the metrics, and sets it against `murmur plan --json`.
#
#   sh scripts/validate-plan.sh [OUT]          (root; iproute2; default OUT build/validate-plan)
#
# The grid (VALIDATE_GRID, one configuration a line: N PROFILE ALGO JITTER):
# ring, exp, one-peer-exp (D-PSGD) and allreduce (the ring all-reduce,
# predicted with --overlap, as murmur node runs it), on two link profiles,
# with and without a long-tail jitter, on 8 peers, and the four without
# jitter on 16. Every configuration: VALIDATE_ROUNDS rounds (20) of a
# VALIDATE_LEN-float vector (250000: 1 MB), plaintext; the first
# VALIDATE_WARMUP (3) rounds are left out.
#
# The TCP share (murmur plan --tcp-share, docs/runtime.md) is calibrated
# first, outside the grid: a 4-peer ring on 2x2:intra=100mbit with 4 MB
# vectors (VALIDATE_CAL), where every link carries two flows each way; the
# share is the model's round with share 1 over the measured round
# (VALIDATE_TCP_SHARE=F gives it instead). Every configuration is also
# predicted by the model as it was (payload and TCP shares 1: the ideal
# fluid links), column pred_ideal_s, and as if the peers stayed in step
# (D-PSGD: the max-plus recurrence alone, murmur plan's round_in_step_s;
# the model before it followed the peers out of step), column
# pred_in_step_s.
#
# Measured time per round: the median over the peers of each peer's mean
# round (time of its last round line minus that of its last warm-up one,
# over the rounds between); the plan predicts a mean (docs/runtime.md), and
# with a long-tail jitter the median of single rounds is not one. The same
# for the round's parts: t_compute, t_comm (snapshot copy, mixing) and
# t_wait (everything waited for: sends, neighbours, the all-reduce), from
# the round lines' counters. Also per run: TCP segments retransmitted in
# the lab (RetransSegs of every host's /proc/net/snmp) and the load average
# before and after.
#
# VALIDATE_SSAI=0 turns TCP's slow start after idle off in the lab's hosts
# (sysctl net.ipv4.tcp_slow_start_after_idle; Linux's default is 1).
# VALIDATE_PREDICT_ONLY=1 skips the lab and predicts again from the
# measurements kept in OUT.meas (after a change to the model).
# Writes OUT.csv (one row a configuration; the profile's comma written ;), OUT.txt (the table) and, with
# gnuplot, OUT.png (predicted against measured, with the +-25 % band).
# Runs for about 10 minutes: take the heavy-work lock (CONVENTIONS.md).
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MURMUR=${MURMUR:-$ROOT/murmur}
LAB="$ROOT/scripts/netns-lab.sh"
OUT=${1:-$ROOT/build/validate-plan}
ROUNDS=${VALIDATE_ROUNDS:-20}
WARM=${VALIDATE_WARMUP:-3}
LEN=${VALIDATE_LEN:-250000}
TAG=${VALIDATE_TAG:-i17bv}
PA=${VALIDATE_PROFILE_A:-2x4:intra=200mbit,inter=50mbit}
PB=${VALIDATE_PROFILE_B:-4x2:intra=100mbit,inter=400mbit}
PC=${VALIDATE_PROFILE_C:-4x4:intra=200mbit,inter=100mbit}
JIT=${VALIDATE_JITTER:-longtail:0.2:0.5}
CAL=${VALIDATE_CAL:-4 2x2:intra=100mbit ring none 1000000}
GRID=${VALIDATE_GRID:-"8 $PA ring none
8 $PA exp none
8 $PA onepeer-exp none
8 $PA allreduce none
8 $PA ring $JIT
8 $PA exp $JIT
8 $PA onepeer-exp $JIT
8 $PA allreduce $JIT
8 $PB ring none
8 $PB exp none
8 $PB onepeer-exp none
8 $PB allreduce none
8 $PB ring $JIT
8 $PB exp $JIT
8 $PB onepeer-exp $JIT
8 $PB allreduce $JIT
16 $PC ring none
16 $PC exp none
16 $PC onepeer-exp none
16 $PC allreduce none"}
ONLY=${VALIDATE_PREDICT_ONLY:-}
[ -n "$ONLY" ] || [ "$(id -u)" = 0 ] || { echo "validate-plan: needs root (network namespaces)" >&2; exit 2; }
[ -x "$MURMUR" ] || { echo "validate-plan: $MURMUR not built (make)" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
WORK="$OUT.d"; [ -n "$ONLY" ] || { rm -rf "$WORK"; mkdir -p "$WORK"; }
cleanup() { sh "$LAB" down "$TAG" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$ONLY" ]; then
mix=$("$MURMUR" plan --calibrate --vector-len "$LEN" --json 2>/dev/null |
      sed -n 's/.*"mix_fps":\([0-9.e+]*\).*/\1/p')
[ -n "$mix" ] || { echo "validate-plan: murmur plan --calibrate gave no mix_fps" >&2; exit 1; }
echo "$mix" > "$WORK/mix_fps"
echo "validate-plan: $(echo "$GRID" | wc -l) configurations, $ROUNDS rounds of $LEN floats; mixing $mix floats/s; load $(cut -d' ' -f1-3 /proc/loadavg)"

retrans() { # total TCP segments retransmitted by the lab's hosts
    k=0; tot=0
    while [ "$k" -lt "$1" ]; do
        r=$(ip netns exec "$TAG-$k" awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i; h = 1 } else print $c }' /proc/net/snmp)
        tot=$((tot + r)); k=$((k + 1))
    done
    echo "$tot"
}

cur=""; i=0; : > "$OUT.meas"
printf '%s\n%s\n' "$CAL" "$GRID" | while read -r n prof algo jit len; do
    [ -n "$n" ] || continue
    len=${len:-$LEN}
    i=$((i + 1))
    if [ "$cur" != "$n $prof" ]; then
        [ -z "$cur" ] || sh "$LAB" down "$TAG"
        sh "$LAB" up "$TAG" "$n" --profile "$prof"
        cur="$n $prof"
        k=0; : > "$WORK/hosts"
        while [ "$k" -lt "$n" ]; do
            echo "$k $(sh "$LAB" addr "$TAG" "$k"):29500" >> "$WORK/hosts"
            # VALIDATE_SSAI=0: no TCP slow start after an idle connection
            [ -z "${VALIDATE_SSAI:-}" ] || ip netns exec "$TAG-$k" sysctl -qw net.ipv4.tcp_slow_start_after_idle="$VALIDATE_SSAI"
            k=$((k + 1))
        done
    fi
    case $algo in
    allreduce) topo="$ROOT/topologies/ring-$n.topo"; aflag="--algo allreduce"
               pflags="--peers $n --algo allreduce --overlap" ;;
    *) topo="$ROOT/topologies/$algo-$n.topo"; aflag=""; pflags="--topology $topo" ;;
    esac
    [ -f "$topo" ] || { echo "validate-plan: no $topo" >&2; exit 1; }
    run="$WORK/run$i"; mkdir -p "$run"
    load0=$(cut -d' ' -f1 /proc/loadavg); rt0=$(retrans "$n")
    k=0; pids=""
    while [ "$k" -lt "$n" ]; do
        sh "$LAB" exec "$TAG" "$k" env MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$k" --hosts "$WORK/hosts" \
            --topology "$topo" $aflag --plaintext --no-train --vector-len "$len" --rounds "$ROUNDS" \
            --compute-jitter "$jit" --jitter-seed "$i" --eval-every 0 --checkpoint-every 0 --log-every 0 \
            --start-timeout 60000 --round-timeout 60000 --peer-timeout 30000 --run-dir "$run" \
            > "$run/p$k.log" 2>&1 &
        pids="$pids $!"; k=$((k + 1))
    done
    for p in $pids; do wait "$p" || { tail -5 "$run/p0.log" >&2; echo "validate-plan: config $i failed" >&2; exit 1; }; done
    load1=$(cut -d' ' -f1 /proc/loadavg); rt1=$(retrans "$n")
    # per peer: mean round and mean parts over the measured rounds
    k=0
    while [ "$k" -lt "$n" ]; do
        awk -v w="$WARM" '/"ev":"round"/ {
            r = $0; sub(/.*"round":/, "", r); r += 0
            for (f = 1; f <= 4; f++) { name = f == 1 ? "time" : f == 2 ? "t_compute" : f == 3 ? "t_comm" : "t_wait"
                s = $0; sub(".*\"" name "\":", "", s); v[f] = s + 0 }
            if (r <= w - 1) { for (f = 1; f <= 4; f++) a[f] = v[f]; ra = r }
            else { for (f = 1; f <= 4; f++) b[f] = v[f]; c = r - ra } }
            END { if (c) printf "%.6f %.6f %.6f %.6f\n", (b[1] - a[1]) / c, (b[2] - a[2]) / c, (b[3] - a[3]) / c, (b[4] - a[4]) / c }' \
            "$run/node-$k/metrics.jsonl"
        k=$((k + 1))
    done > "$run/per-peer"
    meas=$(awk '{ for (f = 1; f <= 4; f++) v[f, NR] = $f }
        function med(f,   i, j, t, x) { for (i = 1; i <= NR; i++) x[i] = v[f, i]
            for (i = 2; i <= NR; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
            lo = x[1]; hi = x[NR]; return NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2 }
        END { m1 = med(1); l = lo; h = hi; printf "%.4f %.4f %.4f %.4f %.4f %.4f\n", m1, med(2), med(3), med(4), l, h }' "$run/per-peer")
    echo "$i $n $prof $algo $jit $len $meas $((rt1 - rt0)) $load0 $load1" >> "$OUT.meas"
    set -- $meas
    printf '  %2d  n=%-2s %-32s %-11s %-16s measured %7.3f s  (retransmitted %d segments, load %s -> %s)\n' \
        "$i" "$n" "$prof" "$algo" "$jit" "$1" $((rt1 - rt0)) "$load0" "$load1"
done
sh "$LAB" down "$TAG"
fi

# ---- predictions ----
mix=$(cat "$WORK/mix_fps")
# plan I N PROF ALGO JIT LEN FLAGS...: the prediction's JSON in $WORK/planI.json
plan() {
    pi=$1 pn=$2 pprof=$3 palgo=$4 pjit=$5 plen=$6; shift 6
    case $palgo in
    allreduce) pflags="--peers $pn --algo allreduce --overlap" ;;
    *) pflags="--topology $ROOT/topologies/$palgo-$pn.topo" ;;
    esac
    "$MURMUR" plan $pflags --vector-len "$plen" --step-time 0 --jitter "$pjit" --links "$pprof" \
        --mix-rate "$mix" --json "$@" > "$WORK/plan$pi.json"
}
pj() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" "$WORK/plan$1.json"; }
# the calibration: the first line measured
set -- $(head -1 "$OUT.meas")
plan cal "$2" "$3" "$4" "$5" "$6"
share=${VALIDATE_TCP_SHARE:-$(awk -v p="$(pj cal round_s)" -v m="$7" 'BEGIN { printf "%.3f", p / m }')}
echo "tcp share: $share (calibration: $4 on $3, $2 peers, $6 floats: predicted $(pj cal round_s) s with share 1, measured $7 s)" > "$OUT.share"
cat "$OUT.share"
echo "config,n,profile,algo,jitter,pred_s,meas_s,err_pct,pred_ideal_s,err_ideal_pct,pred_compute,pred_comm_exposed,pred_wait,pred_mix,meas_compute,meas_comm,meas_wait,meas_min_s,meas_max_s,retrans,load_before,load_after,pred_in_step_s,err_in_step_pct" > "$OUT.csv"
tail -n +2 "$OUT.meas" | while read -r i n prof algo jit len m_round m_comp m_comm m_wait m_lo m_hi rt load0 load1; do
    plan "$i" "$n" "$prof" "$algo" "$jit" "$len" --tcp-share "$share"
    plan "$i.ideal" "$n" "$prof" "$algo" "$jit" "$len" --payload-share 1
    pred=$(pj "$i" round_s); ideal=$(pj "$i.ideal" round_s)
    err=$(awk -v p="$pred" -v m="$m_round" 'BEGIN { printf "%.1f", 100 * (p - m) / m }')
    erri=$(awk -v p="$ideal" -v m="$m_round" 'BEGIN { printf "%.1f", 100 * (p - m) / m }')
    step=$(pj "$i" round_in_step_s)
    errs=$(awk -v p="$step" -v m="$m_round" 'BEGIN { printf "%.1f", 100 * (p - m) / m }')
    echo "$((i - 1)),$n,$(echo "$prof" | tr , ';'),$algo,$jit,$pred,$m_round,$err,$ideal,$erri,$(pj "$i" compute_s),$(pj "$i" comm_exposed_s),$(pj "$i" wait_s),$(pj "$i" mix_s),$m_comp,$m_comm,$m_wait,$m_lo,$m_hi,$rt,$load0,$load1,$step,$errs" >> "$OUT.csv"
done
{
    printf '| # | peers | profile | algorithm | jitter | predicted (s) | measured (s) | error | in step (s) | error | ideal links (s) | error | measured compute / comm / wait (s) | retransmits | load |\n'
    printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
    awk -F, 'NR > 1 { printf "| %s | %s | `%s` | %s | %s | %.3f | %.3f | %+.1f %% | %.3f | %+.1f %% | %.3f | %+.1f %% | %.3f / %.3f / %.3f | %s | %s-%s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $23, $24, $9, $10, $15, $16, $17, $20, $21, $22 }' "$OUT.csv"
    awk -F, 'NR > 1 { e = $8 < 0 ? -$8 : $8; if (e > w) { w = e; wc = $1 } if (e <= 25) ok++
                      f = $10 < 0 ? -$10 : $10; if (f <= 25) oki++
                      g = $24 < 0 ? -$24 : $24; if (g <= 25) oks++; n++ }
        END { printf "\n%d of %d predictions within 25 %% (in step: %d; ideal links: %d); worst: config %s (%.1f %%)\n", ok, n, oks, oki, wc, w }' "$OUT.csv"
    cat "$OUT.share"
} > "$OUT.txt"
cat "$OUT.txt"
if command -v gnuplot > /dev/null 2>&1; then
    gnuplot -e "set terminal png noenhanced size 800,600; set output '$OUT.png'; set datafile separator ',';
        set logscale xy; set xlabel 'measured time per round (s)'; set ylabel 'predicted by murmur plan (s)';
        set key top left; set title 'runtime model against the netns lab';
        set xrange [0.05:10]; set yrange [0.05:10];
        plot x title 'predicted = measured' lt -1, 1.25*x title '+-25 %' dt 2 lt -1, 0.75*x notitle dt 2 lt -1,
        '$OUT.csv' using 7:9 with points pt 6 ps 1 lc rgb 'gray' title 'ideal links (shares 1)',
        '$OUT.csv' using (strcol(4) eq 'allreduce' ? \$7 : 1/0):6 with points pt 7 ps 1.5 title 'allreduce',
        '$OUT.csv' using (strcol(4) eq 'ring' ? \$7 : 1/0):6 with points pt 5 ps 1.5 title 'ring',
        '$OUT.csv' using (strcol(4) eq 'exp' ? \$7 : 1/0):6 with points pt 9 ps 1.5 title 'exp',
        '$OUT.csv' using (strcol(4) eq 'onepeer-exp' ? \$7 : 1/0):6 with points pt 13 ps 1.5 title 'one-peer-exp'" &&
        echo "plot: $OUT.png"
fi
