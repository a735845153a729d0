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
#   --resume  continue the run in runs/NAME (or start it, saying so, when
#             there is none yet): given the same topology file, node flags
#             and -D as its manifest.json records (else refused, exit 2,
#             then and now shown), it starts every peer again with the node
#             flags and --resume, so each goes on from its
#             node-K/checkpoint.bin on its host (docs/node.md); a host that
#             has none (another host, or its directory was cleaned) first
#             gets the copy collected in runs/NAME/node-K. The manifest
#             stays; each resume is a line of launch/resumes.log;
#             console.log files are appended to. A peer that still runs
#             (it holds its node.log) is refused (exit 1, nothing started),
#             and so is a peer with no checkpoint on its host nor here
#             (exit 2, naming the peers: it would start again from round 0
#             while the others go on), unless no peer has run yet
#   --resume-fresh-missing
#             --resume that starts the peers without a checkpoint fresh
#             from round 0, saying which (their start lines say so and
#             `murmur report` flags them)
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
# a host where a peer's port lies in that host's ephemeral port range, and
# a run directory, here or on a host, with less than 1 MiB free ("No space
# left on device"; found while preparing the hosts; exit 1, nothing
# started).
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
hosts=""; topo=""; name=""; rmurmur=""; data="$root/data/brown"; data_given=0; resume=0; fresh_missing=0
usage() {
    echo "usage: run-hosts.sh -H HOSTS -t TOPOLOGY -r NAME [-m PATH] [-D DIR] [--resume | --resume-fresh-missing] [-- murmur node flags]" >&2
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
    --resume) resume=1; shift ;;
    --resume-fresh-missing) resume=1; fresh_missing=1; shift ;;
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
check_node_flags "$topo" "$n" "$@" || exit 2
rmurmur=${rmurmur:-$murmur_local}
SSH=${MURMUR_SSH:-ssh}
SCP=${MURMUR_SCP:-scp}
plaintext=0; notrain=0
for a in "$@"; do [ "$a" = --plaintext ] && plaintext=1; [ "$a" = --no-train ] && notrain=1; done


runs=${RUNS:-$root/runs}
no_space "$runs/$name" && exit 1
mkdir -p "$runs"
runs=$(cd "$runs" && pwd)   # the peers cd elsewhere: paths must be absolute
run="$runs/$name"
sha=$(sha256sum "$topo" | cut -d' ' -f1)
flags_json=$(json_str "$*")
# the data directory the peers are given (none: pure gossip without -D)
peer_data=$data
[ $notrain -eq 1 ] && [ $data_given -eq 0 ] && peer_data=""
data_json=$(json_str "$peer_data")
command="$0 -H $hosts -t $topo -r $name"
[ $data_given -eq 0 ] || command="$command -D $data"
command_json=$(json_str "$command")

# manifest_field NAME: the JSON value (a string literal or a number) of
# "NAME" in the one-line manifest.json; empty when it has none.
manifest_field() {
    sed -n "s/.*\"$1\":\(\"\(\\\\.\|[^\"\\\\]\)*\"\|[0-9]*\).*/\1/p" "$run/manifest.json"
}
# resume_run: checks that runs/NAME is this run (the topology's SHA-256,
# the node flags and the data directory, as manifest.json records them).
resume_run() {
    [ -f "$run/manifest.json" ] || { echo "run-hosts: --resume: $run has no manifest.json: not a run of run-hosts.sh" >&2; exit 1; }
    had_sha=$(manifest_field topology_sha256) had_flags=$(manifest_field node_flags)
    had_data=$(manifest_field data)
    [ "$had_sha" = "\"$sha\"" ] || { echo "run-hosts: --resume: $topo is not the topology $run was run with (its copy: $run/topology.txt)" >&2; exit 2; }
    [ "$had_flags" = "$flags_json" ] || {
        printf 'run-hosts: --resume: %s was run with other node flags:\n  then: %s\n  now:  %s\n' \
            "$run" "$had_flags" "$flags_json" >&2; exit 2; }
    # manifests written before the field: not checked
    [ -z "$had_data" ] || [ "$had_data" = "$data_json" ] || {
        printf 'run-hosts: --resume: %s was run with other data (-D):\n  then: %s\n  now:  %s\n' \
            "$run" "$had_data" "$data_json" >&2; exit 2; }
}
if [ -e "$run" ] && [ $resume -eq 1 ]; then
    resume_run
