# A compressed-gossip neighbour whose RESETs break the rules (docs/protocol.md
# 3.2 and 6.10: a RESET body is the whole public copy in fp32, exactly 4 n
# bytes, every value finite) is refused and counted, and cannot steer honest
# peers: for every codec and each of a RESET in the agreed codec (a valid
# body of that codec flagged RESET: its receiver used to take 4 n bytes of
# its receive buffer as the copy, stale bytes of earlier frames included),
# one float short, one float long, with a NaN and with an infinity, the
# honest peers run to the end and their final snapshots equal, bit for bit,
# those of a run in which the attacker never started.
#
# Real `murmur node` processes, plaintext, pure gossip on 1000 floats on a
# triangle, so the two honest peers also average with each other (every
# round, checked). The attacker is peer 1, a real node that sends its true
# frames made wrong (--test-poison reset-codec | reset-short | reset-long |
# nan | inf: under --compress the fp32 frames nan and inf poison are its
# RESETs; with fp32 its q's too). Every connection's first frame is a RESET,
# and a refusal closes the connection, so nothing it sends is ever mixed.
# --round-timeout as in node_bad_weight.sh (longer than the connect timeout).
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen complete -n 3 > "$T/tri.topo" 2>/dev/null
R=8
# start NAME CODEC PORT PEERS [node flags]: starts PEERS in the background
start() {
    name=$1; codec=$2; port=$3; peers=$4; shift 4
    for k in $peers; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/tri.topo" --base-port "$port" \
            --plaintext --seed 7 --compress "$codec" --rounds $R --no-train --vector-len 1000 \
            --snapshot-every $R --eval-every 0 --checkpoint-every 0 --log-every 0 \
            --round-timeout 8000 --peer-timeout 3000 --start-timeout 1500 \
            --run-dir "$T/$name" "$@" > "$T/$name.$k.out" 2>&1 &
        echo "$!" >> "$T/$name.pids"; E2E_PIDS="$E2E_PIDS $!"
    done
}
problems=0
problem() { echo "  FAIL: $*" >&2; problems=$((problems + 1)); }
snap() { printf '%s/%s/node-%s/snap/r%08d.bin' "$T" "$1" "$2" $R; }
# the counter each attack must show up in
counter_of() { case $1 in reset-codec) echo bad_codec ;; reset-*) echo bad_length ;; *) echo bad_values ;; esac; }

c=0
for codec in fp32 bf16 int8 sign topk:0.1 randk:0.1; do
    c=$((c + 1))
    attacks="reset-short reset-long nan inf"
    [ $codec = fp32 ] || attacks="reset-codec $attacks"
    : > "$T/ref-$c.pids"
    start ref-$c "$codec" "$(free_ports 3)" "0 2"
    for a in $attacks; do
        port=$(free_ports 3)
        start att-$c-$a "$codec" $port "0 2"
        start att-$c-$a "$codec" $port "1" --test-poison $a
    done
    wait_all $(cat "$T/ref-$c.pids") || fail "$codec: reference run failed"
    for a in $attacks; do
        name=att-$c-$a
        set -- $(cat "$T/$name.pids")
        st0=0; st2=0
        wait "$1" || st0=$?
        wait "$2" || st2=$?
        wait "$3" || true
        before=$problems
        refused=0
        what=$(counter_of $a)
        for k in 0 2; do
            mf=$T/$name/node-$k/metrics.jsonl
            [ $k = 0 ] && st=$st0 || st=$st2
            [ "$st" = 0 ] || problem "$codec, $a: peer $k exited $st ($(grep -o '"reason":"[a-z]*"' "$mf"))"
            [ "$(jfield "$mf" end round)" = $R ] || problem "$codec, $a: peer $k stopped at round $(jfield "$mf" end round)"
            ! grep '"ev":"round"' "$mf" | grep -q '"nbrs":\[[0-9,]*1[],]' ||
                problem "$codec, $a: peer $k mixed the attacker's copy"
            other=$((2 - k))
            got=$(grep '"ev":"round"' "$mf" | grep -c "\"nbrs\":\[$other\]" || true)
            [ "$got" = $R ] || problem "$codec, $a: peer $k averaged with peer $other in $got of $R rounds"
            b=$(jfield "$mf" end "$what"); refused=$((refused + ${b:-0}))
            cmp -s "$(snap $name $k)" "$(snap ref-$c $k)" ||
                problem "$codec, $a: peer $k's final state differs from the run without the attacker"
        done
        [ "$refused" -ge 1 ] || problem "$codec, $a: no frame counted as $what"
        [ $problems != $before ] || note "$codec, $a: $refused frames refused ($what), honest state bit-exact"
    done
done
[ $problems = 0 ] || fail "$problems problems"
note "$(grep -h 'refused.*RESET' "$T"/att-3-reset-codec.0.out | head -1 | cut -c1-200)"

# A streamed q refused at its end (docs/protocol.md 6.10): 300000 floats
# go in 3 chunks, and the attacker's last chunk of every q is a byte short
# (--test-poison q-cut), so its receivers have applied the first two when
# the third is refused and the connection closes. The half-applied copy
# must never be mixed: each new connection starts with a valid RESET,
# mixed in its exchange, and then the attacker's next q is cut again. So an
# honest peer mixes the attacker in at most as many rounds as it took
# RESETs from it (its RESETs received, less the one from the other honest
# peer), however many streams were cut (refused as bad_codec), and no copy
# ever diverges.
# (--compute-jitter: rounds of about 0.1 s, so that the attacker, redialled
# 0.2 s after each refusal, is cut several times in the run)
R=20
for codec in int8 sign bf16; do
    name=cut-$codec
    port=$(free_ports 3)
    : > "$T/$name.pids"
    start $name "$codec" $port "0 2" --vector-len 300000 --compute-jitter uniform:0.2
    start $name "$codec" $port "1" --vector-len 300000 --compute-jitter uniform:0.2 \
        --test-poison q-cut
    set -- $(cat "$T/$name.pids")
    st0=0; st2=0
    wait "$1" || st0=$?
    wait "$2" || st2=$?
    wait "$3" || true
    cut=0 took=""
    for k in 0 2; do
        mf=$T/$name/node-$k/metrics.jsonl
        [ $k = 0 ] && st=$st0 || st=$st2
        [ "$st" = 0 ] || problem "$codec, q-cut: peer $k exited $st"
        [ "$(jfield "$mf" end round)" = $R ] || problem "$codec, q-cut: peer $k stopped at round $(jfield "$mf" end round)"
        mixed=$(grep '"ev":"round"' "$mf" | grep -c '"nbrs":\[[0-9,]*1[],]' || true)
        resets=$(( $(jfield "$mf" end resets_recv) - 1 ))
        [ "$mixed" -le "$resets" ] ||
            problem "$codec, q-cut: peer $k mixed the attacker in $mixed rounds, with $resets RESETs from it"
        [ "$(jfield "$mf" end copies_diverged)" = 0 ] || problem "$codec, q-cut: peer $k has a diverged copy"
        cut=$((cut + $(jfield "$mf" end bad_codec)))
        took="$took peer $k $mixed/$resets;"
    done
    [ "$cut" -ge 2 ] || problem "$codec, q-cut: $cut streams refused at their last chunk, expected several"
    note "$codec, q-cut: $cut streams cut at their last chunk; rounds mixing the attacker/its RESETs:$took"
done
[ $problems = 0 ] || fail "$problems problems"
echo "ok: a neighbour's bad RESETs are refused under every codec, and a cut stream is never mixed"
