# The last round of an all-reduce survives the peers' goodbyes on a slow
# link. A peer that has sent its last chunks (handed to the kernel, so
# reported sent) ends its run, says BYE and closes; its right neighbour may
# still be receiving those chunks through a shaped uplink. Closing a socket
# with unread bytes in it (the neighbour's PINGs) makes the kernel send a
# RST that drops what was sent but not yet delivered, and the neighbour's
# last round failed ("peer P went down ... all-gather"); in 4 runs of 5
# here before the fix. Now a graceful close lingers, reading and dropping,
# until the other side closes (docs/protocol.md 4). 4 peers on
# 2x2:intra=200mbit,inter=20mbit, 3 rounds of a 1 MB vector, a long-tail
# jitter so that peers end at different times, PINGs every 250 ms
# (--peer-timeout 1000); 5 runs (jitter seeds 1..5), every peer must exit 0.
# Needs root and iproute2, as the other lab tests.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
. "$ROOT/tests/e2e/lib/lab.sh"
lab_up ae 4 --profile 2x2:intra=200mbit,inter=20mbit
export MURMUR_NO_BLAS_FIX=1
port=$(free_ports 1)
k=0; while [ $k -lt 4 ]; do echo "$k $(sh "$lab" addr "$tag" $k):$port"; k=$((k + 1)); done > "$T/hosts"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
for seed in 1 2 3 4 5; do
    pids=""
    for k in 0 1 2 3; do
        sh "$lab" exec "$tag" "$k" "$MURMUR" node --hosts "$T/hosts" --id "$k" --topology "$T/ring.topo" \
            --plaintext --algo allreduce --no-train --vector-len 250000 --rounds 3 \
            --compute-jitter longtail:0.5:0.3 --jitter-seed $seed --peer-timeout 1000 \
            --eval-every 0 --checkpoint-every 0 --log-every 0 --run-dir "$T/run$seed" \
            > "$T/p$seed.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || { grep -h "ERROR" "$T"/p$seed.*.out >&2; fail "jitter seed $seed: a peer's last all-reduce failed"; }
done
echo "ok: 5 all-reduce runs on a 20mbit uplink end cleanly, last round included"
