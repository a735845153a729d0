# scripts/add-peer.sh on a running run-local.sh run (issue 35, the
# launchers): a ring family of 4 started by run-local.sh with TLS; peer 4
# added while it runs (its certificate issued from the run's CA, its flags
# the run's own): it joins through a member, ends `done` with the others,
# every peer's last view is 0..4, and run-local's report names the join.
# Refused before anything starts (exit 2, saying why): an id not below
# --max-peers, a run of a static topology file, an id that runs already.
# Pure gossip paced by --compute-jitter; every wait is bounded.
. "$(dirname "$0")/lib.sh"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs" GRACE=20 JOIN_TIMEOUT=60
ADD="$ROOT/scripts/add-peer.sh"
"$MURMUR" topo gen ring -n 4 --family > "$T/family4.topo" 2>/dev/null
"$MURMUR" topo gen ring -n 4 > "$T/ring4.topo" 2>/dev/null
flags="--no-train --vector-len 2000 --compute-jitter uniform:0.03 --log-every 0 --eval-every 0
       --suspect-ms 1000 --peer-timeout 2000 --round-timeout 3000 --max-peers 16"
round_of() { # RUN K: peer K's last round line's round
    tail -c 65536 "$1/node-$2/metrics.jsonl" 2>/dev/null | grep '"ev":"round"' | tail -1 |
        sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | grep . || echo 0
}
members_of() { grep '"ev":"view"' "$1/node-$2/metrics.jsonl" | tail -1 | sed -n 's/.*"members":\[\([0-9,]*\)\].*/\1/p'; }

port=$(free_ports 8)
# shellcheck disable=SC2086
sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/family4.topo" -r el -p "$port" -i 1 -- \
    $flags --rounds 300 > "$T/run.out" 2>&1 &
launcher=$!; E2E_PIDS="$E2E_PIDS $launcher"
run=$T/runs/el
d=$(( $(date +%s) + 60 ))
until [ "$(round_of "$run" 0)" -ge 20 ]; do
    sleep 0.2
    [ "$(date +%s)" -lt $d ] || fail "peer 0 of the run-local run did not reach round 20 in 60 s: $(tail -3 "$T/run.out")"
done

sh "$ADD" -r el -k 4 > "$T/add.out" 2>&1 &
adder=$!; E2E_PIDS="$E2E_PIDS $adder"
# refused while it runs (nothing started, nothing written)
st=0; sh "$ADD" -r el -k 16 > "$T/big.out" 2>&1 || st=$?
[ $st -eq 2 ] || fail "-k 16 with --max-peers 16: exit $st, not 2: $(cat "$T/big.out")"
grep -q 'not below --max-peers 16' "$T/big.out" || fail "-k 16: no reason given: $(cat "$T/big.out")"
[ ! -e "$run/node-16" ] || fail "-k 16 refused, but node-16/ was made"
st=0; sh "$ADD" -r el -k 2 > "$T/dup.out" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q 'runs already' "$T/dup.out" || fail "-k 2 (a running peer): exit $st: $(cat "$T/dup.out")"

wait "$adder" || fail "add-peer.sh exited $?: $(cat "$T/add.out"; tail -3 "$run/node-4/console.log")"
wait "$launcher" || fail "run-local.sh exited $?: $(tail -5 "$T/run.out")"
grep -q 'peer 4 is a member from round [0-9]' "$T/add.out" || fail "add-peer.sh did not say when peer 4 joined: $(cat "$T/add.out")"
grep -q 'peer 4 ended done' "$T/add.out" || fail "add-peer.sh did not say peer 4 ended done: $(cat "$T/add.out")"
[ -f "$run/certs/node-4.pem" ] || fail "no certificate was issued for peer 4"
for k in 0 1 2 3 4; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | grep -q '"reason":"done"' ||
        fail "peer $k did not end done: $(grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | cut -c1-160)"
    [ "$(members_of "$run" $k)" = "0,1,2,3,4" ] || fail "peer $k's last view is $(members_of "$run" $k), not 0..4"
done
"$MURMUR" report "$run" > "$T/report.txt" 2>&1 || true
grep -q 'joined 4 at round [0-9]* (5 members' "$T/report.txt" || fail "the report does not name peer 4's join: $(grep -i -A3 member "$T/report.txt" | head)"
note "peer 4 added to a run-local run: $(grep 'member from round' "$T/add.out")"

# a static topology's run: refused by the node's own check
# shellcheck disable=SC2086
sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring4.topo" -r st -p "$port" -i 1 -- \
    --no-train --vector-len 100 --rounds 1 --log-every 0 --eval-every 0 > "$T/st.out" 2>&1 ||
    fail "the static run failed: $(tail -3 "$T/st.out")"
st=0; sh "$ADD" -r st -k 4 -v 0 > "$T/static.out" 2>&1 || st=$?
[ $st -eq 2 ] && grep -q 'needs an elastic run' "$T/static.out" ||
    fail "add-peer.sh on a static run: exit $st: $(cat "$T/static.out")"
note "refused: an id at --max-peers, a running id, a static run"

# ---- a run-hosts.sh run, through a private sshd on 127.0.0.1 ----
. "$ROOT/tests/e2e/lib/sshd.sh"
start_test_sshd || exit 0
n=4
test_hosts "$T/hosts" hel
E2E_CLEANUP='for f in "$T"/host-*/*/node-*/pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
# shellcheck disable=SC2086
sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts" -t "$T/family4.topo" -r hel -- \
    $flags --rounds 400 > "$T/hrun.out" 2>&1 &
launcher=$!; E2E_PIDS="$E2E_PIDS $launcher"
d=$(( $(date +%s) + 60 ))
until [ "$(round_of "$T/host-0/hel" 0)" -ge 20 ]; do
    sleep 0.2
    [ "$(date +%s)" -lt $d ] || fail "hosts: peer 0 did not reach round 20 in 60 s: $(tail -3 "$T/hrun.out")"
done
p4=$(free_ports 1)
sh "$ADD" -r hel -k 4 -v 2 -H "127.0.0.1:$p4 $me@127.0.0.1 $T/host-4/hel" > "$T/hadd.out" 2>&1 ||
    fail "hosts: add-peer.sh exited $?: $(cat "$T/hadd.out")"
wait "$launcher" || fail "hosts: run-hosts.sh exited $?: $(tail -5 "$T/hrun.out")"
run=$T/runs/hel
[ -f "$T/host-4/hel/certs/node-4.key" ] || fail "hosts: peer 4's key was not copied to its host"
for k in 0 1 2 3 4; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | grep -q '"reason":"done"' ||
        fail "hosts: peer $k did not end done (or was not brought back)"
    [ "$(members_of "$run" $k)" = "0,1,2,3,4" ] || fail "hosts: peer $k's last view is $(members_of "$run" $k), not 0..4"
done
note "hosts: peer 4 added over ssh through peer 2, brought back, all done"
