# scripts/run-hosts.sh --resume for real (issue 21, friction 9), through a
# private sshd on 127.0.0.1 standing in for 4 hosts, each peer with its own
# REMOTE_DIR: a run stopped with SIGINT is continued with --resume; every
# peer goes on from its checkpoint on its host, host 2's directory having
# been cleaned meanwhile (it gets the collected copy), and ends at the
# planned round; the run is collected whole. Refused: other node flags or
# another topology (exit 2, then and now), a peer that still runs (exit 1,
# nothing started), a peer with no checkpoint on its host nor collected
# (exit 2, naming it, nothing started), an existing run without --resume;
# --resume of a run not there yet starts it, saying so; a run whose peers
# wrote no checkpoint is resumed only with --resume-fresh-missing, which
# says that they start fresh.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/sshd.sh"
start_test_sshd || exit 0
n=4
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
"$MURMUR" topo gen complete -n $n > "$T/complete.topo" 2>/dev/null
E2E_CLEANUP='for f in "$T"/host-*/*/node-*/pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
rounds=600
# slept delays (--compute-jitter) make the run last a few seconds however
# fast the machine, so that the SIGINT comes mid-run
flags="--layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --log-every 0 --eval-every 50
       --checkpoint-every 0 --compute-jitter uniform:0.04 --start-timeout 20000 --rounds $rounds"
