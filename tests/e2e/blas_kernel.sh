#!/bin/sh
# The OpenBLAS kernel fix (model/blas_env.c): with OPENBLAS_CORETYPE unset,
# a murmur command whose OpenBLAS fell back to the generic Prescott kernel on
# a CPU with AVX2/AVX-512 re-executes itself with the better kernel and says
# so in its log (train's start-up lines, a peer's node.log), never before
# help text or a usage error; a user's OPENBLAS_CORETYPE is kept;
# MURMUR_NO_BLAS_FIX=1 disables the fix; a stray re-exec marker cannot cause
# a loop. MURMUR_BLAS_PRETEND_KERNEL=Prescott plays the old-OpenBLAS case on
# a machine whose OpenBLAS knows its CPU, and MURMUR_BLAS_PRETEND_CPU the
# CPU's flags, so that each kernel choice (SkylakeX, Haswell, none) and its
# log line are checked on every machine, not only on the CPU that has them.
set -eu
MURMUR=${MURMUR:-./murmur}
. tests/e2e/lib/corpus.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset OPENBLAS_CORETYPE MURMUR_NO_BLAS_FIX MURMUR_BLAS_REEXEC || true

make_tagged_corpus "$tmp/src" 3
MURMUR_NO_BLAS_FIX=1 "$MURMUR" data-prepare "$tmp/src" "$tmp/data" >/dev/null
train() {
    "$MURMUR" train --data "$tmp/data" --layers 1 --width 16 --heads 2 --ctx 8 --batch 2 \
        --steps 1 --eval-windows 2 --threads 1 --out "$tmp/run" 2>&1
}
kernel_of() { sed -n 's/.*OpenBLAS kernel \([A-Za-z0-9]*\),.*/\1/p' "$1" | head -1; }

MURMUR_NO_BLAS_FIX=1 train >"$tmp/native.log"
native=$(kernel_of "$tmp/native.log")
[ -n "$native" ] || { echo "FAIL: train's log does not name the kernel"; cat "$tmp/native.log"; exit 1; }
grep -q "re-execut" "$tmp/native.log" && { echo "FAIL: re-exec despite MURMUR_NO_BLAS_FIX=1"; exit 1; }

expect=""
if [ "$native" = Prescott ]; then
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
    if has avx512f && has avx512bw && has avx512vl; then expect=SkylakeX
    elif has avx2 && has fma; then expect=Haswell; fi
fi

train >"$tmp/fixed.log"
fixed=$(kernel_of "$tmp/fixed.log")
if [ -n "$expect" ]; then
    grep -q "re-executed with OPENBLAS_CORETYPE=$expect" "$tmp/fixed.log" ||
        { echo "FAIL: no re-exec line for $expect"; cat "$tmp/fixed.log"; exit 1; }
    [ "$(grep -c "re-execut" "$tmp/fixed.log")" -eq 1 ] || { echo "FAIL: re-exec loop"; exit 1; }
    [ "$fixed" = "$expect" ] || { echo "FAIL: kernel $fixed after the fix, wanted $expect"; exit 1; }
else
    grep -q "re-execut" "$tmp/fixed.log" && { echo "FAIL: re-exec although $native is fine"; exit 1; }
    [ "$fixed" = "$native" ] || { echo "FAIL: kernel changed to $fixed"; exit 1; }
fi

# The user's choice wins, even a slower one.
OPENBLAS_CORETYPE=Prescott train >"$tmp/user.log"
grep -q "re-execut" "$tmp/user.log" && { echo "FAIL: overrode the user's OPENBLAS_CORETYPE"; exit 1; }
[ "$(kernel_of "$tmp/user.log")" = Prescott ] || { echo "FAIL: user's kernel not kept"; cat "$tmp/user.log"; exit 1; }

