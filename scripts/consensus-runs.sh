#!/bin/sh
# Runs N plaintext peers on one machine into DIR and waits for them; the
# runs behind the consensus-control figures of docs/node.md.
#
#   scripts/consensus-runs.sh DIR N TOPOLOGY [murmur node flags...]
#
# Every peer gets --id K --topology TOPOLOGY --base-port P --plaintext
# --run-dir DIR --log-every 0 and the flags given; P is a free port range
# below the kernel's ephemeral range. Prints the load average before and
# after, the wall time, and runs `murmur report DIR --no-plots` (its CSV in
# DIR/report.csv). Exit status 1 when a peer exits non-zero.
set -u
case ${1:-} in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 3 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
dir=$1 n=$2 topo=$3; shift 3
MURMUR=${MURMUR:-./murmur}
[ -e "$dir" ] && { echo "consensus-runs: $dir exists" >&2; exit 1; }
mkdir -p "$dir"
lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20000 - n) ))
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$dir/load.txt"
start=$(date +%s)
pids=""
k=0
while [ $k -lt "$n" ]; do
    "$MURMUR" node --id $k --topology "$topo" --base-port "$port" --plaintext \
        --run-dir "$dir" --log-every 0 "$@" > "$dir/console-$k.log" 2>&1 &
    pids="$pids $!"
    k=$((k + 1))
done
trap 'kill $pids 2>/dev/null; exit 130' INT TERM
bad=0
for p in $pids; do wait "$p" || bad=1; done
end=$(date +%s)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$dir/load.txt"
echo "wall: $((end - start)) s" | tee -a "$dir/load.txt"
"$MURMUR" report "$dir" --no-plots > "$dir/report.txt" 2>&1 || bad=1
exit $bad
