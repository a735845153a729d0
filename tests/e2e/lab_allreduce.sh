# --algo allreduce across the network-namespace lab, over TLS, on shaped
# links (scripts/netns-lab.sh up --profile 2x2:intra=200mbit,inter=50mbit):
# 4 peers average a 1 MB pure-gossip vector for 5 rounds; every peer ends
# each round with the same floats (snapshots r1..r5 bit-identical), and a
# round takes at least 80 % of what the links allow (murmur plan's T_AR,
# 0.24 s: one 256 KB chunk per step through a 50mbit uplink, 6 steps), so
# the chunks really crossed the shaped uplinks. The peers are on four
# hosts, so --allreduce-schedule auto runs the ring (docs/node.md), which
# every start line says. Needs root and iproute2:
# skips when namespaces are refused to a non-root user, fails as root when
# the lab cannot be made.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
. "$ROOT/tests/e2e/lib/lab.sh"
prof=2x2:intra=200mbit,inter=50mbit
lab_up ar 4 --profile "$prof"
export MURMUR_NO_BLAS_FIX=1
len=250000; rounds=5
port=$(free_ports 1)
k=0; while [ $k -lt 4 ]; do echo "$k $(sh "$lab" addr "$tag" $k):$port"; k=$((k + 1)); done > "$T/hosts"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" 4 > /dev/null
pids=""
for k in 0 1 2 3; do
    sh "$lab" exec "$tag" "$k" "$MURMUR" node --hosts "$T/hosts" --id "$k" --topology "$T/ring.topo" \
        --tls-dir "$T/certs" --algo allreduce --no-train --vector-len $len --rounds $rounds \
        --snapshot-every 1 --eval-every 0 --log-every 0 --start-timeout 20000 --run-dir "$T/run" \
        > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
wait_all $pids || { tail -5 "$T"/peer*.out >&2; fail "a peer in the lab exited non-zero"; }
for k in 0 1 2 3; do
    grep -q '"allreduce_schedule":"ring"' "$T/run/node-$k/metrics.jsonl" ||
        fail "peer $k on its own host did not run the ring (auto)"
done
r=1
while [ $r -le $rounds ]; do
    for k in 1 2 3; do
        cmp -s -i 32:32 -n $((4 * len)) "$T/run/node-0/snap/r0000000$r.bin" "$T/run/node-$k/snap/r0000000$r.bin" ||
            fail "round $r: peer $k's vector differs from peer 0's"
    done
    r=$((r + 1))
done
pred=$("$MURMUR" plan --peers 4 --algo allreduce --overlap --vector-len $len --step-time 0 --links "$prof" --json |
       sed -n 's/.*"allreduce_s":\([0-9.e+-]*\).*/\1/p')
# slowest peer's median round after the first
meas=$(for k in 0 1 2 3; do jfield "$T/run/node-$k/metrics.jsonl" round time | awk 'NR > 1 { print $1 - p } { p = $1 }'; done |
       sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
note "5 rounds of a 1 MB all-reduce over TLS on $prof: median round $meas s, links allow $pred s"
awk -v m="$meas" -v p="$pred" 'BEGIN { exit !(m >= 0.8 * p && m < 10 * p) }' ||
    fail "a round took $meas s, the shaped links allow no less than $pred s"
echo "ok: allreduce across the lab, bit-identical on every peer, at the shaped links' pace"
