# Kill one of 4 peers (SIGKILL) mid-run: the other three go on and finish;
# the killed peer, restarted with --resume, continues from its checkpoint
# and its neighbours take it back.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
run="$T/run"
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $run
       --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 300 --eval-every 0
       --checkpoint-every 10 --round-timeout 1000 --peer-timeout 1500 --start-timeout 10000
       --log-every 50"
peer() { k=$1; shift; MURMUR_NO_BLAS_FIX=1 exec "$MURMUR" node --id "$k" $flags "$@" >> "$T/peer$k.out" 2>&1; }
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }

for k in 0 1 2 3; do peer $k & eval "p$k=\$!"; E2E_PIDS="$E2E_PIDS $!"; done

# Let peer 2 get past a checkpoint, then kill it without warning.
i=0
while [ "$(rounds_of 2)" -lt 25 ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 600 ] || fail "peer 2 made no progress"; done
kill -9 "$p2"
wait "$p2" 2>/dev/null || true
killed_at=$(rounds_of 2)
note "killed peer 2 after $killed_at rounds"
sleep 2
# The others keep going while it is gone.
r0=$(rounds_of 0); sleep 1; r1=$(rounds_of 0)
[ "$r1" -gt "$r0" ] || fail "peer 0 stalled while peer 2 was down ($r0 -> $r1 rounds)"

# Restart it: it resumes from its last checkpoint and rejoins.
peer 2 --resume & p2=$!; E2E_PIDS="$E2E_PIDS $p2"
wait_all "$p0" "$p1" "$p3" "$p2" || fail "a peer exited non-zero"

m2="$run/node-2/metrics.jsonl"
resumed=$(jfield "$m2" start resumed_round | tail -1)
[ "$resumed" -ge 10 ] || fail "peer 2 did not resume from a checkpoint (resumed_round=$resumed)"
[ "$resumed" -le "$killed_at" ] || fail "resumed at round $resumed, after the kill at $killed_at"
# Steps continue from the checkpoint: the first step after the restart is
# the checkpoint's step + 1, not 1.
first_step=$(awk '/"ev":"start"/ { n++ } n == 2 && /"ev":"round"/ { print; exit }' "$m2" |
    sed -n 's/.*"step":\([0-9]*\).*/\1/p')
[ "$first_step" -gt "$resumed" ] || fail "step restarted from scratch ($first_step)"
for k in 0 1 2 3; do
    last=$(jfield "$run/node-$k/metrics.jsonl" end round | tail -1)
    [ "$last" = 300 ] || fail "peer $k ended at round $last, not 300"
done
# Taken back: after the restart, peer 1 mixed peer 2's vector again.
back=$(awk '/"ev":"round"/ && /"nbrs":\[[0-9,]*2[],]/ { n++ } END { print n + 0 }' \
    "$run/node-1/metrics.jsonl")
[ "$back" -gt 25 ] || fail "peer 1 never mixed with the restarted peer 2 ($back rounds)"
missing=$(grep -c '"missing":\[[0-9,]*2' "$run/node-1/metrics.jsonl" || true)
note "peer 2 resumed at round $resumed (step $first_step); peer 1 mixed with it in $back rounds, missed it in $missing"
[ "$missing" -gt 0 ] || fail "peer 1 never noticed peer 2 was gone"
echo "ok: kill and resume"
