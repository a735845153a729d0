#!/bin/sh
# make bench-gloo: a ring of 4 murmur peers against a ring of 4 PyTorch
# processes doing the same D-PSGD over torch.distributed's gloo backend
# (scripts/gloo_dpsgd.py), on loopback, in rounds per second.
#
# Both sides: the same model (scripts/gpt_torch.py is the golden test's
# PyTorch twin of model/), batch, corpus and iid shard, one BLAS thread per
# process (OPENBLAS_CORETYPE set to this CPU's kernel for both; murmur
# picks it itself), the same overlap (snapshot sent, one step computed,
# neighbours' vectors awaited, mixed with weights 1/3), the same number of
# rounds. murmur runs with TLS (as the node runs by default) and with
# --plaintext (gloo is plaintext); the three run in turn (TLS, plaintext,
# gloo) PAIRS times, and each murmur/gloo ratio is taken within its pair,
# printed as median (min-max) with the load at each pair's start.
# A rate is a peer's rounds from round WARMUP to its last divided by the
# seconds between those round lines, averaged over the 4 peers; the time
# split (compute, mix, wait, milliseconds per round) over the same rounds.
#
#   PAIRS=n    interleaved repetitions (default 4)
#   MODELS="default demo"  default: 4 layers, width 128 (834,304 parameters);
#              demo: make demo's model, 2 layers, width 64, lr 3e-3 (120,576)
#   ROUNDS=n   rounds of the default model (default 60); DEMO_ROUNDS=n (200)
#   WARMUP=n   rounds left out at the start (default 10)
#   MODES="tls plaintext"  murmur's transports to run
# On the default model each pair also runs the model's step alone, 4
# copies at once as the ring's peers share the cores (BUILD/tests/
# bench_model against scripts/bench_torch.py, ALONE_STEPS=30 steps each),
# and prints C / PyTorch per CPU second: what the ring's ratio would be if
# nothing but the step cost anything.
# Every run's metrics and a results.csv (model, impl, pair, rounds_per_s,
# compute_ms, comm_ms, wait_ms, cpu_ms_per_round, load1, tokens_per_cpu_s
# (the alone4 rows)) land in runs/bench-gloo-TIME/. Needs ./murmur, the
# prepared corpus (make data) and /usr/bin/python3 with torch (Debian's
# python3-torch).
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"
PROG=bench-gloo
. "$here/launch-lib.sh"
MURMUR=${MURMUR:-./murmur}
PY=/usr/bin/python3
PAIRS=${PAIRS:-4}
MODELS=${MODELS:-default demo}
ROUNDS=${ROUNDS:-60}
DEMO_ROUNDS=${DEMO_ROUNDS:-200}
WARMUP=${WARMUP:-10}
MODES=${MODES:-tls plaintext}
DATA=${DATA:-data/brown}
ALONE_STEPS=${ALONE_STEPS:-30}
BENCH_MODEL=${BUILD:-build}/tests/bench_model
N=4
TOPO=topologies/ring-4.topo

[ -x "$MURMUR" ] || { echo "$PROG: no $MURMUR (make murmur)" >&2; exit 1; }
[ -f "$DATA/index.tsv" ] || { echo "$PROG: no prepared corpus in $DATA (make data)" >&2; exit 1; }
"$PY" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
    { echo "$PROG: $PY cannot import torch with gloo (apt-get install python3-torch)" >&2; exit 1; }
[ -x "$BENCH_MODEL" ] || { echo "$PROG: no $BENCH_MODEL (make $BENCH_MODEL): no model-alone rows"; BENCH_MODEL=""; }
if grep -qw avx512f /proc/cpuinfo; then KERNEL=SkylakeX
elif grep -qw avx2 /proc/cpuinfo; then KERNEL=Haswell
else KERNEL=""; fi
out=runs/bench-gloo-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
sh scripts/make-certs.sh "$out/certs" "$N" >/dev/null
CSV=$out/results.csv
echo "model,impl,pair,rounds_per_s,compute_ms,comm_ms,wait_ms,cpu_ms_per_round,load1,tokens_per_cpu_s" > "$CSV"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; exit 130' INT TERM HUP

model_flags() { # murmur's flags, which gloo_dpsgd.py takes by the same names
    case $1 in
    default) echo "--layers 4 --width 128 --heads 4 --ctx 64 --batch 16 --lr 1e-3" ;;
    demo) echo "--layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3" ;;
    *) echo "$PROG: unknown model $1 (default, demo)" >&2; exit 2 ;;
    esac
}

# await DIR: wait for the peers started (pids), naming a failed one.
await() {
    for p in $pids; do
        wait "$p" || { echo "$PROG: a peer of $1 failed; its logs are in $1" >&2; exit 1; }
    done
    pids=""
}

