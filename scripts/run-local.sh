#!/bin/sh
# Runs N murmur peers on this machine as one experiment in runs/NAME/.
#
#   scripts/run-local.sh -n N -t TOPOLOGY_FILE -r NAME [-p BASE_PORT] [-i SEC]
#                        [--no-report] [--resume | --resume-fresh-missing]
#                        [-- extra murmur node flags]
#
# Makes runs/NAME/ with manifest.json (this command, the node flags, the
# topology file's name and SHA-256, the seed, `murmur --version`), a copy of
# the topology (topology.txt) and TLS certificates (certs/, through
# scripts/make-certs.sh), starts the peers in the background
#   murmur node --id K --topology FILE --base-port P --run-dir runs/NAME
#               --tls-dir runs/NAME/certs [extra flags]
# (console output in runs/NAME/node-K/console.log), prints one progress line
# every -i seconds (default 5; `murmur report --progress`), and at the end
# runs `murmur report runs/NAME`.
#
# Before starting anything it refuses (exit 2, saying why) an -n that is not
# the topology's number of peers, a topology whose W is column-stochastic
# only without --algo pushsum in the node flags, node flags the node itself
# refuses (`murmur node --dry-run` as peer 0, its reason said once: e.g.
# --allreduce-schedule halving on 6 peers), a --metrics-addr without '+'
# (one port for every peer), ports that overlap the
# kernel's ephemeral port range (it says which -p to use instead), and
# ports on which something already listens (another run); and (exit 1) a
# run directory whose file system has less than 1 MiB free ("No space left
# on device", before anything is written and again before the peers
# start).
#
# --resume continues the run in runs/NAME/ (or starts it, saying so, when
# there is none yet): given the same -n, topology file and node flags as
# its manifest.json records (else refused, exit 2, then and now shown), it
# starts every peer again with the node flags and --resume, so each goes on
# from its node-K/checkpoint.bin (docs/node.md). The manifest stays; each
# resume is a line of launch/resumes.log; console.log files are appended to.
# A peer without a checkpoint would start again from round 0 while the
# others go on from theirs: such a resume is refused (exit 2, naming the
# peers) unless no peer has a checkpoint or metrics yet (nothing ran), or
# --resume-fresh-missing (a --resume that starts those peers fresh, saying
# which; their start lines say so and `murmur report` flags them).
#
# A peer that failed and was restarted by hand (its command is
# manifest.json's node_command, with --resume) while the run goes on is
# waited for, and when it ends normally (its end line says done, written
# after the failure) it does not count as failed.
#
# Each peer runs in its own session, away from the terminal: Ctrl-C reaches
# only this script, which sends every peer one SIGTERM (each finishes its
# round, writes its checkpoint and exits 0) and waits for them (SIGKILL
# after GRACE seconds, default 30). SIGTERM or SIGHUP to this script do the
# same, and so does a SIGPIPE (its output was piped into a reader that has
# gone, e.g. `| head`: never taken for a second Ctrl-C). A second Ctrl-C sends a second SIGTERM: the peers exit at once,
# without a checkpoint. A peer that exits non-zero is named with its last
# error and the reason in its `end` metrics line; one that ended 3 (a
# neighbour refused for a configuration that differs: TLS or --plaintext,
# model, --algo, certificates, one --id twice) or 4 (isolated: no neighbour
# ever mixed) with each neighbour and why. A peer that warns, while it
# runs, that it has mixed with none of its neighbours for a while is named
# once, with its warning.
#
# Exit status: 0 every peer exited 0; 1 a peer failed (non-zero exit,
# including 3 and 4: the run is then said to be misconfigured or isolated)
# or the run could not start, or its directory was removed while the
# peers ran (they are then stopped: SIGTERM, SIGKILL after GRACE seconds);
# 2 usage or a refused configuration; 130 interrupted.
# Environment: MURMUR (default ./murmur), MAKE_CERTS (default
# scripts/make-certs.sh next to this script), RUNS (default runs), GRACE,
# MIN_FREE_KIB (default 1024).
set -u

