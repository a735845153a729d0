#!/bin/sh
# make bench-model: training throughput (forward + backward + AdamW, batch
# 16, context 64, default model) of the C model at 1 and 2 OpenBLAS threads,
# against the same model in PyTorch measured in the same run, both with the
# environment as shipped (Debian's OpenBLAS may fall back to its generic
# kernel) and with OPENBLAS_CORETYPE set to the kernel this CPU wants.
# The machine may be shared: every figure is a median over STEPS steps.
#   STEPS=n   steps per measurement (default 40)
set -eu
BUILD=${BUILD:-build}
STEPS=${STEPS:-40}
BIN="$BUILD/tests/bench_model"
PY=/usr/bin/python3
here=$(dirname "$0")

if grep -qw avx512f /proc/cpuinfo; then KERNEL=SkylakeX
elif grep -qw avx2 /proc/cpuinfo; then KERNEL=Haswell
else KERNEL=""; fi
unset OPENBLAS_CORETYPE || true

field() { # key, text
    printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

c_run() { # threads, coretype ("" = as shipped)
    if [ -n "$2" ]; then
        OPENBLAS_CORETYPE=$2 OPENBLAS_NUM_THREADS=$1 "$BIN" "$STEPS"
    else
        OPENBLAS_NUM_THREADS=$1 "$BIN" "$STEPS"
    fi
}
torch_run() { # threads, coretype
    if [ -n "$2" ]; then
        OPENBLAS_CORETYPE=$2 OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 \
            "$PY" "$here/bench_torch.py" "$1" "$STEPS"
    else
        OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 "$PY" "$here/bench_torch.py" "$1" "$STEPS"
    fi
}

echo "bench-model: CPU kernel for this machine: ${KERNEL:-none (generic)}; $STEPS steps per figure"
have_torch=0
if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then have_torch=1
else echo "bench-model: PyTorch not importable by $PY: C figures only"; fi

for th in 1 2; do
    c_out=$(c_run "$th" "$KERNEL")
    c_tok=$(field tokens_per_s "$c_out")
    c_ship=$(field tokens_per_s "$(c_run "$th" "")")
    echo
    echo "== $th thread(s)"
    printf '%s\n' "$c_out" | sed 's/^/  C  /'
    echo "  C as shipped (no OPENBLAS_CORETYPE): tokens_per_s=$c_ship"
    if [ "$have_torch" = 1 ]; then
        t_ship=$(field tokens_per_s "$(torch_run "$th" "")")
        t_fix=$t_ship
        [ -n "$KERNEL" ] && t_fix=$(field tokens_per_s "$(torch_run "$th" "$KERNEL")")
        echo "  PyTorch as shipped:                tokens_per_s=$t_ship"
        echo "  PyTorch OPENBLAS_CORETYPE=$KERNEL:   tokens_per_s=$t_fix"
        echo "  ratio C($KERNEL) / PyTorch($KERNEL)      = $(ratio "$c_tok" "$t_fix")   (target >= 1.2 at 1 thread)"
        echo "  ratio C($KERNEL) / PyTorch as shipped = $(ratio "$c_tok" "$t_ship")   (target >= 2 at 1 thread)"
    fi
    echo "  model FLOP/s vs 1024^3 sgemm: $(field model_gflops "$c_out") / $(field sgemm1024_gflops "$c_out") GFLOP/s = $(ratio "$(field model_gflops "$c_out")" "$(field sgemm1024_gflops "$c_out")")"
done
