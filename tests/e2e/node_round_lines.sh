# The round lines' budget (--round-lines R, docs/metrics.md "How many round
# lines"): a pure-gossip run of thousands of rounds a second writes at most
# 1000 + R·t round lines in t seconds (plus the lines it must write: the
# last round), and its lines still account for every round (the `rounds`
# of each line sum to the rounds run, their `exchanges_since` to the
# exchanges); with --round-lines 0, one line per round, as before the
# budget. A chain of two, 10000 rounds, --eval-every 0.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/chain.topo" 2>/dev/null
R=10000
# run NAME RATE: both peers to the end (at most 120 s)
run() {
    port=$(free_ports 2)
    pids=""
    for k in 0 1; do
        MURMUR_NO_BLAS_FIX=1 timeout 120 "$MURMUR" node --id $k --topology "$T/chain.topo" \
            --base-port "$port" --plaintext --no-train --vector-len 100 --rounds $R \
            --eval-every 0 --log-every 0 --checkpoint-every 0 --round-lines "$2" \
            --run-dir "$T/$1" > "$T/$1.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || fail "run $1: a peer failed or took over 120 s (exit status above; $(tail -2 "$T/$1.0.out"))"
}
# lines FILE: round lines; covered FILE: rounds they stand for; wall FILE:
# the peer's time at its end line
lines() { grep -c '"ev":"round"' "$1"; }
covered() {
    grep '"ev":"round"' "$1" | awk '{ if (match($0, /"rounds":[0-9]+/)) n += substr($0, RSTART + 9, RLENGTH - 9); else n++ } END { print n + 0 }'
}
exchanges() {
    grep '"ev":"round"' "$1" | awk '{ if (match($0, /"exchanges_since":[0-9]+/)) n += substr($0, RSTART + 18, RLENGTH - 18);
        else if (match($0, /"exchanges":[0-9]+/)) n += substr($0, RSTART + 12, RLENGTH - 12) } END { print n + 0 }'
}

run budget 100
for k in 0 1; do
    m=$T/budget/node-$k/metrics.jsonl
    n=$(lines "$m"); c=$(covered "$m"); x=$(exchanges "$m"); t=$(jfield "$m" end time)
    [ "$c" -eq $R ] || fail "peer $k: its round lines stand for $c rounds, not the $R it ran"
    [ "$x" -eq $R ] || fail "peer $k: its round lines count $x exchanges, not $R"
    max=$(awk -v t="$t" 'BEGIN { printf "%d", 1000 + 100 * t + 5 }')
    [ "$n" -le "$max" ] || fail "peer $k wrote $n round lines in $t s, more than the budget's $max"
    [ "$n" -lt $R ] || fail "peer $k wrote a line for every one of its $R rounds: the budget did nothing (a run of $t s)"
    note "peer $k: $n round lines for $R rounds in $t s (budget: at most $max)"
done
grep '"ev":"round"' "$T/budget/node-0/metrics.jsonl" | tail -1 | grep -q "\"round\":$((R - 1))," ||
    fail "the last round's line is missing"

run every 0
for k in 0 1; do
    n=$(lines "$T/every/node-$k/metrics.jsonl")
    [ "$n" -eq $R ] || fail "--round-lines 0: peer $k wrote $n round lines for $R rounds"
done
echo "ok: round lines within their budget, every round accounted for"
