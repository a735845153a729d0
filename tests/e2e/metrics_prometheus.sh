# A real Prometheus (Debian's package, started here on loopback with a
# config written here) scrapes 4 training peers' --metrics-addr endpoints
# every 250 ms during a run. Through Prometheus's HTTP API: every peer's
# murmur_round increases, and every scrape's murmur_transport_sent_bytes_total is
# exactly the bytes_sent of the peer's own metrics.jsonl round line of that
# round (both come from one copy of the peer's state), the last one among
# the run's last rounds (a peer stops serving when it exits, which can be
# between two scrapes: ~3 rounds of 75 ms each); so is its bytes sent to
# each neighbour (murmur_neighbour_sent_bytes_total, the line's
# link_bytes_sent), to its two ring neighbours only, summing to the total.
# The peers run with --robust-clip 1 (which on a ring clips about one
# honest pull a round): every scrape's murmur_pulls_clipped_total is the
# pulls_clipped of the same round line, and some peer clipped some.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
need_pkgs prometheus jq curl || { echo "skip: prometheus, jq or curl missing and not root to install them"; exit 0; }
n=4
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
ports=$(free_ports $((2 * n + 1)))
mport=$((ports + n)); pport=$((ports + 2 * n))

# Prometheus: one job, a target per peer, labelled with its id.
{
    printf 'global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\nscrape_configs:\n'
    printf '  - job_name: murmur\n    static_configs:\n'
    k=0
    while [ $k -lt $n ]; do
        printf '      - targets: ["127.0.0.1:%d"]\n        labels: {node: "%d"}\n' $((mport + k)) $k
        k=$((k + 1))
    done
} > "$T/prometheus.yml"
bg prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn > "$T/prometheus.log" 2>&1
api="http://127.0.0.1:$pport/api/v1"
i=0
until curl -sf "http://127.0.0.1:$pport/-/ready" > /dev/null; do
    i=$((i + 1)); [ $i -lt 150 ] || { cat "$T/prometheus.log" >&2; fail "prometheus not ready after 15 s"; }
    sleep 0.1
done
# its targets discovered (down until the peers start)
i=0
until [ "$(curl -sf "$api/targets" | jq '.data.activeTargets | length')" = $n ]; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "prometheus did not take its $n targets"
    sleep 0.1
done

run="$T/run"
pids=""
k=0
while [ $k -lt $n ]; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --base-port "$ports" \
        --plaintext --data "$T/data" --run-dir "$run" --layers 2 --width 32 --heads 2 --ctx 32 \
        --batch 8 --rounds 80 --eval-every 10 --log-every 0 --compute-jitter uniform:0.15 \
        --robust-clip 1 --metrics-addr "127.0.0.1:$((mport + k))" > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    k=$((k + 1))
done
wait_all $pids || { cat "$T"/peer*.out >&2; fail "a peer exited non-zero"; }

# query EXPR: Prometheus's raw samples of EXPR over the last 5 minutes, one
# line per sample: node, unix time, value.
query() {
    curl -sf "$api/query" --data-urlencode "query=$1[5m]" > "$T/q.json" || fail "query $1 failed"
    jq -r '.data.result[] | .metric.node as $k | .values[] | "\($k) \(.[0]) \(.[1])"' "$T/q.json"
}
query murmur_round > "$T/rounds.txt"
query murmur_transport_sent_bytes_total > "$T/bytes.txt"
k=0
while [ $k -lt $n ]; do
    awk -v k=$k '$1 == k { n++; if (n == 1) first = $3; if ($3 < last) down++; last = $3 }
        END { printf "  peer %d: %d scrapes, murmur_round %d -> %d\n", k, n, first, last
              exit !(n >= 4 && last > first && !down) }' "$T/rounds.txt" ||
        fail "peer $k: murmur_round did not increase in Prometheus"
    # Pair each scrape's round and bytes (same timestamp) and look the pair
    # up in the peer's round lines: "round":R-1 ... "bytes_sent":B.
    grep '"ev":"round"' "$run/node-$k/metrics.jsonl" |
        sed -n 's/.*"round":\([0-9]*\),.*"bytes_sent":\([0-9]*\),.*/\1 \2/p' > "$T/lines$k.txt"
    awk -v k=$k 'FILENAME == ARGV[1] { sent[$1 + 1] = $2; last = $1 + 1; next }
        FILENAME == ARGV[2] && $1 == k { r[$2] = $3; next }
        FILENAME == ARGV[3] && $1 == k && ($2 in r) {
            n++; R = r[$2]
            if (!(R in sent) || sent[R] != $3) { printf "  peer %d at %s: round %d, bytes %s; metrics.jsonl: %s\n", k, $2, R, $3, sent[R]; bad++ }
            lastR = R; lastB = $3 }
        END { printf "  peer %d: %d scrapes match metrics.jsonl; the last: round %d, %s bytes (metrics.jsonl %s)\n", k, n, lastR, lastB, sent[last]
              exit !(n >= 4 && !bad && lastR >= last - 8) }' \
        "$T/lines$k.txt" "$T/rounds.txt" "$T/bytes.txt" ||
        fail "peer $k: Prometheus's murmur_transport_sent_bytes_total differs from metrics.jsonl"
    k=$((k + 1))
