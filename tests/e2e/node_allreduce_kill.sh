# --algo allreduce is synchronous: a peer killed (SIGKILL) mid all-reduce
# ends the run for everyone. 4 training peers on tiny data, checkpoints
# every 5 rounds; peer 2 is killed after its second checkpoint. Every other
# peer must exit non-zero within 15 s (no hang), say why in its log naming a
# peer and the step ("all-reduce failed: peer P went down / left ... step
# S of 6" on the ring, "of 4" on halving-doubling; the first to fail, one
# of peer 2's partners, names peer 2), end its metrics with reason
# "allreduce" and that error, and keep its last periodic checkpoint whole:
# murmur generate loads it, and no temp file is left beside it; its error
# line names that checkpoint's round. Once with each schedule: the ring
# (peer 2's partners 1 and 3) and halving (0 and 3); then the ring again
# without periodic checkpoints, where every peer must say that none was
# written yet (not that "the last checkpoint is kept") and leave none.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
for spec in ring:6:1:3:5 halving:4:0:3:5 ring:6:1:3:0; do
sched=${spec%%:*}; rest=${spec#*:}; steps=${rest%%:*}; rest=${rest#*:}; pa=${rest%%:*}; rest=${rest#*:}
pb=${rest%%:*}; every=${rest#*:}
port=$(free_ports 4)
run="$T/run-$sched-$every"
for k in 0 1 2 3; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --base-port "$port" \
        --plaintext --algo allreduce --allreduce-schedule $sched \
        --data "$T/data" --run-dir "$run" --layers 2 --width 32 \
        --heads 2 --ctx 32 --batch 8 --rounds 1000000 --eval-every 0 --checkpoint-every $every \
        --round-timeout 3000 --peer-timeout 3000 --log-every 0 > "$T/peer$k.out" 2>&1 &
    eval "p$k=\$!"; E2E_PIDS="$E2E_PIDS $!"
done
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$run/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
i=0
until [ "$(rounds_of 2)" -ge 12 ]; do
    sleep 0.1; i=$((i + 1)); [ $i -lt 600 ] || fail "peer 2 made no progress in 60 s"
done
kill -9 "$p2"
t0=$(date +%s)
note "killed peer 2 after $(rounds_of 2) rounds"
for k in 0 1 3; do
    eval "p=\$p$k"
    # bounded: each must be gone within 15 s
    j=0; while kill -0 "$p" 2>/dev/null; do
        sleep 0.1; j=$((j + 1)); [ $j -lt 150 ] || fail "peer $k still running 15 s after the kill"
    done
    if wait "$p"; then fail "peer $k exited 0 after its ring lost peer 2"; fi
done
note "peers 0, 1, 3 exited non-zero within $(( $(date +%s) - t0 )) s"
for k in 0 1 3; do
    line=$(grep -m1 "all-reduce failed" "$T/peer$k.out") || { cat "$T/peer$k.out" >&2; fail "peer $k: no all-reduce error in its log"; }
    note "peer $k: ${line#*] }"
    echo "$line" | grep -Eq "peer [0-9] (went down|left).*step [0-9] of $steps" || fail "peer $k ($sched): the error names no peer and step"
    tail -1 "$run/node-$k/metrics.jsonl" | grep -q '"ev":"end".*"reason":"allreduce".*"error":"all-reduce failed' ||
        fail "peer $k: the metrics do not end with reason allreduce and the error"
    ck="$run/node-$k/checkpoint.bin"
    if [ "$every" = 0 ]; then
        echo "$line" | grep -q "stopping, no checkpoint was written yet (--resume would start it from round 0)" ||
            fail "peer $k, without checkpoints: the error line does not say none was written"
        [ -f "$ck" ] && fail "peer $k: a checkpoint without --checkpoint-every"
        continue
    fi
    echo "$line" | grep -Eq "stopping, the last checkpoint \(round [1-9][05]\) is kept" ||
        fail "peer $k: the error line does not name the round of the checkpoint it keeps"
    [ -f "$ck" ] || fail "peer $k: no checkpoint"
    ls "$run/node-$k" | grep -q 'tmp' && fail "peer $k: a temporary checkpoint file was left"
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" generate --checkpoint "$ck" --length 8 > "$T/gen$k" 2>&1 ||
        { cat "$T/gen$k" >&2; fail "peer $k: its checkpoint does not load"; }
done
# The first to fail can only be a partner of peer 2, and it names peer 2;
# the others may fail first on the goodbye of a peer that failed (the
# failure goes round), and name that one.
cat "$T/peer$pa.out" "$T/peer$pb.out" | grep -q "all-reduce failed: peer 2 " ||
    fail "neither partner of peer 2 ($sched: $pa, $pb) names it"
echo "ok: $sched (checkpoints every $every rounds): a peer killed mid all-reduce ends the run cleanly; each says which checkpoint it keeps"
done
