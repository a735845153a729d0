# A peer with another model is refused at the handshake, with a message
# saying what differs; the others go on. Peer 3 differs only in its number
# of heads: the same parameter count, so only the fingerprint can tell.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $T/run
       --layers 2 --width 32 --ctx 32 --batch 8 --rounds 40 --eval-every 0 --checkpoint-every 0
       --round-timeout 1000 --peer-timeout 2000 --start-timeout 3000"
pids=""
for k in 0 1 2 3; do
    heads=2; [ $k -eq 3 ] && heads=4
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $flags --heads $heads > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
wait_all $pids || fail "a peer exited non-zero"
grep -qi 'fingerprint' "$T/peer0.out" "$T/peer2.out" || fail "no log line names the fingerprint mismatch"
for k in 0 2; do
    mixed=$(grep -c '"nbrs":\[[0-9,]*3' "$T/run/node-$k/metrics.jsonl" || true)
    [ "$mixed" -eq 0 ] || fail "peer $k mixed the foreign model's vector $mixed times"
    end=$(jfield "$T/run/node-$k/metrics.jsonl" end round)
    [ "$end" = 40 ] || fail "peer $k stopped at round $end"
done
both=$(grep -c '"nbrs":\[0,2\]\|"nbrs":\[2,0\]' "$T/run/node-1/metrics.jsonl" || true)
[ "$both" -ge 30 ] || fail "peer 1 lost its honest neighbours ($both rounds with both)"
note "$(grep -hi 'fingerprint' "$T/peer0.out" "$T/peer2.out" | head -1 | cut -c1-160)"
echo "ok: a peer with another model is refused"
