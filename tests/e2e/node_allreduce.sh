# --algo allreduce on a pure-gossip vector (--no-train --vector-len): for
# n = 3, 4, 7 and 8 peers, on the ring and (n a power of two) on the
# halving-doubling schedule, after round 0 every peer holds the same floats,
# bit for bit (snapshot r1), and they are the average of the n initial
# vectors (the r0 snapshots) to float rounding: within 1e-6 of the largest
# |x| of that float (od prints 8 significant digits; test_allreduce checks
# the engine to (n+1) float epsilons). A length n does not divide and a
# small --allreduce-chunk make many chunks per segment, and the round after
# checks it keeps going. The start line names the schedule auto picked.
# Then: peers started with different schedules refuse each other at the
# HELLO, naming both; halving on 3 peers is refused at start (exit 2).
. "$(dirname "$0")/lib.sh"
len=1001
for spec in 3:auto:ring 4:ring:ring 4:auto:halving 7:auto:ring 8:ring:ring 8:halving:halving; do
    n=${spec%%:*}; sched=${spec#*:}; want=${sched#*:}; sched=${sched%%:*}
    "$MURMUR" topo gen ring -n "$n" > "$T/ring$n.topo" 2>/dev/null
    port=$(free_ports "$n")
    run="$T/run$n$sched"; pids=""
    k=0
    while [ "$k" -lt "$n" ]; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring$n.topo" --base-port "$port" \
            --plaintext --algo allreduce --allreduce-chunk 37 --allreduce-schedule "$sched" \
            --no-train --vector-len $len \
            --rounds 2 --snapshot-every 1 --eval-every 0 --log-every 0 --run-dir "$run" \
            > "$T/p$n.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
        k=$((k + 1))
    done
    wait_all $pids || { cat "$T/p$n.0.out" >&2; fail "n=$n: a peer failed"; }
    floats() { od -An -v -tf4 -j32 -N$((4 * len)) "$run/node-$1/snap/r0000000$2.bin" | tr -s ' ' '\n' | grep -v '^$'; }
    bits() { od -An -v -tx4 -j32 -N$((4 * len)) "$run/node-$1/snap/r0000000$2.bin"; }
    k=0; : > "$T/r0.$n"
    while [ "$k" -lt "$n" ]; do
        floats $k 0 > "$T/f$k"
        for r in 1 2; do
            bits $k $r | cmp -s - "$T/bits$r.$n" 2>/dev/null ||
                { [ "$k" = 0 ] && bits 0 $r > "$T/bits$r.$n"; } ||
                fail "n=$n: peer $k's r$r differs from peer 0's"
        done
        k=$((k + 1))
    done
    k=1; cp "$T/f0" "$T/cols"
    while [ "$k" -lt "$n" ]; do paste "$T/cols" "$T/f$k" > "$T/cols2"; mv "$T/cols2" "$T/cols"; k=$((k + 1)); done
    floats 0 1 > "$T/avg"
    worst=$(paste "$T/cols" "$T/avg" | awk -v n="$n" '
        { s = 0; a = 0; for (i = 1; i <= n; i++) { s += $i; v = $i < 0 ? -$i : $i; if (v > a) a = v }
          d = $(n + 1) - s / n; if (d < 0) d = -d; if (d / (a + 1e-30) > w) w = d / (a + 1e-30); c++ }
        END { if (c != '"$len"') print "lines:" c; else printf "%.3g\n", w }')
    note "n=$n, --allreduce-schedule $sched ($want): r1 and r2 bit-identical on all $n peers; r1 vs mean(r0): largest relative error $worst"
    awk -v w="$worst" 'BEGIN { exit !(w + 0 == w && w < 1e-6) }' || fail "n=$n $sched: r1 is not the average of the r0 ($worst)"
    grep -q '"t_allreduce"' "$run/node-0/metrics.jsonl" || fail "n=$n: no t_allreduce in the round lines"
    grep -q "\"allreduce_schedule\":\"$want\"" "$run/node-0/metrics.jsonl" ||
        fail "n=$n --allreduce-schedule $sched: the start line does not say $want"
done
echo "ok: allreduce gives the exact average on n = 3, 4, 7, 8 peers, ring and halving"

# Two peers that run different schedules: each refuses the other's HELLO,
# both schedules named, and neither gets past round 0 (--start-timeout).
n=4; port=$(free_ports $n); run="$T/mixed"; pids=""; k=0
while [ "$k" -lt "$n" ]; do
    s=halving; [ "$k" = 1 ] && s=ring
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring4.topo" --base-port "$port" \
        --plaintext --algo allreduce --allreduce-schedule $s --no-train --vector-len $len \
        --rounds 2 --start-timeout 3000 --eval-every 0 --log-every 0 --run-dir "$run" \
        > "$T/mixed.$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    k=$((k + 1))
done
wait_all $pids && fail "peers with different --allreduce-schedule all finished"
grep -h "algorithm differs" "$T"/mixed.*.out | head -2 | sed 's/^/  /'
# (which side's words a peer logs depends on who dialled whom first:
# peer 1 may be refused by peer 0 before it dials 2 and 3, so either order)
grep -hE "algorithm differs: peer [0-9] runs allreduce \((ring|halving) schedule\), peer [0-9] runs allreduce \((ring|halving) schedule\)" \
    "$T"/mixed.*.out | grep "ring schedule" | grep -q "halving schedule" ||
    fail "no refusal naming both schedules"
echo "ok: peers with different all-reduce schedules refuse each other, naming both"

# halving needs a power of two of peers: refused at start, exit 2
set +e
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 --topology "$T/ring3.topo" --base-port "$(free_ports 3)" \
    --plaintext --algo allreduce --allreduce-schedule halving --no-train --vector-len $len \
    --rounds 2 --eval-every 0 --log-every 0 --run-dir "$T/odd" > "$T/odd.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$T/odd.out" >&2; fail "halving on 3 peers exited $rc, not 2"; }
grep -q "needs a power of two of peers, not 3" "$T/odd.out" || fail "halving on 3 peers: no reason given"
set +e
"$MURMUR" node --id 0 --topology "$T/ring3.topo" --plaintext --algo allreduce --allreduce-schedule halving \
    --dry-run > "$T/odd-dry.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$T/odd-dry.out" >&2; fail "--dry-run of halving on 3 peers exited $rc, not 2"; }
