#!/bin/sh
# How a peer spends its time: N local peers (default 4) on a ring, the
# default model, one OpenBLAS thread each, TLS; prints the compute /
# communication / wait split and memory per peer from the run's metrics.
#
#   sh scripts/bench-node.sh [-n N] [-r ROUNDS] [-t TOPOLOGY] [-- node flags]
#
# Needs the prepared corpus (make data). The run lands in runs/bench-node-TIME.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
n=4 rounds=60 topo=""
while [ $# -gt 0 ]; do
    case "$1" in
    -n) n=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -t) topo=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: bench-node.sh [-n N] [-r ROUNDS] [-t TOPOLOGY] [-- node flags]" >&2; exit 2 ;;
    esac
done
topo=${topo:-$root/topologies/ring-$n.topo}
name=bench-node-$(date +%Y%m%d-%H%M%S)
cd "$root"
# Ctrl-C: run-local.sh (in the foreground, in our process group) stops the
# peers; the trap keeps this shell from dying before it has.
trap 'exit 130' INT TERM HUP
sh scripts/run-local.sh -n "$n" -t "$topo" -r "$name" -i 30 --no-report -- \
    --threads 1 --rounds "$rounds" --eval-every 0 --checkpoint-every 0 "$@" >/dev/null
echo "bench-node: $n peers, $(basename "$topo"), $rounds rounds, default model, 1 BLAS thread each"
printf '%-8s %8s %9s %9s %9s %9s %8s %8s %9s\n' peer wall_s compute_s comm_s wait_s other_s wait% comm% rss_MiB
for m in runs/$name/node-*/metrics.jsonl; do
    k=$(basename "$(dirname "$m")")
    awk -v k="$k" '
        /"ev":"round"/ { line = $0 }
        /"ev":"end"/ { endl = $0 }
        function f(s, key,   v) { v = s; sub(".*\"" key "\":", "", v); sub("[,}].*", "", v); return v + 0 }
        END {
            wall = f(endl, "time"); c = f(line, "t_compute"); m = f(line, "t_comm"); w = f(line, "t_wait")
            printf "%-8s %8.1f %9.1f %9.2f %9.2f %9.1f %7.1f%% %7.1f%% %9.0f\n", k, wall, c, m, w,
                wall - c - m - w, 100 * w / wall, 100 * m / wall, f(endl, "max_rss_kb") / 1024
        }' "$m"
done
echo "(other: evaluation, checkpoints, start-up; run directory runs/$name)"
