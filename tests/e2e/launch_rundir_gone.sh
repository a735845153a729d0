# The run directory removed while its peers run: run-local.sh must notice
# that the watchers' exit files can no longer appear, stop the peers itself
# (it kept their pids) and exit 1 with a message naming the directory,
# instead of waiting for ever. Before the fix it polled the missing
# launch/ directory until the test's time-out.
. "$(dirname "$0")/lib.sh"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs" GRACE=10
n=3
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --rounds 1000000
       --eval-every 0 --checkpoint-every 0 --log-every 0"
port=$(free_ports $n)
d="$RUNS/gone"
# shellcheck disable=SC2086
timeout -k 10 600 sh "$ROOT/scripts/run-local.sh" -n $n -t "$T/ring.topo" -r gone -p "$port" -i 1 -- $model \
    > "$T/out" 2> "$T/err" &
launcher=$!
i=0
until sh "$ROOT/tests/e2e/lib/trained.sh" "$d" $n; do
    i=$((i + 1))
    [ $i -lt 3000 ] || { kill $launcher; cat "$T/err" >&2; fail "the peers did not train within 300 s"; }
    sleep 0.1
done
pids=$(cat "$d"/launch/node-*.pid)
[ "$(echo $pids | wc -w)" -eq $n ] || fail "expected $n pid files, got: $pids"
rm -rf "$d"
removed=$(date +%s)
E2E_PIDS="$E2E_PIDS $pids" # whatever happens below, no peer outlives the test
st=0
wait $launcher || st=$?
waited=$(($(date +%s) - removed))
# GRACE (10 s) for the peers to stop, plus the load's delays: never the
# unbounded wait of before (600 s is only the test's own bound).
[ $st -eq 124 ] || [ $st -eq 137 ] || [ $waited -gt 90 ] &&
    fail "run-local.sh still waited ${waited} s after its run directory was removed (exit $st)"
[ $st -eq 1 ] || { cat "$T/err" >&2; fail "run-local.sh exited $st, not 1, after its run directory was removed"; }
grep -q "$d/launch is gone" "$T/err" || { cat "$T/err" >&2; fail "no message naming the removed directory"; }
for p in $pids; do
    kill -0 "$p" 2>/dev/null && fail "peer pid $p still running after run-local.sh exited"
done
note "run-local.sh: run directory removed under $n running peers: they were stopped, exit 1 with a message"
