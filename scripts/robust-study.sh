#!/bin/sh
# Robust mixing against a poisoning neighbour, trained (docs/node.md,
# "Robust mixing"): the demo's 8-peer ring, model and data
# (sweeps/baselines-8.sweep: 2 layers, width 64, Brown by genre, 200
# rounds), peer 3 sending sign-flipped parameters (--test-poison KIND,
# default scale=-1), paired by seed:
#   honest        no option
#   honest-clip   every peer --robust-clip F (default 1)
#   attack-clip   peer 3 poisons, every peer --robust-clip F
#   attack        peer 3 poisons, no option (the first seed only: what the
#                 option prevents)
# One run after another, 8 local peers each, niced. Prints one line per run
# (the 7 honest peers' mean, min and max final val_acc and val_loss) and
# writes them to DIR/robust.csv, then the check: for every seed,
# attack-clip's mean accuracy is at least honest-clip's minus the seed
# spread of honest-clip (the two seeds' difference; 0.01 with one seed).
# Exit status 1 when it fails, 2 on a failed run.
#
#   scripts/robust-study.sh [-o DIR] [-p BASE_PORT] [-k KIND] [-F F | -X X] [-s "SEEDS"]
#                           [-r "RUNS"] [-c "OPTS"]
#
# -c OPTS: more options for every peer of every run, e.g. "--compress int8"
# (CHOCO, the attack then e.g. -k q-huge).
# -r: only these of the runs above (the check needs honest-clip and
# attack-clip; without them it is skipped).
# -X X: the fixed radius --clip-pull X instead of --robust-clip F (the
# "-clip" runs then use it).
#
# Environment: MURMUR_DATA (default data/brown, `make data`), ROUNDS
# (default 200).
set -u
cd "$(dirname "$0")/.." || exit 2
out=runs/robust-study; port=27100; kind=scale=-1; clip="--robust-clip 1"; seeds="1 2"
runs="honest honest-clip attack-clip attack"; common=""
while [ $# -gt 0 ]; do
    case "$1" in
    -o) out=${2:?-o DIR}; shift ;;
    -p) port=${2:?-p BASE_PORT}; shift ;;
    -k) kind=${2:?-k KIND}; shift ;;
    -F) clip="--robust-clip ${2:?-F F}"; shift ;;
    -X) clip="--clip-pull ${2:?-X X}"; shift ;;
    -r) runs=${2:?-r RUNS}; shift ;;
    -s) seeds=${2:?-s SEEDS}; shift ;;
    -c) common=${2:?-c OPTS}; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "robust-study: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
data=${MURMUR_DATA:-data/brown}
rounds=${ROUNDS:-200}
[ -x ./murmur ] || { echo "robust-study: build murmur first (make murmur)" >&2; exit 2; }
[ -f "$data/index.tsv" ] || { echo "robust-study: no corpus in $data (make data)" >&2; exit 2; }
mkdir -p "$out" || exit 2
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; exit 130' INT TERM

# run NAME SEED POISON OPTS: 8 peers, peer 3 with --test-poison POISON
# unless it is "none"; prints the 7 honest peers' final accuracy figures
run() {
    name=$1; seed=$2; poison=$3; shift 3
    case " $runs " in *" $name "*) ;; *) return 0 ;; esac
    dir=$out/$name/s$seed
    rm -rf "$dir"; mkdir -p "$dir"
    pids=""; start=$(date +%s)
    for k in 0 1 2 3 4 5 6 7; do
        extra=""
        [ $k -eq 3 ] && [ "$poison" != none ] && extra="--test-poison $poison"
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=1 nice -n 10 ./murmur node --id $k --topology topologies/ring-8.topo \
            --base-port "$port" --plaintext --data "$data" --run-dir "$dir" --seed "$seed" \
            --layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3 --rounds "$rounds" \
            --eval-every 25 --checkpoint-every 0 --partition genre --log-every 0 \
            --round-timeout 30000 --start-timeout 60000 $common "$@" $extra > "$dir/peer$k.out" 2>&1 &
        pids="$pids $!"
    done
    bad=0
    for p in $pids; do wait "$p" || bad=$((bad + 1)); done
    pids=""
    port=$((port + 8))
    for k in 0 1 2 4 5 6 7; do
        grep '"ev":"eval"' "$dir/node-$k/metrics.jsonl" | tail -1 |
            sed -n 's/.*"val_loss":\([^,]*\),.*"val_acc":\([^,]*\),.*/\2 \1/p'
    done | awk -v n="$name" -v s="$seed" -v bad=$bad -v secs=$(( $(date +%s) - start )) '
        { a += $1; l += $2; c++; if (c == 1 || $1 < lo) lo = $1; if (c == 1 || $1 > hi) hi = $1 }
        END { if (c == 0) { print n "," s ",,,,," bad "," secs; exit }
              printf "%s,%s,%.4f,%.4f,%.4f,%.4f,%d,%d\n", n, s, a / c, lo, hi, l / c, bad, secs }' |
        tee -a "$out/robust.csv"
}

echo "run,seed,val_acc_mean,val_acc_min,val_acc_max,val_loss_mean,failed_peers,seconds" > "$out/robust.csv"
echo "robust-study: 8-peer ring, $rounds rounds, ${common:+$common, }peer 3 --test-poison $kind, $clip; load $(cut -d' ' -f1-3 /proc/loadavg)"
first=${seeds%% *}
for s in $seeds; do
    run honest "$s" none
    # shellcheck disable=SC2086
    run honest-clip "$s" none $clip
    # shellcheck disable=SC2086
    run attack-clip "$s" "$kind" $clip
    [ "$s" = "$first" ] && run attack "$s" "$kind"
done
echo "robust-study: load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $out/robust.csv"
# the check (paired by seed)
awk -F, 'NR > 1 { acc[$1 "," $2] = $3; if ($1 == "honest-clip") hc[++n] = $3; if ($7 > 0 && $1 != "attack") bad = 1 }
    END {
        if (bad) { print "robust-study: a run other than attack had a failed peer"; exit 2 }
        if (n == 0) { print "robust-study: no honest-clip run: no check"; exit 0 }
        spread = n > 1 ? hc[1] - hc[2] : 0; if (spread < 0) spread = -spread
        tol = n > 1 ? spread : 0.01; fail = 0
        for (k in acc) { split(k, p, ","); if (p[1] != "attack-clip") continue
            if (!(("honest-clip," p[2]) in acc)) continue
            d = acc[k] - acc["honest-clip," p[2]]
            printf "robust-study: seed %s: attack-clip - honest-clip = %+.4f (tolerance %.4f; the seed spread of honest-clip %.4f)\n", p[2], d, tol, spread
            if (d < -tol) fail = 1 }
        exit fail }' "$out/robust.csv"
