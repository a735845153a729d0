#!/bin/sh
# Adds a peer to a running elastic run (a family topology file:
# docs/membership.md) that scripts/run-local.sh or scripts/run-hosts.sh
# started, and waits for it.
#
#   scripts/add-peer.sh -r NAME -k ID [-v VIA] [-H "HOST:PORT [SSH_DEST [REMOTE_DIR]]"]
#                       [-- extra murmur node flags]
#
#   -r NAME   the run (runs/NAME, or $RUNS/NAME)
#   -k ID     the new peer's id: not a member now (a removed member's id
#             rejoins in its own node-ID/), below --max-peers (default 256)
#   -v VIA    the member it joins through (default: the lowest id whose
#             peer runs here, for a run-local run; peer 0 for run-hosts)
#   -H LINE   a run-hosts run: where the new peer listens (HOST:PORT, what
#             the others dial: its --advertise), how to reach it with ssh
#             (default HOST) and its run directory there (default the same
#             absolute path as runs/NAME here), as a line of run-hosts'
#             hosts file without its id
#
# The peer runs `murmur node --id ID --join VIA_ADDRESS` with the run's own
# node flags (launch/node-flags, which the launchers write) and topology,
# so its settings agree with the members' (the HELLO refuses one that
# differs). Unless the flags say --plaintext, it gets a certificate of the
# run's CA first (scripts/make-certs.sh --add runs/NAME/certs ID; a run-hosts
# run needs its CA key, runs/NAME/certs/ca.key, here). Before anything
# starts, `murmur node --dry-run` checks the command (a static topology, an
# id that is not below --max-peers, ... are refused there, exit 2).
#
# Its console output is node-ID/console.log (on its host for -H, brought
# back into runs/NAME/node-ID when it ends, as run-hosts does for the
# others). The script prints the round it joined at (its start line's
# joined_round), then waits for it to end: Ctrl-C (or SIGTERM) makes it
# leave the run (one SIGTERM: it announces its departure and ends `left`).
# Exit status: the peer's (0 done or left; 5 its join was refused or
# unanswered, the reason in its console.log); 1 the run or the peer could
# not be prepared or started; 2 usage or a refused configuration.
# Environment: MURMUR (default ./murmur, else the one next to scripts/),
# MAKE_CERTS, RUNS (default runs), MURMUR_SSH, MURMUR_SCP (default ssh, scp),
# JOIN_TIMEOUT (seconds to wait for the start line, default 120).
set -u
PROG=add-peer
die() { echo "add-peer: $*" >&2; exit 1; }
bad() { echo "add-peer: $*" >&2; echo "usage: add-peer.sh -r NAME -k ID [-v VIA] [-H \"HOST:PORT [SSH_DEST [REMOTE_DIR]]\"] [-- node flags]" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/launch-lib.sh"
launcher_defaults "$here"
SSH=${MURMUR_SSH:-ssh}
SCP=${MURMUR_SCP:-scp}
JOIN_TIMEOUT=${JOIN_TIMEOUT:-120}

name='' k='' via='' hostline=''
while [ $# -gt 0 ]; do
    case $1 in
    -r) [ $# -ge 2 ] || bad "-r needs a value"; name=$2; shift 2 ;;
    -k) [ $# -ge 2 ] || bad "-k needs a value"; k=$2; shift 2 ;;
    -v) [ $# -ge 2 ] || bad "-v needs a value"; via=$2; shift 2 ;;
    -H) [ $# -ge 2 ] || bad "-H needs a value"; hostline=$2; shift 2 ;;
    -h|--help) help_text "$0"; exit 0 ;;
    --) shift; break ;;
    *) bad "unknown argument '$1'" ;;
    esac
done
[ -n "$name" ] || bad "give the run: -r NAME"
is_uint "$k" || bad "give the new peer's id: -k ID (a number)"
[ -z "$via" ] || is_uint "$via" || bad "-v VIA is a peer id, not '$via'"
dir=$RUNS/$name
[ -f "$dir/manifest.json" ] || die "$dir has no manifest.json: not a run of run-local.sh or run-hosts.sh"
[ -f "$dir/launch/node-flags" ] ||
    die "$dir has no launch/node-flags (the node flags the launcher ran the peers with): a run started before add-peer.sh existed; start its peer by hand (docs/launching.md, \"Adding a peer\")"
[ -f "$dir/topology.txt" ] || die "$dir has no topology.txt"