rh() { RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" "$@"; }
test_hosts "$T/hosts" res
run="$T/runs/res"

# 1. The first attempt, stopped with SIGINT once every peer has trained a bit.
RUNS="$T/runs" env --default-signal=INT sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts" -t "$T/ring.topo" \
    -r res -D "$T/data" -- $flags > "$T/first.out" 2>&1 &
rhp=$!; E2E_PIDS="$E2E_PIDS $rhp"
rounds_of() { awk '/"ev":"round"/ { n++ } END { print n + 0 }' "$T/host-$1/res/node-$1/metrics.jsonl" 2>/dev/null || echo 0; }
i=0
for k in 0 1 2 3; do
    while [ "$(rounds_of $k)" -lt 3 ]; do
        i=$((i + 1)); [ $i -lt 600 ] || { cat "$T/first.out" >&2; fail "peer $k made no progress"; }
        sleep 0.1
    done
done
kill -INT $rhp
st=0; wait $rhp || st=$?
[ $st = 130 ] || { cat "$T/first.out" >&2; fail "the first attempt exited $st after SIGINT, not 130"; }
for k in 0 1 2 3; do
    grep -q '"ev":"end".*"reason":"signal"' "$run/node-$k/metrics.jsonl" || fail "peer $k did not stop on the signal"
done
stopped_at=$(for k in 0 1 2 3; do jfield "$run/node-$k/metrics.jsonl" end round; done | tr '\n' ' ')
[ "$(jfield "$run/node-0/metrics.jsonl" end round)" -lt $rounds ] || fail "the run ended before the SIGINT: no resume to test"
note "first attempt stopped by SIGINT at rounds $stopped_at"
cp "$run/manifest.json" "$T/manifest.before"

# 2. Refusals, before anything starts: other flags, another topology, a peer
# that still runs (a process holds host 1's node.log), no --resume.
st=0; rh -H "$T/hosts" -t "$T/ring.topo" -r res -D "$T/data" --resume -- $flags --seed 9 > "$T/flags.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "run-hosts: --resume: $run was run with other node flags:" "$T/flags.out" &&
    grep -q 'now:  ".* --seed 9"' "$T/flags.out" || { cat "$T/flags.out" >&2; fail "--resume with other flags: exit $st, not 2 with then and now"; }
st=0; rh -H "$T/hosts" -t "$T/complete.topo" -r res -D "$T/data" --resume -- $flags > "$T/topo.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "is not the topology $run was run with" "$T/topo.out" ||
    { cat "$T/topo.out" >&2; fail "--resume on another topology: exit $st, not 2"; }
st=0; rh -H "$T/hosts" -t "$T/ring.topo" -r res -D "$T/data" -- $flags > "$T/exists.out" 2>&1 || st=$?
[ $st = 1 ] && grep -q 'already exists: choose another -r NAME, remove it, or continue it with --resume' "$T/exists.out" ||
    { cat "$T/exists.out" >&2; fail "an existing run without --resume: exit $st"; }
(exec 7>>"$T/host-1/res/node-1/node.log"; flock 7; exec sleep 600) &
lockp=$!; E2E_PIDS="$E2E_PIDS $lockp"
i=0; while flock -n "$T/host-1/res/node-1/node.log" true; do i=$((i + 1)); [ $i -lt 100 ] || fail "no lock"; sleep 0.05; done
st=0; rh -H "$T/hosts" -t "$T/ring.topo" -r res -D "$T/data" --resume -- $flags > "$T/running.out" 2>&1 || st=$?
kill $lockp; wait $lockp 2>/dev/null || true
[ $st = 1 ] && grep -q "peer 1 of $run still runs (it holds $T/host-1/res/node-1/node.log" "$T/running.out" ||
    { cat "$T/running.out" >&2; fail "--resume while a peer still runs: exit $st, not 1"; }
[ "$(grep -c '"ev":"start"' "$T/host-0/res/node-0/metrics.jsonl")" = 1 ] || fail "a refused --resume started peer 0"
mv "$T/host-3/res/node-3/checkpoint.bin" "$T/ck3.host"
mv "$run/node-3/checkpoint.bin" "$T/ck3.here"
st=0; rh -H "$T/hosts" -t "$T/ring.topo" -r res -D "$T/data" --resume -- $flags > "$T/nockpt.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "run-hosts: --resume: peer(s) 3 of $run have no checkpoint .*--resume-fresh-missing" "$T/nockpt.out" ||
    { cat "$T/nockpt.out" >&2; fail "--resume with peer 3 without a checkpoint: exit $st, not 2 naming it"; }
mv "$T/ck3.host" "$T/host-3/res/node-3/checkpoint.bin"
mv "$T/ck3.here" "$run/node-3/checkpoint.bin"
[ "$(grep -c '"ev":"start"' "$T/host-0/res/node-0/metrics.jsonl")" = 1 ] || fail "a refused --resume started peer 0"
[ -f "$run/launch/resumes.log" ] && fail "a refused --resume was recorded in launch/resumes.log"
note "refused: other flags (2), another topology (2), a run that exists (1), a peer still running (1), a peer without a checkpoint (2)"

# 3. Host 2 lost its directory: the collected copy goes back there.
rm -rf "$T/host-2/res/node-2"
st=0; rh -H "$T/hosts" -t "$T/ring.topo" -r res -D "$T/data" --resume -- $flags > "$T/resume.out" 2>&1 || st=$?
[ $st = 0 ] || { cat "$T/resume.out" >&2; fail "--resume exited $st, not 0"; }
grep -q "run-hosts: resuming $run: every peer from its checkpoint (--resume)" "$T/resume.out" || fail "--resume: not said"
grep -q "peer 2: --resume: .* has no $T/host-2/res/node-2/checkpoint.bin: copying the one collected in $run/node-2 there" \
    "$T/resume.out" || { cat "$T/resume.out" >&2; fail "host 2's missing checkpoint: not said, or not copied"; }
cmp -s "$T/manifest.before" "$run/manifest.json" || fail "--resume rewrote the manifest"
[ "$(wc -l < "$run/launch/resumes.log")" = 1 ] || fail "the resume is not one line of launch/resumes.log"
for k in 0 1 2 3; do
    m="$run/node-$k/metrics.jsonl"
    cmp -s "$m" "$T/host-$k/res/node-$k/metrics.jsonl" || fail "node-$k: collected metrics differ from the host's"
    [ "$(grep -c '"ev":"start"' "$m")" = 2 ] || fail "peer $k: not two starts (first attempt, resume) in one metrics file"
    first_end=$(jfield "$m" end round | head -n 1)
    resumed=$(jfield "$m" start resumed_round | tail -n 1)
    [ "$resumed" = "$first_end" ] || fail "peer $k resumed at round $resumed, not at $first_end where it stopped"
    [ "$(jfield "$m" end round | tail -n 1)" = $rounds ] || fail "peer $k did not reach round $rounds"
    tail -n 1 "$m" | grep -q '"reason":"done"' || fail "peer $k did not end normally"
    grep -q "resumed from .*node-$k/checkpoint.bin: round $resumed" "$run/node-$k/console.log" ||
        fail "peer $k's console.log does not show the resume"
    grep -q 'SIGINT\|SIGTERM' "$run/node-$k/console.log" || fail "peer $k's console.log lost the first attempt (not appended)"
done
MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$run" --no-plots > "$T/report.out" 2>&1 ||
    { cat "$T/report.out" >&2; fail "murmur report failed on the resumed run"; }
[ "$(grep -c '^node-[0-9].* done ' "$T/report.out")" = $n ] || { cat "$T/report.out" >&2; fail "the report does not show $n peers done"; }
note "resumed from rounds $stopped_at to $rounds; host 2 got its collected checkpoint back"

# 4. --resume of a run that is not there yet starts it, saying so.
awk '{ print $1, $2 }' "$T/hosts" > "$T/hosts-inplace"
rh -H "$T/hosts-inplace" -t "$T/ring.topo" -r fresh --resume -- --plaintext --no-train --vector-len 10 \
    --rounds 3 --log-every 0 --eval-every 0 > "$T/fresh.out" 2>&1 || { cat "$T/fresh.out" >&2; fail "--resume of no run failed"; }
grep -q "run-hosts: --resume: no run at $T/runs/fresh yet, starting it" "$T/fresh.out" || fail "--resume of no run: not said"
[ "$(jfield "$T/runs/fresh/node-0/metrics.jsonl" end round)" = 3 ] || fail "--resume of no run did not run it"
# 5. Its peers (--vector-len) wrote no checkpoint: resuming it would start
# every one of them again from round 0 after a run: refused; said with
# --resume-fresh-missing.
st=0; rh -H "$T/hosts-inplace" -t "$T/ring.topo" -r fresh --resume -- --plaintext --no-train --vector-len 10 \
    --rounds 3 --log-every 0 --eval-every 0 > "$T/fresh2.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "peer(s) 0, 1, 2, 3 of $T/runs/fresh have no checkpoint" "$T/fresh2.out" ||
    { cat "$T/fresh2.out" >&2; fail "--resume of a run without checkpoints: exit $st, not 2 naming the peers"; }
rh -H "$T/hosts-inplace" -t "$T/ring.topo" -r fresh --resume-fresh-missing -- --plaintext --no-train --vector-len 10 \
    --rounds 3 --log-every 0 --eval-every 0 > "$T/fresh3.out" 2>&1 || { cat "$T/fresh3.out" >&2; fail "--resume-fresh-missing failed"; }
grep -q "run-hosts: resuming $T/runs/fresh: peer(s) 0, 1, 2, 3 start FRESH from round 0" "$T/fresh3.out" ||
    { cat "$T/fresh3.out" >&2; fail "--resume-fresh-missing does not say which peers start fresh"; }
[ "$(grep -c '"ev":"start".*"resume":"fresh"' "$T/runs/fresh/node-2/metrics.jsonl")" = 1 ] || fail "peer 2's start line does not say fresh"
echo "ok: run-hosts.sh --resume over ssh (refusals, a cleaned host, one run to the end)"
