# A peer written from docs/protocol.md alone (tests/tools/wire_peer) streams
# its compressed q in chunks of its own choice, as 3.2 allows any dense
# codec to (fp32 included): 999-float chunks of fp32 and 1000-float chunks
# of int8:8 of a 5,000-float vector, far below the 131,072 at which murmur
# itself streams. The murmur peer must take every stream: no refusal, its
# copy of the hand-made peer never diverged or ignored, and that peer mixed
# in (nearly) every round. Before, it refused the first chunk (`bad
# length: floats 0..+999 of a 5000-float vector (only whole vectors on
# this connection)`) and the outside peer was redialled every round.
. "$(dirname "$0")/lib.sh"
WIRE_PEER=${WIRE_PEER:-$ROOT/${BUILD:-build}/tests/tools/wire_peer}
[ -x "$WIRE_PEER" ] || fail "$WIRE_PEER is not built (make build-tests)"
printf 'peers 2\n0 1\n' > "$T/two.topo"
rounds=12
for case in fp32:999 int8:8:1000; do
    codec=${case%:*} chunk=${case##*:}
    port=$(free_ports 2)
    run=$T/run-$chunk
    flags="--topology $T/two.topo --base-port $port --plaintext --no-train --vector-len 5000
           --compress $codec --rounds $rounds"
    # the settings the HELLO carries (docs/protocol.md 3.1), as the node says them
    "$MURMUR" node --id 0 $flags --dry-run | sed '1,/settings every peer must share:/d' > "$T/settings"
    grep -q "^compress=$codec" "$T/settings" || { cat "$T/settings" >&2; fail "--dry-run does not print the settings"; }
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 1 $flags \
        --run-dir "$run" --eval-every 0 --checkpoint-every 0 --log-every 0 \
        --start-timeout 10000 --round-timeout 10000 --peer-timeout 10000 > "$T/node-$chunk.out" 2>&1 &
    pid=$!; E2E_PIDS="$E2E_PIDS $pid"
    st=0
    timeout 60 "$WIRE_PEER" "127.0.0.1:$((port + 1))" "$T/two.topo" 5000 "$codec" "$chunk" $rounds \
        "$T/settings" > "$T/peer-$chunk.out" 2>&1 || st=$?
    nst=0; wait $pid || nst=$?
    [ $st = 0 ] || { cat "$T/peer-$chunk.out" "$T/node-$chunk.out" >&2;
                     fail "$codec in chunks of $chunk: the hand-made peer exited $st"; }
    [ $nst = 0 ] || { cat "$T/node-$chunk.out" >&2; fail "$codec in chunks of $chunk: murmur exited $nst"; }
    m=$run/node-1/metrics.jsonl
    end=$(grep '"ev":"end"' "$m")
    for k in refused copies_diverged copies_ignored; do
        v=$(jfield "$m" end $k)
        [ "$v" = 0 ] || { echo "$end" >&2; fail "$codec in chunks of $chunk: $k is $v, not 0"; }
    done
    [ "$(jfield "$m" end resets_recv)" -ge 1 ] || fail "$codec: no RESET taken"
    mixed=$(grep -c '"ev":"round".*"nbrs":\[0\]' "$m" || true)
    [ "$mixed" -ge $((rounds - 1)) ] ||
        { grep '"ev":"round"' "$m" >&2; fail "$codec in chunks of $chunk: peer 0 mixed in $mixed of $rounds rounds"; }
    note "$codec in chunks of $chunk: $(cat "$T/peer-$chunk.out"); mixed in $mixed of $rounds rounds, no refusal"
done
echo "ok: a stream of small chunks from an outside peer is taken"
