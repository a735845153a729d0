# murmur watch --hosts: a run's page from its peers' metrics endpoints, on
# the hosts of a hosts file (here 4 peers on loopback, each with
# --metrics-addr 127.0.0.1:M+). Through /state.json: every peer answers and
# its round advances between two documents, its history grows, the 4 ring
# links show up in both directions with bytes per second above 0; a
# SIGKILLed peer turns silent and its 4 directed links missing within a
# few intervals; endpoints that answer something else (404) leave each
# peer "starting" with the reason, and murmur watch exits 0.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
need_pkgs jq curl || { echo "skip: jq or curl missing and not root to install them"; exit 0; }
n=4
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
ports=$(free_ports $((2 * n + 1)))
mport=$((ports + n)); wport=$((ports + 2 * n))
k=0
while [ $k -lt $n ]; do echo "$k 127.0.0.1:$((ports + k))"; k=$((k + 1)); done > "$T/hosts"
pids=""
k=0
while [ $k -lt $n ]; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --hosts "$T/hosts" \
        --plaintext --data "$T/data" --run-dir "$T/run" --layers 1 --width 16 --heads 2 --ctx 16 \
        --batch 4 --rounds 100000 --eval-every 5 --log-every 0 --compute-jitter uniform:0.1 \
        --metrics-addr "127.0.0.1:$mport+" > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    k=$((k + 1))
done
set -- $pids
bg "$MURMUR" watch --hosts "$T/hosts" --metrics-port "$mport+" --addr "127.0.0.1:$wport" \
    --interval 0.5 --stale 3 > "$T/watch.out" 2>&1
url="http://127.0.0.1:$wport"
# doc FILTER: jq FILTER of the current document
doc() { curl -sf "$url/state.json" > "$T/doc.json" && jq -r "$1" "$T/doc.json"; }
# until_doc SECONDS FILTER WHAT: wait until FILTER is true
until_doc() {
    i=0
    until [ "$(doc "$2" 2>/dev/null)" = true ]; do
        i=$((i + 1)); [ $i -lt $(($1 * 10)) ] || { cat "$T/doc.json" "$T/watch.out" >&2; fail "$3"; }
        sleep 0.1
    done
}
until_doc 60 '.kind == "run" and ([.peers[] | select(.round > 0 and (.state == "running" or .state == "waiting"))] | length) == 4' \
    "not every peer shown running with a round"
r1=$(doc '[.peers[].round] | max')
until_doc 30 '([.peers[] | select((.rounds | length) >= 3)] | length) == 4' "the peers' histories do not grow"
until_doc 30 '([.links[] | select(.state == "up" and .bps > 0)] | length) == 8' \
    "not all 8 directions of the ring up with bytes per second"
r2=$(doc '[.peers[].round] | max')
[ "$r2" -gt "$r1" ] || fail "the round shown did not advance ($r1 then $r2)"
note "rounds $r1 -> $r2; $(doc '[.links[] | "\(.from)>\(.to) \(.bps | floor) B/s"] | join(", ")')"
doc '(.topology | endswith("/ring.topo")) and .algo == "dpsgd"' | grep -q true || fail "the peers' info (topology, algorithm) is not shown"

kill -9 "$3"  # peer 2
t0=$(date +%s.%N)
until_doc 15 '(.peers[] | select(.id == 2) | .state) == "silent" and ([.links[] | select((.from == 2 or .to == 2) and .state == "missing")] | length) >= 2' \
    "the killed peer is not shown silent with its links missing"
note "peer 2 shown silent $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after SIGKILL: $(jq -r '.peers[] | select(.id == 2) | .end' "$T/doc.json")"
doc '[.links[] | select(.from == 2 or .to == 2) | .state] | unique == ["missing"]' | grep -q true ||
    fail "a link of the killed peer is not missing"

# endpoints that answer something else: the watch's own server (404)
"$MURMUR" watch --hosts "$T/hosts" --metrics-port "$wport" --once > "$T/bad.json" 2> "$T/bad.err" ||
    fail "murmur watch --once exited $? on endpoints that answer 404"
jq -e '[.peers[] | select(.state == "starting" and .end == "HTTP 404")] | length == 4' "$T/bad.json" > /dev/null ||
    { cat "$T/bad.json" >&2; fail "404 endpoints not shown as such"; }
"$MURMUR" watch --hosts "$T/hosts" --metrics-port 70000 --once > /dev/null 2> "$T/usage.err" && fail "--metrics-port 70000 accepted"
grep -q "metrics-port 70000" "$T/usage.err" || fail "no clear error for a bad --metrics-port"
echo "ok: murmur watch --hosts: 4 peers' endpoints, rounds advance, 8 directions with bytes per second, a killed peer silent, 404s named"