# The run's node flags, one a line, then this command's extras.
flags_file=$dir/launch/node-flags
set -- "$@" # (extras stay in $@; the run's are read line by line below)
extra_n=$#
while IFS= read -r a || [ -n "$a" ]; do set -- "$@" "$a"; done < "$flags_file"
# rotate: the run's flags first, then the extras
i=0
while [ $i -lt "$extra_n" ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
plaintext=0
for a in "$@"; do [ "$a" = --plaintext ] && plaintext=1; done

hosts_run=0
[ -f "$dir/hosts.txt" ] && hosts_run=1
if [ $hosts_run -eq 1 ]; then
    [ -n "$hostline" ] || bad "$dir is a run of run-hosts.sh: give -H \"HOST:PORT [SSH_DEST [REMOTE_DIR]]\", where the new peer listens and runs"
    addr=$(echo "$hostline" | awk '{ print $1 }')
    dest=$(echo "$hostline" | awk '{ print $2 }')
    rdir=$(echo "$hostline" | awk '{ print $3 }')
    case $addr in *:*) ;; *) bad "-H: HOST:PORT first, not '$addr'" ;; esac
    [ -n "$dest" ] || dest=${addr%:*}
    [ -n "$rdir" ] || rdir=$(cd "$dir" && pwd)
    [ -n "$via" ] || via=$(awk '{ print $1; exit }' "$dir/hosts.txt")
    via_addr=$(awk -v v="$via" '$1 == v { print $2 }' "$dir/hosts.txt")
    [ -n "$via_addr" ] || die "peer $via is not in $dir/hosts.txt: give -v with a starting member's id"
    awk -v k="$k" '$1 == k { f = 1 } END { exit !f }' "$dir/hosts.txt" &&
        die "peer $k is one of the run's starting peers ($dir/hosts.txt): give an id of its own"
