#!/bin/sh
# make bench-model: training throughput (forward + backward + AdamW, batch
# 16, context 64, default model) of the C model at 1 and 2 OpenBLAS threads,
# against the same model in PyTorch measured in the same run, both with the
# environment as shipped (Debian's OpenBLAS may fall back to its generic
# kernel) and with OPENBLAS_CORETYPE set to the kernel this CPU wants.
# The machine may be shared, so the runs are interleaved (C, PyTorch, C,
# ...) for ROUNDS rounds and every figure is the median over the rounds of
# per-run medians over STEPS steps. Each ratio is also taken round by
# round (this run's C against the PyTorch run right after it, the model
# against its own process's sgemm) and printed as median (min-max), per
# wall second and per CPU second (every thread's seconds: steadier under
# load at one thread; at two, threads that spin while they wait, as
# PyTorch's OpenMP ones do, count too, so there the wall figure decides).
#   STEPS=n   steps per run (default 30)    ROUNDS=n  rounds (default 3)
#   BASE_BIN=path  a bench_model built from another commit (the baseline):
#             each round then runs it right before this build's, and the
#             ratio this/baseline is taken round by round, printed as
#             median (min-max) with the load, as is C/PyTorch
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
# spread NUMBERS: "median (min-max)"
spread() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f (%.2f-%.2f)\n", m, v[1], v[NR] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }

c_run() { # threads, coretype ("" = as shipped), [binary]
    if [ -n "$2" ]; then OPENBLAS_CORETYPE=$2 OPENBLAS_NUM_THREADS=$1 "${3:-$BIN}" "$STEPS"
    else OPENBLAS_NUM_THREADS=$1 "${3:-$BIN}" "$STEPS"; fi
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

add() { eval "$1=\"\${$1:-} $2\""; } # add LIST VALUE: append to a space-separated list

for th in 1 2; do
    for v in c_all ts_all tf_all g_all p_all gc_all pc_all r_all rc_all b_all br_all brc_all \
             bg_all pt_all ptc_all; do eval "$v=''"; done
    last=""
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        if [ -n "${BASE_BIN:-}" ]; then
            base=$(c_run "$th" "$KERNEL" "$BASE_BIN")
            add b_all "$(field tokens_per_s "$base")"
            add bg_all "$(ratio "$(field model_gflops "$base")" "$(field sgemm1024_gflops "$base")")"
        fi
        last=$(c_run "$th" "$KERNEL")
        if [ -n "${BASE_BIN:-}" ]; then
            add br_all "$(ratio "$(field tokens_per_s "$last")" "$(field tokens_per_s "$base")")"
            add brc_all "$(ratio "$(field tokens_per_cpu_s "$last")" "$(field tokens_per_cpu_s "$base")")"
        fi
        add c_all "$(field tokens_per_s "$last")"
        add g_all "$(field model_gflops "$last")"
        add p_all "$(field sgemm1024_gflops "$last")"
        add gc_all "$(field model_cpu_gflops "$last")"
        add pc_all "$(field sgemm1024_cpu_gflops "$last")"
        add r_all "$(ratio "$(field model_gflops "$last")" "$(field sgemm1024_gflops "$last")")"
        add rc_all "$(ratio "$(field model_cpu_gflops "$last")" "$(field sgemm1024_cpu_gflops "$last")")"
        if [ "$have_torch" = 1 ]; then
            add ts_all "$(field tokens_per_s "$(torch_run "$th" "")")"
            if [ -n "$KERNEL" ]; then
                tr=$(torch_run "$th" "$KERNEL")
                add tf_all "$(field tokens_per_s "$tr")"
                add pt_all "$(ratio "$(field tokens_per_s "$last")" "$(field tokens_per_s "$tr")")"
                add ptc_all "$(ratio "$(field tokens_per_cpu_s "$last")" "$(field tokens_per_cpu_s "$tr")")"
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
        t1=""
        [ "$th" = 1 ] && t1="   (target >= 2)"
        echo "  ratio C / PyTorch, both $KERNEL:     $(ratio "$c" "$tf")$t1"
        echo "  ratio C / PyTorch as shipped:      $(ratio "$c" "$ts")"
        if [ -n "$pt_all" ]; then
            echo "  C / PyTorch ($KERNEL), round by round: $(spread $pt_all) (per round:$pt_all);" \
                 "per CPU second: $(spread $ptc_all)"
        fi
    fi
    g=$(median $g_all); p=$(median $p_all)
    echo "  achieved model GFLOP/s $g vs 1024^3 sgemm GFLOP/s $p in the same runs: $(ratio "$g" "$p")" \
         "(target >= $( [ "$th" = 1 ] && echo 0.75 || echo 0.6 )); run by run: $(spread $r_all)"
    gc=$(median $gc_all); pc=$(median $pc_all)
    echo "  per CPU second (all threads; steady under load): model GFLOP/s $gc vs sgemm $pc: $(ratio "$gc" "$pc");" \
         "run by run: $(spread $rc_all)"
    if [ -n "${BASE_BIN:-}" ]; then
        echo "  baseline $BASE_BIN: tokens/s $(median $b_all) (runs:$b_all), model/sgemm run by run: $(spread $bg_all)"
        echo "  this build / baseline, round by round: $(spread $br_all) (per round:$br_all);" \
             "per CPU second: $(spread $brc_all)"
    fi
    echo "  load now: $(cut -d' ' -f1-3 /proc/loadavg)"
done
