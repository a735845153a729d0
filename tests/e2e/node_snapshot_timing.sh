# Snapshot timing (docs/metrics.md): r0 is the initial vector, rN the state
# after N rounds, before round N's mix. Two peers on a chain of 2 average
# with weights 1/2: each one's r1 must be the mean of the two r0 (so r0 is
# the vector before any mix and r1 the one after round 0's), and r2 the
# mean of the two r1 (which agree by then).
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/pair.topo" 2>/dev/null
port=$(free_ports 2)
pids=""
for k in 0 1; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/pair.topo" --base-port "$port" --plaintext \
        --no-train --vector-len 64 --rounds 2 --snapshot-every 1 --eval-every 0 --log-every 0 \
        --run-dir "$T/run" > "$T/p$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
wait_all $pids || fail "a peer failed"
floats() { od -An -v -tf4 -j32 -N256 "$T/run/node-$1/snap/r0000000$2.bin" | tr -s ' ' '\n' | grep -v '^$'; }
for r in 0 1 2; do for k in 0 1; do floats $k $r > "$T/f$k.$r"; done; done
# check R R+1: the largest distance of each peer's r(R+1) from the mean of
# the two r(R), relative to the larger of those two (od prints 7-8 digits)
check() {
    paste "$T/f0.$1" "$T/f1.$1" "$T/f0.$2" "$T/f1.$2" | awk '
        { m = ($1 + $2) / 2; for (i = 3; i <= 4; i++) { d = $i - m; if (d < 0) d = -d
          a = $1 < 0 ? -$1 : $1; b = $2 < 0 ? -$2 : $2; s = (a > b ? a : b) + 1e-30
          if (d / s > worst) worst = d / s } }
        END { printf "%.3g\n", worst }'
}
w01=$(check 0 1); w12=$(check 1 2)
same=$(paste "$T/f0.0" "$T/f0.1" | awk '$1 == $2 { n++ } END { print n + 0 }')
note "largest relative error: r1 vs mean(r0) $w01, r2 vs mean(r1) $w12; r0 = r1 in $same of 64 floats"
awk -v a="$w01" -v b="$w12" 'BEGIN { exit !(a < 1e-5 && b < 1e-5) }' || fail "rN+1 is not the mix of the rN"
[ "$same" -lt 8 ] || fail "r1 equals r0: the snapshot of round 1 was taken before round 0's mix"
echo "ok: r0 is the initial vector, rN the state after N rounds"
