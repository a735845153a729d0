# Settings every peer must share (docs/protocol.md 3.1, docs/node.md
# "Settings every peer must share"): two peers on real sockets that differ
# in one of them refuse each other at the HELLO, the reason naming the
# flag and both values, the same text in both peers' logs and end lines;
# both end `refused` (exit 3, bad_config counted by the side that
# refused), neither `done`. One case per kind of setting: the exchanges
# (--gossip-steps, its schedule, consensus control's bounds), the
# all-reduce's chunk, CHOCO's step and --compress itself, the codec (named
# by its spec, not its number), the model (named by its flag, not only a
# fingerprint), the round and the data (--local-steps, --partition,
# --seed, --different-init, --no-train), the outer optimizer and its
# schedule. Then the issue's cluster: 4 peers on complete-4, peer 3 at
# --gossip-steps 2: no peer ends done (before: all four ended done).
# And the settings that may differ do not refuse (--lr, --batch,
# --threads, --staleness, --round-timeout, --clip-pull).
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1
tiny_data "$T/data"
"$MURMUR" topo gen complete -n 2 > "$T/c2.topo" 2>/dev/null
"$MURMUR" topo gen complete -n 4 > "$T/c4.topo" 2>/dev/null
common="--plaintext --eval-every 0 --checkpoint-every 0 --log-every 0 --start-timeout 3000
        --peer-timeout 2000 --round-timeout 1000"
gossip="--no-train --vector-len 1000 --rounds 5"
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --rounds 3"
ar="$gossip --algo allreduce"
outer="$model --algo allreduce --outer nesterov --outer-lr 0.5 --outer-momentum 0.5
       --outer-momentum-warmup 0 --outer-momentum-decay none"
n=0
# pair NAME "FLAGS OF PEER 0" "FLAGS OF PEER 1" "REASON": both peers refused,
# exit 3, each naming REASON (a fixed string) in its log and its end line.
# run2 NAME "FLAGS OF PEER 0" "FLAGS OF PEER 1": the two peers of complete-2,
# run to their end; their exit statuses in st0, st1 (out: $T/NAME.K.out).
run2() {
    name=$1
    port=$(free_ports 2)
    for k in 0 1; do
        if [ $k = 0 ]; then f=$2; else f=$3; fi
        # shellcheck disable=SC2086
        timeout 60 "$MURMUR" node --id $k --topology "$T/c2.topo" --base-port "$port" $common $f \
            --run-dir "$T/$name" > "$T/$name.$k.out" 2>&1 &
        eval "pid$k=\$!"; E2E_PIDS="$E2E_PIDS $!"
    done
    st0=0; wait "$pid0" || st0=$?
    st1=0; wait "$pid1" || st1=$?
}
pair() {
    name=$1 want=$4
    run2 "$name" "$2" "$3"
    for k in 0 1; do
        eval "st=\$st$k"
        [ $st = 3 ] || { cat "$T/$name.$k.out" >&2; fail "$name: peer $k exited $st, not 3 (refused)"; }
        grep -qF "$want" "$T/$name.$k.out" ||
            { cat "$T/$name.$k.out" >&2; fail "$name: peer $k does not say: $want"; }
        grep -q "ERROR: refused: peer $((1 - k)): " "$T/$name.$k.out" ||
            { cat "$T/$name.$k.out" >&2; fail "$name: peer $k's end does not name peer $((1 - k))"; }
        end=$(grep '"ev":"end"' "$T/$name/node-$k/metrics.jsonl")
        case $end in *'"reason":"refused"'*) ;; *) fail "$name: peer $k's end line: $end" ;; esac
        case $end in *"$want"*) ;; *) fail "$name: peer $k's end line lacks the reason: $end" ;; esac
    done
    # counted as bad_config (bad_fingerprint for a model) where it was refused: peer 1, the acceptor
    c=$(jfield "$T/$name/node-1/metrics.jsonl" end bad_config)
    f=$(jfield "$T/$name/node-1/metrics.jsonl" end bad_fingerprint)
    [ "$((c + f))" -ge 1 ] || fail "$name: the refusing peer counted no bad_config"
    n=$((n + 1))
    note "$name: $want"
}
pair gossip-steps "$gossip" "$gossip --gossip-steps 2" \
    "setting differs: peer 0 runs --gossip-steps 1, peer 1 runs --gossip-steps 2"
pair schedule "$gossip --gossip-steps-schedule 0:2,3:1" "$gossip --gossip-steps-schedule 0:2" \
    "setting differs: peer 0 runs --gossip-steps-schedule 0:2,3:1, peer 1 runs --gossip-steps-schedule 0:2"
pair steps-or-schedule "$gossip" "$gossip --gossip-steps-schedule 0:2" \
    "settings differ: peer 0 runs --gossip-steps 1, peer 1 runs --gossip-steps-schedule 0:2"
pair target "$gossip --consensus-target 0.5" "$gossip --consensus-target 0.5 --max-gossip-steps 4" \
    "setting differs: peer 0 runs --max-gossip-steps 8, peer 1 runs --max-gossip-steps 4"
pair allreduce-chunk "$ar" "$ar --allreduce-chunk 100" \
    "setting differs: peer 0 runs --allreduce-chunk 65536, peer 1 runs --allreduce-chunk 100"
