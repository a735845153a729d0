#!/bin/sh
# The OpenBLAS kernel fix (node/blas_env.c): with OPENBLAS_CORETYPE unset,
# a murmur command whose OpenBLAS fell back to the generic Prescott kernel on
# a CPU with AVX2/AVX-512 re-executes itself with the better kernel and says
# so; a user's OPENBLAS_CORETYPE is kept; MURMUR_NO_BLAS_FIX=1 disables the
# fix; a stray re-exec marker cannot cause a loop.
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
grep -q "re-executing" "$tmp/native.log" && { echo "FAIL: re-exec despite MURMUR_NO_BLAS_FIX=1"; exit 1; }

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
    grep -q "re-executing with OPENBLAS_CORETYPE=$expect" "$tmp/fixed.log" ||
        { echo "FAIL: no re-exec line for $expect"; cat "$tmp/fixed.log"; exit 1; }
    [ "$(grep -c "re-executing" "$tmp/fixed.log")" -eq 1 ] || { echo "FAIL: re-exec loop"; exit 1; }
    [ "$fixed" = "$expect" ] || { echo "FAIL: kernel $fixed after the fix, wanted $expect"; exit 1; }
else
    grep -q "re-executing" "$tmp/fixed.log" && { echo "FAIL: re-exec although $native is fine"; exit 1; }
    [ "$fixed" = "$native" ] || { echo "FAIL: kernel changed to $fixed"; exit 1; }
fi

# The user's choice wins, even a slower one.
OPENBLAS_CORETYPE=Prescott train >"$tmp/user.log"
grep -q "re-executing" "$tmp/user.log" && { echo "FAIL: overrode the user's OPENBLAS_CORETYPE"; exit 1; }
[ "$(kernel_of "$tmp/user.log")" = Prescott ] || { echo "FAIL: user's kernel not kept"; cat "$tmp/user.log"; exit 1; }

# A marker inherited without a kernel set must not re-exec (loop guard).
MURMUR_BLAS_REEXEC=1 train >"$tmp/mark.log"
grep -q "re-executing" "$tmp/mark.log" && { echo "FAIL: re-exec with the marker set"; exit 1; }
echo "ok: native kernel $native, with the fix ${fixed}; user setting kept"
