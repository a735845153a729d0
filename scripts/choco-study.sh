#!/bin/sh
# The compressed-gossip study of docs/compression.md ("Accuracy against
# bytes"): a ring of 16 peers, non-IID data, the demo's small model, one run
# per codec setting and seed, then one comparison of them all.
#
#   scripts/choco-study.sh [-r ROUNDS] [-s "SEEDS"] [-o DIR] [-p BASE_PORT] [SETTING...]
#
# SETTING is a codec spec with an optional gamma, "CODEC" or "CODEC@GAMMA"
# (--compress CODEC --consensus-step GAMMA); "plain" is D-PSGD without
# --compress (bit-identical to fp32@1). Default: the settings of the
# study. Each run goes to DIR/SETTING-sSEED (skipped when it already ended:
# the study resumes); at the end `murmur report --compare` of every run
# writes DIR/compare.csv, DIR/compare.png and DIR/compare-bytes.png
# (accuracy against bytes sent, one line per run). Runs are deterministic
# (plaintext, a round timeout of 60 s that no neighbour reaches), so their
# results do not depend on the machine's load; run it under nice.
# Environment: MURMUR (default ./murmur), DATA (default data/brown),
# PARTITION (default dirichlet:0.1).
set -u
rounds=200 seeds="1 2" out=runs/choco-study port=26000
while [ $# -gt 0 ]; do
    case $1 in
    -r) rounds=$2; shift 2 ;;
    -s) seeds=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "choco-study: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
MURMUR=${MURMUR:-./murmur}
DATA=${DATA:-data/brown}
PARTITION=${PARTITION:-dirichlet:0.1}
[ $# -gt 0 ] || set -- plain bf16 int8 sign topk:0.1 topk:0.01 randk:0.1 \
    int8@0.5 sign@0.5 topk:0.1@0.05 topk:0.1@0.4
mkdir -p "$out"
runs=""
for setting in "$@"; do
    codec=${setting%@*}
    gamma=""
    [ "$setting" = "$codec" ] || gamma=${setting#*@}
    for s in $seeds; do
        name=$(printf '%s' "$setting" | tr ':@' '-_')-s$s
        dir=$out/$name
        runs="$runs $dir"
        if grep -qs '"ev":"end"' "$dir/node-15/metrics.jsonl"; then
            echo "choco-study: $name done already"
            continue
        fi
        rm -rf "$dir"
        extra=""
        [ "$codec" = plain ] || extra="--compress $codec"
        [ -z "$gamma" ] || extra="$extra --consensus-step $gamma"
        echo "choco-study: $name ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
        k=0
        pids=""
        while [ $k -lt 16 ]; do
            # shellcheck disable=SC2086
            MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology topologies/ring-16.topo \
                --base-port "$port" --plaintext --run-dir "$dir" --data "$DATA" \
                --partition "$PARTITION" --seed "$s" --layers 2 --width 64 --heads 4 --ctx 64 \
                --batch 16 --lr 3e-3 --min-lr 1e-4 --rounds "$rounds" --eval-every 25 \
                --snapshot-every 25 --checkpoint-every 0 --round-timeout 60000 \
                --start-timeout 60000 --log-every 0 $extra > /dev/null 2>&1 &
            pids="$pids $!"
            k=$((k + 1))
        done
        fail=0
        for p in $pids; do wait "$p" || fail=1; done
        [ $fail -eq 0 ] || echo "choco-study: $name: a peer failed (see $dir/node-*/node.log)" >&2
        port=$((port + 20))
    done
done
# shellcheck disable=SC2086
"$MURMUR" report --compare $runs --csv "$out/compare.csv" --plot "$out/compare.png"
