#!/bin/sh
# When does gossip beat all-reduce, in this lab? Trains the same model on
# the same non-IID data (--partition genre) with 8 peers in the
# network-namespace lab, once per algorithm (D-PSGD on ring, one-peer-exp
# and exp, and the ring all-reduce), with and without a long-tail compute
# jitter, for each seed; then measures for every run the time per round
# (median over the peers of each peer's mean round, after 3 warm-up
# rounds) and the time to a target validation loss (murmur report
# --compare --target-loss: the first evaluation at which the mean val_loss
# over the peers is at most the target; the target, per jitter setting, is
# the largest final val_loss of all its runs, so that every run reaches it).
#
#   sh scripts/runtime-finding.sh [OUT]      (root; default OUT build/runtime-finding)
#
# FIND_LAB=0 runs the same trainings over loopback instead (no root, no
# lab, no shaping): for the rounds to the target only. Those are a property
# of the algorithm and the data, not of the machine: with synchronous
# rounds every peer mixes exactly its neighbours' vectors of the round
# (all-reduce: the exact average) and the jitter only sleeps, so a run is
# the same bit for bit whatever the load (docs/node.md), and such a run
# may go without the heavy-work lock, under nice. Its times are not a
# finding; docs/runtime.md multiplies its rounds by the lab's time per
# round (scripts/validate-plan.sh).
#
#   FIND_PROFILE=2x4:intra=200mbit,inter=50mbit  FIND_ROUNDS=120  FIND_SEEDS="1 2"
#   FIND_ALGOS="ring onepeer-exp exp allreduce"  FIND_JITTERS="none longtail:0.1:0.3"
#   FIND_MODEL="--layers 2 --width 64 ..."  (the demo's model)
# Writes OUT.csv (one row a run) and OUT.txt (the table). Needs the Brown
# corpus (make data). Takes tens of minutes: take the heavy-work lock.
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MURMUR=${MURMUR:-$ROOT/murmur}
LAB="$ROOT/scripts/netns-lab.sh"
OUT=${1:-$ROOT/build/runtime-finding}
N=${FIND_N:-8}
PROFILE=${FIND_PROFILE:-2x4:intra=200mbit,inter=50mbit}
ROUNDS=${FIND_ROUNDS:-120}
EVAL=${FIND_EVAL:-10}
SEEDS=${FIND_SEEDS:-1 2}
ALGOS=${FIND_ALGOS:-ring onepeer-exp exp allreduce}
JITTERS=${FIND_JITTERS:-none longtail:0.1:0.3}
DATA=${FIND_DATA:-$ROOT/data/brown}
MODEL=${FIND_MODEL:---layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3 --min-lr 1e-4 --eval-windows 32}
TAG=${FIND_TAG:-i17bf}
LABRUN=${FIND_LAB:-1}
[ "$LABRUN" = 0 ] || [ "$(id -u)" = 0 ] || { echo "runtime-finding: needs root (network namespaces; FIND_LAB=0: loopback)" >&2; exit 2; }
[ -d "$DATA" ] || { echo "runtime-finding: no corpus at $DATA (make data)" >&2; exit 2; }
WORK="$OUT.d"; rm -rf "$WORK"; mkdir -p "$WORK"
trap 'exit 130' INT TERM
k=0; : > "$WORK/hosts"
if [ "$LABRUN" = 0 ]; then
    # loopback: N ports free now (as tests/e2e/lib.sh's free_ports)
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    base=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100 - N) ))
    while [ "$k" -lt "$N" ]; do echo "$k 127.0.0.1:$((base + k))" >> "$WORK/hosts"; k=$((k + 1)); done
    inlab() { shift 2; "$@"; }
    where="loopback (FIND_LAB=0: rounds to target only)"
else
    trap 'sh "$LAB" down "$TAG" 2>/dev/null || true' EXIT
    sh "$LAB" up "$TAG" "$N" --profile "$PROFILE"
    while [ "$k" -lt "$N" ]; do echo "$k $(sh "$LAB" addr "$TAG" "$k"):29500" >> "$WORK/hosts"; k=$((k + 1)); done
    inlab() { sh "$LAB" exec "$TAG" "$@"; }
    where=$PROFILE
fi
echo "runtime-finding: $N peers, $where, $ROUNDS rounds; algorithms: $ALGOS; jitter: $JITTERS; seeds: $SEEDS; model: $MODEL; load $(cut -d' ' -f1-3 /proc/loadavg)"

