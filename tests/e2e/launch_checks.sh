# scripts/run-local.sh and compare.sh refuse a misconfigured run before
# starting anything, saying why (exit 2, no run directory): -n other than
# the topology's number of peers, a column-stochastic-only topology without
# --algo pushsum, ports inside the kernel's ephemeral range (with the -p to
# use instead). And a peer that fails is explained on the terminal: its last
# ERROR line and its `end` reason, not only "see console.log".
# run-hosts.sh's checks are in tests/e2e/launch_ssh.sh (they need hosts).
. "$(dirname "$0")/lib.sh"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
rl() { sh "$ROOT/scripts/run-local.sh" "$@"; }
cmp_() { sh "$ROOT/scripts/compare.sh" "$@"; }
"$MURMUR" topo gen ring -n 4 > "$T/ring4.topo"
"$MURMUR" topo gen ring -n 3 > "$T/ring3.topo"
"$MURMUR" topo gen exp -n 4 --directed > "$T/expd4.topo" # directed, doubly stochastic
# directed, column-stochastic only (topologies/README.md's example)
printf 'peers 3\ngraph directed\nweights explicit\n0 1 1/4\n0 2 1/4\n1 2 1/2\n2 0 1/2\n' > "$T/push3.topo"
quick="--no-train --vector-len 100 --rounds 3 --eval-every 0 --log-every 0 --start-timeout 20000"

# refused NAME WANT_TEXT COMMAND...: exits 2 within seconds, says WANT_TEXT,
# and leaves no run directory behind (nothing was started).
refused() {
    what=$1 want=$2; shift 2
    st=0
    "$@" > "$T/out" 2>&1 || st=$?
    [ $st -eq 2 ] || { cat "$T/out" >&2; fail "$what: exit $st, not 2"; }
    grep -q -- "$want" "$T/out" || { cat "$T/out" >&2; fail "$what: no '$want' in the message"; }
    [ -z "$(ls "$RUNS" 2>/dev/null)" ] || fail "$what: something was started: $(ls "$RUNS")"
    note "$what: refused: $(head -n 1 "$T/out")"
}

port=$(free_ports 8)
refused "-n 2, 4-peer topology" "has 4 peers: give -n 4" rl -n 2 -t "$T/ring4.topo" -r a -p "$port" -- $quick
refused "-n 8, 4-peer topology" "has 4 peers: give -n 4" rl -n 8 -t "$T/ring4.topo" -r a -p "$port" -- $quick
refused "column-stochastic, default algo" "only --algo pushsum" rl -n 3 -t "$T/push3.topo" -r a -p "$port" -- $quick
refused "column-stochastic, --algo dpsgd" "--algo dpsgd would drift" rl -n 3 -t "$T/push3.topo" -r a -p "$port" -- $quick --algo dpsgd
refused "column-stochastic, --algo=async" "--algo async would drift" rl -n 3 -t "$T/push3.topo" -r a -p "$port" -- $quick --algo=async
refused "topology that does not load" "README.md:[0-9]*: " rl -n 3 -t "$ROOT/README.md" -r a -p "$port" -- $quick
# flags the node refuses, said once by the launcher (the node's own check,
# --dry-run), not once per peer with exit 1
"$MURMUR" topo gen ring -n 6 > "$T/ring6.topo"
refused "halving on 6 peers" "run-local: murmur node refuses these node flags: --allreduce-schedule halving needs a power of two of peers, not 6" \
    rl -n 6 -t "$T/ring6.topo" -r a -p "$port" -- $quick --algo allreduce --allreduce-schedule halving
[ "$(grep -c "power of two" "$T/out")" = 1 ] || { cat "$T/out" >&2; fail "halving on 6 peers: the refusal is not said once"; }
refused "--staleness without async" "--staleness bounds the age of the copies async mixes" \
    rl -n 4 -t "$T/ring4.topo" -r a -p "$port" -- $quick --staleness 3
# --metrics-addr without '+': one port for every peer of the machine; the
# launcher says so, and a peer started by hand that cannot bind it says how
mp=$((port + 6))
refused "--metrics-addr without +" "give --metrics-addr 127.0.0.1:$mp+ (peer K on port PORT+K)" \
    rl -n 4 -t "$T/ring4.topo" -r a -p "$port" -- $quick --metrics-addr 127.0.0.1:$mp
