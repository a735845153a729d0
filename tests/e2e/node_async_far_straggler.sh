# --algo async: a neighbour far behind is a straggler, not an attacker
# (issue 27, fault 5). Peer 1 of a chain 0-1-2 is SIGSTOPped until peer 0
# is more than 1500 exchanges ahead of it (beyond the round window of 1000
# that dpsgd and pushsum keep, docs/protocol.md "Rounds"), then continued.
# Its neighbours must not refuse its vectors nor it theirs (bad_round 0 on
# every peer), nobody may see an id clash, peer 1 must mix its neighbours
# again after it was continued, and everyone stops cleanly on SIGTERM.
# Pure gossip (--no-train), so rounds are fast even on a loaded machine.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 3 > "$T/chain.topo" 2>/dev/null
port=$(free_ports 3)
run="$T/run"
flags="--topology $T/chain.topo --base-port $port --plaintext --no-train --vector-len 1000
       --algo async --rounds 100000000 --peer-timeout 3000 --start-timeout 10000
       --log-every 0 --run-dir $run"
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
pids=""
for k in 0 1 2; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $flags > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    [ $k -eq 1 ] && p1=$!
done
i=0
while [ "$(rounds_of 1)" -lt 50 ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 600 ] || fail "no progress"; done
kill -STOP "$p1"
s1=$(rounds_of 1)
i=0
while [ $(( $(rounds_of 0) - s1 )) -lt 1500 ] || [ $(( $(rounds_of 2) - s1 )) -lt 1500 ]; do
    sleep 0.2; i=$((i + 1)); [ $i -lt 600 ] || { kill -CONT "$p1"; fail "peers 0 and 2 did not get 1500 rounds ahead in 120 s"; }
done
gap=$(( $(rounds_of 0) - s1 ))
kill -CONT "$p1"
line=$(wc -l < "$run/node-1/metrics.jsonl")
# peer 1 mixes both neighbours again (their vectors are newer than its round: fresh)
i=0
until [ "$(awk -v f="$line" 'NR > f && /"ev":"round"/ && /"nbrs":\[0,2\]/ { n++ } END { print n + 0 }' "$run/node-1/metrics.jsonl")" -ge 20 ]; do
    sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || fail "peer 1 did not mix both neighbours again after SIGCONT"
done
kill -TERM $pids
wait_all $pids || fail "peers did not stop cleanly (exit status above)"
for k in 0 1 2; do
    mf=$run/node-$k/metrics.jsonl
    b=$(jfield "$mf" end bad_round); c=$(jfield "$mf" end id_clash)
    [ "${b:-0}" = 0 ] || fail "peer $k refused $b vectors for their round ($(grep -m1 'outside the window' "$T/peer$k.out"))"
    [ "${c:-0}" = 0 ] || fail "peer $k saw $c id clashes"
done
note "peer 1 stopped $gap rounds behind peer 0; after SIGCONT it mixed both neighbours again, bad_round 0, id_clash 0"
echo "ok: an async straggler far behind is not refused"