: > "$WORK/runs"
for jit in $JITTERS; do
    for seed in $SEEDS; do
        for algo in $ALGOS; do
            case $algo in
            allreduce) topo="$ROOT/topologies/ring-$N.topo"; aflag="--algo allreduce" ;;
            *) topo="$ROOT/topologies/$algo-$N.topo"; aflag="" ;;
            esac
            name="$algo-$(echo "$jit" | tr ':.' '__')-s$seed"; run="$WORK/$name"
            load0=$(cut -d' ' -f1 /proc/loadavg)
            k=0; pids=""
            while [ "$k" -lt "$N" ]; do
                inlab "$TAG" "$k" env MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$k" \
                    --hosts "$WORK/hosts" --topology "$topo" $aflag --plaintext --data "$DATA" \
                    --partition genre $MODEL --seed "$seed" --rounds "$ROUNDS" --eval-every "$EVAL" \
                    --compute-jitter "$jit" --jitter-seed "$seed" --checkpoint-every 0 --log-every 0 \
                    --start-timeout 60000 --round-timeout 60000 --peer-timeout 30000 --run-dir "$run" \
                    > "$WORK/$name.p$k.log" 2>&1 &
                pids="$pids $!"; k=$((k + 1))
            done
            for p in $pids; do wait "$p" || { tail -5 "$WORK/$name.p0.log" >&2; echo "runtime-finding: $name failed" >&2; exit 1; }; done
            load1=$(cut -d' ' -f1 /proc/loadavg)
            # time per round: median over peers of (last round's time - round 2's) / rounds between
            tpr=$(for f in "$run"/node-*/metrics.jsonl; do
                awk '/"ev":"round"/ { r = $0; sub(/.*"round":/, "", r); t = $0; sub(/.*"time":/, "", t)
                    if (r + 0 <= 2) { a = t + 0; ra = r + 0 } else { b = t + 0; rb = r + 0 } }
                    END { printf "%.6f\n", (b - a) / (rb - ra) }' "$f"
                done | sort -g | awk '{ v[NR] = $1 } END { printf "%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
            echo "$jit $seed $algo $name $tpr $load0 $load1" >> "$WORK/runs"
            printf '  %-18s seed %s  %-12s %.3f s/round  (load %s -> %s)\n' "$jit" "$seed" "$algo" "$tpr" "$load0" "$load1"
        done
    done
done

echo "jitter,seed,algo,time_per_round_s,final_val_loss,target_loss,round_to_target,time_to_target_s,wall_s,load_before,load_after" > "$OUT.csv"
for jit in $JITTERS; do
    # the target of this jitter setting: the largest final val_loss of its runs
    names=$(awk -v j="$jit" '$1 == j { print $4 }' "$WORK/runs")
    (cd "$WORK" && "$MURMUR" report --compare $names --no-plots --csv "all-$$.csv" > /dev/null)
    # (plus 1e-7 relative: the CSV holds 9 digits of each final loss)
    target=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "final_val_loss") v = i; next }
                      $v != "" && $v + 0 > t { t = $v + 0 } END { printf "%.9g", t * (1 + 1e-7) }' "$WORK/all-$$.csv")
    for seed in $SEEDS; do
        names=$(awk -v j="$jit" -v s="$seed" '$1 == j && $2 == s { print $4 }' "$WORK/runs")
        (cd "$WORK" && "$MURMUR" report --compare $names --no-plots --target-loss "$target" --csv "cmp.csv" > "cmp-$seed.txt")
        # (columns by their header's names: docs/metrics.md, "compare.csv")
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                 { gsub(/"/, "", $1); for (i = 1; i <= NF; i++) if ($i == "") $i = "-"
                   print $1, $c["final_val_loss"], $c["target_loss"], $c["round_to_target"],
                         $c["time_to_target_s"], $c["wall_s"] }' "$WORK/cmp.csv" |
        while read -r name vloss tl rt tt wall; do
            set -- $(awk -v n="$name" '$4 == n { print $3, $5, $6, $7 }' "$WORK/runs")
            echo "$jit,$seed,$1,$2,$vloss,$tl,$rt,$tt,$wall,$3,$4" >> "$OUT.csv"
        done
    done
done
{
    printf '| jitter | seed | algorithm | time per round (s) | final val_loss | rounds to target | time to target (s) | load |\n'
    printf '| --- | --- | --- | --- | --- | --- | --- | --- |\n'
    awk -F, 'NR > 1 { printf "| %s | %s | %s | %.3f | %.4f | %s | %s | %s-%s |\n", $1, $2, $3, $4, $5, $7, $8, $10, $11 }' "$OUT.csv"
    awk -F, 'NR > 1 { print $1, $6 }' "$OUT.csv" | sort -u | awk '{ printf "target val_loss for jitter %s: %s\n", $1, $2 }'
} > "$OUT.txt"
cat "$OUT.txt"