# cpu_at_round PID FILE: the CPU seconds (user + system, all threads) of
# murmur peer PID once its metrics FILE has round WARMUP's line, polled
# every 20 ms (murmur's end line has only the whole run's cpu_s).
TICK=$(getconf CLK_TCK)
cpu_at_round() {
    while kill -0 "$1" 2>/dev/null; do
        if grep -q "\"ev\":\"round\",\"peer\":[0-9]*,\"round\":$WARMUP," "$2" 2>/dev/null; then
            awk -v t="$TICK" '{ sub(/.*\) /, ""); printf "%.3f\n", ($12 + $13) / t }' "/proc/$1/stat"
            return 0
        fi
        sleep 0.02
    done
}

run_murmur() { # DIR MODE ROUNDS MODEL_FLAGS...
    dir=$1 mode=$2 rounds=$3; shift 3
    tls="--tls-dir $out/certs"
    [ "$mode" = plaintext ] && tls=--plaintext
    port=$(free_base "$N") || { echo "$PROG: no free ports" >&2; exit 1; }
    k=0 pollers=""
    while [ "$k" -lt "$N" ]; do
        mkdir -p "$dir/node-$k"
        # shellcheck disable=SC2086
        OPENBLAS_CORETYPE=$KERNEL "$MURMUR" node --id "$k" --topology "$TOPO" \
            --base-port "$port" $tls --run-dir "$dir" --data "$DATA" --threads 1 \
            --rounds "$rounds" --eval-every 0 --checkpoint-every 0 "$@" \
            > "$dir/node-$k/console.log" 2>&1 &
        pids="$pids $!"
        cpu_at_round $! "$dir/node-$k/metrics.jsonl" > "$dir/node-$k/cpu_from" &
        pollers="$pollers $!"; k=$((k + 1))
    done
    await "$dir"
    for p in $pollers; do wait "$p" || true; done
}

run_gloo() { # DIR ROUNDS MODEL_FLAGS...
    dir=$1 rounds=$2; shift 2
    port=$(free_base 1) || { echo "$PROG: no free port" >&2; exit 1; }
    k=0
    while [ "$k" -lt "$N" ]; do
        mkdir -p "$dir/node-$k"
        OPENBLAS_CORETYPE=$KERNEL OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
            "$PY" "$here/gloo_dpsgd.py" --rank "$k" --world "$N" --port "$port" --data "$DATA" \
            --threads 1 --rounds "$rounds" --cpu-from "$WARMUP" "$@" \
            > "$dir/node-$k/metrics.jsonl" 2> "$dir/node-$k/console.log" &
        pids="$pids $!"; k=$((k + 1))
    done
    await "$dir"
}

# rates DIR: "rounds_per_s compute_ms comm_ms wait_ms cpu_ms_per_round",
# means over the peers of DIR/node-*/metrics.jsonl from round WARMUP on.
# CPU per round from round WARMUP on: the end line's cpu_s minus the CPU
# seconds at round WARMUP (gloo_dpsgd.py's end line has them as cpu_s_from,
# for murmur cpu_at_round wrote them to node-K/cpu_from); the whole run's
# (start-up included) when neither is there.
rates() {
    rt_all=""
    for m in "$1"/node-*/metrics.jsonl; do
        cf=$(cat "$(dirname "$m")/cpu_from" 2>/dev/null || true)
        rt_one=$(awk -v w="$WARMUP" -v cf="$cf" '
            function f(s, key,   v) { if (index(s, "\"" key "\":") == 0) return ""
                v = s; sub(".*\"" key "\":", "", v); sub("[,}].*", "", v); return v }
            /"ev":"round"/ { r = f($0, "round") + 0
                if (t0 == "" && r >= w) { r0 = r; t0 = f($0, "time"); c0 = f($0, "t_compute")
                              m0 = f($0, "t_comm"); w0 = f($0, "t_wait") }
                last = $0 }
            /"ev":"end"/ { cpu = f($0, "cpu_s"); from = f($0, "cpu_s_from"); rounds = f($0, "round") + 0 }
            END { r = f(last, "round") - r0; if (r <= 0 || t0 == "") exit 1
                if (from == "" || from == "null") from = cf
                cpr = from != "" ? (cpu - from) / r : cpu / rounds
                printf "%.6f %.3f %.3f %.3f %.3f\n", r / (f(last, "time") - t0),
                    1e3 * (f(last, "t_compute") - c0) / r, 1e3 * (f(last, "t_comm") - m0) / r,
                    1e3 * (f(last, "t_wait") - w0) / r, 1e3 * cpr }' "$m") ||
            { echo "$PROG: $m has no rounds past $WARMUP" >&2; return 1; }
        rt_all="$rt_all$rt_one
"
    done
    printf '%s' "$rt_all" | awk '{ for (i = 1; i <= NF; i++) s[i] += $i; n++ }
        END { printf "%.4f %.2f %.2f %.2f %.2f\n", s[1] / n, s[2] / n, s[3] / n, s[4] / n, s[5] / n }'
}

# alone4 C|torch: the default model's training step alone, 4 copies at
# once as the ring's 4 peers share the cores (tests/bench_model.c,
# scripts/bench_torch.py, one thread each, ALONE_STEPS steps): the mean
# over the copies of each one's median tokens per CPU second.
alone4() {
    a4=$out/alone4-$1-$pair
    k=0
    while [ "$k" -lt "$N" ]; do
        if [ "$1" = C ]; then
            OPENBLAS_CORETYPE=$KERNEL OPENBLAS_NUM_THREADS=1 "$BENCH_MODEL" "$ALONE_STEPS" > "$a4.$k" 2>&1 &
        else
            OPENBLAS_CORETYPE=$KERNEL OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
                "$PY" "$here/bench_torch.py" 1 "$ALONE_STEPS" > "$a4.$k" 2>&1 &
        fi
        pids="$pids $!"; k=$((k + 1))
    done
    await "$a4.*"
    cat "$a4".* | sed -n 's/^tokens_per_cpu_s=//p' | awk '{ s += $1; n++ } END { if (n == 4) printf "%.0f", s / n; else exit 1 }' ||
        { echo "$PROG: a copy of $1 printed no tokens_per_cpu_s ($a4.*)" >&2; exit 1; }
}

spread() { # numbers: "median (min-max)"
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }'
}

