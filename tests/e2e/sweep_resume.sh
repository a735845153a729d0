# scripts/sweep.sh resumes: a sweep killed (SIGKILL) during its second run
# of four is run again with the same command; the finished run is not
# redone, the interrupted one is continued in its directory (run-local.sh
# --resume: one run, two starts per peer), the rest run,
# and the aggregate counts every seed once. While the killed sweep's run
# still goes on, a second sweep in the same directory is refused. A failed
# run is marked, left out of the aggregate, kept on the next invocation and
# rerun with --retry-failed, unless its flags changed: then it is a new
# run. An unfinished run with a peer that has no checkpoint is not resumed
# (that peer would start again from round 0) but run again from round 0.
# The lock is free the moment an interrupted sweep has exited: the same
# command can be run again at once (run-local.sh's progress sleep held it
# for up to -i SEC after the sweep was gone). A sweep whose output is
# piped into a reader that quits (`| head`) stops as on Ctrl-C: its run is
# interrupted (its peers stopped with their checkpoints), not failed, and
# the same command resumes it.
# The peers are a stand-in for `murmur node` (a
# shell script writing metrics in the documented format, slowly enough to
# be killed mid-run); everything else is the real murmur.
. "$(dirname "$0")/lib.sh"
real=$MURMUR
cat > "$T/murmur" <<FAKE
#!/bin/sh
case \$1 in
--version) echo "murmur 0.0.0-fake"; exit 0 ;;
report|topo) exec "$real" "\$@" ;;
node) case \${2:-} in --help|--dry-run) exec "$real" "\$@" ;; esac ;;
*) exit 2 ;;
esac
shift
id='' rd='' seed=''
while [ \$# -gt 0 ]; do
    case \$1 in
    --id) id=\$2; shift 2 ;;
    --run-dir) rd=\$2; shift 2 ;;
    --seed) seed=\$2; shift 2 ;;
    *) shift ;;
    esac
done
m=\$rd/node-\$id/metrics.jsonl
mkdir -p "\$rd/node-\$id"
r=0
trap 'echo "{\"ev\":\"end\",\"round\":\$r,\"step\":\$r,\"time\":1,\"reason\":\"signal\"}" >>"\$m"; exit 0' TERM
echo "{\"ev\":\"start\",\"peer\":\$id,\"n_peers\":3,\"params\":4,\"algo\":\"dpsgd\",\"topology\":\"t\",\"sketch_dim\":2,\"sketch_seed\":1,\"resumed_round\":0,\"time\":0}" >>"\$m"
while [ \$r -lt 6 ]; do
    echo "{\"ev\":\"round\",\"round\":\$r,\"step\":\$r,\"time\":\$r.5,\"loss\":3,\"lr\":0.1,\"bytes_sent\":\$((r * 100 + 100)),\"bytes_recv\":0,\"t_compute\":0.2,\"t_comm\":0.1,\"t_wait\":0.1,\"nbrs\":2,\"missing\":0,\"dist\":{}}" >>"\$m"
    if [ \$((r % 2)) = 1 ]; then
        echo "{\"ev\":\"eval\",\"round\":\$r,\"step\":\$r,\"time\":\$r.6,\"val_loss\":2,\"val_bpb\":1,\"val_acc\":0.\$seed\$id,\"norm\":1,\"sketch\":[\$id,0]}" >>"\$m"
        : >"\$rd/node-\$id/checkpoint.bin"
    fi
    [ "\${FAKE_FAIL_SEED:-x}" = "\$seed" ] && [ "\$id" = 1 ] && exit 3
    sleep \${FAKE_SLEEP:-0.2}
    r=\$((r + 1))
