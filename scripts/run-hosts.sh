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
#             (default: the same absolute path as runs/NAME here). Paths
#             must not contain spaces or shell metacharacters.
#   -t FILE   topology file        -r NAME   run name (runs/NAME)
#   -m PATH   murmur binary on the hosts (default: this one's absolute path)
#   -D DIR    prepared data directory on the hosts (default: data/brown's
#             absolute path here; with --no-train, none unless -D is given)
#   --plaintext in the node flags skips the certificates.
#
# ssh and scp are taken from $MURMUR_SSH and $MURMUR_SCP (default 'ssh' and
# 'scp', both with BatchMode=yes so that a missing key fails at once instead
# of asking for a password). RUNS (default runs/ next to scripts/) is where
# runs/NAME goes. Each peer's console output is node-K/console.log.
#
# Before starting anything it refuses, saying why: a hosts file that does
# not list each of the topology's peers once (exit 2), a topology whose W is
# column-stochastic only without --algo pushsum in the node flags (exit 2),
# and a host where a peer's port lies in that host's ephemeral port range
# (found while preparing the hosts; exit 1, nothing started).
# Ctrl-C (or SIGTERM, SIGHUP) stops every peer cleanly (one SIGTERM on its
# host) and still collects what they wrote. A peer that exits non-zero is
# named with its last error and the reason in its `end` metrics line; one
# that ended 3 (a neighbour refused for a configuration that differs) or 4
# (isolated: no neighbour ever mixed) with each neighbour and why.
# Exit status: 0 every peer exited 0 and was collected; 1 a peer failed
# (including 3 and 4: the run is then said to be misconfigured or isolated)
# or could not be started or collected; 2 usage or a refused configuration;
# 130 interrupted.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PROG=run-hosts
. "$here/launch-lib.sh"
root=$(dirname "$here")
murmur_local="$root/murmur"
hosts=""; topo=""; name=""; rmurmur=""; data="$root/data/brown"; data_given=0
usage() {
    echo "usage: run-hosts.sh -H HOSTS -t TOPOLOGY -r NAME [-m PATH] [-D DIR] [-- murmur node flags]" >&2
    echo "       run-hosts.sh --help" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    -H|-t|-r|-m|-D) [ $# -ge 2 ] || { echo "run-hosts: $1 needs a value" >&2; usage; } ;;
    esac
    case "$1" in
    -H) hosts=$2; shift 2 ;;
    -t) topo=$2; shift 2 ;;
    -r) name=$2; shift 2 ;;
    -m) rmurmur=$2; shift 2 ;;
    -D) data=$2; data_given=1; shift 2 ;;
    --) shift; break ;;
    -h|--help) help_text "$0"; exit 0 ;;
    *) echo "run-hosts: unknown option '$1'" >&2; usage ;;
    esac
