# --algo async: a peer far ahead of its neighbours still mixes them (issue
# 34), and a neighbour far behind is a straggler, not an attacker (issue 27,
# fault 5). Pure gossip (--no-train) on a chain 0-1-2, so rounds are fast
# (tens of thousands a second) even on a loaded machine. Two runs:
#   A. peer 1 starts a second before its two neighbours, which are also
#      slower (--compute-jitter: about a millisecond a round, against tens
#      of microseconds for peer 1), so it is thousands of rounds ahead when
#      they come up and stays ahead; it must mix each of them (a copy is
#      judged by its arrival, not by its sender's round: judged by round
#      numbers, peer 1 never mixed anyone, issue 34);
#   B. all three at full speed; peer 1 is SIGSTOPped until peers 0 and 2
#      are more than 1500 rounds ahead of it (beyond the round window of
#      1000 that dpsgd and pushsum keep, docs/protocol.md "Rounds"), then
#      continued: its neighbours must not refuse its vectors nor it theirs
#      (bad_round 0 on every peer), nobody may see an id clash, peer 1 must
#      mix both neighbours again.
# Everyone stops cleanly on SIGTERM, and no metrics file outgrows the bound
# that the round-line budget and the evaluations' thinning give it
# (docs/metrics.md): the first version of this test let them reach 2.6 GB
# in 7 minutes. Every wait is bounded and fails naming what it waited for.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 3 > "$T/chain.topo" 2>/dev/null
flags="--topology $T/chain.topo --plaintext --no-train --vector-len 1000 --algo async
       --rounds 100000000 --peer-timeout 3000 --start-timeout 10000 --log-every 0"
run=""
mf() { echo "$run/node-$1/metrics.jsonl"; }
# the round of a peer's last round line (the file's end only: it grows)
round_of() {
    tail -c 65536 "$(mf "$1")" 2>/dev/null | grep '"ev":"round"' | tail -1 |
        sed -n 's/.*"round":\([0-9]*\),.*/\1/p' | grep . || echo 0
}
size_of() { wc -c < "$(mf "$1")" 2>/dev/null || echo 0; }
# Waits are bounded in seconds, whatever the files' size: a deadline, and
# reads of a file's last 4 MB at most (an older build wrote gigabytes).
deadline() { echo $(( $(date +%s) + $1 )); }
past() { [ "$(date +%s)" -ge "$1" ]; }
# until_round K N: until peer K's round lines reach round N (at most 30 s)
until_round() {
    d=$(deadline 30)
    while [ "$(round_of "$1")" -lt "$2" ]; do
        sleep 0.1; ! past "$d" || fail "peer $1 did not reach round $2 in 30 s (at $(round_of "$1"))"
    done
}
# mixed_since OFFSET J: peer 1's round lines after byte OFFSET (of the last
# 4 MB) that mixed neighbour J
mixed_since() {
    from=$(( $(size_of 1) - 4000000 )); [ "$from" -gt "$1" ] || from=$1
    tail -c +"$(( from + 1 ))" "$(mf 1)" | grep '"ev":"round"' |
        grep -c "\"nbrs\":\[\([0-9]*,\)*$2[],]"
}
# until_mixed OFFSET WHAT: until 5 round lines of peer 1 after OFFSET mixed
# neighbour 0 and 5 mixed neighbour 2 (at most 30 s)
until_mixed() {
    d=$(deadline 30)
    until [ "$(mixed_since "$1" 0)" -ge 5 ] && [ "$(mixed_since "$1" 2)" -ge 5 ]; do
        sleep 0.2
        ! past "$d" || fail "peer 1 did not mix each neighbour $2 (30 s; its last round $(round_of 1), its neighbours' $(round_of 0) and $(round_of 2); its lines since that mixed peer 0: $(mixed_since "$1" 0), peer 2: $(mixed_since "$1" 2))"
    done
}
# start K [FLAGS...]: peer K of the current run
start() {
    k=$1; shift
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$k" $flags --base-port "$port" --run-dir "$run" "$@" \
        > "$run.peer$k.out" 2>&1 &
    E2E_PIDS="$E2E_PIDS $!"; pids="$pids $!"
    [ "$k" -ne 1 ] || p1=$!
}
# stop_run: SIGTERM, a clean end everywhere, nothing refused, bounded files
stop_run() {
    kill -TERM $pids
    wait_all $pids || fail "peers did not stop cleanly (exit status above)"
    for k in 0 1 2; do
        m=$(mf $k)
        b=$(jfield "$m" end bad_round); c=$(jfield "$m" end id_clash)
        [ "${b:-0}" = 0 ] || fail "peer $k refused $b vectors for their round ($(grep -m1 'outside the window' "$run.peer$k.out"))"
        [ "${c:-0}" = 0 ] || fail "peer $k saw $c id clashes"
        sz=$(size_of $k)
        [ "$sz" -lt 100000000 ] || fail "peer $k's metrics reached $sz bytes (round lines unbounded?)"
    done
}

# A: peer 1 far ahead
run="$T/a"; port=$(free_ports 3); pids=""
start 1
until_round 1 1000
sleep 1
start 0 --compute-jitter uniform:0.002
start 2 --compute-jitter uniform:0.002
until_round 0 100
ahead=$(( $(round_of 1) - $(round_of 0) ))
until_mixed 0 "while it ran ahead of its slower neighbours"
ahead2=$(( $(round_of 1) - $(round_of 0) ))
stop_run
note "A: peer 1 ran $ahead, then $ahead2 rounds ahead of its slower neighbours and mixed each of them"

# B: peer 1 far behind
run="$T/b"; port=$(free_ports 3); pids=""
for k in 0 1 2; do start $k; done
until_round 1 50
kill -STOP "$p1"
s1=$(round_of 1)
d=$(deadline 30)
while [ $(( $(round_of 0) - s1 )) -lt 1500 ] || [ $(( $(round_of 2) - s1 )) -lt 1500 ]; do
    sleep 0.2; ! past "$d" || { kill -CONT "$p1"; fail "peers 0 and 2 did not get 1500 rounds ahead of stopped peer 1 in 30 s (at $(round_of 0) and $(round_of 2), peer 1 at $s1)"; }
done
gap=$(( $(round_of 0) - s1 ))
off=$(size_of 1)
kill -CONT "$p1"
until_mixed "$off" "again after SIGCONT"
stop_run
note "B: peer 1 stopped $gap rounds behind peer 0; after SIGCONT it mixed both neighbours again, bad_round 0, id_clash 0; metrics $(size_of 0) $(size_of 1) $(size_of 2) bytes"
echo "ok: an async peer far ahead mixes, and a straggler far behind is not refused"