done
echo "{\"ev\":\"end\",\"round\":\$r,\"step\":\$r,\"time\":\$r,\"reason\":\"done\"}" >>"\$m"
FAKE
chmod +x "$T/murmur"
cat > "$T/make-certs.sh" <<'CERTS'
mkdir -p "$1"
CERTS
export MURMUR="$T/murmur" MAKE_CERTS="$T/make-certs.sh" RUNS="$T/runs" GRACE=10
"$real" topo gen ring -n 3 > "$T/ring-3.topo" 2>/dev/null
"$real" topo gen complete -n 3 > "$T/complete-3.topo" 2>/dev/null
printf 'topology %s %s\nseeds 1 2\nflags --rounds 8\n' "$T/ring-3.topo" "$T/complete-3.topo" > "$T/r.sweep"
top=$RUNS/r
port=$(free_ports 12)
sweep() { sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$@" "$T/r.sweep"; }

# 1. Kill the sweep (SIGKILL: no trap runs) once its second run has trained a
# bit. Its rounds are slow (FAKE_SLEEP), so that the run it leaves behind
# still runs during case 2 although a second sweep takes a few seconds to
# get as far as the lock under load (it did not, at load 38).
FAKE_SLEEP=0.7 sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/r.sweep" > "$T/out1" 2>&1 &
sp=$!
E2E_PIDS="$E2E_PIDS $sp"
i=0
while :; do
    c=$(grep -c '"ev":"round"' "$top/complete-3/s1/node-0/metrics.jsonl" 2>/dev/null) || c=0
    [ "$c" -ge 2 ] && break
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$T/out1" >&2; fail "the second run never started"; }
    sleep 0.1
done
kill -9 $sp
wait $sp 2>/dev/null || true
[ -f "$top/ring-3/s1/sweep.done" ] || fail "the first run was not marked done before the kill"
[ -f "$top/complete-3/s1/sweep.done" ] && fail "the killed run is marked done"
note "killed the sweep during run 2 of 4"

# 2. Its run goes on in its own session and holds the lock: a second sweep is refused.
st=0
sweep > "$T/out2" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q 'is in use: another sweep, or the run of a sweep that was killed' "$T/out2" ||
    { cat "$T/out2" >&2; fail "a second sweep during the killed one's run was not refused (exit $st)"; }
timeout 30 flock "$top/sweep.lock" true || fail "the killed sweep's run did not end"
note "a second sweep was refused while the killed one's run went on"

# 3. The same command again: run 1 skipped, run 2 resumed, runs 3 and 4 run.
stamp=$(stat -c %Y.%i "$top/ring-3/s1/sweep.done")
sweep > "$T/out3" 2>&1 || { cat "$T/out3" >&2; fail "the resumed sweep failed"; }
[ "$(stat -c %Y.%i "$top/ring-3/s1/sweep.done")" = "$stamp" ] || fail "the finished run was touched"
[ "$(grep -c 'start ring-3/s1' "$top/sweep.log")" -eq 1 ] || fail "the finished run was started again"
grep -q '1 finished before, 0 failed before and kept, 3 to run' "$T/out3" || { cat "$T/out3" >&2; fail "not 1 finished, 3 to run"; }
grep -q "complete-3/s1: unfinished before; resumed from its peers' checkpoints (run-local.sh --resume)" "$T/out3" ||
    { cat "$T/out3" >&2; fail "the interrupted run was not resumed"; }
[ -e "$top/complete-3/s1.attempt-1" ] && fail "the interrupted run was moved aside, not resumed"
for k in 0 1 2; do
    [ "$(grep -c '"ev":"start"' "$top/complete-3/s1/node-$k/metrics.jsonl")" = 2 ] ||
        fail "peer $k of the resumed run: not two starts in one metrics file"
done
[ "$(wc -l < "$top/complete-3/s1/launch/resumes.log")" = 1 ] && grep -q '^resumed 1$' "$top/complete-3/s1/sweep.done" ||
    fail "the resume is not recorded (launch/resumes.log, sweep.done)"
for s in ring-3/s1 complete-3/s1 ring-3/s2 complete-3/s2; do
    [ -f "$top/$s/sweep.done" ] || fail "$s not done after the resume"
done
grep -q '^ring-3 .* 2/2 ' "$T/out3" && grep -q '^complete-3 .* 2/2 ' "$T/out3" ||
    { cat "$T/out3" >&2; fail "the aggregate does not have 2 of 2 seeds per setting"; }
note "resumed: 1 run skipped, the killed one continued, 2 more run; 2 seeds per setting"

# 4. A failed run: marked, left out, kept by the next invocation, rerun with --retry-failed.
sed -i 's/^seeds 1 2$/seeds 1 2 3/' "$T/r.sweep"
st=0
FAKE_FAIL_SEED=3 sweep > "$T/out4" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/out4" >&2; fail "a sweep with a failed run exited $st, not 1"; }
[ -f "$top/ring-3/s3/sweep.failed" ] || fail "the failed run is not marked"
grep -q '^ring-3 .* 2/3 ' "$T/out4" || { cat "$T/out4" >&2; fail "the failed run was averaged"; }
grep -q 'ring-3 *seed 3 *failed *failed: run-local.sh exit 1' "$T/out4" || { cat "$T/out4" >&2; fail "the failed run is not listed"; }
st=0
sweep > "$T/out5" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q '0 to run' "$T/out5" || { cat "$T/out5" >&2; fail "a failed run was rerun without --retry-failed"; }
sweep --retry-failed > "$T/out6" 2>&1 || { cat "$T/out6" >&2; fail "--retry-failed did not finish the sweep"; }
grep -q '^ring-3 .* 3/3 ' "$T/out6" && [ -d "$top/ring-3/s3.attempt-1" ] || { cat "$T/out6" >&2; fail "--retry-failed: not 3/3"; }
note "a failed run was marked, left out, kept, and rerun with --retry-failed"

# 5. A failed run whose flags the spec has changed since is a new run, not
# "failed before and kept" (issue 21, friction 8).
printf 'topology %s\nseeds 3\nflags --rounds 8\n' "$T/ring-3.topo" > "$T/f.sweep"
st=0
FAKE_FAIL_SEED=3 sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/f.sweep" > "$T/out7" 2>&1 || st=$?
[ $st -eq 1 ] && [ -f "$RUNS/f/ring-3/s3/sweep.failed" ] || { cat "$T/out7" >&2; fail "the run with --rounds 8 did not fail"; }
sed -i 's/--rounds 8/--rounds 9/' "$T/f.sweep"
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/f.sweep" > "$T/out8" 2>&1 || { cat "$T/out8" >&2; fail "the changed failed run was not run again"; }
grep -q '0 finished before, 0 failed before and kept, 1 to run' "$T/out8" &&
    grep -q 'ring-3/s3: failed with other node flags (--rounds 8 --seed 3) before; that attempt kept as' "$T/out8" ||
    { cat "$T/out8" >&2; fail "the changed failed run is not said to be a new run"; }
[ -f "$RUNS/f/ring-3/s3/sweep.done" ] || fail "the changed failed run is not done"
note "a failed run whose flags changed was run again without --retry-failed"
# 6. --no-resume: an unfinished run of these very flags is not continued
# but moved aside and run again from round 0.
rm "$top/ring-3/s2/sweep.done"
sweep --no-resume > "$T/out9" 2>&1 || { cat "$T/out9" >&2; fail "the sweep with --no-resume failed"; }
grep -q 'ring-3/s2: unfinished before (not resumed: --no-resume); that attempt kept as .*ring-3/s2.attempt-1, run again' "$T/out9" ||
    { cat "$T/out9" >&2; fail "--no-resume did not move the unfinished run aside"; }
[ "$(grep -c '"ev":"start"' "$top/ring-3/s2/node-0/metrics.jsonl")" = 1 ] || fail "--no-resume: the run was continued, not run afresh"
note "--no-resume: an unfinished run was moved aside and run from round 0"
# 7. An unfinished run one of whose peers has no checkpoint: not resumed
# (run-local.sh would refuse it), moved aside and run from round 0.
rm "$top/ring-3/s2/sweep.done" "$top/ring-3/s2/node-1/checkpoint.bin"
sweep > "$T/out10" 2>&1 || { cat "$T/out10" >&2; fail "the sweep with a run missing a checkpoint failed"; }
grep -q 'ring-3/s2: unfinished before (not resumed: peer(s) 1 have no checkpoint: resumed, they would start again from round 0 while the others go on); that attempt kept as .*ring-3/s2.attempt-2, run again' "$T/out10" ||
    { cat "$T/out10" >&2; fail "a run with a peer without a checkpoint was not moved aside"; }
[ "$(grep -c '"ev":"start"' "$top/ring-3/s2/node-0/metrics.jsonl")" = 1 ] || fail "the run missing a checkpoint was continued"
note "a run with a peer without a checkpoint was moved aside and run from round 0"
# 8. SIGTERM (as Ctrl-C) while run-local.sh sleeps between progress lines
# (-i 60): once the sweep has exited, its lock is free.
printf 'topology %s\nseeds 9\nflags --rounds 8\n' "$T/ring-3.topo" > "$T/l.sweep"
FAKE_SLEEP=1 sh "$ROOT/scripts/sweep.sh" -i 60 -p "$port" "$T/l.sweep" > "$T/out11" 2>&1 &
sp=$!
E2E_PIDS="$E2E_PIDS $sp"
i=0
until grep -q 'peers [0-9]/3 running' "$T/out11"; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$T/out11" >&2; fail "no progress line from the run"; }
    sleep 0.1
done
kill -TERM $sp
i=0
while kill -0 $sp 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the sweep did not exit within 30 s of SIGTERM"
    sleep 0.1
done
st=0; wait $sp || st=$?
[ $st -eq 130 ] || { cat "$T/out11" >&2; fail "the interrupted sweep exited $st, not 130"; }
flock -n "$RUNS/l/sweep.lock" true ||
    fail "the sweep has exited but its lock is still held (by: $(fuser "$RUNS/l/sweep.lock" 2>&1 | tr -s ' '))"
note "the lock was free as soon as the interrupted sweep had exited"
# 9. SIGPIPE: `sweep.sh | head -n 4` (the 4th line is run-local.sh's first
# progress line; its next one meets the closed pipe), then without the pipe.
printf 'topology %s\nseeds 7 8\nflags --rounds 8\n' "$T/ring-3.topo" > "$T/p.sweep"
{ st=0; FAKE_SLEEP=0.5 timeout 60 sh "$ROOT/scripts/sweep.sh" -i 1 -p "$port" "$T/p.sweep" || st=$?; echo $st > "$T/p.rc"; } |
    head -n 4 > "$T/p.head"
d=$RUNS/p/ring-3/s7
[ "$(cat "$T/p.rc")" = 130 ] || { cat "$T/p.head" "$RUNS/p/sweep.log" >&2; fail "the sweep whose reader quit exited $(cat "$T/p.rc"), not 130"; }
[ -f "$d/sweep.interrupted" ] && [ ! -f "$d/sweep.failed" ] ||
    { cat "$RUNS/p/sweep.log" >&2; fail "the run whose output reader quit is not marked interrupted ($(cat "$d"/sweep.* 2>/dev/null | head -n 1))"; }
[ -e "$RUNS/p/ring-3/s8" ] && fail "the sweep started the next run after its reader quit"
for k in 0 1 2; do
    [ "$(cat "$d/launch/node-$k.exit")" = 0 ] || fail "peer $k of the piped run exited $(cat "$d/launch/node-$k.exit"), not 0"
    tail -n 1 "$d/node-$k/metrics.jsonl" | grep -q '"reason":"signal"' || fail "peer $k of the piped run did not stop on a signal"
done
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/p.sweep" > "$T/out12" 2>&1 || { cat "$T/out12" >&2; fail "the sweep after the pipe failed"; }
grep -q "ring-3/s7: interrupted before; resumed from its peers' checkpoints" "$T/out12" ||
    { cat "$T/out12" >&2; fail "the run stopped by SIGPIPE was not resumed"; }
[ -f "$d/sweep.done" ] && [ -f "$RUNS/p/ring-3/s8/sweep.done" ] || fail "not both runs done after the pipe"
note "| head: the run was interrupted with its checkpoints, then resumed"
echo "ok: the sweep resumes after a kill; failed runs are never averaged"