PROG=run-local
die() { echo "run-local: $*" >&2; exit 1; }
bad() { echo "run-local: $*" >&2; echo "usage: run-local.sh -n N -t TOPOLOGY_FILE -r NAME [-p PORT] [-i SEC] [--no-report] [--resume | --resume-fresh-missing] [-- node flags]" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/launch-lib.sh"
launcher_defaults "$here"
GRACE=${GRACE:-30}
command_json=$(json_arr "$0" "$@")

n='' topo='' name='' port=29500 interval=5 report=1 resume=0 fresh_missing=0
while [ $# -gt 0 ]; do
    case $1 in
    -n|-t|-r|-p|-i) [ $# -ge 2 ] || bad "$1 needs a value" ;;
    esac
    case $1 in
    -n) n=$2; shift 2 ;;
    -t) topo=$2; shift 2 ;;
    -r) name=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    -i) interval=$2; shift 2 ;;
    --no-report) report=0; shift ;;
    --resume) resume=1; shift ;;
    --resume-fresh-missing) resume=1 fresh_missing=1; shift ;;
    -h|--help) help_text "$0"; exit 0 ;;
    --) shift; break ;;
    *) bad "unknown argument: $1" ;;
    esac
done
is_uint "$n" && [ "$n" -ge 1 ] && [ "$n" -le 4096 ] || bad "-n N: number of peers (1..4096)"
[ -n "$topo" ] || bad "-t TOPOLOGY_FILE is required"
[ -f "$topo" ] && [ -r "$topo" ] || die "topology file $topo: not a readable file"
[ -n "$name" ] || bad "-r NAME is required"
case $name in /*|*..*|-*) bad "-r NAME: a name under $RUNS/ (no leading /, no ..)" ;; esac
is_uint "$port" && [ "$port" -ge 1024 ] && [ $((port + n)) -le 65535 ] || bad "-p PORT: 1024..$((65535 - n))"
is_uint "$interval" && [ "$interval" -ge 1 ] || bad "-i SEC: a whole number of seconds >= 1"
[ -x "$MURMUR" ] || command -v "$MURMUR" >/dev/null 2>&1 || die "$MURMUR not found (run make, or set MURMUR=path)"
[ -f "$MAKE_CERTS" ] || die "$MAKE_CERTS not found: it makes the TLS certificates"
command -v setsid >/dev/null 2>&1 || die "setsid (util-linux) not found: it keeps the peers away from the terminal's Ctrl-C"
check_topology "$topo" "$n" "$@" || exit 2
check_node_flags "$topo" "$n" "$@" || exit 2
# --metrics-addr HOST:PORT without '+': every peer of this machine would
# listen on that one port, and all but one would fail on it
ma=$(node_flag metrics-addr "$@")
case $ma in
''|*+) ;;
*) [ "$n" -gt 1 ] && { echo "run-local: --metrics-addr $ma: the $n peers of this machine would" \
       "all listen on that one port (all but one would fail); give --metrics-addr $ma+ (peer K" \
       "on port PORT+K)" >&2; exit 2; } ;;
esac
check_ports "$port" "$n" "-p $port: ports" || exit 2
if ports_busy "$port" "$n" listen; then
    echo "run-local: ports $port..$((port + n - 1)) (-p $port): something listens on some of them" \
        "(another run? 'ss -tanp' shows who holds them); peers on them would form an island" \
        "or fail: choose another -p" >&2
    exit 2
fi

dir=$RUNS/$name
sha=$(sha256sum "$topo" | cut -d' ' -f1)
node_flags_json=$(json_arr "$@")
# resume_run NODE_FLAGS...: checks that runs/NAME is this run (-n, the
# topology's SHA-256, the node flags, as manifest.json records them), that
# none of its peers still runs, and that every peer has a checkpoint (or
# none ran yet, or --resume-fresh-missing); forgets the last launch's exit
# records and says who starts from where.
resume_run() {
    if why=$(run_mismatch "$dir" "$n" "$topo" "$@"); then
        echo "run-local: --resume: $why" >&2
        case $why in *"no manifest.json"*) exit 1 ;; esac
        exit 2
    fi
    k=0
    while [ "$k" -lt "$n" ]; do
        [ ! -f "$dir/node-$k/node.log" ] || flock -n "$dir/node-$k/node.log" true ||
            die "--resume: peer $k of $dir still runs (it holds $dir/node-$k/node.log)"
        k=$((k + 1))
    done
    fresh=$(peers_without_checkpoint "$dir" "$n")
    if [ -n "$fresh" ] && [ "$fresh_missing" = 0 ] && ran_before "$dir" "$n"; then
        echo "run-local: --resume: peer(s) $fresh of $dir have no checkpoint (node-K/checkpoint.bin):" \
            "they would start again from round 0 while the others go on from theirs, one run mixed" \
            "of two. Start them fresh anyway with --resume-fresh-missing instead of --resume (the" \
            "report flags them), or run again under another -r NAME" >&2
        exit 2
    fi
    k=0
    while [ "$k" -lt "$n" ]; do
        rm -f "$dir/launch/node-$k.exit" "$dir/launch/node-$k.pid"
        k=$((k + 1))
    done
    printf '%s resumed: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$command_json" \
        2>/dev/null >>"$dir/launch/resumes.log" || wdie "cannot write $dir/launch/resumes.log"
    if [ -z "$fresh" ]; then
        echo "run-local: resuming $dir: every peer from its checkpoint (--resume)"
    elif ! ran_before "$dir" "$n"; then
        echo "run-local: resuming $dir: no peer has run yet, every peer starts from round 0"
    else
        echo "run-local: resuming $dir: peer(s) $fresh start FRESH from round 0 (no checkpoint;" \
            "--resume-fresh-missing), the others from their checkpoints"
    fi
}

# new_run NODE_FLAGS...: runs/NAME with its manifest, topology copy and
# certificates.
new_run() {
    [ -e "$dir" ] && die "$dir already exists: choose another -r NAME, remove it, or continue it with --resume"
    mkdir -p "$dir/launch" || wdie "cannot create $dir"
    cp "$topo" "$dir/topology.txt" || wdie "cannot copy $topo"

    # The seed as the node flags give it (--seed S or --seed=S), else the node's default.
    seed=null prev=''
    for a in "$@"; do
        case $a in --seed=*) seed=$(json_str "${a#--seed=}") ;; esac
        [ "$prev" = --seed ] && seed=$(json_str "$a")
        prev=$a
    done
    version=$("$MURMUR" --version 2>/dev/null) || version=unknown
    {
        printf '{\n'
        printf '  "command": %s,\n' "$command_json"
        printf '  "cwd": %s,\n' "$(json_str "$(pwd)")"
        printf '  "host": %s,\n' "$(json_str "$(hostname 2>/dev/null || echo unknown)")"
        printf '  "started": %s,\n' "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
        printf '  "version": %s,\n' "$(json_str "$version")"
        printf '  "n_peers": %s,\n' "$n"
        printf '  "base_port": %s,\n' "$port"
        printf '  "topology": {"file": %s, "path": %s, "sha256": %s, "copy": "topology.txt"},\n' \
            "$(json_str "$(basename "$topo")")" "$(json_str "$topo")" "$(json_str "$sha")"
        printf '  "seed": %s,\n' "$seed"
        printf '  "node_flags": %s,\n' "$node_flags_json"
        printf '  "node_command": %s\n' "$(json_arr "$MURMUR" node --id K --topology "$topo" \
            --base-port "$port" --run-dir "$dir" --tls-dir "$dir/certs" "$@")"
        printf '}\n'
    } >"$dir/manifest.json" 2>/dev/null || wdie "cannot write $dir/manifest.json"

    # the node flags one a line, for scripts/add-peer.sh
    for a in "$@"; do printf '%s\n' "$a"; done >"$dir/launch/node-flags" ||
        wdie "cannot write $dir/launch/node-flags"
    sh "$MAKE_CERTS" "$dir/certs" "$n" >"$dir/launch/certs.log" 2>&1 ||
        wdie "making certificates failed (see $dir/launch/certs.log)"
}

# wdie MESSAGE: a write into the run directory failed: why, when its disk is
# full, then MESSAGE (exit 1).
wdie() { no_space "$dir" || true; die "$@"; }

# A full disk, said before anything is written (the peers' output, their
# metrics and the launcher's records would all be lost); said again before
# the peers start, for what the run's own files took.
no_space "$dir" && exit 1
if [ "$resume" = 1 ] && [ -e "$dir" ]; then
    resume_run "$@"
else
    [ "$resume" = 1 ] && echo "run-local: --resume: no run at $dir yet, starting it"
    new_run "$@"
fi
[ "$resume" = 1 ] && set -- "$@" --resume
no_space "$dir" && exit 1

# Each peer runs under a small watcher subshell that records its exit status
# in launch/node-K.exit (and first in this script's own directory, below,
# which is what the launcher reads: a run directory on a full disk cannot
# take it): the launcher then knows who ended and how without relying on
# the shell's job table. setsid puts the peer in a session of
# its own, so a terminal's Ctrl-C (SIGINT to the whole foreground process
# group) reaches only this script, which forwards one SIGTERM: a peer that
# got both would take the second for "exit now, no checkpoint". The peer
# writes its own pid (the shell that execs it), whether or not setsid had
# to fork; setsid -w hands back its exit status.
# Each pid is also written to a directory of this script's own, outside
# the run directory, so the peers can be stopped even if the run directory
# goes away (run_dir_gone below) or its disk is full.
own_pids=$(mktemp -d "${TMPDIR:-/tmp}/run-local-pids.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$own_pids"' EXIT
k=0
while [ "$k" -lt "$n" ]; do
    mkdir -p "$dir/node-$k"
    (
        setsid -w sh -c 'echo $$ >"$0"; echo $$ >"$1"; shift; exec "$@"' "$dir/launch/node-$k.pid" \
            "$own_pids/node-$k.pid" \
            "$MURMUR" node --id "$k" --topology "$topo" --base-port "$port" --run-dir "$dir" \
            --tls-dir "$dir/certs" "$@" >>"$dir/node-$k/console.log" 2>&1 &
        wait $!
        st=$?
        echo $st >"$own_pids/node-$k.exit.tmp" && mv "$own_pids/node-$k.exit.tmp" "$own_pids/node-$k.exit"
        { echo $st >"$dir/launch/node-$k.exit.tmp" &&
            mv "$dir/launch/node-$k.exit.tmp" "$dir/launch/node-$k.exit"; } 2>/dev/null
    ) &
    k=$((k + 1))
done
echo "run-local: $n peers of $dir started (topology $topo, ports $port..$((port + n - 1)))"

stopping=0
interrupted=0
signalled=' '
stop_peers() { # SIGTERM once to each running peer (a second one means "now")
    for f in "$own_pids"/node-*.pid; do
        [ -s "$f" ] || continue
        case $signalled in *" $f "*) continue ;; esac
        signalled="$signalled$f "
        [ -f "${f%.pid}.exit" ] || kill -TERM "$(cat "$f")" 2>/dev/null
    done
}
on_signal() {
    interrupted=$((interrupted + 1))
    if [ "$stopping" = 0 ]; then
        stopping=$(date +%s)
        echo "run-local: stopping the peers (SIGTERM; SIGKILL after ${GRACE}s; interrupt again to stop them at once, without a checkpoint)" >&2
        stop_peers
    elif [ "$interrupted" = 2 ]; then
        echo "run-local: second interrupt: the peers exit now, without a checkpoint" >&2
        signalled=' '
        stop_peers
    fi
}
trap on_signal INT TERM HUP
# SIGPIPE: whoever read this script's output is gone (`... | head`). The
# run is stopped as on a first interrupt (every peer one SIGTERM, its
# checkpoint, exit 130, so a sweep marks it interrupted, not failed), never
# as a second: output goes to /dev/null from then on (stdout; stderr too
# if it was the same pipe and signals again).
pipe_gone=0
on_pipe() {
    if [ "$pipe_gone" = 0 ]; then exec >/dev/null; else exec 2>/dev/null; fi
    pipe_gone=$((pipe_gone + 1))
    [ "$stopping" = 0 ] && on_signal
}
trap on_pipe PIPE

# A peer whose launch failed may be started again by hand (manifest.json's
# node_command with --resume). by_hand_running K: such a peer K runs now
# (a process holds node-K/node.log, the node's lock). by_hand_done K: it
# ended normally since the failure (its metrics' last line, written after
# launch/node-K.exit, is an end line with reason done).
by_hand_running() { [ -f "$dir/node-$1/node.log" ] && ! flock -n "$dir/node-$1/node.log" true; }
by_hand_done() {
    [ "$dir/node-$1/metrics.jsonl" -nt "$own_pids/node-$1.exit" ] &&
        tail -n 1 "$dir/node-$1/metrics.jsonl" | grep -q '"ev":"end".*"reason":"done"'
}

# exit_of K: peer K's exit status as its watcher recorded it ("unknown"
# when even this script's own directory could not take it).
exit_of() {
    eo=$(cat "$own_pids/node-$1.exit" 2>/dev/null)
    case $eo in ''|*[!0-9]*) echo unknown ;; *) echo "$eo" ;; esac
}

# The peers' pids, read (once the run directory is gone) from this
# script's own copies of their pid files: the watchers' exit files can then
# never appear, so the peers are stopped here.
peer_pids=' '
note_pids() {
    for f in "$own_pids"/node-*.pid; do
        [ -s "$f" ] || continue
        p=$(cat "$f" 2>/dev/null) || continue
        case $peer_pids in *" $p "*) ;; *) peer_pids="$peer_pids$p " ;; esac
    done
}
any_peer_alive() {
    for p in $peer_pids; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}
run_dir_gone() {
    echo "run-local: $dir/launch is gone (the run directory was removed or moved while the peers ran): stopping them" >&2
    note_pids
    for p in $peer_pids; do kill -TERM "$p" 2>/dev/null; done
    t0=$(date +%s)
    while any_peer_alive && [ $(($(date +%s) - t0)) -lt "$GRACE" ]; do sleep 1; done
    if any_peer_alive; then
        echo "run-local: peers still running after ${GRACE}s: SIGKILL" >&2
        for p in $peer_pids; do kill -KILL "$p" 2>/dev/null; done
    fi
    wait
    exit 1
}

start=$(date +%s)
reported_fail=''
reported_iso=''
reported_hand=''
while :; do
    [ -d "$dir/launch" ] || run_dir_gone
    done_n=0
    k=0
    while [ "$k" -lt "$n" ]; do
        if [ -f "$own_pids/node-$k.exit" ]; then
            done_n=$((done_n + 1))
            st=$(exit_of "$k")
            case " $reported_fail " in *" $k "*) ;; *)
                if [ "$st" != 0 ]; then
                    echo "run-local: peer $k exited with status $st ($dir/node-$k/console.log):" >&2
                    peer_failure "$dir/node-$k" "$st" >&2
                    reported_fail="$reported_fail $k"
                fi ;;
            esac
            if [ "$st" != 0 ] && by_hand_running "$k"; then
                done_n=$((done_n - 1))
                case " $reported_hand " in *" $k "*) ;; *)
                    echo "run-local: peer $k runs again, restarted by hand: waiting for it too" >&2
                    reported_hand="$reported_hand $k" ;;
                esac
            fi
        fi
        k=$((k + 1))
    done
    [ "$done_n" -eq "$n" ] && break
    [ "$stopping" != 0 ] && stop_peers # peers whose pid file came late
    if [ "$stopping" != 0 ] && [ $(($(date +%s) - stopping)) -ge "$GRACE" ]; then
        echo "run-local: peers still running after ${GRACE}s: SIGKILL" >&2
        for f in "$own_pids"/node-*.pid; do
            [ -f "${f%.pid}.exit" ] || kill -KILL "$(cat "$f")" 2>/dev/null
        done
        stopping=$(date +%s)
    fi
    if [ "$stopping" = 0 ]; then
        line=$("$MURMUR" report --progress "$dir" 2>/dev/null | tail -n 1)
        printf '[%5ss] peers %d/%d running | %s\n' "$(($(date +%s) - start))" \
            "$((n - done_n))" "$n" "$line"
        # Peers the progress line marks isolated (I) are named once, with
        # their warning: each neighbour and why it does not mix.
        map=$(printf '%s' "$line" | sed -n 's/.*live [0-9]*\/[0-9]* \[\([^]]*\)\].*/\1/p')
        k=0
        while [ -n "$map" ] && [ "$k" -lt "$n" ]; do
            c=${map%"${map#?}"}; map=${map#?}
            case " $reported_iso " in *" $k "*) ;; *)
                if [ "$c" = I ] && [ -n "$(isolation_warning "$dir/node-$k")" ]; then
                    echo "run-local: peer $k mixes with none of its neighbours ($dir/node-$k/console.log):" >&2
                    isolation_warning "$dir/node-$k" >&2
                    reported_iso="$reported_iso $k"
                fi ;;
            esac
            k=$((k + 1))
        done
    fi
    # Sleep in the background so a signal interrupts the wait at once; the
    # sleep dies with the wait, or it would outlive this script holding
    # what it inherited (a sweep's lock, sweep.sh's fd 9) for up to -i SEC.
    sleep "$interval" &
    nap=$!
    wait $nap 2>/dev/null
    kill $nap 2>/dev/null
    [ "$stopping" != 0 ] && interval=1
done
trap - INT TERM HUP

failed=0 n_refused=0 n_isolated=0
k=0
while [ "$k" -lt "$n" ]; do
    st=$(exit_of "$k")
    if [ "$st" != 0 ] && by_hand_done "$k"; then
        echo "run-local: peer $k, restarted by hand after status $st, ended normally (end line: done)"
        st=0
    fi
    [ "$st" = 0 ] || failed=$((failed + 1))
    [ "$st" = 3 ] && n_refused=$((n_refused + 1))
    [ "$st" = 4 ] && n_isolated=$((n_isolated + 1))
    k=$((k + 1))
done
echo "run-local: all peers stopped after $(($(date +%s) - start))s; $failed failed"
if [ "$report" = 1 ]; then
    "$MURMUR" report "$dir" || echo "run-local: murmur report failed" >&2
fi
run_verdict "$n_refused" "$n_isolated"
[ "$interrupted" != 0 ] && exit 130
[ "$failed" -eq 0 ] || exit 1
exit 0
