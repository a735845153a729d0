# A misconfigured run fails loudly (issue 12, item 2), through the
# launchers: run-local.sh with one peer that differs from the others (a
# stand-in for murmur that adds flags to one peer's command line), and
# compare.sh over such a run.
#   - peer 2 runs --plaintext among TLS peers: peers 1, 2 and 3 never mix
#     across that link and end with status 3 (`refused`), peer 0 with 0;
#     the terminal names the TLS mismatch, the report shows `refused` and
#     the tls_mismatch count, and peer 2 said it was isolated while it ran;
#   - peer 3 has another --layers: the same for the model fingerprint;
#   - compare.sh over the plaintext case exits 1 and its table shows it.
# (-n against the topology and a column-stochastic W without push-sum are
# refused before launch: tests/e2e/launch_checks.sh.)
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
real=$MURMUR
"$real" topo gen ring -n 4 > "$T/ring4.topo"
# small and quick: T_iso = max(start 2 s, peer 1 s + round 0.5 s) = 2 s
quick="--no-train --layers 2 --width 32 --heads 2 --ctx 32 --rounds 40 --eval-every 10
       --checkpoint-every 0 --log-every 0 --start-timeout 2000 --peer-timeout 1000 --round-timeout 500"

# wrap NAME ID FLAGS...: a murmur that adds FLAGS to `murmur node --id ID`.
wrap() {
    w="$T/$1"; id=$2; shift 2
    cat > "$w" <<EOF
#!/bin/sh
if [ "\$1" = node ]; then
    prev=''
    for a in "\$@"; do
        [ "\$prev" = --id ] && [ "\$a" = $id ] && exec "$real" "\$@" $*
        prev=\$a
    done
fi
exec "$real" "\$@"
EOF
    chmod +x "$w"
}

# expect_statuses RUN S0 S1 S2 S3: each peer's exit status in launch/node-K.exit.
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

# 1. One --plaintext peer among TLS peers.
wrap plain 2 --plaintext
st=0
MURMUR="$T/plain" sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring4.topo" -r plain -p "$port" -i 1 \
    -- $quick > "$T/out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/out" >&2; fail "plaintext among TLS: run-local exited $st, not 1"; }
expect_statuses plain 0 3 3 3
for k in 1 2 3; do
    grep -q "peer $k exited with status 3" "$T/out" || { cat "$T/out" >&2; fail "peer $k's status 3 is not on the terminal"; }
done
grep -q "peer 2: TLS mismatch: it speaks plaintext murmur but this peer expects TLS" "$T/out" ||
    { cat "$T/out" >&2; fail "peers 1 and 3: the TLS mismatch with peer 2 is not named on the terminal"; }
grep -q "peer [13]: TLS mismatch: it speaks TLS but this peer runs --plaintext" "$T/out" ||
    { cat "$T/out" >&2; fail "peer 2: the TLS mismatch is not named on the terminal"; }
grep -q "misconfigured" "$T/out" || { cat "$T/out" >&2; fail "run-local does not say the run was misconfigured"; }
# the report (run-local ends with it): the end column and the refusals
awk '$1 ~ /^node-[123]$/ && $5 != "refused" { bad = 1 } $1 == "node-0" && $5 != "done" { bad = 1 }
     END { exit bad }' "$T/out" || { cat "$T/out" >&2; fail "the report's end column does not say refused"; }
grep -q "^node-2 .*tls_mismatch" "$T/out" || { cat "$T/out" >&2; fail "the report does not name the TLS mismatch"; }
# peer 2, alone, said so while it ran: an isolated event with rounds after it
m="$RUNS/plain/node-2/metrics.jsonl"
awk '/"ev":"isolated"/ { iso = 1 } iso && /"ev":"round"/ { after++ } END { exit !(iso && after > 5) }' "$m" ||
    fail "peer 2 did not report its isolation while it ran"
grep -q "WARN: isolated for" "$RUNS/plain/node-2/console.log" || fail "no isolation warning in peer 2's log"
"$real" report --progress "$RUNS/plain" > "$T/progress" 2>&1
grep -q "refused 3 (tls_mismatch)" "$T/progress" || { cat "$T/progress" >&2; fail "the progress line does not show the refused peers"; }
note "plaintext among TLS: $(grep -m1 'peer 2: TLS mismatch' "$T/out" | sed 's/^ *//')"
note "progress: $(cat "$T/progress")"

# 2. Another --layers on peer 3.
wrap layers 3 --layers 3
st=0
MURMUR="$T/layers" sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring4.topo" -r layers -p "$port" -i 1 \
    -- $quick > "$T/out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/out" >&2; fail "another --layers: run-local exited $st, not 1"; }
expect_statuses layers 3 0 3 3
grep -q "peer 3: model fingerprint differs" "$T/out" || { cat "$T/out" >&2; fail "the fingerprint refusal is not named on the terminal"; }
grep -q "^node-3 .*refused.*bad_fingerprint" "$T/out" || { cat "$T/out" >&2; fail "the report does not name the fingerprint refusal"; }
note "another --layers: $(grep -m1 'peer 3: model fingerprint' "$T/out" | sed 's/^ *//' | cut -c1-120)"

# 3. compare.sh over the plaintext case: exit 1, the table says so.
st=0
MURMUR="$T/plain" sh "$ROOT/scripts/compare.sh" -n 4 -r cmp -p $((port + 4)) -i 1 "$T/ring4.topo" \
    -- $quick > "$T/out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/out" >&2; fail "compare over a misconfigured run exited $st, not 1"; }
grep -q "peer 2: TLS mismatch" "$T/out" || { cat "$T/out" >&2; fail "compare: the TLS mismatch is not on the terminal"; }
grep -q "^ring4 .* 3 refused .*tls_mismatch" "$T/out" || { cat "$T/out" >&2; fail "compare's table does not show the refused peers"; }
grep -q ',3,0,' "$RUNS/cmp/compare.csv" || { cat "$RUNS/cmp/compare.csv" >&2; fail "compare.csv has no refused/isolated counts"; }
note "compare: $(grep '^ring4 ' "$T/out")"
echo "ok: misconfigured runs fail through the launchers, with the reason on the terminal and in the report"
