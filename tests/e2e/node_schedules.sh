# Real peers on the new schedules (plaintext, tiny model): `local` trains
# alone and sends nothing, every round, and ends normally; a Base-(k+1)
# graph on a prime number of peers reaches the exact average (to float
# rounding) after one period of pure gossip; Epidemic Learning's peers,
# which often receive from nobody in a round, shrink the consensus
# distance and end normally.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"

# run NAME N ROUNDS [node flags...]: N peers on $T/NAME.topo, all must end 0
run() {
    name=$1; n=$2; rounds=$3; shift 3
    port=$(free_ports "$n")
    pids=""
    for k in $(seq 0 $((n - 1))); do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$k" --topology "$T/$name.topo" --base-port "$port" \
            --plaintext --run-dir "$T/$name" --rounds "$rounds" --log-every 0 "$@" \
            > "$T/$name-$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || { tail -n 5 "$T/$name"-*.out >&2; fail "$name: a peer exited non-zero"; }
    for k in $(seq 0 $((n - 1))); do
        grep -q '"ev":"end".*"reason":"done"' "$T/$name/node-$k/metrics.jsonl" ||
            fail "$name: peer $k did not end normally"
    done
}
# consensus NAME ROUND: the exact consensus distance at ROUND (murmur report)
consensus() {
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$T/$1" --no-plots --csv "$T/$1.csv" > /dev/null 2>&1 ||
        fail "$1: murmur report failed"
    awk -F, -v r="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        $1 == r { print $h["consensus"] }' "$T/$1.csv"
}

"$MURMUR" topo gen local -n 3 > "$T/local.topo"
run local 3 20 --data "$T/data" --partition genre --layers 1 --width 16 --heads 2 --ctx 16 \
    --batch 4 --eval-every 10
for k in 0 1 2; do
    m="$T/local/node-$k/metrics.jsonl"
    rounds=$(grep -c '"ev":"round"' "$m")
    [ "$rounds" -eq 20 ] || fail "local: peer $k logged $rounds rounds, not 20"
    sent=$(jfield "$m" round bytes_sent | awk '{ s += $1 } END { print s + 0 }')
    recv=$(jfield "$m" round bytes_recv | awk '{ s += $1 } END { print s + 0 }')
    [ "$sent" -eq 0 ] && [ "$recv" -eq 0 ] || fail "local: peer $k sent $sent and received $recv bytes"
done
note "local: 3 peers, 20 rounds each, 0 bytes sent or received"

# 7 peers (prime), k = 2: period 4
"$MURMUR" topo gen base -n 7 -k 2 > "$T/base.topo"
period=$("$MURMUR" topo info --json "$T/base.topo" | sed -n 's/.*"period": \([0-9]*\).*/\1/p')
run base 7 "$period" --no-train --vector-len 1000 --eval-every 1 --snapshot-every 1
x0=$(consensus base 0); xp=$(consensus base "$period")
note "base: consensus distance $x0 at round 0, $xp after one period ($period rounds)"
awk -v a="$x0" -v b="$xp" 'BEGIN { exit !(a > 1 && b < 1e-6 * a) }' ||
    fail "base: not the exact average after one period ($x0 -> $xp)"

"$MURMUR" topo gen epidemic -n 5 -s 1 --seed 3 > "$T/epi.topo"
run epi 5 12 --no-train --vector-len 1000 --eval-every 12 --snapshot-every 12
x0=$(consensus epi 0); x12=$(consensus epi 12)
sent=$(jfield "$T/epi/node-0/metrics.jsonl" round bytes_sent | awk '{ s += $1 } END { print s + 0 }')
note "epidemic: consensus distance $x0 -> $x12 in 12 rounds; peer 0 sent $sent bytes"
awk -v a="$x0" -v b="$x12" -v s="$sent" 'BEGIN { exit !(b < 0.1 * a && s > 12 * 4000) }' ||
    fail "epidemic: the replicas did not come together or nothing was sent"
echo "ok: local, base and epidemic peers run and end normally"