elif [ -e "$run" ]; then
    echo "run-hosts: $run already exists: choose another -r NAME, remove it, or continue it with --resume" >&2; exit 1
else
    if [ $resume -eq 1 ]; then echo "run-hosts: --resume: no run at $run yet, starting it"; resume=0; fi
    mkdir -p "$run"
    cp "$topo" "$run/topology.txt"
fi

# The hosts file as the peers read it (ids and addresses only). A resumed
# run may have moved peers to other hosts: the new file replaces the old.
awk '!/^[ \t]*(#|$)/ { print $1, $2 }' "$hosts" > "$run/hosts.txt.new"
[ "$(wc -l < "$run/hosts.txt.new")" -eq "$n" ] ||
    { rm -f "$run/hosts.txt.new"; echo "run-hosts: $hosts must list $n peers (the topology has $n)" >&2; exit 2; }
k=0
while [ $k -lt "$n" ]; do
    [ "$(awk -v k=$k '$1 == k' "$run/hosts.txt.new" | wc -l)" -eq 1 ] ||
        { rm -f "$run/hosts.txt.new"; echo "run-hosts: $hosts must list peer $k exactly once" >&2; exit 2; }
    k=$((k + 1))
done
mv "$run/hosts.txt.new" "$run/hosts.txt"

if [ $plaintext -eq 0 ] && [ ! -f "$run/certs/ca.pem" ]; then
    sh "$here/make-certs.sh" "$run/certs" "$n" >/dev/null
fi
if [ $resume -eq 1 ]; then
    echo "run-hosts: resuming $run (--resume)"
else
    {
        printf '{"launcher":"run-hosts","name":%s,"peers":%s,' "$(json_str "$name")" "$n"
        printf '"topology":%s,"topology_sha256":"%s",' "$(json_str "$(basename "$topo")")" "$sha"
        printf '"started":"%s","version":%s,' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(json_str "$("$murmur_local" --version)")"
        printf '"command":%s,"data":%s,"node_flags":%s}\n' "$command_json" "$data_json" "$flags_json"
    } > "$run/manifest.json"
fi
# What scripts/add-peer.sh starts a joiner with: the node flags one a line
# (the data directory's too), and the murmur binary on the hosts.
mkdir -p "$run/launch"
{ for a in "$@"; do printf '%s\n' "$a"; done
  [ -z "$peer_data" ] || printf -- '--data\n%s\n' "$peer_data"; } > "$run/launch/node-flags"