done
[ -n "$hosts" ] && [ -n "$topo" ] && [ -n "$name" ] || usage
case $name in /*|*..*|-*) echo "run-hosts: -r NAME: a name under runs/ (no leading /, no ..)" >&2; exit 2 ;; esac
[ -f "$hosts" ] || { echo "run-hosts: no hosts file $hosts" >&2; exit 2; }
[ -f "$topo" ] || { echo "run-hosts: no topology file $topo" >&2; exit 2; }
[ -x "$murmur_local" ] || { echo "run-hosts: build murmur first (make)" >&2; exit 2; }
MURMUR=$murmur_local
check_topology "$topo" "" "$@" || exit 2
n=$topo_peers
rmurmur=${rmurmur:-$murmur_local}
SSH=${MURMUR_SSH:-ssh}
SCP=${MURMUR_SCP:-scp}
plaintext=0; notrain=0
for a in "$@"; do [ "$a" = --plaintext ] && plaintext=1; [ "$a" = --no-train ] && notrain=1; done


runs=${RUNS:-$root/runs}
mkdir -p "$runs"
runs=$(cd "$runs" && pwd)   # the peers cd elsewhere: paths must be absolute
run="$runs/$name"
[ -e "$run" ] && { echo "run-hosts: $run already exists: choose another -r NAME or remove it" >&2; exit 1; }
mkdir -p "$run"
cp "$topo" "$run/topology.txt"

# The hosts file as the peers read it (ids and addresses only).
awk '!/^[ \t]*(#|$)/ { print $1, $2 }' "$hosts" > "$run/hosts.txt"
[ "$(wc -l < "$run/hosts.txt")" -eq "$n" ] ||
    { echo "run-hosts: $hosts must list $n peers (the topology has $n)" >&2; exit 2; }
k=0
while [ $k -lt "$n" ]; do
    [ "$(awk -v k=$k '$1 == k' "$run/hosts.txt" | wc -l)" -eq 1 ] ||
        { echo "run-hosts: $hosts must list peer $k exactly once" >&2; exit 2; }
    k=$((k + 1))
done

if [ $plaintext -eq 0 ]; then
    sh "$here/make-certs.sh" "$run/certs" "$n" >/dev/null
fi
json_str() { # a JSON string literal of $1
    printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g; s/	/\\t/g' | tr '\n' ' ')"
}
{
    printf '{"launcher":"run-hosts","name":%s,"peers":%s,' "$(json_str "$name")" "$n"
    printf '"topology":%s,"topology_sha256":"%s",' "$(json_str "$(basename "$topo")")" \
        "$(sha256sum "$topo" | cut -d' ' -f1)"
    printf '"started":"%s","version":%s,' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(json_str "$("$murmur_local" --version)")"
    printf '"command":%s,"node_flags":%s}\n' "$(json_str "$0 -H $hosts -t $topo -r $name")" "$(json_str "$*")"
} > "$run/manifest.json"

# field K COLUMN: one column of peer K's line in the hosts file
field() { awk -v k="$1" -v c="$2" '!/^[ \t]*(#|$)/ && $1 == k { print $c }' "$hosts"; }
dest_of() { d=$(field "$1" 3); [ -n "$d" ] || d=$(field "$1" 2 | sed 's/:[0-9]*$//'); echo "$d"; }
rdir_of() { d=$(field "$1" 4); [ -n "$d" ] || d=$run; echo "$d"; }
is_local() { case "${1#*@}" in localhost|127.*|"$(hostname)") return 0 ;; esac; return 1; }
# the peer writes straight into this run directory: nothing to copy either way
in_place() { [ "$(rdir_of "$1")" = "$run" ] && is_local "$(dest_of "$1")"; }
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
rssh() { $SSH -o BatchMode=yes "$@" </dev/null; }
rscp() { $SCP -o BatchMode=yes -q "$@" </dev/null; }

flags=""
for a in "$@"; do flags="$flags $(quote "$a")"; done

interrupted=0
stopped=0
stop_all() {
    [ $stopped -eq 1 ] && return 0
    stopped=1
    echo "run-hosts: stopping every peer (SIGTERM on its host)" >&2
    s=0; kpids=""
    for _ in $pids; do
        # node-K/stop stops a peer whose session has not yet got as far as
        # writing its pid (the start checks it after writing the pid)
        rssh "$(dest_of $s)" "d=$(quote "$(rdir_of $s)/node-$s"); touch \"\$d/stop\"; \
            [ -s \"\$d/pid\" ] && kill -TERM \$(cat \"\$d/pid\") 2>/dev/null" &
        kpids="$kpids $!"
        s=$((s + 1))
    done
    for p in $kpids; do wait "$p" || true; done
}
on_signal() { signals=$((signals + 1)); interrupted=1; stop_all; }
trap on_signal INT TERM HUP

# prepare_peer K: make peer K's directory on its host and copy there what
# it needs (its own key only). Refuses a port inside that host's ephemeral
# range: an outgoing connection there could take it before the peer binds.
prepare_peer() {
    k=$1; dest=$(dest_of "$k"); rdir=$(rdir_of "$k")
    port=$(field "$k" 2 | sed 's/.*://')
    case $port in ''|*[!0-9]*) echo "the hosts file gives peer $k no port (HOST:PORT)"; return 1 ;; esac
    dirs="$(quote "$rdir/node-$k")"
    [ $plaintext -eq 1 ] || dirs="$dirs $(quote "$rdir/certs")"
    rssh "$dest" "if read lo hi < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && \
            [ $port -ge \$lo ] && [ $port -le \$hi ]; then \
            echo \"port $port is inside this host's ephemeral port range \$lo..\$hi\" \
                \"(/proc/sys/net/ipv4/ip_local_port_range), from which outgoing connections take their ports:\" \
                \"the peer could fail with 'address already in use'; give it a port below \$lo or above \$hi\"; \
            exit 3; fi; \
        mkdir -p $dirs && \
        rm -f $(quote "$rdir/node-$k/pid") $(quote "$rdir/node-$k/stop")" || return 1
    in_place "$k" && return 0
    rscp -p "$run/topology.txt" "$run/hosts.txt" "$dest:$rdir/" || return 1
    [ $plaintext -eq 1 ] && return 0
    rscp -p "$run/certs/ca.pem" "$run/certs/node-$k.pem" "$run/certs/node-$k.key" "$dest:$rdir/certs/"
}
# start_peer K: start peer K on its host; the ssh session lasts as long as
# the peer and ends with its exit status.
start_peer() {
    k=$1; dest=$(dest_of "$k"); rdir=$(rdir_of "$k")
    tls="--tls-dir $(quote "$rdir/certs")"
    [ $plaintext -eq 1 ] && tls=""
    # pure gossip reads a corpus only when given one (docs/launching.md)
    dataflag="--data $(quote "$data")"
    [ $notrain -eq 1 ] && [ $data_given -eq 0 ] && dataflag=""
    # exec keeps the shell's pid for murmur, so node-K/pid is the peer's own
    rssh "$dest" "cd $(quote "$rdir") && echo \$\$ > node-$k/pid && { [ ! -e node-$k/stop ] || exit 130; } && \
        exec $(quote "$rmurmur") node \
        --id $k --topology topology.txt --hosts hosts.txt --run-dir . $tls $dataflag \
        $flags > node-$k/console.log 2>&1" &
    pids="$pids $!"
}

# Prepare every host at once, then start the peers in quick succession:
# they wait --start-timeout for each other, so the copying must not spread
# their starts.
pids=""
failed=0
ppids=""
k=0
while [ $k -lt "$n" ]; do
    prepare_peer $k > "$run/.prepare-$k.log" 2>&1 &
    ppids="$ppids $!"
    k=$((k + 1))
done
k=0
for p in $ppids; do
    wait_pid "$p"
    [ $st -eq 0 ] || {
        echo "run-hosts: could not prepare peer $k on $(dest_of $k):" >&2
        sed 's/^/    /' "$run/.prepare-$k.log" >&2
        failed=$((failed + 1))
    }
    rm -f "$run/.prepare-$k.log"
    k=$((k + 1))
done
k=0
while [ $k -lt "$n" ] && [ $failed -eq 0 ] && [ $interrupted -eq 0 ]; do
    start_peer $k
    k=$((k + 1))
done
[ $failed -eq 0 ] && [ $interrupted -eq 0 ] && echo "run-hosts: started $n peers; run directory $run"

k=0
peer_failed=''
for p in $pids; do
    wait_pid "$p"
    if [ $st -ne 0 ]; then
        peer_failed="$peer_failed $k:$st"
        failed=$((failed + 1))
    fi
    k=$((k + 1))
done

# Bring every peer's directory home (unless it already writes here), all at once.
k=0; fpids=""
for _ in $pids; do
    if in_place $k; then
        fpids="$fpids -"
    else
        rm -rf "$run/node-$k"
        rscp -r "$(dest_of $k):$(rdir_of $k)/node-$k" "$run/" &
        fpids="$fpids $!"
    fi
    k=$((k + 1))
done
k=0
for p in $fpids; do
    if [ "$p" != - ]; then
        wait_pid "$p"
        [ $st -eq 0 ] || { echo "run-hosts: could not fetch node-$k from $(dest_of $k)" >&2; failed=$((failed + 1)); }
    fi
    k=$((k + 1))
done
trap - INT TERM HUP
# Why each failed peer stopped, from what was brought back.
n_refused=0 n_isolated=0
for f in $peer_failed; do
    echo "run-hosts: peer ${f%:*} exited with status ${f#*:} ($run/node-${f%:*}/console.log):" >&2
    peer_failure "$run/node-${f%:*}" "${f#*:}" >&2
    [ "${f#*:}" = 3 ] && n_refused=$((n_refused + 1))
    [ "${f#*:}" = 4 ] && n_isolated=$((n_isolated + 1))
done
echo "run-hosts: $n peers, $failed failed; results in $run"
run_verdict "$n_refused" "$n_isolated"
[ $interrupted -eq 1 ] && exit 130
[ $failed -eq 0 ]
