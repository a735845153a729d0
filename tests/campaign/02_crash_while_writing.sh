#!/bin/sh
# Campaign 2, crash while writing: a peer that checkpoints every round (a
# model big enough that a write takes tens of ms) is SIGKILLed many times,
# each time a random few ms after a checkpoint write has begun (its
# checkpoint.bin.tmp.PID appears). After every kill: checkpoint.bin loads
# and verifies; the restart resumes from the newest complete checkpoint
# (the round it logged last, or the one before when the kill cut the write),
# never from a half-written temp file; stale temp files do not pile up.
# Recovery = restart to first logged round of the new life.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib/faults.sh"
kills=$(pick 8 40)
tiny_data "$T/data"
"$MURMUR" topo gen complete -n 2 > "$T/pair.topo" 2>/dev/null
port=$(free_ports 2)
run="$T/run"
# async: the surviving peer 0 never waits for the victim.
flags="--topology $T/pair.topo --base-port $port --plaintext --data $T/data --run-dir $run
       --algo async --layers 2 --width 192 --heads 4 --ctx 32 --batch 1 --rounds 100000
       --eval-every 0 --checkpoint-every 1 --peer-timeout 2000 --start-timeout 20000 --log-every 1000"
peer() { k=$1; shift; MURMUR_NO_BLAS_FIX=1 exec "$MURMUR" node --id "$k" $flags "$@" >> "$T/peer$k.out" 2>&1; }
d="$run/node-1"; f="$d/metrics.jsonl"
peer 0 & p0=$!; E2E_PIDS="$E2E_PIDS $p0"
peer 1 & p1=$!; E2E_PIDS="$E2E_PIDS $p1"

injected=0; survived=0; midwrite=0; rec_sum=0; lost=0; piled=0
# At least $kills kills; if none of them has cut a write yet (a fast disk
# makes the window small), up to 4x as many, so the scenario is never
# vacuous and still ends by itself.
while [ $injected -lt "$kills" ] || { [ $midwrite -eq 0 ] && [ $injected -lt $((4 * kills)) ]; }; do
    # Wait for the victim to be well into its life, then for a write to begin.
    j=0
    until [ "$(life_rounds "$f")" -ge 3 ]; do
        sleep 0.05; j=$((j + 1)); [ $j -lt 1200 ] || fail "victim made no progress"
    done
    j=0
    until ls "$d"/checkpoint.bin.tmp.$p1 >/dev/null 2>&1; do
        j=$((j + 1)); [ $j -lt 3000 ] || fail "no checkpoint write seen"
    done
    # every other kill at once (most likely mid-write), the rest 0-9 ms later
    [ $((injected % 2)) -eq 0 ] || sleep "0.00$(rand 10)"
    kill -9 "$p1"; wait "$p1" 2>/dev/null || true
    injected=$((injected + 1))
    [ -e "$d/checkpoint.bin.tmp.$p1" ] && { midwrite=$((midwrite + 1)); cut=1; } || cut=0
    r=$(last_round "$f")
    ckpt_ok "$d/checkpoint.bin" || { note "kill $injected: checkpoint.bin does not load: $(ckpt_why)"; lost=$((lost + 1)); }
    t0=$(now)
    lives=$(count_ev "$f" start)
    peer 1 --resume & p1=$!; E2E_PIDS="$E2E_PIDS $p1"
    j=0
    until [ "$(count_ev "$f" start)" -gt "$lives" ] && [ "$(life_rounds "$f")" -ge 1 ]; do
        sleep 0.05; j=$((j + 1)); [ $j -lt 600 ] || fail "restarted peer logged no round in 30 s"
    done
    rec=$(elapsed "$t0"); rec_sum=$(awk -v a="$rec_sum" -v b="$rec" 'BEGIN { print a + b }')
    resumed=$(jfield "$f" start resumed_round | tail -1)
    # After logging round r the peer writes the checkpoint of round r + 1.
    if [ "$resumed" -ne $((r + 1)) ] && [ "$resumed" -ne "$r" ]; then
        note "kill $injected: last logged round $r, resumed at $resumed"; lost=$((lost + 1))
    elif [ $cut = 1 ] && [ "$resumed" -ne "$r" ]; then
        note "kill $injected cut the write of round $((r + 1)) but the peer resumed there"; lost=$((lost + 1))
    else
        survived=$((survived + 1))
    fi
    stale=$(ls "$d" | grep -c '\.tmp\.' || true)
    note "kill $injected: round $r, mid-write $cut, resumed at $resumed, back in ${rec}s, temp files now $stale"
    # A restart clears its predecessors' temp files (at most the live one's remains).
    [ "$stale" -le 1 ] || piled=$((piled + 1))
done
kill -TERM "$p0" "$p1"
wait_all "$p0" "$p1" || fail "a peer did not stop cleanly on SIGTERM"
ckpt_ok "$d/checkpoint.bin" || fail "final checkpoint does not load: $(ckpt_why)"
[ "$(bad_jsonl_lines "$f")" -eq 0 ] || fail "broken metrics lines"
mean=$(awk -v a="$rec_sum" -v n="$injected" 'BEGIN { printf "%.1f", a / n }')
note "$injected kills during checkpoint writes, $midwrite cut a write mid-way; mean restart-to-round ${mean}s"
[ $lost -eq 0 ] || fail "$lost kills lost data"
[ $piled -eq 0 ] || fail "stale checkpoint temp files piled up after $piled restarts: $(ls "$d" | grep '\.tmp\.' | tr '\n' ' ')"
[ $midwrite -ge 1 ] || fail "no kill landed inside a write: the scenario tested nothing"
campaign_line crash_while_writing $injected $survived $lost "${mean}s"
