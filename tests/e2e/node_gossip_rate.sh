# Pure gossip (--no-train): the consensus distance measured from exact
# snapshots shrinks per round at the rate rho that `murmur topo info`
# predicts; a one-peer exponential graph of 8 peers reaches the exact
# average in 3 rounds; push-sum on a directed graph reaches the average.
. "$(dirname "$0")/lib.sh"
n=8

# run NAME TOPO ROUNDS [node flags]: 8 peers gossiping a 20000-float vector.
run() {
    name=$1; topo=$2; rounds=$3; shift 3
    port=$(free_ports $n)
    pids=""
    k=0
    while [ $k -lt $n ]; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$topo" --base-port "$port" --plaintext \
            --no-train --vector-len 20000 --rounds "$rounds" --run-dir "$T/$name" --eval-every 1 \
            --snapshot-every 1 --log-every 0 --start-timeout 20000 "$@" > "$T/$name.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
        k=$((k + 1))
    done
    wait_all $pids || fail "$name: a peer exited non-zero"
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$T/$name" --no-plots --csv "$T/$name.csv" > "$T/$name.report" 2>&1 ||
        fail "$name: murmur report failed"
}
# col CSV NAME ROUND: the value of column NAME at ROUND
col() {
    awk -F, -v c="$2" -v r="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
        $1 == r { print $k }' "$1"
}
rho_of() { "$MURMUR" topo info --json "$1" 2>/dev/null | sed -n 's/.*"rho": \([0-9.eE+-]*\).*/\1/p'; }

# The rate is measured over rounds FROM..TO: late enough that the slowest
# mode dominates, early enough that the distance is still far above float32
# round-off (the exponential graph shrinks it ~3x per round).
for spec in ring:8:16 exp:2:8; do
    kind=${spec%%:*}; from=$(echo "$spec" | cut -d: -f2); to=${spec##*:}
    "$MURMUR" topo gen $kind -n $n > "$T/$kind.topo" 2>/dev/null
    run $kind "$T/$kind.topo" "$to"
    rho=$(rho_of "$T/$kind.topo")
    [ "$(col "$T/$kind.csv" method "$to")" = exact ] || fail "$kind: consensus not from snapshots"
    ca=$(col "$T/$kind.csv" consensus "$from"); cb=$(col "$T/$kind.csv" consensus "$to")
    awk -v a="$ca" -v b="$cb" -v rho="$rho" -v k="$kind" -v r=$((to - from)) 'BEGIN {
        rate = exp(log(b / a) / r)
        printf "  %s-8: measured rate %.4f per round, rho %.4f (%+.1f%%)\n", k, rate, rho, 100 * (rate / rho - 1)
        # never faster than rho allows, and no more than 5% slower
        if (rate > rho * 1.05 || rate < rho * 0.90) exit 1
    }' || fail "$kind: contraction rate disagrees with rho"
done

"$MURMUR" topo gen one-peer-exp -n $n > "$T/ope.topo" 2>/dev/null
run ope "$T/ope.topo" 4
c0=$(col "$T/ope.csv" consensus 0); c2=$(col "$T/ope.csv" consensus 2); c3=$(col "$T/ope.csv" consensus 3)
note "one-peer-exp-8: consensus $c0 -> round 2: $c2 -> round 3: $c3"
awk -v a="$c0" -v b="$c2" -v c="$c3" 'BEGIN { exit !(c < 1e-6 * a && b > 1e-3 * a) }' ||
    fail "one-peer exponential graph did not reach the exact average at round 3 (and only then)"

"$MURMUR" topo gen exp -n $n --directed > "$T/dexp.topo" 2>/dev/null
run pushsum "$T/dexp.topo" 40 --algo pushsum
c0=$(col "$T/pushsum.csv" consensus 0); c40=$(col "$T/pushsum.csv" consensus 40)
m0=$(col "$T/pushsum.csv" avg_norm 0); m40=$(col "$T/pushsum.csv" avg_norm 40)
note "push-sum on a directed exponential graph: consensus $c0 -> $c40, |mean| $m0 -> $m40"
awk -v a="$c0" -v b="$c40" -v m="$m0" -v mm="$m40" 'BEGIN {
    exit !(b < 1e-4 * a && (mm - m) < 1e-3 * m && (m - mm) < 1e-3 * m) }' ||
    fail "push-sum did not reach the average"
echo "ok: gossip rates match rho"
