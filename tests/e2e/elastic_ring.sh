# Elastic membership on real sockets, with TLS (docs/membership.md):
#   A. 4 peers of a ring family; 2 more join while it runs, through two
#      different members (certificates from make-certs.sh --add): the ring
#      re-forms over 6 from an agreed round, every peer's view agrees, the
#      joiners mix from their first round on, everyone ends `done`;
#   B. 6 peers; one is SIGKILLed for good: its neighbours suspect it, its
#      removal takes effect at one round for everyone, the ring re-forms
#      over the 5 (each survivor mixes its two new ring neighbours), every
#      survivor ends `done`, and `murmur report` names the removal.
# Pure gossip, rounds paced by --compute-jitter (about 10 ms). Every wait
# is bounded and names what it waited for.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen ring -n 4 --family > "$T/ring4.topo" 2>/dev/null
"$MURMUR" topo gen ring -n 6 --family > "$T/ring6.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs4" 4 > /dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs6" 6 > /dev/null
common="--no-train --vector-len 2000 --compute-jitter uniform:0.02 --log-every 0 --eval-every 0
        --suspect-ms 1000 --peer-timeout 2000 --round-timeout 3000"
deadline() { echo $(( $(date +%s) + $1 )); }
past() { [ "$(date +%s)" -ge "$1" ]; }
round_of() { # RUN K: peer K's last round line's round
    tail -c 65536 "$1/node-$2/metrics.jsonl" 2>/dev/null | grep '"ev":"round"' | tail -1 |
        sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | grep . || echo 0
}
last_view() { grep '"ev":"view"' "$1/node-$2/metrics.jsonl" | tail -1; }
members_of() { last_view "$1" "$2" | sed -n 's/.*"members":\[\([0-9,]*\)\].*/\1/p'; }
# nbrs_at RUN K ROUND: the ids peer K mixed in that round
nbrs_at() { grep "\"ev\":\"round\",\"peer\":$2,\"round\":$3," "$1/node-$2/metrics.jsonl" | sed -n 's/.*"nbrs":\[\([0-9,]*\)\].*/\1/p'; }
ended_done() { grep '"ev":"end"' "$1/node-$2/metrics.jsonl" | grep -q '"reason":"done"'; }

# ---- A: two join ----
run="$T/a"; port=$(free_ports 6); pids=""
for k in 0 1 2 3; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring4.topo" --base-port "$port" \
        --rounds 700 --run-dir "$run" --tls-dir "$T/certs4" $common > "$T/a$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
d=$(deadline 60)
until [ "$(round_of "$run" 0)" -ge 100 ]; do sleep 0.2; ! past "$d" || fail "A: peer 0 did not reach round 100 in 60 s"; done
for k in 4 5; do
    sh "$ROOT/scripts/make-certs.sh" --add "$T/certs4" $k > /dev/null || fail "A: make-certs.sh --add $k failed"
done
for k in 4 5; do
    via=$((port + k - 3)) # peers 1 and 2
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --join "127.0.0.1:$via" --topology "$T/ring4.topo" \
        --base-port "$port" --rounds 700 --run-dir "$run" --tls-dir "$T/certs4" $common \
        > "$T/a$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
wait_all $pids || fail "A: a peer failed (exit status above; $(grep -h ERROR "$T"/a*.out | head -3))"
for k in 0 1 2 3 4 5; do
    ended_done "$run" $k || fail "A: peer $k did not end done: $(grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | cut -c1-200)"
    [ "$(members_of "$run" $k)" = "0,1,2,3,4,5" ] || fail "A: peer $k's last view is $(members_of "$run" $k), not 0..5"
done
# the view of 6 took effect at one round for every peer
r6=$(grep -h '"ev":"view"' "$run"/node-*/metrics.jsonl | grep '"members_n":6' | sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | sort -u)
[ "$(echo "$r6" | wc -l)" -eq 1 ] || fail "A: the peers' views of 6 began at different rounds: $(echo $r6)"
# the joiners started at their join rounds (in the start line) and mixed
for k in 4 5; do
    j=$(jfield "$run/node-$k/metrics.jsonl" start joined_round)
    [ -n "$j" ] || fail "A: joiner $k's start line has no joined_round"
    n=$(nbrs_at "$run" $k $((j + 2)))
    [ -n "$n" ] || fail "A: joiner $k mixed no one two rounds after it joined at round $j"
done
# the ring over 6 at the end: peer 0's neighbours are 1 and 5
[ "$(nbrs_at "$run" 0 699)" = "1,5" ] || fail "A: peer 0's last round mixed $(nbrs_at "$run" 0 699), not the ring's 1,5"
note "A: 4 + 2 joined, the ring of 6 from round $r6, all done"

# ---- B: one of six is killed for good ----
run="$T/b"; port=$(free_ports 6); pids=""
for k in 0 1 2 3 4 5; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring6.topo" --base-port "$port" \
        --rounds 800 --run-dir "$run" --tls-dir "$T/certs6" $common > "$T/b$k.out" 2>&1 &
    E2E_PIDS="$E2E_PIDS $!"
    if [ $k -eq 2 ]; then p2=$!; else pids="$pids $!"; fi
done
d=$(deadline 60)
until [ "$(round_of "$run" 2)" -ge 100 ]; do sleep 0.2; ! past "$d" || fail "B: peer 2 did not reach round 100 in 60 s"; done
kill -9 "$p2"
wait_all $pids || fail "B: a survivor failed (exit status above)"
for k in 0 1 3 4 5; do
    ended_done "$run" $k || fail "B: peer $k did not end done"
    [ "$(members_of "$run" $k)" = "0,1,3,4,5" ] || fail "B: peer $k's last view is $(members_of "$run" $k), not 0,1,3,4,5"
done
rr=$(grep -h '"ev":"view"' "$run"/node-*/metrics.jsonl | grep '"removed":\[2\]' | sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | sort -u)
[ "$(echo "$rr" | wc -l)" -eq 1 ] || fail "B: peer 2's removal took effect at different rounds: $(echo $rr)"
[ "$(nbrs_at "$run" 1 799)" = "0,3" ] || fail "B: peer 1's last round mixed $(nbrs_at "$run" 1 799), not the new ring's 0,3"
[ "$(nbrs_at "$run" 3 799)" = "1,4" ] || fail "B: peer 3's last round mixed $(nbrs_at "$run" 3 799), not the new ring's 1,4"
"$MURMUR" report "$run" > "$T/report.txt" 2>&1 || true
grep -q "removed 2 at round $rr" "$T/report.txt" || fail "B: the report does not name the removal: $(grep -i member "$T/report.txt" | head -5)"
note "B: peer 2 killed at round ~100, removed at round $rr, the ring re-formed over 5"
echo "ok: peers join and are removed, the ring re-forms"
