# What a peer ends with when it could not mix (issue 12, item 2; peers
# started by hand, so "the terminal" is each peer's own stderr):
#   - two processes with one --id on different ports: the neighbours that
#     saw the clash and both impostors end with status 3 (`refused`) and
#     say "two peers claim id 0"; the report shows it;
#   - a peer whose neighbours never appear: status 4 (`isolated`), a
#     warning naming each neighbour while it runs;
#   - one neighbour of two never appears: status 0 (a missing neighbour is
#     a fault the algorithm tolerates; its `end` line still says whom it
#     never mixed with);
#   - a topology whose W is column-stochastic only with --algo dpsgd: the
#     node refuses to start (status 2) and names --algo pushsum; a directed
#     graph with a doubly stochastic W runs with dpsgd, without a warning.
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1
"$MURMUR" topo gen ring -n 4 > "$T/ring4.topo"
"$MURMUR" topo gen exp -n 4 --directed > "$T/expd4.topo"
printf 'peers 3\ngraph directed\nweights explicit\n0 1 1/4\n0 2 1/4\n1 2 1/2\n2 0 1/2\n' > "$T/push3.topo"
quick="--plaintext --no-train --vector-len 1000 --eval-every 0 --checkpoint-every 0 --log-every 0
       --start-timeout 2000 --peer-timeout 1000 --round-timeout 500"

# peer NAME K FLAGS...: start peer K in the background (out in $T/NAME.K.out);
# a K that is not a number (0b) names a process whose --id is in FLAGS.
peer() {
    name=$1 k=$2; shift 2
    case $k in *[!0-9]*) ;; *) set -- --id "$k" "$@" ;; esac
    "$MURMUR" node $quick "$@" > "$T/$name.$k.out" 2>&1 &
    echo $! > "$T/$name.$k.pid"; E2E_PIDS="$E2E_PIDS $!"
}
# status NAME K: peer K's exit status, in st (a child is waited for by this
# shell, not by a command substitution's subshell).
status() { st=0; wait "$(cat "$T/$1.$2.pid")" || st=$?; }
endf() { jfield "$1/node-$2/metrics.jsonl" end "$3" | tail -n 1; }
reason() { grep '"ev":"end"' "$1/node-$2/metrics.jsonl" | tail -n 1 | sed -n 's/.*"reason":"\([a-z]*\)".*/\1/p'; }

# 1. Two processes with --id 0, on different ports (--listen).
port=$(free_ports 5)
# Peer 2 starts a second later, so the others wait for it in their first
# round: the clash (three replacements within ms) happens while they run.
# The two peers 0 run until the others are done, then get SIGTERM. Every
# peer sleeps 0-150 ms a round (about 4.5 s for the 60 rounds of peers
# 1-3). Without it the rounds took 0.3 s once peer 2 was up, and the two
# peers 0, refused by their neighbours, rushed on at thousands of rounds a
# second: a peer 0 stalled for a second by a loaded machine redialled
# late, both were past the exchange window by then, and each new
# connection was refused for its first vector before the other could
# replace it, so peer 3 saw two replacements, not three, and exited 0
# (2 runs in 15 at load 20-30).
slow="--compute-jitter uniform:0.15"
peer clash 0 --topology "$T/ring4.topo" --base-port "$port" --run-dir "$T/clash" --rounds 1000000 $slow
peer clash 0b --id 0 --topology "$T/ring4.topo" --base-port "$port" --listen "127.0.0.1:$((port + 4))" \
    --run-dir "$T/clash-b" --rounds 1000000 $slow
for k in 1 3; do
    peer clash $k --topology "$T/ring4.topo" --base-port "$port" --run-dir "$T/clash" --rounds 60 $slow
done
sleep 1
peer clash 2 --topology "$T/ring4.topo" --base-port "$port" --run-dir "$T/clash" --rounds 60 $slow
status clash 1; s1=$st; status clash 2; s2=$st; status clash 3; s3=$st
kill -TERM "$(cat "$T/clash.0.pid")" "$(cat "$T/clash.0b.pid")"
status clash 0; s0=$st; status clash 0b; s0b=$st
note "id clash: exit statuses 0:$s0 0b:$s0b 1:$s1 2:$s2 3:$s3"
for k in 1 3; do
    [ "$(eval echo \$s$k)" = 3 ] || { cat "$T/clash.$k.out" >&2; fail "peer $k saw two peers 0 but exited $(eval echo \$s$k)"; }
    grep -q "ERROR: refused: peer 0: two peers claim id 0" "$T/clash.$k.out" ||
        { cat "$T/clash.$k.out" >&2; fail "peer $k does not name the id clash"; }
    [ "$(reason "$T/clash" $k)" = refused ] || fail "peer $k's end reason is not refused"
