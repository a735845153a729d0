#!/bin/sh
# Runs the same training over several topologies and compares them.
#
#   scripts/compare.sh -n N -r NAME [-p BASE_PORT] [-i SEC] [-s SEED]
#                      [--partition MODE] TOPOLOGY_FILE... [-- extra node flags]
#
# One run per topology file, one after the other, through run-local.sh with
# the same peers, seed and node flags: runs/NAME/<topology name>/. Then
# `murmur report --compare` writes the comparison -- final accuracy, final
# consensus distance, bytes per peer and wall time per topology -- to
# stdout and runs/NAME/compare.csv, and two PNGs: runs/NAME/compare.png
# overlaying consensus distance (log) and accuracy against round, and
# runs/NAME/compare-bytes.png, accuracy against MB sent per peer. Each run
# also gets its own report: runs/NAME/<topology>/report.txt, report.csv
# and plots/.
#   -s SEED            adds --seed SEED to the node flags
#   --partition MODE   adds --partition MODE (e.g. genre) to the node flags
# Before the first run it checks every topology as run-local.sh does (-n
# against its number of peers, --algo against a column-stochastic W) and
# that the ports of all the runs stay out of the kernel's ephemeral range:
# a misconfiguration is refused (exit 2) before anything starts.
# Ctrl-C (or SIGTERM, SIGHUP) stops the current run cleanly through
# run-local.sh (one SIGTERM to each peer) and does not start the next.
# Exit status: 0 all runs and the comparison succeeded; 1 something failed
# (the comparison still covers the runs that produced metrics); 2 usage or
# a refused configuration; 130 interrupted (the remaining topologies are
# not run).
# Environment: as run-local.sh (MURMUR, MAKE_CERTS, RUNS, GRACE).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PROG=compare
. "$here/launch-lib.sh"
# ./murmur from the repository root, else the one next to scripts/.
if [ -z "${MURMUR:-}" ]; then
    if [ -x ./murmur ]; then MURMUR=./murmur; else MURMUR=$here/../murmur; fi
fi
RUNS=${RUNS:-runs}
bad() { echo "compare: $*" >&2; echo "usage: compare.sh -n N -r NAME [-p PORT] [-i SEC] [-s SEED] [--partition MODE] TOPOLOGY_FILE... [-- node flags]" >&2; exit 2; }

n='' name='' port=29500 interval=5 seed='' partition=''
topos_n=0
tlist=$(mktemp) || exit 1
trap 'rm -f "$tlist"' EXIT
while [ $# -gt 0 ]; do
    case $1 in
    -n|-r|-p|-i|-s|--partition) [ $# -ge 2 ] || bad "$1 needs a value" ;;
    esac
    case $1 in
    -n) n=$2; shift 2 ;;
    -r) name=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    -i) interval=$2; shift 2 ;;
    -s) seed=$2; shift 2 ;;
    --partition) partition=$2; shift 2 ;;
    -h|--help) help_text "$0"; exit 0 ;;
    --) shift; break ;;
    -*) bad "unknown option: $1" ;;
    *) printf '%s\n' "$1" >>"$tlist"; topos_n=$((topos_n + 1)); shift ;;
    esac
done
[ -n "$n" ] || bad "-n N is required"
[ -n "$name" ] || bad "-r NAME is required"
[ "$topos_n" -ge 1 ] || bad "give at least one topology file"
case $port in ''|*[!0-9]*) bad "-p PORT: a number" ;; esac
case $n in ''|*[!0-9]*|0) bad "-n N: a number of peers" ;; esac
[ -e "$RUNS/$name" ] && { echo "compare: $RUNS/$name already exists" >&2; exit 1; }
[ -n "$seed" ] && set -- --seed "$seed" "$@"
[ -n "$partition" ] && set -- --partition "$partition" "$@"
# Everything that can be known now is checked before the first run starts.
[ -x "$MURMUR" ] || command -v "$MURMUR" >/dev/null 2>&1 || { echo "compare: $MURMUR not found (run make, or set MURMUR=path)" >&2; exit 1; }
while IFS= read -r topo; do
    [ -f "$topo" ] || { echo "compare: topology file $topo: not a readable file" >&2; exit 1; }
    check_topology "$topo" "$n" "$@" || exit 2
done <"$tlist"
check_ports "$port" $((topos_n * n)) "-p $port: the $topos_n runs' ports" || exit 2

# Ctrl-C reaches this script (run-local.sh, started in the background, has
# SIGINT ignored, and the peers have sessions of their own): forward one
# SIGTERM per signal to the current run-local.sh, which stops its peers
# cleanly; then start nothing more.
interrupted=0
child=''
on_signal() {
    signals=$((signals + 1))
    interrupted=1
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
}
trap on_signal INT TERM HUP

failed=0
i=0
dirs=''
# Topology names never hold newlines in practice; one per line in $tlist.
while [ $interrupted -eq 0 ] && IFS= read -r topo <&3; do
    t=$(basename "$topo")
    t=${t%.*}
    [ -e "$RUNS/$name/$t" ] && t="$t-$i"
    echo "=== compare: $topo -> $RUNS/$name/$t"
    # A fresh port range per run: sockets of the previous run may linger.
    sh "$here/run-local.sh" -n "$n" -t "$topo" -r "$name/$t" -p $((port + i * n)) \
        -i "$interval" --no-report -- "$@" 3<&- &
    child=$!
    wait_pid "$child"
    rc=$st
    child=''
    [ $rc -eq 130 ] || [ $interrupted -eq 1 ] && { echo "compare: interrupted; the remaining topologies are not run" >&2; exit 130; }
    [ $rc -ne 0 ] && { echo "compare: run $t failed (exit $rc)" >&2; failed=1; }
    [ -d "$RUNS/$name/$t" ] && dirs="$dirs $t"
    i=$((i + 1))
done 3<"$tlist"
[ $interrupted -eq 1 ] && { echo "compare: interrupted" >&2; exit 130; }

set --
for t in $dirs; do
    set -- "$@" "$RUNS/$name/$t"
    # Each run's own report (table in report.txt, report.csv, plots/), so
    # the per-run figures are there to look at after the comparison.
    "$MURMUR" report "$RUNS/$name/$t" > "$RUNS/$name/$t/report.txt" 2>&1 ||
        echo "compare: murmur report $RUNS/$name/$t failed (see its report.txt)" >&2
done
[ $# -gt 0 ] || { echo "compare: no run produced a directory" >&2; exit 1; }
"$MURMUR" report --compare "$@" --csv "$RUNS/$name/compare.csv" --plot "$RUNS/$name/compare.png" || failed=1
[ $interrupted -eq 1 ] && exit 130
exit $failed