done
# Bytes per neighbour: each scrape's murmur_neighbour_sent_bytes_total{neighbour=J}
# is the link_bytes_sent J of the same round line, the peer's two ring
# neighbours and no one else, and they add up to the process's bytes.
curl -sf "$api/query" --data-urlencode "query=murmur_neighbour_sent_bytes_total[5m]" > "$T/q.json" ||
    fail "query murmur_neighbour_sent_bytes_total failed"
jq -r '.data.result[] | .metric.node as $k | .metric.neighbour as $j | .values[] | "\($k) \($j) \(.[0]) \(.[1])"' \
    "$T/q.json" > "$T/links.txt"
k=0
while [ $k -lt $n ]; do
    grep '"ev":"round"' "$run/node-$k/metrics.jsonl" |
        sed -n 's/.*"round":\([0-9]*\),.*"link_bytes_sent":{\([^}]*\)}.*/\1 \2/p' | tr -d '"' |
        awk '{ n = split($2, kv, ","); for (i = 1; i <= n; i++) { split(kv[i], p, ":"); print $1 + 1, p[1], p[2] } }' \
        > "$T/links$k.txt"
    awk -v k=$k -v n=$n 'FILENAME == ARGV[1] { sent[$1 " " $2] = $3; keys[$1]++; next }
        FILENAME == ARGV[2] && $1 == k { r[$2] = $3; next }
        FILENAME == ARGV[3] && $1 == k { total[$2] = $3; next }
        FILENAME == ARGV[4] && $1 == k && ($3 in r) {
            R = r[$3]; seen++; sum[$3] += $4; samples[$3]++
            if ($2 != (k + 1) % n && $2 != (k + n - 1) % n) { printf "  peer %d: bytes to %s, not a neighbour\n", k, $2; bad++ }
            if (sent[R " " $2] != $4) { printf "  peer %d at %s: round %d, to %s %s bytes; metrics.jsonl: %s\n", k, $3, R, $2, $4, sent[R " " $2]; bad++ } }
        END { for (ts in sum) { scrapes++; if (sum[ts] != total[ts]) { printf "  peer %d at %s: neighbours sum to %d, the process sent %s\n", k, ts, sum[ts], total[ts]; bad++ }
                  # as many neighbours as the round line has keys (both, once
                  # both links carried bytes: at the first round one may not yet)
                  if (samples[ts] != keys[r[ts]]) { printf "  peer %d at %s: %d neighbours, the round line %d\n", k, ts, samples[ts], keys[r[ts]]; bad++ }
                  if (samples[ts] == 2) full++ }
              printf "  peer %d: %d scrapes, %d neighbour samples match link_bytes_sent and sum to the process bytes\n", k, scrapes, seen
              exit !(scrapes >= 4 && full >= scrapes - 1 && !bad) }' \
        "$T/links$k.txt" "$T/rounds.txt" "$T/bytes.txt" "$T/links.txt" ||
        fail "peer $k: Prometheus's murmur_neighbour_sent_bytes_total differs from metrics.jsonl"
    k=$((k + 1))
done
# Robust mixing's counter: each scrape's murmur_pulls_clipped_total is the
# pulls_clipped of the round line of its round.
query murmur_pulls_clipped_total > "$T/clipped.txt"
k=0
while [ $k -lt $n ]; do
    grep '"ev":"round"' "$run/node-$k/metrics.jsonl" |
        sed -n 's/.*"round":\([0-9]*\),.*"pulls_clipped":\([0-9]*\).*/\1 \2/p' > "$T/clip$k.txt"
    awk -v k=$k 'FILENAME == ARGV[1] { c[$1 + 1] = $2; next }
        FILENAME == ARGV[2] && $1 == k { r[$2] = $3; next }
        FILENAME == ARGV[3] && $1 == k && ($2 in r) {
            n++; R = r[$2]; if ($3 > top) top = $3
            if (!(R in c) || c[R] != $3) { printf "  peer %d at %s: round %d, pulls_clipped %s; metrics.jsonl: %s\n", k, $2, R, $3, c[R]; bad++ } }
        END { printf "  peer %d: %d scrapes of murmur_pulls_clipped_total match metrics.jsonl (up to %d)\n", k, n, top
              exit !(n >= 4 && !bad) }' "$T/clip$k.txt" "$T/rounds.txt" "$T/clipped.txt" ||
        fail "peer $k: Prometheus's murmur_pulls_clipped_total differs from metrics.jsonl"
    k=$((k + 1))
done
awk '$3 > 0 { n++ } END { exit !(n > 0) }' "$T/clipped.txt" ||
    fail "no peer's murmur_pulls_clipped_total rose above 0 under --robust-clip 1"
# the training metrics made it too
curl -sf "$api/query" --data-urlencode 'query=count(max_over_time(murmur_eval_accuracy_ratio[5m]) > 0)' |
    jq -e '.data.result[0].value[1] == "4"' > /dev/null || fail "not every peer's eval accuracy reached Prometheus"
echo "ok: Prometheus scraped 4 peers; rounds increase, bytes, bytes per neighbour and pulls clipped match metrics.jsonl"