done
[ "$s0" = 3 ] && [ "$s0b" = 3 ] || fail "the two peers 0 exited $s0 and $s0b, not 3"
grep -q "two peers claim id 0" "$T/clash.0b.out" || fail "the second peer 0 was not told"
[ "$s2" = 0 ] || { cat "$T/clash.2.out" >&2; fail "peer 2, untouched by the clash, exited $s2"; }
"$MURMUR" report "$T/clash" --no-plots > "$T/report" 2>&1 || { cat "$T/report" >&2; fail "murmur report failed"; }
grep -q "^node-1 .*refused.*id_clash" "$T/report" || { cat "$T/report" >&2; fail "the report does not show the id clash"; }

# 2. A peer alone: its neighbours never appear.
port=$(free_ports 4)
peer alone 0 --topology "$T/ring4.topo" --base-port "$port" --run-dir "$T/alone" --rounds 30
status alone 0
[ "$st" = 4 ] || { cat "$T/alone.0.out" >&2; fail "a peer whose neighbours never appeared exited $st, not 4"; }
[ "$(reason "$T/alone" 0)" = isolated ] || fail "its end reason is not isolated"
grep -q "WARN: isolated: peer 1: never connected" "$T/alone.0.out" &&
    grep -q "WARN: isolated: peer 3: never connected" "$T/alone.0.out" ||
    { cat "$T/alone.0.out" >&2; fail "the isolation warning does not name each neighbour"; }
"$MURMUR" report "$T/alone" --no-plots > "$T/report" 2>&1
grep -q "^node-0 .*isolated" "$T/report" || { cat "$T/report" >&2; fail "the report does not show the isolated peer"; }
note "alone: exit 4, $(grep -m1 'WARN: isolated for' "$T/alone.0.out" | sed 's/^[0-9:.]* //' | cut -c1-110)"

# 3. One neighbour of two never appears (peer 3 of the ring is not started).
port=$(free_ports 4)
for k in 0 1 2; do peer part $k --topology "$T/ring4.topo" --base-port "$port" --run-dir "$T/part" --rounds 30; done
for k in 0 1 2; do
    status part $k
    [ "$st" = 0 ] || { cat "$T/part.$k.out" >&2; fail "peer $k, with one neighbour never up, exited $st, not 0"; }
done
grep '"ev":"end"' "$T/part/node-0/metrics.jsonl" | grep -q '"mixed":{"1":[1-9][0-9]*,"3":0}' ||
    { grep '"ev":"end"' "$T/part/node-0/metrics.jsonl" >&2; fail "peer 0's end line does not say it never mixed with peer 3"; }
note "one neighbour missing: exit 0; peer 0 mixed $(grep '"ev":"end"' "$T/part/node-0/metrics.jsonl" | sed 's/.*"mixed":\({[^}]*}\).*/\1/')"

# 4. Directed topologies: refused where the launchers refuse, else run.
st=0
"$MURMUR" node --id 0 $quick --topology "$T/push3.topo" --algo dpsgd --run-dir "$T/push" --rounds 3 \
    > "$T/push.out" 2>&1 || st=$?
[ $st = 2 ] || { cat "$T/push.out" >&2; fail "dpsgd on a column-stochastic topology: exit $st, not 2"; }
grep -q "column-stochastic only: only --algo pushsum averages correctly on it (--algo dpsgd would drift to a weighted average); add --algo pushsum" "$T/push.out" ||
    { cat "$T/push.out" >&2; fail "the refusal does not name --algo pushsum"; }
[ -e "$T/push/node-0/metrics.jsonl" ] && fail "the refused peer started"
port=$(free_ports 4)
for k in 0 1 2 3; do peer expd $k --topology "$T/expd4.topo" --base-port "$port" --run-dir "$T/expd" --rounds 5; done
for k in 0 1 2 3; do
    status expd $k
    [ "$st" = 0 ] || { cat "$T/expd.$k.out" >&2; fail "dpsgd on a doubly stochastic directed graph: peer $k exited $st"; }
    grep -qi "directed" "$T/expd.$k.out" && { cat "$T/expd.$k.out" >&2; fail "peer $k warns about a doubly stochastic directed graph"; }
done
note "column-stochastic + dpsgd: refused ($(grep -m1 'column-stochastic' "$T/push.out" | cut -c1-80)...); doubly stochastic directed + dpsgd: runs"
echo "ok: a peer that could not mix ends with the reason, and the status says which"