grep -q "all-reduce failed: peer 0 was refused: setting differs" "$T/allreduce-chunk.1.out" ||
    fail "allreduce-chunk: the all-reduce's failure does not name the refusal"
pair consensus-step "$gossip --compress int8" "$gossip --compress int8 --consensus-step 0.5" \
    "setting differs: peer 0 runs --consensus-step 1, peer 1 runs --consensus-step 0.5"
pair compress "$gossip" "$gossip --compress fp32" \
    "settings differ: peer 0 runs without --compress --consensus-step, peer 1 runs --compress fp32 --consensus-step 1"
pair codec "$gossip --compress int8" "$gossip --compress sign" \
    "codec differs: peer 0 runs --compress int8:256, peer 1 runs --compress sign:32"
pair model "$model" "$model --heads 4" \
    "model fingerprint differs: peer 0 runs --heads 2, peer 1 runs --heads 4 (fingerprints "
pair local-steps "$model" "$model --local-steps 2" \
    "setting differs: peer 0 runs --local-steps 1, peer 1 runs --local-steps 2"
pair partition "$model" "$model --partition genre" \
    "setting differs: peer 0 runs --partition iid, peer 1 runs --partition genre"
pair seed "$model" "$model --seed 2" \
    "setting differs: peer 0 runs --seed 1, peer 1 runs --seed 2"
pair init "$model" "$model --different-init" \
    "settings differ: peer 0 runs --seed 1, peer 1 runs --different-init"
pair no-train "$model" "$model --no-train" \
    "settings differ: peer 0 runs --local-steps 1 --partition iid --seed 1, peer 1 runs --no-train"
pair outer-lr "$outer" "$outer --outer-lr 0.3" \
    "setting differs: peer 0 runs --outer-lr 0.5, peer 1 runs --outer-lr 0.3"
pair outer-momentum "$outer" "$outer --outer-momentum 0.9" \
    "setting differs: peer 0 runs --outer-momentum 0.5, peer 1 runs --outer-momentum 0.9"
pair outer-warmup "$outer" "$outer --outer-momentum-warmup 10" \
    "setting differs: peer 0 runs --outer-momentum-warmup 0, peer 1 runs --outer-momentum-warmup 10"
pair outer-decay "$outer" "$outer --outer-momentum-decay cosine:0.5" \
    "settings differ: peer 0 runs --outer-momentum-decay none, peer 1 runs --outer-momentum-decay cosine:0.5 --rounds 3"
pair outer-overlap "$outer" "$outer --outer-overlap" \
    "setting differs: peer 0 runs without --outer-overlap, peer 1 runs --outer-overlap"
pair outer "$model --algo allreduce" "$outer" \
    "settings differ: peer 0 runs --outer none, peer 1 runs --outer nesterov --outer-lr 0.5 --outer-momentum 0.5"

# The issue's cluster: 4 peers on the complete graph, peer 3 at --gossip-steps 2.
port=$(free_ports 4)
for k in 0 1 2 3; do
    x=""; [ $k = 3 ] && x="--gossip-steps 2"
    # shellcheck disable=SC2086
    timeout 60 "$MURMUR" node --id $k --topology "$T/c4.topo" --base-port "$port" $common $gossip $x \
        --run-dir "$T/four" > "$T/four.$k.out" 2>&1 &
    eval "pid$k=\$!"; E2E_PIDS="$E2E_PIDS $!"
done
for k in 0 1 2 3; do
    st=0; eval "wait \$pid$k" || st=$?
    [ $st = 3 ] || { cat "$T/four.$k.out" >&2; fail "4 peers, peer 3 at --gossip-steps 2: peer $k exited $st, not 3"; }
done
grep -q "ERROR: refused: misconfigured: this peer could not mix with 3 of its 3 neighbours" "$T/four.3.out" ||
    fail "peer 3 does not say it was refused by all three"
note "4 peers, peer 3 at --gossip-steps 2: all four exit 3 (refused)"

# What may differ per peer does not refuse: both run to the end, mixing.
run2 may "$model" "$model --lr 1e-3 --batch 2 --threads 1 --round-timeout 2000 --clip-pull 100"
# (async waits for no one: slowed to ~40 ms a round so that the two meet)
slow="--rounds 30 --compute-jitter uniform:0.08"
run2 stale "$model --algo async --staleness 2 $slow" "$model --algo async --staleness 5 $slow"
for name in may stale; do
    for k in 0 1; do
        eval "st=\$st$k"
        [ $st = 0 ] || { cat "$T/$name.$k.out" >&2; fail "$name: peers differing in what may differ: peer $k exited $st"; }
        grep -q '"ev":"end".*"reason":"done"' "$T/$name/node-$k/metrics.jsonl" ||
            fail "$name: peer $k did not end done"
        [ "$(jfield "$T/$name/node-$k/metrics.jsonl" end refused)" = 0 ] || fail "$name: peer $k refused"
    done
    # they met and mixed: peer 0 had peer 1 among a round's neighbours
    grep -q '"ev":"round".*"nbrs":\[1\]' "$T/$name/node-0/metrics.jsonl" || fail "$name: peer 0 never mixed peer 1"
done
note "--lr, --batch, --threads, --round-timeout, --clip-pull, --staleness may differ: done, exit 0"
echo "ok: $n settings that must agree are refused at the HELLO, naming the flag and both values"
