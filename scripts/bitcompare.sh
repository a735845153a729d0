#!/bin/sh
# Bit-compares what murmur binaries compute: for each algorithm a 4-peer
# localhost run (ring, plaintext, a tiny model on a synthetic corpus, fixed
# seed), then one digest line per snapshot file, checkpoint, evaluation line
# and round line of every peer.
#
#   scripts/bitcompare.sh [-o DIR] [-p BASE_PORT] [-c CASES] MURMUR [MURMUR2]
#
# With one binary: prints the digests (case peer what sha256), one a line.
# With two: runs both (the first, then the second, each case in turn) and
# prints per case `same` or `DIFFERS` with the differing lines; exit 1 when
# a deterministic case differs.
#
# Cases (-c, comma-separated; default all): dpsgd, async, pushsum,
# allreduce, choco (--compress int8), target (--consensus-target 1e-3,
# --max-gossip-steps 4), diloco (--algo allreduce --outer nesterov, H = 2,
# momentum 0.9 given (the default before issue 34's 0.5) with Pier's
# schedules), outer-gossip (the same over dpsgd).
#
# What is hashed: every snapshot file (snap/rNNNNNNNN.bin) and the
# checkpoint, byte for byte; every `eval` line and every `round` line with
# the fields that measure time or bytes on the wire removed (time, t_*,
# bytes_sent, bytes_recv and the per-neighbour link_* objects: they vary
# from run to run of the same binary);
# of the end line only its keys, in order.
# The synchronous algorithms wait for every neighbour (long timeouts, no
# fault), so two runs of one binary agree bit for bit. async does not wait:
# which copy of a neighbour it mixes depends on timing, so its digests are
# printed and compared but a difference is reported as `differs (async:
# timing)` and does not fail.
#
# Environment: ROUNDS (default 6), KEEP=1 keeps the run directories.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/launch-lib.sh"
. "$here/../tests/e2e/lib/corpus.sh"
PROG=bitcompare
usage() { echo "usage: bitcompare.sh [-o DIR] [-p BASE_PORT] [-c CASES] MURMUR [MURMUR2]" >&2; exit 2; }

out='' port=29700 cases='dpsgd,async,pushsum,allreduce,choco,target,diloco,outer-gossip'
while [ $# -gt 0 ]; do
    case $1 in
    -h|--help) help_text "$0"; exit 0 ;;
    -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    -p) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    -c) [ $# -ge 2 ] || usage; cases=$2; shift 2 ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
for b in "$@"; do [ -x "$b" ] || { echo "bitcompare: $b is not an executable" >&2; exit 2; }; done
check_ports "$port" 4 "ports" || exit 2
ROUNDS=${ROUNDS:-6}
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/bitcompare.XXXXXX"); fi
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT

"$1" topo gen ring -n 4 > "$out/ring.topo"
make_tagged_corpus "$out/src" 6
MURMUR_NO_BLAS_FIX=1 "$1" data-prepare "$out/src" "$out/data" > /dev/null

case_flags() {
    case $1 in
    dpsgd) echo "--algo dpsgd" ;;
    async) echo "--algo async" ;;
    pushsum) echo "--algo pushsum" ;;
    allreduce) echo "--algo allreduce" ;;
    choco) echo "--algo dpsgd --compress int8" ;;
    target) echo "--algo dpsgd --consensus-target 1e-3 --max-gossip-steps 4" ;;
    diloco) echo "--algo allreduce --outer nesterov --outer-momentum 0.9 --local-steps 2 --outer-momentum-warmup 2 --outer-momentum-decay cosine:0.5" ;;
    outer-gossip) echo "--algo dpsgd --outer nesterov --outer-momentum 0.9 --local-steps 2 --outer-momentum-warmup 2 --outer-momentum-decay cosine:0.5" ;;
    *) echo "bitcompare: unknown case $1" >&2; return 1 ;;
    esac
}

# run BINARY CASE DIR: the 4 peers, to the end; fails when a peer does.
run() {
    flags=$(case_flags "$2")
    pids=''
    for k in 0 1 2 3; do
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=1 OPENBLAS_NUM_THREADS=1 "$1" node --id $k --topology "$out/ring.topo" \
            --base-port "$port" --plaintext --run-dir "$3" --data "$out/data" \
            --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --lr 1e-2 --seed 7 \
            --rounds "$ROUNDS" --eval-every 2 --snapshot-every 2 --log-every 0 \
            --round-timeout 60000 --peer-timeout 60000 --start-timeout 60000 $flags \
            > "$3.node$k.out" 2>&1 &
        pids="$pids $!"
    done
    bad=0
    for p in $pids; do wait "$p" || bad=1; done
    [ $bad -eq 0 ] || { echo "bitcompare: $2: a peer failed (see $3.node*.out)" >&2; tail -n 3 "$3".node*.out >&2; return 1; }
}

# digest CASE DIR: case peer what sha256, one line per file and metrics line
digest() {
    for k in 0 1 2 3; do
        d=$2/node-$k
        for f in "$d"/snap/*.bin "$d/checkpoint.bin"; do
            [ -f "$f" ] || continue
            echo "$1 peer$k $(basename "$f") $(sha256sum < "$f" | cut -c1-16)"
        done
        grep -E '"ev":"(eval|round)"' "$d/metrics.jsonl" |
            sed -E 's/"link_[a-z_]+":\{[^}]*\},?//g; s/"(time|t_[a-z]+|bytes_sent|bytes_recv)":[^,}]*,?//g' |
            while IFS= read -r line; do
                ev=$(printf '%s' "$line" | sed -E 's/.*"ev":"([a-z]+)".*"round":([0-9]+).*/\1-r\2/')
                echo "$1 peer$k $ev $(printf '%s' "$line" | sha256sum | cut -c1-16)"
            done
        # the end line: its keys in order (its values measure the run)
        grep '"ev":"end"' "$d/metrics.jsonl" | sed -E 's/:("[^"]*"|[^,{}]*|\{[^}]*\})//g' |
            echo "$1 peer$k end-keys $(sha256sum | cut -c1-16)"
    done
}

fail=0
for c in $(echo "$cases" | tr , ' '); do
    case_flags "$c" > /dev/null
    i=0
    for b in "$@"; do
        i=$((i + 1))
        run "$b" "$c" "$out/$c.$i"
        digest "$c" "$out/$c.$i" > "$out/$c.$i.digest"
    done
    if [ $# -eq 1 ]; then
        cat "$out/$c.1.digest"
    elif cmp -s "$out/$c.1.digest" "$out/$c.2.digest"; then
        echo "$c: same ($(wc -l < "$out/$c.1.digest") digests: snapshots, checkpoints, eval and round lines of 4 peers)"
    elif [ "$c" = async ]; then
        same=$(sort "$out/$c.1.digest" "$out/$c.2.digest" | uniq -d | wc -l)
        echo "$c: $same of $(wc -l < "$out/$c.1.digest") digests same (async: timing decides which copies are mixed; not a failure)"
    else
        echo "$c: DIFFERS"
        diff "$out/$c.1.digest" "$out/$c.2.digest" || true
        fail=1
    fi
done
exit $fail
