# Ctrl-C the way a user presses it: each launcher runs on a pseudo-terminal
# (tests/tools/ptyrun) and ^C is written to the pty master, so the line
# discipline sends SIGINT to the terminal's whole foreground process group,
# not to one pid. For run-local.sh, compare.sh and run-hos.sh (through a
# private sshd, tests/e2e/lib/sshd.sh): every peer must get exactly one
# signal, finish its round, write its final checkpoint and its `end` line
# and exit 0; the launcher exits 130 with no peer left running, and
# `murmur report` shows every peer ended (`signal`), none `running?`.
# compare.sh must not start the next topology.
. "$(dirname "$0")/lib.sh"
PTYRUN=${PTYRUN:-$ROOT/${BUILD:-build}/tests/tools/ptyrun}
[ -x "$PTYRUN" ] || fail "$PTYRUN missing (make ptyrun)"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs" GRACE=20
n=3
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
"$MURMUR" topo gen complete -n $n > "$T/complete.topo" 2>/dev/null
# A few seconds of training at most: a tiny model, no periodic checkpoint
# (so a checkpoint.bin can only be the final one), rounds without end.
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --rounds 1000000
       --eval-every 0 --checkpoint-every 0 --log-every 0"

# The condition ptyrun polls before pressing ^C: every peer of DIR has
# logged at least 3 rounds.
trained="$ROOT/tests/e2e/lib/trained.sh"

# stopped_cleanly NAME DIR PIDFILES...: each peer of DIR ended on the
# signal with a checkpoint and no second signal, none is still running,
# and the report agrees. The pid files say where each peer ran.
stopped_cleanly() {
    what=$1 d=$2; shift 2
    for f in "$@"; do
        [ -s "$f" ] || fail "$what: no pid file $f"
        kill -0 "$(cat "$f")" 2>/dev/null && fail "$what: peer (pid $(cat "$f")) still running after the launcher exited"
    done
    k=0
    while [ $k -lt $n ]; do
        grep -q 'second signal' "$d/node-$k/console.log" &&
            fail "$what: peer $k got a second signal: $(grep -m1 'second signal' "$d/node-$k/console.log")"
        [ -s "$d/node-$k/checkpoint.bin" ] || fail "$what: peer $k wrote no final checkpoint"
        grep -q '"ev":"end".*"reason":"signal"' "$d/node-$k/metrics.jsonl" ||
            fail "$what: peer $k has no end line for the signal"
        k=$((k + 1))
    done
    "$MURMUR" report "$d" --no-plots > "$T/$what.report" 2>&1 || fail "$what: murmur report failed"
    grep -q 'running?' "$T/$what.report" && { cat "$T/$what.report" >&2; fail "$what: report shows a peer running?"; }
    [ "$(grep -c '^node-[0-9].* signal ' "$T/$what.report")" -eq $n ] ||
        { cat "$T/$what.report" >&2; fail "$what: report does not show all $n peers ended by the signal"; }
}

# exited_130 NAME OUT: the launcher exited 130 by itself, after stopping its
# peers: not killed by the terminal's SIGINT (which leaves the run stopping
# behind the prompt), and ^C was pressed.
exited_130() {
    grep -q 'pressed ^C' "$T/pty.err" || { cat "$T/pty.err" "$T/$2.out" >&2; fail "$1: ^C was never pressed"; }
    grep -q 'was killed by signal' "$T/pty.err" &&
        { cat "$T/$2.out" >&2; fail "$1 died of the terminal's signal instead of stopping its run"; }
    [ $st -eq 130 ] || { cat "$T/$2.out" >&2; fail "$1: exit $st after ^C, not 130"; }
}

# exits_0 NAME OUT DIR: run-local.sh recorded exit status 0 for every peer.
exits_0() {
    k=0
    while [ $k -lt $n ]; do
        e=$(cat "$3/launch/node-$k.exit" 2>/dev/null) || e=none
        [ "$e" = 0 ] || { cat "$T/$2.out" >&2; fail "$1: peer $k exited with status $e, not 0"; }
        k=$((k + 1))
    done
}

# 1. run-local.sh
port=$(free_ports $n)
st=0
"$PTYRUN" -t 90 -o "$T/local.out" -w "sh $trained $RUNS/local $n" -- \
    sh "$ROOT/scripts/run-local.sh" -n $n -t "$T/ring.topo" -r local -p "$port" -i 1 -- $model 2> "$T/pty.err" || st=$?
exited_130 run-local.sh local
exits_0 run-local.sh local "$RUNS/local"
stopped_cleanly run-local "$RUNS/local" "$RUNS"/local/launch/node-*.pid
note "run-local.sh: ^C in a pty, $n peers exited 0 with their checkpoint, launcher 130"

# 2. compare.sh: ^C during the first topology; the second never starts.
port=$(free_ports $((2 * n)))
st=0
"$PTYRUN" -t 90 -o "$T/compare.out" -w "sh $trained $RUNS/cmp/ring $n" -- \
    sh "$ROOT/scripts/compare.sh" -n $n -r cmp -p "$port" -i 1 "$T/ring.topo" "$T/complete.topo" -- $model 2> "$T/pty.err" || st=$?
exited_130 compare.sh compare
[ -e "$RUNS/cmp/complete" ] && fail "compare.sh started the next topology after ^C"
exits_0 compare.sh compare "$RUNS/cmp/ring"
stopped_cleanly compare "$RUNS/cmp/ring" "$RUNS"/cmp/ring/launch/node-*.pid
note "compare.sh: ^C stopped the first run cleanly and did not start the second"

# 3. run-hosts.sh through a private sshd, each peer on its own "host".
. "$ROOT/tests/e2e/lib/sshd.sh"
if ! start_test_sshd; then
    echo "ok: run-local.sh and compare.sh (run-hosts.sh skipped: no sshd)"
    exit 0
fi
test_hosts "$T/hosts.txt" hosts
E2E_CLEANUP='for f in "$T"/host-*/*/node-*/pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
# ptyrun polls the peers where they run; a condition over all three hosts
cat > "$T/trained-hosts.sh" <<EOF
for k in \$(seq 0 $((n - 1))); do
    c=\$(grep -c '"ev":"round"' "$T/host-\$k/hosts/node-\$k/metrics.jsonl" 2>/dev/null) || c=0
    [ "\$c" -ge 3 ] || exit 1
done
EOF
st=0
"$PTYRUN" -t 90 -o "$T/hosts.out" -w "sh $T/trained-hosts.sh" -- \
    sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts.txt" -t "$T/ring.topo" -r hosts -D "$T/data" -- $model 2> "$T/pty.err" || st=$?
exited_130 run-hosts.sh hosts
grep -q 'exited with status' "$T/hosts.out" && { cat "$T/hosts.out" >&2; fail "run-hosts.sh: a peer exited non-zero"; }
stopped_cleanly run-hosts "$RUNS/hosts" "$T"/host-*/hosts/node-*/pid
note "run-hosts.sh: ^C in a pty, $n peers over ssh exited 0 with their checkpoint, collected"
echo "ok: ^C in a terminal stops run-local.sh, compare.sh and run-hosts.sh cleanly"
