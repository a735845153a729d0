#!/bin/sh
# Uneven peers, trained (docs/node.md, "Uneven peers"): the demo's 8-peer
# ring, model and data (2 layers, width 64, Brown by genre, lr 3e-3, batch
# 16), peer 3 the straggler, every mode against every scenario, paired by
# seed and interleaved run by run (seed, then scenario, then mode: A B C A
# B C ...), so that a change in the machine's load falls on every mode
# alike. Scenarios:
#   none      no straggler (the price of a mode when it is not needed)
#   slow      peer 3 twice as slow, every round (--lab-slow 3:2)
#   stretch   peer 3 three times as slow in rounds 50..99 (--lab-stretch 3:3:50:50)
#   jitter    peer 3 alone given --compute-jitter longtail:1:0.1 (0.1 s after
#             every step: issue 36's table, about 2x on an idle machine)
# Modes:
#   fixed     today: wait --round-timeout (5 s)
#   learn     --deadline learn
#   batch     --fit-work batch
#   steps     --fit-work steps
#   async     --algo async (issue 36's table)
# Each run: DIR/SCENARIO/MODE/sSEED (8 peers, --eval-every 10, snapshots
# every 50 rounds), and a line in DIR/runs.log with its start and end, wall
# time and the load average before and after (uptime). A run already
# complete (every peer's end line says done) is not run again, so the
# study can be stopped and started again. scripts/straggler-figures.py DIR
# makes the tables and the plot.
#
#   scripts/straggler-study.sh [-o DIR] [-p BASE_PORT] [-s "SEEDS"] [-S "SCENARIOS"]
#                              [-m "MODES"] [-r ROUNDS]
#
# Defaults: -o runs/straggler-study, -p 23400, seeds "1 2 3", scenarios
# "none slow stretch", modes "fixed learn batch steps", 160 rounds.
# Environment: MURMUR (default ./murmur), MURMUR_DATA (default data/brown).
set -u
cd "$(dirname "$0")/.." || exit 2
out=runs/straggler-study; port=23400; seeds="1 2 3"; scenarios="none slow stretch"
modes="fixed learn batch steps"; rounds=160
while [ $# -gt 0 ]; do
    case "$1" in
    -o) out=${2:?-o DIR}; shift ;;
    -p) port=${2:?-p BASE_PORT}; shift ;;
    -s) seeds=${2:?-s SEEDS}; shift ;;
    -S) scenarios=${2:?-S SCENARIOS}; shift ;;
    -m) modes=${2:?-m MODES}; shift ;;
    -r) rounds=${2:?-r ROUNDS}; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "straggler-study: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
murmur=${MURMUR:-./murmur}
data=${MURMUR_DATA:-data/brown}
[ -x "$murmur" ] || { echo "straggler-study: no $murmur (make murmur)" >&2; exit 2; }
[ -f "$data/index.tsv" ] || { echo "straggler-study: no corpus in $data (make data)" >&2; exit 2; }
mkdir -p "$out" || exit 2
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; exit 130' INT TERM

scenario_flags() {
    case $1 in
    none|jitter) echo "" ;;
    slow) echo "--lab-slow 3:2" ;;
    stretch) echo "--lab-stretch 3:3:50:50" ;;
    *) echo "straggler-study: unknown scenario $1" >&2; exit 2 ;;
    esac
}
mode_flags() {
    case $1 in
    fixed) echo "" ;;
    learn) echo "--deadline learn" ;;
    batch) echo "--fit-work batch" ;;
    steps) echo "--fit-work steps" ;;
    async) echo "--algo async" ;;
    *) echo "straggler-study: unknown mode $1" >&2; exit 2 ;;
    esac
}

done_already() {
    for k in 0 1 2 3 4 5 6 7; do
        grep -q '"ev":"end".*"reason":"done"' "$1/node-$k/metrics.jsonl" 2>/dev/null || return 1
    done
}

# run SCENARIO MODE SEED
run() {
    dir=$out/$1/$2/s$3
    if done_already "$dir"; then echo "$1 $2 s$3: done already"; return 0; fi
    sflags=$(scenario_flags "$1") && mflags=$(mode_flags "$2") || exit 2
    rm -rf "$dir"; mkdir -p "$dir"
    load0=$(uptime | sed 's/.*load average: //'); t0=$(date +%s)
    pids=""
    for k in 0 1 2 3 4 5 6 7; do
        extra=""
        [ "$1" = jitter ] && [ $k -eq 3 ] && extra="--compute-jitter longtail:1:0.1"
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=${MURMUR_NO_BLAS_FIX:-0} "$murmur" node --id $k --topology topologies/ring-8.topo \
            --base-port "$port" --plaintext --data "$data" --run-dir "$dir" --seed "$3" \
            --layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3 --rounds "$rounds" \
            --partition genre --eval-every 10 --snapshot-every 50 --checkpoint-every 0 \
            --log-every 0 $sflags $mflags $extra > "$dir/peer$k.out" 2>&1 &
        pids="$pids $!"
    done
    bad=0
    for p in $pids; do wait "$p" || bad=$((bad + 1)); done
    pids=""
    t1=$(date +%s); load1=$(uptime | sed 's/.*load average: //')
    line="$1 $2 s$3 start $t0 end $t1 wall $((t1 - t0)) s load_before $load0 load_after $load1 failed $bad"
    echo "$line" | tee -a "$out/runs.log"
}

for seed in $seeds; do
    for sc in $scenarios; do
        for m in $modes; do
            run "$sc" "$m" "$seed"
        done
    done
done
