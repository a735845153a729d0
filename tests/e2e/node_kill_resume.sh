# Kill one of 4 peers (SIGKILL) mid-run: the other three go on; the killed
# peer, restarted with --resume, continues from its checkpoint and its
# neighbours take it back. All four start with --resume and no checkpoint
# (a fresh start, said), as a launcher that restarts crashed peers would. The run is open-ended and stopped by the test
# (SIGTERM: every peer must exit 0), so no check races the end of the run
# however fast the machine is.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
run="$T/run"
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $run
       --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 1000000 --eval-every 0
       --checkpoint-every 10 --round-timeout 1000 --peer-timeout 1500 --start-timeout 10000
       --log-every 500"
peer() { k=$1; shift; MURMUR_NO_BLAS_FIX=1 exec "$MURMUR" node --id "$k" $flags "$@" >> "$T/peer$k.out" 2>&1; }
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
# mixed_with FILE PEER FROM_LINE: rounds after line FROM in which PEER was mixed
mixed_with() { awk -v f="$3" -v p="$2" 'NR > f && /"ev":"round"/ {
    s = $0; sub(/.*"nbrs":\[/, "", s); sub(/\].*/, "", s); n = split(s, a, ",")
    for (i = 1; i <= n; i++) if (a[i] == p) { c++; break } } END { print c + 0 }' "$1"; }
wait_for() { # wait_for CMD...: up to 60 s
    i=0; until "$@"; do sleep 0.1; i=$((i + 1)); [ $i -lt 600 ] || return 1; done
}

# Started as a launcher restarting crashed peers would start them, with
# --resume from the first: no checkpoint yet is a fresh start, said.
for k in 0 1 2 3; do peer $k --resume & eval "p$k=\$!"; E2E_PIDS="$E2E_PIDS $!"; done

for k in 0 1 2 3; do
    wait_for grep -q "no checkpoint at .*node-$k/checkpoint.bin, starting fresh" "$T/peer$k.out" ||
        fail "peer $k: --resume without a checkpoint did not start fresh, saying so"
done
# Let peer 2 get past a checkpoint, then kill it without warning.
wait_for sh -c "[ \$(awk '/\"ev\":\"round\"/ { n++ } END { print n + 0 }' '$run/node-2/metrics.jsonl') -ge 25 ]" ||
    fail "peer 2 made no progress"
kill -9 "$p2"
wait "$p2" 2>/dev/null || true
killed_at=$(rounds_of 2)
note "killed peer 2 after $killed_at rounds"
# The others keep going while it is gone.
r0=$(rounds_of 0); sleep 1; r1=$(rounds_of 0)
[ "$r1" -gt "$r0" ] || fail "peer 0 stalled while peer 2 was down ($r0 -> $r1 rounds)"
missing=$(grep -c '"missing":\[[0-9,]*2' "$run/node-1/metrics.jsonl" || true)
[ "$missing" -gt 0 ] || fail "peer 1 never noticed peer 2 was gone"

# Restart it: it resumes from its last checkpoint and rejoins.
m1=$(wc -l < "$run/node-1/metrics.jsonl")
peer 2 --resume & p2=$!; E2E_PIDS="$E2E_PIDS $p2"
wait_for sh -c "[ \$(awk -v f=$m1 'NR > f && /\"ev\":\"round\"/ && /\"nbrs\":\\[[0-9,]*2[],]/ { c++ } END { print c + 0 }' '$run/node-1/metrics.jsonl') -ge 25 ]" ||
    fail "peer 1 did not take the restarted peer 2 back"
back=$(mixed_with "$run/node-1/metrics.jsonl" 2 "$m1")

kill -TERM "$p0" "$p1" "$p2" "$p3"
wait_all "$p0" "$p1" "$p3" "$p2" || fail "a peer did not exit 0 on SIGTERM"

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
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | tail -1 | grep -q '"reason":"signal"' ||
        fail "peer $k did not end cleanly"
done
note "peer 2 resumed at round $resumed (step $first_step); peer 1 missed it in $missing rounds, then mixed with it again in $back"
echo "ok: kill and resume"
