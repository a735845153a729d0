#!/bin/sh
# Does scraping the metrics endpoint slow the round? Runs a 4-peer ring (a
# tiny model, plaintext, on loopback) PAIRS times without an endpoint
# (plain) and PAIRS times with --metrics-addr on every peer, each endpoint
# scraped every INTERVAL seconds for the whole run as Prometheus would
# (scrape), interleaved plain scrape plain scrape ... so that a drift of the
# machine's speed hits both alike. A run's figures: the mean wall time per
# round over all 4 peers' round lines, rounds 10..end (start-up left out),
# and the 4 peers' CPU time per round over the whole run (their end lines'
# cpu_s: user + system, the endpoint's threads included), which a loaded
# machine disturbs less than wall time.
#   scripts/bench-metrics.sh [-n PAIRS] [-r ROUNDS] [-i INTERVAL] [-o OUT]
# Prints one line per pair (both figures of both, the ratios scrape/plain,
# the scrapes made, the load average before the pair) and then the medians,
# the median ratios with their range, and the run-to-run spread of the
# plain runs (max/min - 1) to compare them with: a ratio within that spread
# is no measurable difference. OUT (default: none) keeps the per-run lines
# (MODE ms cpu_ms scrapes load). Defaults: 5 pairs, 1000 rounds, a scrape a
# second.
# docs/metrics.md, "Prometheus endpoint", has the figures.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
pairs=5 rounds=1000 interval=1 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) pairs=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        -i) interval=$2; shift 2 ;;
        -o) out=$2; shift 2 ;;
        *) echo "usage: $0 [-n PAIRS] [-r ROUNDS] [-i INTERVAL] [-o OUT]" >&2; exit 2 ;;
    esac
done
case "$pairs$rounds" in *[!0-9]*) echo "$0: -n and -r take whole numbers" >&2; exit 2 ;; esac
[ "$rounds" -ge 20 ] || { echo "$0: -r: at least 20 rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
MURMUR=${MURMUR:-$here/../murmur}
T=$(mktemp -d "${TMPDIR:-/tmp}/murmur-bench-metrics.XXXXXX")
pids=""
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
. "$here/../tests/e2e/lib/corpus.sh"
make_tagged_corpus "$T/src" 6
MURMUR_NO_BLAS_FIX=1 "$MURMUR" data-prepare "$T/src" "$T/data" > /dev/null
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100) ))

load() { cut -d' ' -f1 /proc/loadavg; }

# one_run MODE: prints "MODE mean_round_ms cpu_ms_per_round scrapes"
one_run() {
    mode=$1
    rm -rf "$T/run"
    pids=""
    for k in 0 1 2 3; do
        extra=""
        [ "$mode" = scrape ] && extra="--metrics-addr 127.0.0.1:$((port + 4 + k))"
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --base-port "$port" \
            --plaintext --data "$T/data" --run-dir "$T/run" --layers 2 --width 32 --heads 2 \
            --ctx 32 --batch 8 --rounds "$rounds" --eval-every 100 --log-every 0 $extra \
            > "$T/p$k.out" 2>&1 &
        pids="$pids $!"
    done
    scrapes=0
    if [ "$mode" = scrape ]; then
        while kill -0 $pids 2>/dev/null; do
            for k in 0 1 2 3; do
                curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$((port + 4 + k))/metrics" &&
                    scrapes=$((scrapes + 1)) || true
            done
            sleep "$interval"
        done
    fi
    k=0
    for p in $pids; do
        st=0; wait "$p" || st=$?
        [ $st -eq 0 ] || { echo "bench-metrics: peer $k exited $st:" >&2; tail -5 "$T/p$k.out" >&2; exit 1; }
        k=$((k + 1))
    done
    pids=""
    cat "$T"/run/node-*/metrics.jsonl | awk -v mode="$mode" -v s="$scrapes" -v rounds="$rounds" '
        /"ev":"end"/ { c = $0; sub(/.*"cpu_s":/, "", c); sub(/,.*/, "", c); cpu += c }
        /"ev":"round"/ {
            p = $0; sub(/.*"peer":/, "", p); sub(/,.*/, "", p)
            r = $0; sub(/.*"round":/, "", r); sub(/,.*/, "", r)
            t = $0; sub(/.*"time":/, "", t); sub(/,.*/, "", t)
            if (r + 0 == 10) t0[p] = t; if (r + 0 > 10) { t1[p] = t; n[p] = r - 10 } }
        END { for (p in n) { sum += (t1[p] - t0[p]) / n[p]; k++ }
              printf "%s %.3f %.3f %d\n", mode, 1000 * sum / k, 1000 * cpu / rounds, s }'
}

printf 'pair  plain_ms  scrape_ms  wall_ratio  plain_cpu_ms  scrape_cpu_ms  cpu_ratio  scrapes  load\n'
: > "$T/pairs"
i=1
while [ $i -le "$pairs" ]; do
    l=$(load)
    # not in $(...): the peers must stay this shell's, for the trap
    one_run plain > "$T/a"; one_run scrape > "$T/b"
    a=$(cat "$T/a"); b=$(cat "$T/b")
    [ -z "$out" ] || printf '%s %s\n%s %s\n' "$a" "$l" "$b" "$l" >> "$out"
    # i plain ms cpu scrapes scrape ms cpu scrapes load
    echo "$i $a $b $l" | awk '{ printf "%4d  %8.3f  %9.3f  %10.4f  %12.3f  %13.3f  %9.4f  %7d  %s\n",
        $1, $3, $7, $7 / $3, $4, $8, ($4 > 0 ? $8 / $4 : 0), $9, $10 }' | tee -a "$T/pairs"
    i=$((i + 1))
done
# column COL NAME: "NAME median min max" of that column
column() { sort -n -k"$1" "$T/pairs" | awk -v c="$1" -v name="$2" '{ v[NR] = $c }
    END { print name, v[int((NR + 1) / 2)], v[1], v[NR] }'; }
{ column 2 plain; column 3 scrape; column 4 ratio; column 5 plain_cpu; column 6 scrape_cpu; column 7 cpu_ratio; } |
    awk -v n="$pairs" '
    $1 == "plain" { printf "wall: median plain %.3f ms/round (min %.3f, max %.3f): run-to-run spread %.1f%%\n", $2, $3, $4, 100 * ($4 / $3 - 1) }
    $1 == "scrape" { printf "wall: median scrape %.3f ms/round (min %.3f, max %.3f)\n", $2, $3, $4 }
    $1 == "ratio" { printf "wall: scrape/plain median %.4f (min %.4f, max %.4f) over %d pairs\n", $2, $3, $4, n }
    $1 == "plain_cpu" { printf "cpu: median plain %.3f ms/round, 4 peers (min %.3f, max %.3f): run-to-run spread %.1f%%\n", $2, $3, $4, ($3 > 0 ? 100 * ($4 / $3 - 1) : 0) }
    $1 == "scrape_cpu" { printf "cpu: median scrape %.3f ms/round (min %.3f, max %.3f)\n", $2, $3, $4 }
    $1 == "cpu_ratio" { printf "cpu: scrape/plain median %.4f (min %.4f, max %.4f) over %d pairs\n", $2, $3, $4, n }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