grep -q "needs a power of two of peers, not 3" "$T/odd-dry.out" || fail "--dry-run: no reason given"
echo "ok: --allreduce-schedule halving on 3 peers is refused (exit 2), at start and by --dry-run"

# Isolation (docs/node.md, "Isolation and refused neighbours") sees an
# all-reduce as mixing with both ring neighbours every round: peer 0's end
# line counts 16 exchanges mixed for peers 1 and 2, and a run longer than
# the isolation limit (max(--start-timeout, --peer-timeout +
# --round-timeout): 2 s here) ends `done`, exit 0.
n=3; port=$(free_ports $n); run="$T/long"; pids=""; k=0
while [ "$k" -lt "$n" ]; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring3.topo" --base-port "$port" \
        --plaintext --algo allreduce --no-train --vector-len $len --rounds 16 \
        --compute-jitter uniform:0.4 --jitter-seed 1 --start-timeout 1000 --peer-timeout 1000 \
        --round-timeout 1000 --eval-every 0 --log-every 0 --run-dir "$run" > "$T/long.$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    k=$((k + 1))
done
wait_all $pids || { cat "$T/long.0.out" >&2; fail "a 3-peer all-reduce run longer than the isolation limit failed"; }
secs=$(jfield "$run/node-0/metrics.jsonl" end time)
end=$(grep '"ev":"end"' "$run/node-0/metrics.jsonl")
note "a ${secs} s all-reduce run, isolation limit 2 s: $(echo "$end" | grep -o '"reason":"[a-z]*"') $(echo "$end" | grep -o '"mixed":{[^}]*}')"
echo "$end" | grep -q '"reason":"done"' || fail "the long run did not end done"
echo "$end" | grep -q '"mixed":{"1":16,"2":16}' || fail "peer 0 did not count its 16 all-reduces as mixing with peers 1 and 2"
awk -v s="$secs" 'BEGIN { exit !(s > 2) }' || fail "the long run took only $secs s: not longer than the limit"
echo "ok: an all-reduce mixes with the ring neighbours every round, and a long run is not isolated"
