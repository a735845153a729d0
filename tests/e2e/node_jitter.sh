# --compute-jitter is reproducible from its seed: two runs of the same two
# peers with the same --jitter-seed draw the same delays, round for round
# (the cumulative t_jitter of every round line, compared as text); another
# seed draws others. The delays are really slept (t_compute >= t_jitter)
# and follow their law: uniform:0.02 averages about 0.01 s a step,
# longtail:0.25:0.03 is 0 or 0.03 s, 0.03 in about a quarter of the steps.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/pair.topo" 2>/dev/null
# run NAME JITTER SEED: 2 peers, 30 rounds of 2 local steps, pure gossip
run() {
    port=$(free_ports 2); pids=""
    for k in 0 1; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/pair.topo" --base-port "$port" \
            --plaintext --no-train --vector-len 64 --rounds 30 --local-steps 2 --eval-every 0 \
            --log-every 0 --compute-jitter "$2" --jitter-seed "$3" --run-dir "$T/$1" > "$T/$1.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || { cat "$T/$1.0.out" >&2; fail "$1: a peer failed"; }
}
run a uniform:0.02 7; run b uniform:0.02 7; run c uniform:0.02 8
for k in 0 1; do
    jfield "$T/a/node-$k/metrics.jsonl" round t_jitter > "$T/a$k"
    jfield "$T/b/node-$k/metrics.jsonl" round t_jitter > "$T/b$k"
    jfield "$T/c/node-$k/metrics.jsonl" round t_jitter > "$T/c$k"
    [ "$(wc -l < "$T/a$k")" = 30 ] || fail "peer $k: not 30 round lines with t_jitter"
    cmp -s "$T/a$k" "$T/b$k" || fail "peer $k: the same seed drew other delays"
    cmp -s "$T/a$k" "$T/c$k" && fail "peer $k: another seed drew the same delays"
done
cmp -s "$T/a0" "$T/a1" && fail "both peers drew the same delays (one stream per peer expected)"
tot=$(tail -1 "$T/a0"); comp=$(jfield "$T/a/node-0/metrics.jsonl" round t_compute | tail -1)
note "uniform:0.02, seed 7: peer 0 slept $tot s in 60 steps (compute $comp s); seed 8: $(tail -1 "$T/c0") s"
awk -v j="$tot" -v c="$comp" 'BEGIN { exit !(c >= j && j > 0.6 * 0.3 && j < 0.6 * 1.7) }' ||
    fail "uniform:0.02: $tot s of delay drawn, $comp s computed: not slept, or not U(0, 0.02)"
run d longtail:0.25:0.03 3
# steps with a delay: the increments of t_jitter are multiples of 0.03
slow=$(jfield "$T/d/node-0/metrics.jsonl" round t_jitter | awk '{ d = $1 - p; p = $1; n += int(d / 0.03 + 0.5);
    r = d / 0.03 - int(d / 0.03 + 0.5); if (r > 1e-6 || r < -1e-6) bad++ } END { print (bad ? "bad" : n) }')
note "longtail:0.25:0.03: $slow slow steps of 60"
[ "$slow" != bad ] || fail "longtail: a delay that is not 0 or 0.03 s"
[ "$slow" -ge 5 ] && [ "$slow" -le 28 ] || fail "longtail:0.25: $slow slow steps of 60"
echo "ok: --compute-jitter is reproducible from its seed"