else
    [ -z "$hostline" ] || bad "-H is for a run of run-hosts.sh; $dir is one of run-local.sh"
    port=$(sed -n 's/.*"base_port": *\([0-9]*\).*/\1/p' "$dir/manifest.json" | head -n 1)
    is_uint "$port" || die "$dir/manifest.json has no base_port"
    if [ -z "$via" ]; then
        for f in "$dir"/launch/node-*.pid; do
            [ -f "$f" ] || continue
            kill -0 "$(cat "$f")" 2>/dev/null || continue
            j=${f##*/node-}; j=${j%.pid}
            { [ -z "$via" ] || [ "$j" -lt "$via" ]; } && via=$j
        done
        [ -n "$via" ] || die "no peer of $dir runs on this machine (launch/node-*.pid): nothing to join through"
    fi
    [ "$((port + via))" -le 65535 ] || die "peer $via's port $((port + via)) is not a port"
    via_addr=127.0.0.1:$((port + via))
    [ "$((port + k))" -le 65535 ] || bad "peer $k's port would be $((port + k)): not a port"
    addr=127.0.0.1:$((port + k))
fi
[ "$via" != "$k" ] || bad "a peer cannot join through itself (-v $via)"
[ -f "$dir/launch/node-$k.pid" ] && kill -0 "$(cat "$dir/launch/node-$k.pid")" 2>/dev/null &&
    die "peer $k of $dir runs already (pid $(cat "$dir/launch/node-$k.pid"))"

quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
tls="" dry_tls=""
[ $plaintext -eq 1 ] || dry_tls=--plaintext # (--dry-run opens no certificate)
if [ $hosts_run -eq 0 ]; then
    cmd_base="--id $k --topology $dir/topology.txt --base-port $port --run-dir $dir"
    dry_base=$cmd_base
else
    cmd_base="--id $k --topology topology.txt --hosts hosts.txt --run-dir ."
    dry_base="--id $k --topology $dir/topology.txt --hosts $dir/hosts.txt --run-dir $dir"
fi
# The node's own check first (the topology a family, the id below
# --max-peers, the flags): nothing is written when it refuses.
# shellcheck disable=SC2086
"$MURMUR" node $dry_base --join "$via_addr" --advertise "$addr" \
    $dry_tls "$@" --dry-run > /dev/null 2> "${TMPDIR:-/tmp}/add-peer.$$" || {
    st=$?
    sed 's/^/add-peer: /' "${TMPDIR:-/tmp}/add-peer.$$" >&2; rm -f "${TMPDIR:-/tmp}/add-peer.$$"
    [ $st -eq 2 ] && exit 2; exit 1
}
rm -f "${TMPDIR:-/tmp}/add-peer.$$"

if [ $plaintext -eq 0 ] && [ ! -f "$dir/certs/node-$k.pem" ]; then
    sh "$MAKE_CERTS" --add "$dir/certs" "$k" > "$dir/launch/certs-$k.log" 2>&1 ||
        die "making peer $k's certificate failed (see $dir/launch/certs-$k.log)"
fi
mkdir -p "$dir/node-$k" || die "cannot create $dir/node-$k"
echo "$PROG: peer $k joins $dir through peer $via ($via_addr) at $addr" \
    "(started $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null))"

pid=''
stop() {
    [ -n "$pid" ] || exit 130
    echo "$PROG: stopping peer $k (it announces its departure and leaves)" >&2
    if [ $hosts_run -eq 1 ]; then
        $SSH -o BatchMode=yes "$dest" "kill -TERM \$(cat $(quote "$rdir/node-$k/pid")) 2>/dev/null" </dev/null
    else
        kill -TERM "$(cat "$dir/launch/node-$k.pid")" 2>/dev/null
    fi
}
trap stop INT TERM HUP

if [ $hosts_run -eq 1 ]; then
    rscp() { $SCP -o BatchMode=yes -q "$@"; }
    $SSH -o BatchMode=yes "$dest" "mkdir -p $(quote "$rdir/node-$k") $(quote "$rdir/certs")" </dev/null ||
        die "cannot prepare $dest:$rdir"
    rscp -p "$dir/topology.txt" "$dir/hosts.txt" "$dest:$rdir/" || die "cannot copy the topology to $dest"
    if [ $plaintext -eq 0 ]; then
        rscp -p "$dir/certs/ca.pem" "$dir/certs/node-$k.pem" "$dir/certs/node-$k.key" "$dest:$rdir/certs/" ||
            die "cannot copy peer $k's certificate to $dest"
        tls="--tls-dir certs"
    fi
    flags=""
    for a in "$@"; do flags="$flags $(quote "$a")"; done
    rmurmur=$(cat "$dir/launch/murmur" 2>/dev/null)
    [ -n "$rmurmur" ] || rmurmur=$(cd "$(dirname "$MURMUR")" && pwd)/$(basename "$MURMUR")
    $SSH -o BatchMode=yes "$dest" "cd $(quote "$rdir") && echo \$\$ > node-$k/pid && \
        exec $(quote "$rmurmur") node $cmd_base --join $(quote "$via_addr") --advertise $(quote "$addr") \
        $tls $flags >> node-$k/console.log 2>&1" </dev/null &
    pid=$!
else
    [ $plaintext -eq 1 ] || tls="--tls-dir $dir/certs"
    # shellcheck disable=SC2086
    setsid sh -c 'echo $$ >"$0"; exec "$@"' "$dir/launch/node-$k.pid" \
        "$MURMUR" node $cmd_base --join "$via_addr" --advertise "$addr" $tls "$@" \
        >> "$dir/node-$k/console.log" 2>&1 < /dev/null &
    pid=$!
fi

# The round it joined at: its start line (bounded: JOIN_TIMEOUT seconds).
metrics=$dir/node-$k/metrics.jsonl
[ $hosts_run -eq 1 ] && metrics=''
t0=$(date +%s)
if [ -n "$metrics" ]; then
    while kill -0 "$pid" 2>/dev/null; do
        j=$(grep '"ev":"start"' "$metrics" 2>/dev/null | tail -n 1 | sed -n 's/.*"joined_round":\([0-9]*\).*/\1/p')
        if [ -n "$j" ]; then echo "$PROG: peer $k is a member from round $j"; break; fi
        if [ $(($(date +%s) - t0)) -ge "$JOIN_TIMEOUT" ]; then
            echo "$PROG: peer $k has no start line after $JOIN_TIMEOUT s (still joining: see $dir/node-$k/console.log)" >&2
            break
        fi
        sleep 1
    done
fi
wait "$pid"; st=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; st=$?; done # (a trapped signal interrupts wait)

if [ $hosts_run -eq 1 ]; then
    $SCP -o BatchMode=yes -q -r "$dest:$rdir/node-$k" "$dir/" ||
        echo "$PROG: could not bring $dest:$rdir/node-$k back" >&2
fi
end=$(grep '"ev":"end"' "$dir/node-$k/metrics.jsonl" 2>/dev/null | tail -n 1 | sed -n 's/.*"reason":"\([a-z_]*\)".*/\1/p')
case $st in
0) echo "$PROG: peer $k ended ${end:-?}" ;;
5) echo "$PROG: peer $k could not join (exit 5): $(grep -h 'ERROR' "$dir/node-$k/console.log" 2>/dev/null | tail -n 1)" >&2 ;;
*) echo "$PROG: peer $k exited $st${end:+ (end: $end)}: $(grep -h 'ERROR' "$dir/node-$k/console.log" 2>/dev/null | tail -n 1)" >&2 ;;
esac
exit "$st"