# A marker inherited without a kernel set must not re-exec (loop guard).
MURMUR_BLAS_REEXEC=1 train >"$tmp/mark.log"
grep -q "re-execut" "$tmp/mark.log" && { echo "FAIL: re-exec with the marker set"; exit 1; }
# Every branch of the choice, on every machine: OpenBLAS pretended to have
# fallen back to Prescott, the CPU pretended to have these flags; a one-peer
# pure-gossip node (no BLAS call, so even a kernel this CPU lacks is safe)
# must say in its log which kernel it re-executed with, in these words, or
# nothing when the CPU has no better one.
printf 'peers 1\n' > "$tmp/one.topo"
one_peer() { # RUN-DIR: a one-round node whose log is RUN-DIR/node-0/node.log
    "$MURMUR" node --id 0 --topology "$tmp/one.topo" --plaintext --no-train --vector-len 1000 \
        --run-dir "$1" --rounds 1 --eval-every 0 \
        --base-port "$(sh -c '. tests/e2e/lib.sh; free_ports 1' "$0")" > "$1.out" 2>&1 ||
        { echo "FAIL: one-peer node run"; cat "$1.out"; exit 1; }
}
for case in "SkylakeX:avx2 fma avx512f avx512bw avx512vl" "Haswell:sse4_2 avx2 fma" \
            "Haswell:avx2 fma avx512f" "none:sse4_2 avx2" "none:"; do
    want=${case%%:*} cpu=${case#*:}
    MURMUR_BLAS_PRETEND_KERNEL=Prescott MURMUR_BLAS_PRETEND_CPU=$cpu one_peer "$tmp/cpu-$want"
    log=$tmp/cpu-$want/node-0/node.log
    if [ "$want" = none ]; then
        grep -q "re-execut" "$log" && { echo "FAIL: re-exec on a CPU without AVX2+FMA ('$cpu')"; cat "$log"; exit 1; }
    else
        line="OpenBLAS chose its generic Prescott kernel but this CPU supports $want: re-executed with OPENBLAS_CORETYPE=$want (MURMUR_NO_BLAS_FIX=1 disables this)"
        [ "$(grep -cF "$line" "$log")" -eq 1 ] ||
            { echo "FAIL: CPU '$cpu': the log does not say once: $line"; cat "$log"; exit 1; }
        [ "$(grep -c "re-execut" "$log")" -eq 1 ] || { echo "FAIL: re-exec loop for '$cpu'"; exit 1; }
    fi
    rm -rf "$tmp/cpu-$want"
done
echo "  every branch with a pretended CPU: SkylakeX, Haswell (twice), none (twice)"

# The re-exec played out (as if OpenBLAS had chosen Prescott): silent before
# help and usage errors, said once in train's log and in a peer's log.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
case " $flags " in
*" avx2 "*)
    export MURMUR_BLAS_PRETEND_KERNEL=Prescott
    for cmd in "train --help" "node --help" "generate --help" "train --width x" "node --id" \
        "generate --checkpoint $tmp/none.bin" "train --bogus"; do
        "$MURMUR" $cmd > "$tmp/quiet.log" 2>&1 || true
        if grep -q "OpenBLAS chose\|OpenBLAS kernel:\|re-execut" "$tmp/quiet.log"; then
            echo "FAIL: 'murmur $cmd' prints the OpenBLAS line:"; head -3 "$tmp/quiet.log"; exit 1
        fi
        [ -s "$tmp/quiet.log" ] || { echo "FAIL: 'murmur $cmd' printed nothing at all"; exit 1; }
    done
    train > "$tmp/pretend.log"
    [ "$(grep -c "re-executed with OPENBLAS_CORETYPE=" "$tmp/pretend.log")" -eq 1 ] ||
        { echo "FAIL: train's log does not say once that it re-executed"; cat "$tmp/pretend.log"; exit 1; }
    [ "$(kernel_of "$tmp/pretend.log")" != Prescott ] || { echo "FAIL: still Prescott after the re-exec"; exit 1; }
    "$MURMUR" node --id 0 --topology "$tmp/one.topo" --plaintext --data "$tmp/data" --run-dir "$tmp/peer" \
        --layers 1 --width 16 --heads 2 --ctx 8 --batch 2 --rounds 1 --eval-every 0 \
        --base-port "$(sh -c '. tests/e2e/lib.sh; free_ports 1' "$0")" > "$tmp/node.out" 2>&1 ||
        { echo "FAIL: one-peer node run"; cat "$tmp/node.out"; exit 1; }
    grep -q "re-executed with OPENBLAS_CORETYPE=" "$tmp/peer/node-0/node.log" ||
        { echo "FAIL: the peer's log does not say it re-executed"; cat "$tmp/peer/node-0/node.log"; exit 1; }
    unset MURMUR_BLAS_PRETEND_KERNEL
    echo "  played Prescott: nothing before help or usage errors; the re-exec said in train's and the peer's log" ;;
esac
echo "ok: native kernel $native, with the fix ${fixed}; user setting kept"
