# A run directory holds one run per peer (docs/metrics.md, "Run
# directories"). murmur node refuses, exit 2 within seconds, a node-K/
# that holds a run of its peer already (a metrics line, a checkpoint, a
# snapshot) unless --resume, saying what to pass instead, and leaves its
# metrics as they were; a node-K/ that a launcher made (console.log, pid,
# stop) or that a start which failed before its first metrics line left
# (node.log, an empty metrics.jsonl) is no run and is taken. A peer whose
# checkpoint is gone, resumed with the others, starts fresh: it warns, its
# start line says "resume":"fresh", and murmur report flags it (a warning
# naming it and a RESTARTED FRESH line) instead of merging silently.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen complete -n 2 > "$T/two.topo" 2>/dev/null
port=$(free_ports 2)
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --eval-every 2
       --checkpoint-every 2 --snapshot-every 2 --log-every 0 --plaintext --start-timeout 20000"
# two RUN_DIR FLAGS...: both peers of a two-peer run, to the end (30 s at most)
two() {
    rd=$1; shift
    for k in 0 1; do
        MURMUR_NO_BLAS_FIX=1 timeout 30 "$MURMUR" node --id $k --topology "$T/two.topo" \
            --base-port "$port" --run-dir "$rd" $model "$@" > "$T/two$k.out" 2>&1 &
        eval "t$k=\$!"
    done
    wait "$t0" || { cat "$T/two0.out" >&2; fail "peer 0 of the run in $rd failed"; }
    wait "$t1" || { cat "$T/two1.out" >&2; fail "peer 1 of the run in $rd failed"; }
}

# A finished run of 4 rounds.
two "$T/run" --rounds 4
before=$(sha256sum "$T/run/node-0/metrics.jsonl")

# The same command again into it: refused, at once, with the fix.
st=0
MURMUR_NO_BLAS_FIX=1 timeout 20 "$MURMUR" node --id 0 --topology "$T/two.topo" --base-port "$port" \
    --run-dir "$T/run" $model --rounds 2 > "$T/again.out" 2>&1 || st=$?
[ $st -eq 2 ] || { cat "$T/again.out" >&2; fail "a second run into a directory that holds one: exit $st, not 2"; }
grep -q "node-0 holds a run of peer 0 already (metrics.jsonl of [0-9]* bytes, checkpoint.bin, [0-9]* snapshots in snap/)" "$T/again.out" ||
    { cat "$T/again.out" >&2; fail "the refusal does not say what the directory holds"; }
grep -q "with --resume, or give this one another --run-dir" "$T/again.out" ||
    { cat "$T/again.out" >&2; fail "the refusal does not say what to pass instead"; }
[ "$(sha256sum "$T/run/node-0/metrics.jsonl")" = "$before" ] || fail "the refused run changed the metrics"
note "refused: $(head -n 1 "$T/again.out" | cut -c1-160)..."

# Each of the three kinds of record alone is a run.
for only in metrics.jsonl checkpoint.bin snap; do
    d="$T/only-$only/node-0"
    mkdir -p "$d"
    cp -R "$T/run/node-0/$only" "$d/"
    st=0
    MURMUR_NO_BLAS_FIX=1 timeout 20 "$MURMUR" node --id 0 --topology "$T/two.topo" \
        --base-port "$port" --run-dir "$T/only-$only" $model --rounds 2 > "$T/only.out" 2>&1 || st=$?
    [ $st -eq 2 ] && grep -q "holds a run of peer 0" "$T/only.out" ||
        { cat "$T/only.out" >&2; fail "node-0 holding only $only: exit $st, not the refusal"; }
done

# What launchers and failed starts leave is no run: both peers run there.
for k in 0 1; do
    mkdir -p "$T/made/node-$k"
    echo "launcher output" > "$T/made/node-$k/console.log"
    echo 123 > "$T/made/node-$k/pid"
    : > "$T/made/node-$k/stop"
    echo "an earlier start that failed" > "$T/made/node-$k/node.log"
    : > "$T/made/node-$k/metrics.jsonl"
done
two "$T/made" --rounds 2
grep -q '"ev":"end".*"reason":"done"' "$T/made/node-0/metrics.jsonl" || fail "the run in a launcher's directory did not run"
grep -q "launcher output" "$T/made/node-0/console.log" || fail "the launcher's console.log was lost"

# --resume continues a run: accepted. With peer 1's checkpoint gone, it
# starts fresh and says so; the report flags it.
rm "$T/run/node-1/checkpoint.bin"
two "$T/run" --rounds 6 --resume
grep -q "WARN: --resume: no checkpoint at .*node-1/checkpoint.bin, but .*node-1 holds an earlier run of this peer" "$T/two1.out" ||
    { cat "$T/two1.out" >&2; fail "peer 1 started fresh in a resumed run without a warning"; }
grep '"ev":"start"' "$T/run/node-1/metrics.jsonl" | tail -n 1 | grep -q '"resumed_round":0,"resume":"fresh"' ||
    fail "peer 1's start line does not say it started fresh"
grep '"ev":"start"' "$T/run/node-0/metrics.jsonl" | tail -n 1 | grep -q '"resumed_round":4,"resume":"checkpoint"' ||
    fail "peer 0's start line does not say it resumed from its checkpoint at round 4"
"$MURMUR" report --no-plots "$T/run" > "$T/report" 2> "$T/report.err" || { cat "$T/report.err" >&2; fail "murmur report failed"; }
grep -q "warning: node-1 started again from round 0 (no checkpoint) after its rounds 0..3" "$T/report.err" ||
    { cat "$T/report.err" >&2; fail "the report does not warn that node-1 started again from round 0"; }
grep -q "^RESTARTED FRESH: 1 peer started again from round 0 in a resumed run (no checkpoint): node-1;" "$T/report" ||
    { cat "$T/report" >&2; fail "the report's table does not flag node-1"; }
grep -q "warning: node-0" "$T/report.err" && fail "the report flags node-0, which resumed from its checkpoint"
echo "ok: a reused run directory refused with the fix; a launcher's directory taken; a fresh start in a resumed run flagged"
