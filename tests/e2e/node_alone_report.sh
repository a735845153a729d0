# A peer that mixed at first and then mixed with nobody for longer than its
# isolation limit ends `done` (it did finish its rounds), but says so
# (issue 34): a WARN line `alone: ...`, the end line's rounds_alone and
# longest_alone_s above alone_limit_s, and `murmur report` marks it ALONE.
# A chain of two, pure gossip; peer 0 is SIGKILLed after 100 rounds and peer
# 1 runs its remaining rounds alone (the isolation limit here:
# max(--start-timeout, --peer-timeout + --round-timeout) = 1.5 s).
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/chain.topo" 2>/dev/null
port=$(free_ports 2)
run="$T/run"
flags="--topology $T/chain.topo --base-port $port --plaintext --no-train --vector-len 1000
       --rounds 1500 --compute-jitter uniform:0.006 --start-timeout 1500 --peer-timeout 1000
       --round-timeout 500 --log-every 0 --eval-every 0 --run-dir $run"
for k in 0 1; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $flags > "$T/peer$k.out" 2>&1 &
    E2E_PIDS="$E2E_PIDS $!"; eval "p$k=\$!"
done
m1=$run/node-1/metrics.jsonl
round_of() { tail -c 65536 "$m1" 2>/dev/null | grep '"ev":"round"' | tail -1 | sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | grep . || echo 0; }
i=0
while [ "$(round_of)" -lt 100 ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 300 ] || fail "peer 1 did not reach round 100 in 30 s"; done
grep -q '"ev":"round".*"nbrs":\[0\]' "$m1" || fail "peer 1 never mixed peer 0 in its first 100 rounds"
kill -9 "$p0"
i=0
while kill -0 "$p1" 2>/dev/null; do sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || fail "peer 1 did not finish its 1500 rounds within 60 s of peer 0's death"; done
wait "$p1" || fail "peer 1 exited $? (a peer alone after mixing ends done, status 0)"
grep '"ev":"end"' "$m1" | grep -q '"reason":"done"' || fail "peer 1's end line is not done: $(grep '"ev":"end"' "$m1" | cut -c1-200)"
alone=$(jfield "$m1" end rounds_alone); with=$(jfield "$m1" end rounds_with_nbrs)
longest=$(jfield "$m1" end longest_alone_s); limit=$(jfield "$m1" end alone_limit_s)
[ -n "$alone" ] && [ -n "$longest" ] && [ -n "$limit" ] || fail "the end line does not say how long peer 1 was alone"
[ "$alone" -ge 100 ] || fail "peer 1 counted only $alone rounds alone of $with"
awk -v a="$longest" -v l="$limit" 'BEGIN { exit !(a > l) }' || fail "longest alone $longest s is not above the limit $limit s"
grep -q "WARN.*alone: this peer mixed with none of its neighbours for" "$T/peer1.out" ||
    fail "no WARN line says peer 1 was alone (its log's end: $(tail -3 "$T/peer1.out"))"
"$MURMUR" report "$run" > "$T/report.txt" 2>&1 || true
grep -q "^node-1 .*ALONE $alone of $with rounds" "$T/report.txt" || fail "the report's node-1 row does not say ALONE: $(grep '^node-1' "$T/report.txt")"
grep -q "^ALONE: 1 peer mixed with none of its neighbours" "$T/report.txt" || fail "the report has no ALONE line under its table"
note "peer 1 alone in $alone of $with rounds, longest $longest s (limit $limit s); the report says ALONE"
echo "ok: a peer alone after mixing says so"
