#!/bin/sh
# make bench-model: training throughput (forward + backward + AdamW, batch
# 16, context 64, default model) of the C model at 1 and 2 OpenBLAS threads,
# against the same model in PyTorch measured in the same run, both with the
# environment as shipped (Debian's OpenBLAS may fall back to its generic
# kernel) and with OPENBLAS_CORETYPE set to the kernel this CPU wants.
# The machine may be shared, so the runs are interleaved (C, PyTorch, C,
# ...) for ROUNDS rounds and every figure is the median over the rounds of
# per-run medians over STEPS steps.
#   STEPS=n   steps per run (default 30)    ROUNDS=n  rounds (default 3)
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
BUILD=${BUILD:-build}
STEPS=${STEPS:-30}
ROUNDS=${ROUNDS:-3}
BIN="$BUILD/tests/bench_model"
PY=/usr/bin/python3
here=$(dirname "$0")

if grep -qw avx512f /proc/cpuinfo; then KERNEL=SkylakeX
elif grep -qw avx2 /proc/cpuinfo; then KERNEL=Haswell
else KERNEL=""; fi
unset OPENBLAS_CORETYPE 2>/dev/null || true

field() { # key, text
    printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}
median() { # numbers as arguments
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }

c_run() { # threads, coretype ("" = as shipped)
    if [ -n "$2" ]; then OPENBLAS_CORETYPE=$2 OPENBLAS_NUM_THREADS=$1 "$BIN" "$STEPS"
    else OPENBLAS_NUM_THREADS=$1 "$BIN" "$STEPS"; fi
}
torch_run() { # threads, coretype
    if [ -n "$2" ]; then
        OPENBLAS_CORETYPE=$2 OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 \
            "$PY" "$here/bench_torch.py" "$1" "$STEPS"
    else
        OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 "$PY" "$here/bench_torch.py" "$1" "$STEPS"
    fi
}

echo "bench-model: OpenBLAS kernel for this CPU: ${KERNEL:-none (generic)};" \
     "$ROUNDS interleaved rounds of $STEPS steps; load: $(cut -d' ' -f1-3 /proc/loadavg)"
have_torch=0
if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then have_torch=1
else echo "bench-model: PyTorch not importable by $PY: C figures only"; fi

for th in 1 2; do
    c_all=""; ts_all=""; tf_all=""; g_all=""; p_all=""; gc_all=""; pc_all=""; r_all=""; last=""
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        last=$(c_run "$th" "$KERNEL")
        c_all="$c_all $(field tokens_per_s "$last")"
        g_all="$g_all $(field model_gflops "$last")"
        p_all="$p_all $(field sgemm1024_gflops "$last")"
        gc_all="$gc_all $(field model_cpu_gflops "$last")"
        pc_all="$pc_all $(field sgemm1024_cpu_gflops "$last")"
        r_all="$r_all $(ratio "$(field model_gflops "$last")" "$(field sgemm1024_gflops "$last")")"
        if [ "$have_torch" = 1 ]; then
            ts_all="$ts_all $(field tokens_per_s "$(torch_run "$th" "")")"
            if [ -n "$KERNEL" ]; then
                tf_all="$tf_all $(field tokens_per_s "$(torch_run "$th" "$KERNEL")")"
            fi
        fi
        r=$((r + 1))
    done
    c_ship=$(field tokens_per_s "$(c_run "$th" "")")
    c=$(median $c_all)
    echo
    echo "== $th OpenBLAS thread(s)"
    printf '%s\n' "$last" | sed 's/^/  last C run: /'
    echo "  C, OPENBLAS_CORETYPE=$KERNEL:        tokens/s $c   (runs:$c_all)"
    echo "  C as shipped (generic kernel):     tokens/s $c_ship   (one run, for reference)"
    if [ "$have_torch" = 1 ]; then
        ts=$(median $ts_all)
        tf=$ts
        [ -n "$KERNEL" ] && tf=$(median $tf_all)
        echo "  PyTorch as shipped:                tokens/s $ts   (runs:$ts_all)"
        echo "  PyTorch, OPENBLAS_CORETYPE=$KERNEL:  tokens/s $tf   (runs:$tf_all)"
        t1=""; t2=""
        [ "$th" = 1 ] && t1="   (target >= 1.2)" && t2="   (target >= 2)"
        echo "  ratio C / PyTorch, both $KERNEL:     $(ratio "$c" "$tf")$t1"
        echo "  ratio C / PyTorch as shipped:      $(ratio "$c" "$ts")$t2"
    fi
    g=$(median $g_all); p=$(median $p_all)
    echo "  achieved model GFLOP/s $g vs 1024^3 sgemm GFLOP/s $p in the same runs: $(ratio "$g" "$p")" \
         "(target >= $( [ "$th" = 1 ] && echo 0.75 || echo 0.6 ); per run:$r_all)"
    gc=$(median $gc_all); pc=$(median $pc_all)
    echo "  per CPU second (all threads; steady under load): model GFLOP/s $gc vs sgemm $pc: $(ratio "$gc" "$pc")"
    echo "  load now: $(cut -d' ' -f1-3 /proc/loadavg)"
done
