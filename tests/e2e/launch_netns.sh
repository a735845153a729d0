# Several hosts for real on one machine: scripts/netns-lab.sh puts 4 network
# namespaces on a bridge (10.213.0.1-4); one peer runs inside each, listening
# on its lab address, and they find each other through a hosts file (TLS, a
# short training run). Needs root and iproute2: when namespaces are refused
# to a non-root user the test says why and passes; as root a lab that cannot
# be made is a failure.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
lab="$ROOT/scripts/netns-lab.sh"
need_pkgs iproute2 || { echo "skip: iproute2 missing and not root to install it"; exit 0; }
tag="mt$(($$ % 10000))"
sh "$lab" down "$tag" 2>/dev/null
E2E_CLEANUP='sh "$lab" down "$tag" 2>/dev/null'
if ! sh "$lab" up "$tag" 4 2> "$T/up.err"; then
    # only root may be refused quietly: as root a broken lab is a failure
    [ "$(id -u)" = 0 ] && { cat "$T/up.err" >&2; fail "scripts/netns-lab.sh up $tag 4 failed as root"; }
    echo "skip: network namespaces not permitted (not root): $(head -1 "$T/up.err")"
    exit 0
fi
export MURMUR_NO_BLAS_FIX=1
n=4
rounds=30
port=$(free_ports 1)   # every peer has its own address: one port will do
k=0
while [ $k -lt $n ]; do echo "$k $(sh "$lab" addr "$tag" $k):$port"; k=$((k + 1)); done > "$T/hosts"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" $n > /dev/null
peer() {
    k=$1
    exec sh "$lab" exec "$tag" "$k" "$MURMUR" node --hosts "$T/hosts" --id "$k" \
        --listen "$(sh "$lab" addr "$tag" "$k"):$port" --topology "$T/ring.topo" --tls-dir "$T/certs" \
        --data "$T/data" --run-dir "$T/run" --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 \
        --rounds $rounds --eval-every 10 --log-every 0 --start-timeout 20000 > "$T/peer$k.out" 2>&1
}
start=$(date +%s)
pids=""
for k in 0 1 2 3; do peer $k & pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"; done
wait_all $pids || { tail -5 "$T"/peer*.out >&2; fail "a peer in the lab exited non-zero"; }
note "4 peers in 4 namespaces, $rounds rounds: $(($(date +%s) - start))s"
k=0
while [ $k -lt $n ]; do
    m="$T/run/node-$k/metrics.jsonl"
    [ "$(jfield "$m" end round)" = $rounds ] || fail "peer $k did not finish $rounds rounds"
    recv=$(jfield "$m" round bytes_recv | tail -1)
    [ "${recv:-0}" -gt 0 ] || fail "peer $k received nothing"
    mixed=$(grep '"ev":"round"' "$m" | grep -c '"nbrs":\[[0-9]' || true)
    [ "$mixed" -gt $((rounds / 2)) ] || fail "peer $k mixed with its neighbours in only $mixed rounds"
    # its neighbours reached it at their lab addresses, not over loopback
    grep -q "10\.213\.0\.[1-4]" "$T/run/node-$k/node.log" || fail "peer $k's log names no lab address"
    grep -q "127\.0\.0\.1" "$T/run/node-$k/node.log" && fail "peer $k talked over loopback"
    grep -q "is up (TLS" "$T/run/node-$k/node.log" || fail "peer $k's connections were not TLS"
    note "peer $k: received $recv bytes, mixed in $mixed of $rounds rounds"
    k=$((k + 1))
done
"$MURMUR" report "$T/run" --no-plots > "$T/report.out" 2>&1 || fail "murmur report failed"
cat $T/run/node-1/node.log | head -20; echo "ok: 4 peers across network namespaces (TLS, hosts file)"
