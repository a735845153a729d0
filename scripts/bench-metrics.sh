#!/bin/sh
# One 4-peer ring run (a tiny model, plaintext, on loopback) for the
# metrics endpoint's benchmark: with "scrape", every peer runs
# --metrics-addr and each endpoint is scraped once a second (as Prometheus
# would) for the whole run; with "plain", no endpoint. Appends one line to
# OUT: "MODE mean_round_ms scrapes" (peer 0's wall time per round from its
# round lines, rounds 10..end, so start-up is left out).
#   scripts/bench-metrics.sh scrape|plain OUT [ROUNDS]
# Paired A B A B with farm-bench (docs/metrics.md has the figures):
#   farm-bench -n 5 --timeout 900 --vs 'sh scripts/bench-metrics.sh plain /tmp/b.txt' \
#       -- sh scripts/bench-metrics.sh scrape /tmp/b.txt
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
[ $# -ge 2 ] || { echo "usage: $0 scrape|plain OUT [ROUNDS]" >&2; exit 2; }
mode=$1; out=$2; rounds=${3:-300}
here=$(cd "$(dirname "$0")" && pwd)
MURMUR=${MURMUR:-$here/../murmur}
T=$(mktemp -d "${TMPDIR:-/tmp}/murmur-bench-metrics.XXXXXX")
pids=""
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"' EXIT
. "$here/../tests/e2e/lib/corpus.sh"
make_tagged_corpus "$T/src" 6
MURMUR_NO_BLAS_FIX=1 "$MURMUR" data-prepare "$T/src" "$T/data" > /dev/null
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100) ))
for k in 0 1 2 3; do
    extra=""
    [ "$mode" = scrape ] && extra="--metrics-addr 127.0.0.1:$((port + 4 + k))"
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --base-port "$port" \
        --plaintext --data "$T/data" --run-dir "$T/run" --layers 2 --width 32 --heads 2 --ctx 32 \
        --batch 8 --rounds "$rounds" --eval-every 50 --log-every 0 $extra > "$T/p$k.out" 2>&1 &
    pids="$pids $!"
done
scrapes=0
if [ "$mode" = scrape ]; then
    # once a second, every endpoint, until the peers are done
    while kill -0 $pids 2>/dev/null; do
        for k in 0 1 2 3; do
            curl -sf -o /dev/null "http://127.0.0.1:$((port + 4 + k))/metrics" && scrapes=$((scrapes + 1)) || true
        done
        sleep 1
    done
fi
k=0
for p in $pids; do
    st=0; wait "$p" || st=$?
    [ $st -eq 0 ] || { echo "bench-metrics: peer $k exited $st; its run kept in $T.failed" >&2; cp -r "$T" "$T.failed"; exit 1; }
    k=$((k + 1))
done
pids=""
awk -v mode="$mode" -v s="$scrapes" '/"ev":"round"/ {
        r = $0; sub(/.*"round":/, "", r); sub(/,.*/, "", r)
        t = $0; sub(/.*"time":/, "", t); sub(/,.*/, "", t)
        if (r + 0 == 10) t0 = t; if (r + 0 > 10) { t1 = t; n = r - 10 } }
    END { printf "%s %.3f %d\n", mode, 1000 * (t1 - t0) / n, s }' "$T/run/node-0/metrics.jsonl" >> "$out"
