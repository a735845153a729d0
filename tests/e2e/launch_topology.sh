# Peers that loaded different topologies refuse each other at the HELLO
# (issue 21, defect 1): a real 4-peer TLS run through run-local.sh in
# which peer 0 loads topologies/complete-4.topo and peers 1-3 ring-4.topo
# (a stand-in for murmur swaps peer 0's --topology).
#   - peer 0 is refused by all three, peers 1 and 3 by peer 0: status 3;
#     peer 2, whose ring neighbours are 1 and 3, mixes with both: status 0;
#   - the terminal names both peers and both files ("topology differs:
#     peer 0 loaded complete-4.topo ..., peer 1 loaded ring-4.topo"), the
#     launcher says the run is misconfigured and exits 1;
#   - the report's end column says `refused` with bad_topology;
#   - the rounds do not wait out --round-timeout for the refused peer.
# Then the same run with peer 0 loading ring-4.topo rewritten (other
# comments, another kind, its edges reversed and reordered, CRLF): the same
# topology, so every peer ends 0.
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
real=$MURMUR
rounds=40
quick="--no-train --layers 2 --width 32 --heads 2 --ctx 32 --rounds $rounds --eval-every 10
       --checkpoint-every 0 --log-every 0 --start-timeout 2000 --peer-timeout 1000 --round-timeout 2000"

# swap NAME FILE: a murmur whose peer 0 loads FILE instead of its --topology.
swap() {
    cat > "$T/$1" <<EOF
#!/bin/sh
[ "\$1" = node ] || exec "$real" "\$@"
id=''; prev=''
for a in "\$@"; do [ "\$prev" = --id ] && id=\$a; prev=\$a; done
[ "\$id" = 0 ] || exec "$real" "\$@"
n=\$#; prev=''
for a in "\$@"; do
    [ "\$prev" = --topology ] && a="$2"
    set -- "\$@" "\$a"; prev=\$a
done
shift "\$n"
exec "$real" "\$@"
EOF
    chmod +x "$T/$1"
}

expect_statuses() {
    d=$RUNS/$1; shift
    k=0
    for want in "$@"; do
        got=$(cat "$d/launch/node-$k.exit")
        [ "$got" = "$want" ] || { cat "$T/out" >&2; fail "$(basename "$d"): peer $k exited $got, not $want"; }
        k=$((k + 1))
    done
}

port=$(free_ports 8)

# 1. complete-4 on peer 0, ring-4 on peers 1-3.
swap complete "$ROOT/topologies/complete-4.topo"
st=0
start=$(date +%s)
MURMUR="$T/complete" sh "$ROOT/scripts/run-local.sh" -n 4 -t "$ROOT/topologies/ring-4.topo" -r mixed \
    -p "$port" -i 1 -- $quick > "$T/out" 2>&1 || st=$?
took=$(( $(date +%s) - start ))
[ $st -eq 1 ] || { cat "$T/out" >&2; fail "mixed topologies: run-local exited $st, not 1"; }
expect_statuses mixed 3 3 0 3
for k in 0 1 3; do
    grep -q "peer $k exited with status 3" "$T/out" || { cat "$T/out" >&2; fail "peer $k's status 3 is not on the terminal"; }
done
grep -q "topology differs: peer 0 loaded complete-4.topo (digest 06aa4d95.*), peer [13] loaded ring-4.topo (digest ee96c8c6" "$T/out" ||
    { cat "$T/out" >&2; fail "peers 1 and 3: the topology refusal does not name both peers and both files"; }
# peer 0's verdict: one line per neighbour, each naming both files
awk '/peer 0 exited with status 3/ { on = 1; next } on && /^run-local:/ { on = 0 }
     on && /peer [123]: topology differs: peer 0 loaded complete-4.topo .*, peer [123] loaded ring-4.topo/ { n++ }
     END { exit n != 3 }' "$T/out" ||
    { cat "$T/out" >&2; fail "peer 0: its three refusals do not each name both peers and both files"; }
grep -q "warning: node-1 loaded topology .*ring-4.topo, node-0 .*complete-4.topo: the peers disagree" "$T/out" ||
    { cat "$T/out" >&2; fail "the report does not say the peers loaded different topologies"; }
grep -q "the run is misconfigured" "$T/out" || { cat "$T/out" >&2; fail "run-local does not say the run was misconfigured"; }
awk '$1 ~ /^node-[013]$/ && $5 != "refused" { bad = 1 } $1 == "node-2" && $5 != "done" { bad = 1 }
     END { exit bad }' "$T/out" || { cat "$T/out" >&2; fail "the report's end column does not say refused"; }
grep -q "^node-0 .*refused.*bad_topology" "$T/out" || { cat "$T/out" >&2; fail "the report does not name the topology refusal"; }
n=$(jfield "$RUNS/mixed/node-0/metrics.jsonl" end bad_topology)
[ "${n:-0}" -ge 3 ] || fail "peer 0 counted $n topology refusals, not at least one per neighbour"
# 40 rounds that each waited out --round-timeout would take 80 s
[ "$took" -lt 60 ] || fail "the mixed run took $took s: rounds waited on the refused peer"
note "$(grep -m1 'peer 0: topology differs' "$T/out" | sed 's/^ *//')"
note "$(grep -m1 'peer [13]: topology differs' "$T/out" | sed 's/^ *//')"
note "$(grep 'the run is misconfigured' "$T/out" | cut -c1-100)..."
note "report: $(grep '^node-0 ' "$T/out")"
note "$took s for $rounds rounds"

# 2. The same topology in other words: no refusal.
{
    printf '# ring-4, written by hand: comments, kind and edge order do not matter\r\n'
    printf 'kind my-ring\r\npeers 4\r\n\r\n3 0   # the closing edge first\r\n2 1\r\n3 2\r\n1 0\r\n'
} > "$T/my-ring.topo"
[ "$("$real" topo info --no-rho "$T/my-ring.topo" | grep '^digest')" = \
  "$("$real" topo info --no-rho "$ROOT/topologies/ring-4.topo" | grep '^digest')" ] ||
    fail "ring-4 in other words has another digest"
swap reworded "$T/my-ring.topo"
st=0
MURMUR="$T/reworded" sh "$ROOT/scripts/run-local.sh" -n 4 -t "$ROOT/topologies/ring-4.topo" -r reworded \
    -p "$((port + 4))" -i 1 -- $quick > "$T/out" 2>&1 || st=$?
[ $st -eq 0 ] || { cat "$T/out" >&2; fail "ring-4 in other words on peer 0: run-local exited $st, not 0"; }
expect_statuses reworded 0 0 0 0
! grep -q "topology differs" "$T/out" || { cat "$T/out" >&2; fail "a reworded file was refused"; }
echo "ok: peers that load different topologies refuse each other, named; the same topology in other words runs"