echo "$PROG: rings of $N on loopback ($TOPO), murmur ($MODES) against PyTorch $("$PY" -c \
    'import torch; print(torch.__version__)') gloo D-PSGD, $PAIRS interleaved pairs," \
    "rates from round $WARMUP on; OPENBLAS_CORETYPE=${KERNEL:-unset}; $(nproc) cores;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg); runs in $out"
for model in $MODELS; do
    flags=$(model_flags "$model")
    rounds=$ROUNDS
    [ "$model" = demo ] && rounds=$DEMO_ROUNDS
    echo
    echo "== $model model ($flags), $rounds rounds"
    printf '%-5s %-10s %12s %11s %8s %8s %10s %6s\n' pair impl rounds_per_s compute_ms mix_ms \
        wait_ms cpu_ms/rnd load1
    for mode in $MODES; do eval "ratios_$mode=''"; done
    ratios_alone=""
    pair=1
    while [ "$pair" -le "$PAIRS" ]; do
        load1=$(cut -d' ' -f1 /proc/loadavg)
        for impl in $MODES gloo; do
            dir=$out/$model-$impl-$pair
            # shellcheck disable=SC2086
            if [ "$impl" = gloo ]; then run_gloo "$dir" "$rounds" $flags
            else run_murmur "$dir" "$impl" "$rounds" $flags; fi
            r=$(rates "$dir") || exit 1
            # shellcheck disable=SC2086
            set -- $r
            echo "$model,$impl,$pair,$1,$2,$3,$4,$5,$load1," >> "$CSV"
            printf '%-5s %-10s %12.3f %11.1f %8.2f %8.1f %10.1f %6s\n' "$pair" "$impl" "$1" "$2" \
                "$3" "$4" "$5" "$load1"
            eval "rate_$impl=$1"
        done
        for mode in $MODES; do
            eval "ratios_$mode=\"\$ratios_$mode \$(awk -v a=\$rate_$mode -v b=\$rate_gloo 'BEGIN { printf \"%.3f\", a / b }')\""
        done
        if [ "$model" = default ] && [ -n "$BENCH_MODEL" ]; then
            c4=$(alone4 C); t4=$(alone4 torch)
            echo "$model,alone4-C,$pair,,,,,,$load1,$c4" >> "$CSV"
            echo "$model,alone4-torch,$pair,,,,,,$load1,$t4" >> "$CSV"
            printf '%-5s %-10s model alone, 4 at once: C %s, PyTorch %s tokens per CPU second\n' \
                "$pair" alone4 "$c4" "$t4"
            ratios_alone="$ratios_alone $(awk -v a="$c4" -v b="$t4" 'BEGIN { printf "%.3f", a / b }')"
        fi
        pair=$((pair + 1))
    done
    for mode in $MODES; do
        eval "rs=\$ratios_$mode"
        # shellcheck disable=SC2086,SC2154
        echo "  murmur ($mode) / PyTorch-gloo, rounds per second, pair by pair: $(spread $rs)" \
             "(pairs:$rs)"
    done
    # shellcheck disable=SC2086
    [ -n "$ratios_alone" ] && echo "  model alone, 4 copies at once, C / PyTorch per CPU second:" \
        "$(spread $ratios_alone) (pairs:$ratios_alone)"
    echo "  load now: $(cut -d' ' -f1-3 /proc/loadavg)"
done
[ "${MODELS#*default}" != "$MODELS" ] && echo && echo "(target on the default model: murmur/gloo >= 1.7)"
echo "$PROG: figures in $CSV"