printf 'peers 2\n0 1\n' > "$T/ring2.topo"
for k in 0 1; do
    "$MURMUR" node --id $k --topology "$T/ring2.topo" --base-port "$port" --plaintext $quick \
        --start-timeout 2000 --metrics-addr 127.0.0.1:$mp --run-dir "$T/ma" > "$T/ma.$k.out" 2>&1 &
    eval "mpid$k=\$!"; E2E_PIDS="$E2E_PIDS $!"
done
st0=0; wait $mpid0 || st0=$?; st1=0; wait $mpid1 || st1=$?
[ $((st0 + st1)) = 1 ] || fail "two peers, one --metrics-addr port: exit statuses $st0 and $st1, not 0 and 1"
grep -h "cannot listen on 127.0.0.1:$mp" "$T"/ma.*.out | grep -q "give --metrics-addr 127.0.0.1:$mp+, which gives peer K port PORT+K" ||
    { cat "$T"/ma.*.out >&2; fail "the peer that could not bind the metrics port gives no hint"; }
note "by hand, one --metrics-addr port: $(grep -h 'cannot listen' "$T"/ma.*.out | sed 's/^.*ERROR: //' | cut -c1-150)..."
refused "compare: second topology of another size" "has 3 peers: give -n 3" \
    cmp_ -n 4 -r c -p "$port" "$T/ring4.topo" "$T/ring3.topo" -- $quick

# Ports inside the ephemeral range, and the suggestion is outside it.
set -- $(cat /proc/sys/net/ipv4/ip_local_port_range)
lo=$1 hi=$2
refused "ports in the ephemeral range" "ephemeral port range $lo..$hi" rl -n 4 -t "$T/ring4.topo" -r a -p $((lo - 2)) -- $quick
use=$(sed -n 's/.*use -p \([0-9]*\).*/\1/p' "$T/out")
[ -n "$use" ] && { [ $((use + 3)) -lt "$lo" ] || [ "$use" -gt "$hi" ]; } || fail "suggested -p '$use' is not outside $lo..$hi"
refused "compare: the second run's ports in the range" "ephemeral port range" \
    cmp_ -n 4 -r c -p $((lo - 6)) "$T/ring4.topo" "$T/ring4.topo" -- $quick

# What is right still runs: push-sum on the column-stochastic graph; the
# default algo on a directed graph whose W is doubly stochastic.
rl -n 3 -t "$T/push3.topo" -r push -p "$port" -i 1 --no-report -- $quick --algo pushsum > "$T/out" 2>&1 ||
    { cat "$T/out" >&2; fail "push-sum on a column-stochastic topology was not run"; }
rl -n 4 -t "$T/expd4.topo" -r expd -p "$port" -i 1 --no-report -- $quick > "$T/out" 2>&1 ||
    { cat "$T/out" >&2; fail "dpsgd on a doubly stochastic directed topology was not run"; }
note "pushsum on column-stochastic, dpsgd on doubly stochastic directed: run"

# A failing peer is explained: every peer here fails on missing data.
st=0
rl -n 3 -t "$T/ring3.topo" -r nodata -p "$port" -i 1 --no-report -- --plaintext --data "$T/none" --rounds 3 \
    > "$T/out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/out" >&2; fail "peers without data: exit $st, not 1"; }
for k in 0 1 2; do
    grep -q "peer $k exited with status 1" "$T/out" || { cat "$T/out" >&2; fail "peer $k's failure not named"; }
done
grep -q "last error: ERROR: $T/none/index.tsv: cannot open" "$T/out" ||
    { cat "$T/out" >&2; fail "the peers' last error is not on the terminal"; }
grep -q "no metrics: it stopped before it started to train" "$T/out" ||
    { cat "$T/out" >&2; fail "no word on the missing end line"; }
note "failed peers: $(grep -m1 'last error' "$T/out" | sed 's/^ *//')"
echo "ok: launchers refuse what they can check and explain failed peers"
