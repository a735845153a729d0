# A peer with another model is refused at the handshake, with a message
# saying what differs; the others go on. Peer 3 differs only in its number
# of heads: the same parameter count, so only the fingerprint can tell.
# The run was misconfigured, and the peers on either side of the refused
# links say so at the end: status 3, reason `refused` (docs/node.md).
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $T/run
       --layers 2 --width 32 --ctx 32 --batch 8 --rounds 40 --eval-every 0 --checkpoint-every 0
       --round-timeout 1000 --peer-timeout 2000 --start-timeout 3000"
for k in 0 1 2 3; do
    heads=2; [ $k -eq 3 ] && heads=4
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $flags --heads $heads > "$T/peer$k.out" 2>&1 &
    eval "pid$k=$!"; E2E_PIDS="$E2E_PIDS $!"
done
for k in 0 1 2 3; do
    st=0; eval "wait \$pid$k" || st=$?
    want=3; [ $k -eq 1 ] && want=0
    [ $st -eq $want ] || { cat "$T/peer$k.out" >&2; fail "peer $k exited $st, not $want"; }
done
grep -qi 'fingerprint' "$T/peer0.out" "$T/peer2.out" || fail "no log line names the fingerprint mismatch"
for k in 0 2; do
    grep -q "ERROR: refused: peer 3: model fingerprint differs" "$T/peer$k.out" ||
        fail "peer $k does not name peer 3's other model at the end"
    grep '"ev":"end"' "$T/run/node-$k/metrics.jsonl" | grep -q '"reason":"refused","stopped":"done".*"refusals":{"3":"bad_fingerprint"}' ||
        fail "peer $k's end line does not name the refused neighbour"
done
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
