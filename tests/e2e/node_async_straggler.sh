# --algo async: one peer stopped (SIGSTOP) for a while does not slow the
# others down; after SIGCONT it goes on, and everyone stops cleanly on
# SIGTERM. The run is open-ended (stopped by the test), so the measurement
# windows never run into its end however fast the machine is.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
run="$T/run"
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $run
       --algo async --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 1000000
       --eval-every 0 --checkpoint-every 0 --peer-timeout 3000 --start-timeout 10000 --log-every 100"
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
pids=""
for k in 0 1 2 3; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $flags > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    [ $k -eq 2 ] && p2=$!
done
i=0
while [ "$(rounds_of 0)" -lt 30 ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 300 ] || fail "no progress"; done
a=$(rounds_of 0); sleep 2; b=$(rounds_of 0)
before=$((b - a))
kill -STOP "$p2"
a=$(rounds_of 0); s2=$(rounds_of 2); sleep 2; b=$(rounds_of 0); s2b=$(rounds_of 2)
during=$((b - a))
kill -CONT "$p2"
note "peer 0: $before rounds in 2 s before, $during in 2 s while peer 2 was stopped (peer 2: $((s2b - s2)))"
[ "$s2b" -eq "$s2" ] || fail "peer 2 was not really stopped"
[ "$before" -gt 0 ] || fail "peer 0 made no progress before"
# On 2 shared cores the stopped peer frees CPU, so the others may even speed up.
[ $((during * 10)) -ge $((before * 7)) ] || fail "peer 0 slowed down: $before -> $during rounds per 2 s"
# The continued peer works again, then everyone stops cleanly.
a=$(rounds_of 2); sleep 1; b=$(rounds_of 2)
[ "$b" -gt "$a" ] || fail "peer 2 made no progress after SIGCONT"
kill -TERM $pids
wait_all $pids || fail "a peer exited non-zero on SIGTERM"
for k in 0 1 2 3; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | grep -q '"reason":"signal"' ||
        fail "peer $k did not end cleanly on SIGTERM"
done
echo "ok: async keeps going around a stopped peer"
