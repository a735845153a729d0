#!/bin/sh
# The elastic-membership measurements of docs/membership.md ("Measured"),
# on the demo model (2 layers, width 64, --partition genre, lr 3e-3, batch
# 16), plaintext, one machine:
#
#   scripts/elastic-study.sh kill  OUT [SEED]   ring-8, peers 2 and 6 SIGKILLed
#       at round 60, 300 rounds: a static ring-8 file (the run splits in two
#       chains), the ring family of 8 (the six re-form a ring), and an
#       intact ring-6 for reference; OUT/{static,family,ring6}/ and a line
#       per run in OUT/kill.txt (the report's consensus at rounds 50..300)
#   scripts/elastic-study.sh join  OUT [SEED [fresh|moments]]   a ring family
#       of 4; at round 100, 4 more join, each through another member; 400
#       rounds: the round the view of 8 took effect, and OUT/join/ for
#       `murmur report`; `moments` gives the joiners --join-moments (their
#       donors' optimizer moments), `fresh` (default) not. A line per run in
#       OUT/join.txt: seed, variant, the view's round, the joiners' mean
#       validation loss at their first three evaluations after joining and
#       at the end, and the starting members' at the end
#
# DATA (default data/brown), BASE_PORT (default 25600), MURMUR (./murmur).
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
MURMUR=${MURMUR:-./murmur}
DATA=${DATA:-data/brown}
PORT=${BASE_PORT:-25600}
mode=${1:?usage: elastic-study.sh kill|join OUT [SEED [fresh|moments]]}
out=${2:?usage: elastic-study.sh kill|join OUT [SEED]}
seed=${3:-1}
variant=${4:-fresh}
case $variant in fresh) jm="" ;; moments) jm=--join-moments ;; *) echo "elastic-study: fresh or moments, not $variant" >&2; exit 2 ;; esac
mkdir -p "$out"
model="--layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3 --partition genre
       --seed $seed --data $DATA --plaintext --eval-every 25 --snapshot-every 25 --log-every 0
       --suspect-ms 2000"

round_of() { # DIR K
    tail -c 65536 "$1/node-$2/metrics.jsonl" 2>/dev/null | grep '"ev":"round"' | tail -1 |
        sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | grep . || echo 0
}
# start RUN TOPO N ROUNDS [K...]: peers K (default 0..N-1), their pids in $pids
start() {
    run=$1; topo=$2; n=$3; rounds=$4; shift 4
    ids=${*:-$(seq 0 $((n - 1)))}
    pids=""
    for k in $ids; do
        MURMUR_NO_BLAS_FIX=0 "$MURMUR" node --id "$k" --topology "$topo" --base-port "$PORT" \
            --rounds "$rounds" --run-dir "$run" $model > "$run.$k.log" 2>&1 &
        pids="$pids $!"
        eval "pid_$k=$!"
    done
}
wait_round() { # RUN K R: until peer K of RUN reaches round R (bounded: 30 minutes)
    i=0
    while [ "$(round_of "$1" "$2")" -lt "$3" ]; do
        sleep 0.5; i=$((i + 1))
        [ $i -lt 3600 ] || { echo "elastic-study: peer $2 of $1 did not reach round $3" >&2; exit 1; }
    done
}
xi_rows() { # RUN: "round Xi" of the report's rows (exact from snapshots)
    "$MURMUR" report "$1" 2>/dev/null | awk '/^ *round +peers +consensus/ { on = 1; next }
        on && NF == 0 { on = 0 } on && $1 ~ /^[0-9]+$/ { print $1, $3 }'
}

case $mode in
kill)
    "$MURMUR" topo gen ring -n 8 > "$out/ring8.topo" 2>/dev/null
    "$MURMUR" topo gen ring -n 8 --family > "$out/family8.topo" 2>/dev/null
    "$MURMUR" topo gen ring -n 6 > "$out/ring6.topo" 2>/dev/null
    for kind in static family; do
        topo=$out/ring8.topo; [ $kind = family ] && topo=$out/family8.topo
        rm -rf "$out/$kind"; mkdir -p "$out/$kind"
        echo "elastic-study: $kind ring-8, peers 2 and 6 killed at round 60 (load $(cut -d' ' -f1 /proc/loadavg))"
        start "$out/$kind" "$topo" 8 300
        wait_round "$out/$kind" 2 60
        kill -9 "$pid_2" "$pid_6"
        for p in $pids; do wait "$p" 2>/dev/null || true; done
        echo "$kind $(xi_rows "$out/$kind" | tr '\n' ' ')" >> "$out/kill.txt"
        "$MURMUR" report "$out/$kind" > "$out/$kind.report" 2>&1 || true
    done
    rm -rf "$out/ring6"; mkdir -p "$out/ring6"
    echo "elastic-study: intact ring-6 (load $(cut -d' ' -f1 /proc/loadavg))"
    start "$out/ring6" "$out/ring6.topo" 6 300
    for p in $pids; do wait "$p"; done
    echo "ring6 $(xi_rows "$out/ring6" | tr '\n' ' ')" >> "$out/kill.txt"
    "$MURMUR" report "$out/ring6" > "$out/ring6.report" 2>&1 || true
    cat "$out/kill.txt"
    ;;
join)
    "$MURMUR" topo gen ring -n 4 --family > "$out/family4.topo" 2>/dev/null
    run=$out/join-s$seed-$variant; rm -rf "$run"; mkdir -p "$run"
    echo "elastic-study: ring family of 4, 4 join at round 100, seed $seed, $variant (load $(cut -d' ' -f1 /proc/loadavg))"
    start "$run" "$out/family4.topo" 4 400
    first=$pids
    wait_round "$run" 0 100
    for k in 4 5 6 7; do
        via=$((PORT + k - 4))
        MURMUR_NO_BLAS_FIX=0 "$MURMUR" node --id "$k" --join "127.0.0.1:$via" \
            --topology "$out/family4.topo" --base-port "$PORT" --rounds 400 --run-dir "$run" \
            $model $jm > "$run.$k.log" 2>&1 &
        first="$first $!"
    done
    for p in $first; do wait "$p"; done
    r8=$(grep -h '"ev":"view"' "$run"/node-0/metrics.jsonl | grep '"members_n":8' | head -1 |
        sed -n 's/.*"round":\([0-9]*\),.*/\1/p')
    echo "view of 8 from round $r8"
    # val_loss of peers FROM..TO at their evaluations after round AFTER: the
    # mean over those peers of the Nth such evaluation (N = 1, 2, 3), and of the last
    evals() { # FROM TO AFTER
        for k in $(seq "$1" "$2"); do
            grep '"ev":"eval"' "$run/node-$k/metrics.jsonl" |
                sed -n 's/.*"round":\([0-9]*\),.*"val_loss":\([0-9.]*\),.*/\1 \2/p' |
                awk -v a="$3" '$1 > a { n++; if (n <= 3) print n, $2; last = $2 } END { print "last", last }'
        done | awk '{ s[$1] += $2; c[$1]++ } END { printf "%.4f %.4f %.4f %.4f", s[1] / c[1], s[2] / c[2], s[3] / c[3], s["last"] / c["last"] }'
    }
    echo "$seed $variant $r8 $(evals 4 7 "$r8") $(evals 0 3 0 | awk '{ print $4 }')" | tee -a "$out/join.txt"
    "$MURMUR" report "$run" > "$run.report" 2>&1 || true
    ;;
*) echo "usage: elastic-study.sh kill|join OUT [SEED [fresh|moments]]" >&2; exit 2 ;;
esac
