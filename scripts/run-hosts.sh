#!/bin/sh
# Launch a gossip-training run on several hosts over ssh (key-based), wait
# for it, and bring every peer's run directory back into runs/NAME.
#
#   scripts/run-hosts.sh -H HOSTS -t TOPOLOGY -r NAME [options] [-- murmur node flags]
#
#   -H FILE   hosts file: 'K HOST:PORT [SSH_DEST [REMOTE_DIR]]' per line.
#             HOST:PORT is where peer K listens (what the other peers dial);
#             SSH_DEST is how to reach it with ssh (default HOST; may be
#             user@host); REMOTE_DIR is where its run directory goes there
#             (default: the same absolute path as runs/NAME here).
#   -t FILE   topology file        -r NAME   run name (runs/NAME)
#   -m PATH   murmur binary on the hosts (default: this one's absolute path)
#   -D DIR    prepared data directory on the hosts (default: data/brown's
#             absolute path here)
#   --plaintext in the node flags skips the certificates.
#
# ssh and scp are taken from $MURMUR_SSH and $MURMUR_SCP (default 'ssh' and
# 'scp', both with BatchMode=yes so that a missing key fails at once instead
# of asking for a password). Ctrl-C stops every peer cleanly (SIGTERM on its
# host) and still collects what they wrote. Exit status: non-zero if any peer
# failed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
murmur_local="$root/murmur"
hosts=""; topo=""; name=""; rmurmur=""; data="$root/data/brown"
usage() { sed -n '2,25p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    -H) hosts=$2; shift 2 ;;
    -t) topo=$2; shift 2 ;;
    -r) name=$2; shift 2 ;;
    -m) rmurmur=$2; shift 2 ;;
    -D) data=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "run-hosts: unknown option '$1'" >&2; usage ;;
    esac
done
[ -n "$hosts" ] && [ -n "$topo" ] && [ -n "$name" ] || usage
[ -f "$hosts" ] || { echo "run-hosts: no hosts file $hosts" >&2; exit 2; }
[ -f "$topo" ] || { echo "run-hosts: no topology file $topo" >&2; exit 2; }
[ -x "$murmur_local" ] || { echo "run-hosts: build murmur first (make)" >&2; exit 2; }
rmurmur=${rmurmur:-$murmur_local}
SSH=${MURMUR_SSH:-ssh}
SCP=${MURMUR_SCP:-scp}
plaintext=0
for a in "$@"; do [ "$a" = --plaintext ] && plaintext=1; done

run="$root/runs/$name"
mkdir -p "$run"
cp "$topo" "$run/topology.txt"
n=$("$murmur_local" topo info --json "$topo" | sed -n 's/.*"peers": *\([0-9]*\).*/\1/p' | head -1)
[ -n "$n" ] || { echo "run-hosts: cannot read the number of peers from $topo" >&2; exit 2; }

# The hosts file as the peers read it (ids and addresses only).
awk '!/^[ \t]*(#|$)/ { print $1, $2 }' "$hosts" > "$run/hosts.txt"
[ "$(wc -l < "$run/hosts.txt")" -eq "$n" ] ||
    { echo "run-hosts: $hosts must list $n peers (the topology has $n)" >&2; exit 2; }

if [ $plaintext -eq 0 ]; then
    sh "$here/make-certs.sh" "$run/certs" "$n" >/dev/null
fi
{
    printf '{"launcher":"run-hosts","name":"%s","peers":%s,' "$name" "$n"
    printf '"topology":"%s","topology_sha256":"%s",' "$(basename "$topo")" "$(sha256sum "$topo" | cut -d' ' -f1)"
    printf '"version":"%s","command":"%s","node_flags":"%s"}\n' "$("$murmur_local" --version)" \
        "$0 -H $hosts -t $topo -r $name" "$*"
} > "$run/manifest.json"

# field K COLUMN: one column of peer K's line in the hosts file
field() { awk -v k="$1" -v c="$2" '!/^[ \t]*(#|$)/ && $1 == k { print $c }' "$hosts"; }
dest_of() { d=$(field "$1" 3); [ -n "$d" ] || d=$(field "$1" 2 | sed 's/:[0-9]*$//'); echo "$d"; }
rdir_of() { d=$(field "$1" 4); [ -n "$d" ] || d=$run; echo "$d"; }
is_local() { case "${1#*@}" in localhost|127.*|"$(hostname)") return 0 ;; esac; return 1; }
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

flags=""
for a in "$@"; do flags="$flags $(quote "$a")"; done

pids=""
k=0
while [ $k -lt "$n" ]; do
    dest=$(dest_of $k); rdir=$(rdir_of $k)
    $SSH -o BatchMode=yes "$dest" "mkdir -p $(quote "$rdir/certs")" </dev/null
    files="$run/topology.txt $run/hosts.txt"
    [ $plaintext -eq 1 ] || files="$files $run/certs/ca.pem $run/certs/node-$k.pem $run/certs/node-$k.key"
    for f in $files; do
        case "$f" in */certs/*) to="$rdir/certs/" ;; *) to="$rdir/" ;; esac
        # the same file on this very machine: copying it onto itself would truncate it
        if [ "$rdir" = "$run" ] && is_local "$dest"; then continue; fi
        $SCP -o BatchMode=yes -q -p "$f" "$dest:$to" </dev/null
    done
    tls="--tls-dir $(quote "$rdir/certs")"
    [ $plaintext -eq 1 ] && tls=""
    $SSH -o BatchMode=yes "$dest" "cd $(quote "$rdir") && mkdir -p node-$k && \
        echo \$\$ > node-$k/pid && exec $(quote "$rmurmur") node --id $k \
        --topology topology.txt --hosts hosts.txt --run-dir . $tls --data $(quote "$data") $flags \
        > node-$k/stdout.log 2>&1" </dev/null &
    pids="$pids $!"
    k=$((k + 1))
done
echo "run-hosts: started $n peers; run directory $run"

stop_all() {
    trap '' INT TERM
    echo "run-hosts: stopping every peer" >&2
    k=0
    while [ $k -lt "$n" ]; do
        $SSH -o BatchMode=yes "$(dest_of $k)" "kill -TERM \$(cat $(quote "$(rdir_of $k)/node-$k/pid")) 2>/dev/null" </dev/null || true
        k=$((k + 1))
    done
}
trap stop_all INT TERM

failed=0
k=0
for p in $pids; do
    if ! wait "$p"; then
        echo "run-hosts: peer $k failed (see node-$k/stdout.log)" >&2
        failed=$((failed + 1))
    fi
    k=$((k + 1))
done

# Bring every peer's directory home (unless it already writes here).
k=0
while [ $k -lt "$n" ]; do
    dest=$(dest_of $k); rdir=$(rdir_of $k)
    if [ "$rdir" != "$run" ] || ! is_local "$dest"; then
        rm -rf "$run/node-$k"
        $SCP -o BatchMode=yes -q -r "$dest:$rdir/node-$k" "$run/" </dev/null ||
            { echo "run-hosts: could not fetch node-$k from $dest" >&2; failed=$((failed + 1)); }
    fi
    k=$((k + 1))
done
echo "run-hosts: $n peers, $failed failed; results in $run"
[ $failed -eq 0 ]
