# The outer optimizer over gossip survives a SIGKILL (docs/outer.md,
# "Faults"): 4 peers on a ring, --outer nesterov, H = 4. Peer 2 is killed
# mid-run; its neighbours count it missing (its weight back to self) and
# go on taking outer steps; restarted with --resume, it starts from the
# checkpoint's outer state exactly: its start line's outer_sha256 (outer
# parameters then momentum) and outer_step equal those of the checkpoint
# file as it was at the kill (read from the file's outer block,
# docs/formats.md). The run is open-ended and stopped by SIGTERM: every
# peer exits 0.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
port=$(free_ports 4)
run="$T/run"
flags="--topology $T/ring.topo --base-port $port --plaintext --data $T/data --run-dir $run
       --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 1000000 --eval-every 0
       --outer nesterov --local-steps 4 --outer-momentum 0.9 --outer-momentum-warmup 3
       --checkpoint-every 5 --round-timeout 1000 --peer-timeout 1500 --start-timeout 10000
       --log-every 500"
peer() { k=$1; shift; MURMUR_NO_BLAS_FIX=1 exec "$MURMUR" node --id "$k" $flags "$@" >> "$T/peer$k.out" 2>&1; }
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
wait_for() { # wait_for CMD...: up to 120 s
    i=0; until "$@"; do sleep 0.1; i=$((i + 1)); [ $i -lt 1200 ] || return 1; done
}

for k in 0 1 2 3; do peer $k --resume & eval "p$k=\$!"; E2E_PIDS="$E2E_PIDS $!"; done
wait_for sh -c "[ \$(awk '/\"ev\":\"round\"/ { n++ } END { print n + 0 }' '$run/node-2/metrics.jsonl' 2>/dev/null || echo 0) -ge 12 ]" ||
    fail "peer 2 made no progress"
kill -9 "$p2"
wait "$p2" 2>/dev/null || true
cp "$run/node-2/checkpoint.bin" "$T/at-kill.bin"
killed_at=$(rounds_of 2)

# The checkpoint's outer block: after the 200-byte header and the
# parameters and AdamW's two moments (3 P floats), an int64 outer step, 8
# bytes of 0, then the outer parameters and momentum (2 P floats).
P=$(jfield "$run/node-2/metrics.jsonl" start params | head -1)
off=$((200 + 12 * P))
ver=$(od -An -tu4 -j8 -N4 "$T/at-kill.bin" | tr -d ' ')
[ "$ver" = 2 ] || fail "the checkpoint is format version $ver, not 2"
ck_step=$(od -An -td8 -j$off -N8 "$T/at-kill.bin" | tr -d ' ')
ck_sum=$(tail -c +$((off + 16 + 1)) "$T/at-kill.bin" | head -c $((8 * P)) | sha256sum | cut -d' ' -f1)
note "killed peer 2 after $killed_at rounds; its checkpoint holds outer step $ck_step"

# Its neighbours go on without it, its weight back to self.
r0=$(rounds_of 1); sleep 1; r1=$(rounds_of 1)
[ "$r1" -gt "$r0" ] || fail "peer 1 stalled while peer 2 was down ($r0 -> $r1 rounds)"
missing=$(grep -c '"missing":\[[0-9,]*2' "$run/node-1/metrics.jsonl" || true)
[ "$missing" -gt 0 ] || fail "peer 1 never counted peer 2 missing"
grep '"ev":"round"' "$run/node-1/metrics.jsonl" | tail -1 | grep -q '"outer_mu":0\.8999' ||
    fail "peer 1's outer steps stopped (or lost their momentum) without peer 2"

m1=$(wc -l < "$run/node-1/metrics.jsonl")
peer 2 --resume & p2=$!; E2E_PIDS="$E2E_PIDS $p2"
wait_for sh -c "[ \$(awk -v f=$m1 'NR > f && /\"ev\":\"round\"/ && /\"nbrs\":\\[[0-9,]*2[],]/ { c++ } END { print c + 0 }' '$run/node-1/metrics.jsonl') -ge 10 ]" ||
    fail "peer 1 did not take the restarted peer 2 back"
kill -TERM "$p0" "$p1" "$p2" "$p3"
wait_all "$p0" "$p1" "$p3" "$p2" || fail "a peer did not exit 0 on SIGTERM"

start=$(grep '"ev":"start"' "$run/node-2/metrics.jsonl" | tail -1)
got_sum=$(echo "$start" | sed -n 's/.*"outer_sha256":"\([0-9a-f]*\)".*/\1/p')
got_step=$(echo "$start" | sed -n 's/.*"outer_step":\([0-9]*\).*/\1/p')
resumed=$(echo "$start" | sed -n 's/.*"resumed_round":\([0-9]*\).*/\1/p')
[ "$got_step" = "$ck_step" ] || fail "resumed at outer step $got_step, the checkpoint holds $ck_step"
[ "$got_sum" = "$ck_sum" ] || fail "the resumed outer state ($got_sum) is not the checkpoint's ($ck_sum)"
[ "$resumed" -ge 5 ] && [ "$resumed" -le "$killed_at" ] || fail "resumed at round $resumed (killed at $killed_at)"
for k in 0 1 2 3; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | tail -1 | grep -q '"reason":"signal"' ||
        fail "peer $k did not end cleanly"
done
note "peer 2 resumed at round $resumed, outer step $got_step, outer state = the checkpoint's (sha256 ${got_sum%????????????????????????????????????????????????????????}...); peer 1 counted it missing in $missing rounds"
echo "ok: kill and resume with the outer optimizer"