printf '%s\n' "$rmurmur" > "$run/launch/murmur"

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
console='>' # a resumed peer's console output follows its earlier one
[ $resume -eq 0 ] || { flags="$flags --resume"; console='>>'; }

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
# Resuming, it also refuses a peer that still runs (it holds its node.log,
# the node's lock) and gives a host without the peer's checkpoint the copy
# collected here.
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
        rm -f $(quote "$rdir/node-$k/pid") $(quote "$rdir/node-$k/stop") && \
        free=\$(df -Pk $(quote "$rdir/node-$k") | awk 'NR == 2 { print \$4 }') && \
        if [ -n \"\$free\" ] && [ \"\$free\" -lt $MIN_FREE_KIB ]; then \
            echo \"$rdir/node-$k: No space left on device (\$free KiB free on its file system;\" \
                \"a run needs at least $MIN_FREE_KIB KiB): free some space there\"; \
            exit 4; fi" || return 1
    [ $resume -eq 0 ] || resume_peer "$k" || return 1
    in_place "$k" && return 0
    rscp -p "$run/topology.txt" "$run/hosts.txt" "$dest:$rdir/" || return 1
    [ $plaintext -eq 1 ] && return 0
    rscp -p "$run/certs/ca.pem" "$run/certs/node-$k.pem" "$run/certs/node-$k.key" "$dest:$rdir/certs/"
}
# resume_peer K: peer K of a resumed run may start on its host: it does
# not run there still, and it has its checkpoint there (a host without one
# first gets the copy collected here). With none either place, it would
# start fresh: $run/.fresh-K says so (the caller refuses or says it).
resume_peer() {
    k=$1; dest=$(dest_of "$k"); rdir=$(rdir_of "$k")
    log=$(quote "$rdir/node-$k/node.log") ckpt=$(quote "$rdir/node-$k/checkpoint.bin")
    rm -f "$run/.fresh-$k"
    rssh "$dest" "[ ! -f $log ] || flock -n $log true" ||
        { echo "--resume: peer $k of $run still runs (it holds $rdir/node-$k/node.log on $dest)"; return 1; }
    if in_place "$k" || [ ! -f "$run/node-$k/checkpoint.bin" ]; then
        # the host's is the only one there can be
        rssh "$dest" "[ -f $ckpt ]" || : >"$run/.fresh-$k"
        return 0
    fi
    rssh "$dest" "[ -f $ckpt ]" || {
        echo "--resume: $dest has no $rdir/node-$k/checkpoint.bin: copying the one collected in $run/node-$k there"
        # without the last attempt's markers (node-K/stop would stop it)
        rscp -rp "$run/node-$k" "$dest:$rdir/" &&
            rssh "$dest" "rm -f $(quote "$rdir/node-$k/pid") $(quote "$rdir/node-$k/stop")"
    }
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
        $flags $console node-$k/console.log 2>&1" &
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
    if [ $st -eq 0 ]; then
        sed "s/^/run-hosts: peer $k: /" "$run/.prepare-$k.log" # what resuming did
    else
        echo "run-hosts: could not prepare peer $k on $(dest_of $k):" >&2
        sed 's/^/    /' "$run/.prepare-$k.log" >&2
        failed=$((failed + 1))
    fi
    rm -f "$run/.prepare-$k.log"
    k=$((k + 1))
done
# Peers that would start fresh in the resumed run (no checkpoint anywhere).
# mixed_fresh: some peers would, while others resume or ran before.
fresh='' n_fresh=0 k=0
while [ $k -lt "$n" ]; do
    [ ! -f "$run/.fresh-$k" ] || { fresh="$fresh${fresh:+, }$k"; n_fresh=$((n_fresh + 1)); }
    rm -f "$run/.fresh-$k"
    k=$((k + 1))
done
mixed_fresh=0
[ $n_fresh -gt 0 ] && { [ $n_fresh -lt "$n" ] || ran_before "$run" "$n"; } && mixed_fresh=1
if [ $resume -eq 1 ] && [ $failed -eq 0 ] && [ $mixed_fresh -eq 1 ]; then
    if [ $fresh_missing -eq 0 ]; then
        echo "run-hosts: --resume: peer(s) $fresh of $run have no checkpoint (node-K/checkpoint.bin, on" \
            "their host or collected here): they would start again from round 0 while the others go" \
            "on from theirs, one run mixed of two. Start them fresh anyway with --resume-fresh-missing" \
            "instead of --resume (the report flags them), or run again under another -r NAME" >&2
        exit 2
    fi
fi
if [ $resume -eq 1 ] && [ $failed -eq 0 ] && [ $interrupted -eq 0 ]; then
    mkdir -p "$run/launch"
    printf '%s resumed: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$command_json" >>"$run/launch/resumes.log"
fi
k=0
while [ $k -lt "$n" ] && [ $failed -eq 0 ] && [ $interrupted -eq 0 ]; do
    start_peer $k
    k=$((k + 1))
done
if [ $failed -eq 0 ] && [ $interrupted -eq 0 ] && [ $resume -eq 1 ]; then
    if [ -z "$fresh" ]; then
        echo "run-hosts: resuming $run: every peer from its checkpoint (--resume)"
    elif [ $mixed_fresh -eq 1 ]; then
        echo "run-hosts: resuming $run: peer(s) $fresh start FRESH from round 0 (no checkpoint;" \
            "--resume-fresh-missing), the others from their checkpoints"
    else
        echo "run-hosts: resuming $run: no peer has run yet, every peer starts from round 0"
    fi
fi
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
