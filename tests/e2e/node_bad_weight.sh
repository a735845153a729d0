# A neighbour that sends a push-sum weight outside the rules (docs/protocol.md
# 3.2: exactly 1 for dpsgd and async; in [2^-30, n] for pushsum) is refused
# and counted, and cannot steer honest peers: for each algorithm and each of
# a negative, zero, tiny (1e-300), huge (1e300) and subnormal (4e-320)
# weight, the honest peers run to the end and their final snapshots equal,
# bit for bit, those of a run in which the attacker never started.
#
# Real `murmur node` processes, plaintext. The attacker is peer 1, a real
# node that sends its true vector with a false weight (--test-poison
# weight=X). dpsgd and pushsum: pure gossip on 1000 floats on a triangle,
# so the two honest peers also average with each other (every round,
# checked). async never waits, so pure gossip would finish before the
# attacker connects: there the peers train a tiny model for 1500 rounds on
# a chain 0-1-2 with the attacker in the middle, the honest peers' only
# neighbour (async mixing between honest peers depends on timing, so only
# this form is reproducible bit for bit).
#
# --round-timeout 8000 is longer than the transport's connect timeout (5 s):
# an attacker refused before an honest peer's first round is waited for as
# "connecting" until the transport reports it down (at most 5 s), and the
# other honest peer must not give up on that one meanwhile, or the pair
# would miss a round that the reference run has.
. "$(dirname "$0")/lib.sh"
WEIGHTS="-2 0 1e-300 1e300 4e-320"
"$MURMUR" topo gen complete -n 3 > "$T/tri.topo" 2>/dev/null
"$MURMUR" topo gen chain -n 3 > "$T/chain.topo" 2>/dev/null
tiny_data "$T/data"

# start NAME ALGO TOPO PORT PEERS [node flags]: starts PEERS in the background
start() {
    name=$1; algo=$2; topo=$3; port=$4; peers=$5; shift 5
    for k in $peers; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$topo" --base-port "$port" \
            --plaintext --seed 7 --algo "$algo" --rounds $R $WHAT \
            --snapshot-every $R --eval-every 0 --checkpoint-every 0 --log-every 0 \
            --round-timeout $RT --peer-timeout 3000 --start-timeout 1500 \
            --run-dir "$T/$name" "$@" > "$T/$name.$k.out" 2>&1 &
        echo "$!" >> "$T/$name.pids"; E2E_PIDS="$E2E_PIDS $!"
    done
}
problems=0
problem() { echo "  FAIL: $*" >&2; problems=$((problems + 1)); }
snap() { printf '%s/%s/node-%s/snap/r%08d.bin' "$T" "$1" "$2" $R; }

for algo in dpsgd pushsum async; do
    topo=$T/tri.topo R=8 WHAT="--no-train --vector-len 1000" RT=8000
    # async: the honest peers' only neighbour is the attacker, so they mix
    # with no one all run; a run longer than the isolation limit (max of
    # start, peer + round timeout: docs/node.md) would rightly end them
    # `isolated`. Async never waits a round, so a long round timeout only
    # keeps that limit beyond the run, however slow the machine.
    [ $algo = async ] && topo=$T/chain.topo R=1500 RT=600000 \
        WHAT="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4"
    : > "$T/ref-$algo.pids"
    start ref-$algo $algo "$topo" "$(free_ports 3)" "0 2"
    i=0
    for w in $WEIGHTS; do
        i=$((i + 1))
        port=$(free_ports 3)
        start att-$algo-$i $algo "$topo" $port "0 2"
        start att-$algo-$i $algo "$topo" $port "1" --test-poison weight=$w
    done
    # the honest peers must all exit 0; the attackers may exit as they like
    wait_all $(cat "$T/ref-$algo.pids") || fail "$algo: reference run failed"
    i=0
    for w in $WEIGHTS; do
        i=$((i + 1))
        name=att-$algo-$i
        set -- $(cat "$T/$name.pids")
        st0=0; st2=0
        wait "$1" || st0=$?
        wait "$2" || st2=$?
        wait "$3" || true
        before=$problems
        refused=0
        for k in 0 2; do
            mf=$T/$name/node-$k/metrics.jsonl
            [ $k = 0 ] && st=$st0 || st=$st2
            [ "$st" = 0 ] || problem "$algo, weight $w: peer $k exited $st ($(grep -o '"reason":"[a-z]*"' "$mf"))"
            [ "$(jfield "$mf" end round)" = $R ] || problem "$algo, weight $w: peer $k stopped at round $(jfield "$mf" end round)"
            ! grep '"ev":"round"' "$mf" | grep -q '"nbrs":\[[0-9,]*1[],]' ||
                problem "$algo, weight $w: peer $k mixed the attacker's vector"
            if [ $algo != async ]; then # the honest pair averaged every round
                other=$((2 - k))
                got=$(grep '"ev":"round"' "$mf" | grep -c "\"nbrs\":\[$other\]" || true)
                [ "$got" = $R ] || problem "$algo, weight $w: peer $k averaged with peer $other in $got of $R rounds"
            fi
            b=$(jfield "$mf" end bad_weight); refused=$((refused + ${b:-0}))
            cmp -s "$(snap $name $k)" "$(snap ref-$algo $k)" ||
                problem "$algo, weight $w: peer $k's final state differs from the run without the attacker"
        done
        [ "$refused" -ge 1 ] || problem "$algo, weight $w: no vector counted as bad_weight"
        grep -qh 'refused.*weight' "$T/$name.0.out" "$T/$name.2.out" ||
            problem "$algo, weight $w: no log line names the weight"
        [ $problems != $before ] || note "$algo, weight $w: $refused vectors refused (bad_weight), honest state bit-exact"
    done
done
[ $problems = 0 ] || fail "$problems problems"
note "$(grep -h 'refused.*weight' "$T"/att-dpsgd-1.0.out | head -1 | cut -c1-200)"
echo "ok: a neighbour's bad push-sum weight is refused for every algorithm"
