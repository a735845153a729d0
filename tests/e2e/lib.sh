# Shared helpers for the end-to-end tests (sourced, POSIX sh).
# Every test gets a private temp dir that is removed on exit, and peers it
# starts are killed on exit whatever happens.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MURMUR=${MURMUR:-$ROOT/murmur}
T=$(mktemp -d "${TMPDIR:-/tmp}/murmur-e2e.XXXXXX")
E2E_PIDS=""
E2E_CLEANUP=""
e2e_exit() {
    rc=$?
    for p in $E2E_PIDS; do kill -9 "$p" 2>/dev/null || true; done
    [ -z "$E2E_CLEANUP" ] || eval "$E2E_CLEANUP" || true
    if [ $rc -ne 0 ] && [ -n "${KEEP:-}" ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
    exit $rc
}
trap e2e_exit EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "  $*"; }
# sigstop PID: SIGSTOP, and return once every thread of PID is stopped
# (state T, at most 5 s): kill(2) only queues the signal, so a thread in
# the middle of a write still finishes it after kill returns (a metrics
# line written after the "stopped" count was taken made campaign/04 say
# "peer 2 was not really stopped"). 1 when it does not stop in time.
sigstop() {
    kill -STOP "$1" || return 1
    i=0
    while [ $i -lt 100 ]; do
        running=0
        for tsk in /proc/"$1"/task/*; do
            # (the state follows the ")" that ends the command name)
            [ "$(sed 's/.*) //' "$tsk/stat" 2>/dev/null | cut -d' ' -f1)" = T ] || running=1
        done
        [ $running = 0 ] && return 0
        sleep 0.05; i=$((i + 1))
    done
    return 1
}

# threads PID: what each thread of a process that stopped making progress is
# doing (state, CPU ticks, the syscall it sits in, its kernel stack; the
# user-space stacks too where gdb is installed), on stderr, before a fail.
threads() {
    for tsk in /proc/"$1"/task/*; do
        [ -d "$tsk" ] || continue
        echo "thread ${tsk##*/} ($(cat "$tsk/comm" 2>/dev/null)): state $(cut -d' ' -f3 "$tsk/stat" 2>/dev/null)," \
            "utime/stime $(cut -d' ' -f14,15 "$tsk/stat" 2>/dev/null), syscall $(cut -d' ' -f1 "$tsk/syscall" 2>/dev/null)," \
            "wchan $(cat "$tsk/wchan" 2>/dev/null)" >&2
        sed 's/^/    /' "$tsk/stack" 2>/dev/null | head -8 >&2
    done
    if command -v gdb > /dev/null 2>&1; then
        gdb -p "$1" -batch -ex "thread apply all bt 20" 2>/dev/null | grep -E '^(Thread|#)' | head -120 >&2
    fi
}

# A base port with n free ports above it (random, so parallel runs don't
# clash), below the kernel's ephemeral range so that no outgoing connection
# can be holding one of them.
free_ports() {
    n=$1
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    span=$((lo - 20000 - n))
    [ "$span" -gt 100 ] || fail "no room for test ports below the ephemeral range ($lo)"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        base=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % span ))
        busy=$(ss -Htan 2>/dev/null | awk -v b="$base" -v n="$n" \
            '{ sub(/.*:/, "", $4); if ($4 >= b && $4 < b + n) c++ } END { print c + 0 }')
        [ "$busy" -eq 0 ] && { echo "$base"; return 0; }
    done
    fail "no free ports"
}

# A small synthetic corpus (tests/e2e/lib/corpus.sh), prepared into DIR.
. "$ROOT/tests/e2e/lib/corpus.sh"
tiny_data() {
    make_tagged_corpus "$T/tiny-src" "${2:-6}"
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" data-prepare "$T/tiny-src" "$1" >/dev/null
}

# Start a background command, remembering its pid for cleanup; prints the pid.
bg() { "$@" & E2E_PIDS="$E2E_PIDS $!"; echo $! > "$T/.lastpid"; }
lastpid() { cat "$T/.lastpid"; }

# wait_all PID...: wait for each, fail if any exits non-zero.
wait_all() {
    bad=0
    for p in "$@"; do wait "$p" || { echo "process $p exited $?" >&2; bad=1; }; done
    return $bad
}

# Numbers out of JSON lines without jq: jfield FILE EV FIELD prints FIELD of
# every line whose "ev" is EV.
jfield() {
    grep "\"ev\":\"$2\"" "$1" | sed -n "s/.*\"$3\":\(-\{0,1\}[0-9.eE+-]*\).*/\1/p"
}
