# Ctrl-C the way a user presses it, on scripts/sweep.sh: the sweep runs on a
# pseudo-terminal (tests/tools/ptyrun) and ^C is written to the pty master,
# so the line discipline sends SIGINT to the terminal's whole foreground
# process group. During the first of two runs (real peers, a tiny model):
# every peer of that run gets exactly one signal, finishes its round,
# writes its final checkpoint and exits 0; the sweep marks the run
# interrupted, starts no other and exits 130 by itself; the report shows
# every peer ended by the signal. Then the same command, its spec's flags
# changed, reruns the interrupted run from round 0 (moved aside: it was run
# with other flags, so it is not resumed; e2e/sweep_ctrlc_resume resumes
# one) and runs the second.
. "$(dirname "$0")/lib.sh"
PTYRUN=${PTYRUN:-$ROOT/${BUILD:-build}/tests/tools/ptyrun}
[ -x "$PTYRUN" ] || fail "$PTYRUN missing (make ptyrun)"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs" GRACE=20
n=3
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring-3.topo" 2>/dev/null
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --eval-every 0 --checkpoint-every 0 --log-every 0"
# Rounds without end for the Ctrl-C, a few for the rerun.
printf 'topology %s\nseeds 1 2\nflags %s --rounds 1000000\n' "$T/ring-3.topo" "$model" > "$T/c.sweep"
top=$RUNS/c
d=$top/ring-3/s1
# the condition ptyrun polls before pressing ^C: the run's peers are training
trained="$ROOT/tests/e2e/lib/trained.sh"
port=$(free_ports $((2 * n)))
st=0
"$PTYRUN" -t 90 -o "$T/sweep.out" -w "sh $trained $d $n" -- \
    sh "$ROOT/scripts/sweep.sh" -i 1 -p "$port" "$T/c.sweep" 2> "$T/pty.err" || st=$?
grep -q 'pressed ^C' "$T/pty.err" || { cat "$T/pty.err" "$T/sweep.out" >&2; fail "^C was never pressed"; }
grep -q 'was killed by signal' "$T/pty.err" && { cat "$T/sweep.out" >&2; fail "the sweep died of the terminal's signal instead of stopping its run"; }
[ $st -eq 130 ] || { cat "$T/sweep.out" >&2; fail "exit $st after ^C, not 130"; }
[ -e "$top/ring-3/s2" ] && fail "the sweep started the next run after ^C"
[ -f "$d/sweep.interrupted" ] || fail "the run is not marked interrupted"
[ -f "$d/sweep.done" ] && fail "the interrupted run is marked done"
k=0
while [ $k -lt $n ]; do
    e=$(cat "$d/launch/node-$k.exit" 2>/dev/null) || e=none
    [ "$e" = 0 ] || { cat "$T/sweep.out" >&2; fail "peer $k exited with status $e, not 0"; }
    kill -0 "$(cat "$d/launch/node-$k.pid")" 2>/dev/null && fail "peer $k still running"
    grep -q 'second signal' "$d/node-$k/console.log" &&
        fail "peer $k got a second signal: $(grep -m1 'second signal' "$d/node-$k/console.log")"
    [ -s "$d/node-$k/checkpoint.bin" ] || fail "peer $k wrote no final checkpoint"
    k=$((k + 1))
done
"$MURMUR" report "$d" --no-plots > "$T/report" 2>&1 || fail "murmur report failed"
[ "$(grep -c '^node-[0-9].* signal ' "$T/report")" -eq $n ] || { cat "$T/report" >&2; fail "the report does not show all $n peers ended by the signal"; }
note "^C in a pty: $n peers exited 0 with their checkpoint, run marked interrupted, sweep 130"

# The same command again (a few rounds now: the spec's flags changed, the
# interrupted run has no sweep.done, so that is allowed).
sed -i 's/--rounds 1000000/--rounds 4/' "$T/c.sweep"
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/c.sweep" > "$T/again.out" 2>&1 || { cat "$T/again.out" >&2; fail "the rerun failed"; }
grep -q 'ring-3/s1: interrupted before (not resumed: .*ring-3/s1 was run with other node flags: then: .*"1000000".* now: .*"4".*); that attempt kept as .*s1.attempt-1, run again' "$T/again.out" || { cat "$T/again.out" >&2; fail "the interrupted run was not rerun"; }
[ -f "$d/sweep.done" ] && [ -f "$top/ring-3/s2/sweep.done" ] || fail "not both runs done after the rerun"
echo "ok: ^C stops the sweep's current run cleanly; the next invocation reruns it"
