# Fewer bytes per outer step (docs/outer.md, issue 37) on 4 real peers:
#  1. identities, bit for bit: the outer optimizer over CHOCO's copies with
#     fp32 (--compress fp32) is the plain outer gossip; --compress fp32 over
#     the all-reduce is plain DiLoCo; NoLoCo with alpha 0 and beta = gamma
#     = 1 is the outer step with lr 1, momentum 0; --outer-fragments 1 is
#     no fragments;
#  2. the all-gather of compressed pseudo-gradients (topk, int8, sign): every
#     peer holds the same floats; a round sends 3 payloads; with topk:1 (every
#     coordinate, exact) the error feedback stays 0;
#  3. fragments: DiLoCo with F = 2 sends half the bytes of a round and keeps
#     the outer parameters equal on every peer; gossip with F = 3 a third;
#  4. a peer SIGKILLed and resumed starts from its checkpoint's error
#     feedback (the start line's digest is the checkpoint block's), and the
#     cluster goes on to the end.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
topo=$T/ring.topo

. "$ROOT/tests/e2e/lib/four.sh" # start4, run4, snap, same_floats, same_snaps
start_key() { grep '"ev":"start"' "$T/$1/node-$2/metrics.jsonl" | tail -1 | sed -n "s/.*\"$3\":\"*\([^\",}]*\).*/\1/p"; }
round_bytes() { # round_bytes RUN PEER ROUND: the bytes it had sent by that round line
    grep '"ev":"round"' "$T/$1/node-$2/metrics.jsonl" | sed -n "s/.*\"round\":$3,.*\"bytes_sent\":\([0-9]*\),.*/\1/p"
}
# the error-feedback block of a checkpoint: its last 4P + 32 bytes less the digest
ef_block_sha() {
    size=$(wc -c < "$1")
    tail -c $((4 * $2 + 32)) "$1" | head -c $((4 * $2)) | sha256sum | cut -d' ' -f1
}

# 1. identities
run4 og 6 --outer nesterov --local-steps 2
run4 og-fp32 6 --outer nesterov --local-steps 2 --compress fp32
same_snaps og og-fp32 6
note "outer gossip over CHOCO's copies, fp32: the snapshots of round 6 equal plain outer gossip's"
run4 dl 6 --algo allreduce --outer nesterov --local-steps 2
run4 dl-fp32 6 --algo allreduce --outer nesterov --local-steps 2 --compress fp32
same_snaps dl dl-fp32 6
note "--compress fp32 over the all-reduce: plain DiLoCo's snapshots"
run4 dl-f1 6 --algo allreduce --outer nesterov --local-steps 2 --outer-fragments 1
same_snaps dl dl-f1 6
run4 nest1 6 --outer nesterov --outer-lr 1 --outer-momentum 0 --local-steps 2
run4 nl1 6 --outer noloco --outer-lr 1 --outer-momentum 0 --local-steps 2
same_snaps nest1 nl1 6
run4 nl 6 --outer noloco --outer-momentum 0.5 --noloco-gamma 0.35 --local-steps 2
cmp -s "$(snap nl 0 6)" "$(snap nest1 0 6)" && fail "NoLoCo with alpha 0.5, gamma 0.35 equals plain averaging"
[ "$(start_key nl 0 outer)" = noloco ] || fail "no outer noloco in the start line"
echo "ok: the new paths at their identity settings give today's runs bit for bit"

# 2. the all-gather
P=$(start_key dl 0 params)
for codec in topk:0.05 int8 sign; do
    name=ag-$(echo "$codec" | tr -d ':.')
    run4 "$name" 4 --algo allreduce --outer nesterov --local-steps 2 --compress "$codec"
    for k in 1 2 3; do
        same_floats "$(snap "$name" 0 4)" "$(snap "$name" $k 4)" ||
            fail "$codec: peer $k's parameters differ from peer 0's after round 4"
    done
    grep -q "all-gather of compressed pseudo-gradients, $codec" "$T/$name.0.out" ||
        fail "$codec: the start does not name the all-gather"
    b1=$(round_bytes "$name" 0 2); b0=$(round_bytes "$name" 0 1)
    note "$codec: identical on the 4 peers; $((b1 - b0)) bytes sent a round (the ring sends $((2 * 3 * P)) of fp32)"
    [ $((b1 - b0)) -lt $((2 * 3 * P)) ] || fail "$codec: the all-gather sent no fewer bytes than the ring"
done
run4 ag-exact 4 --algo allreduce --outer nesterov --local-steps 2 --compress topk:1 --checkpoint-every 4
zero=$(head -c $((4 * P)) /dev/zero | sha256sum | cut -d' ' -f1)
[ "$(ef_block_sha "$T/ag-exact/node-2/checkpoint.bin" "$P")" = "$zero" ] ||
    fail "topk:1 (every coordinate, exact) left a nonzero error feedback"
ver=$(od -An -tu4 -j8 -N4 "$T/ag-exact/node-2/checkpoint.bin" | tr -d ' ')
[ "$ver" = 3 ] || fail "a compressed outer run's checkpoint is format version $ver, not 3"
echo "ok: the all-gather keeps every peer on the same floats, for fewer bytes; exact top-k leaves no error feedback"

# 3. fragments
run4 fr2 4 --algo allreduce --outer nesterov --local-steps 2 --outer-fragments 2 --checkpoint-every 4
full=$(( $(round_bytes dl 0 2) - $(round_bytes dl 0 1) )); half=$(( $(round_bytes fr2 0 2) - $(round_bytes fr2 0 1) ))
[ $((2 * half)) -le $((full + full / 50)) ] || fail "F = 2 sent $half bytes a round, the whole vector $full"
# the outer parameters (the checkpoint's outer block) agree on every peer
ob() { size=$(wc -c < "$1"); tail -c +$((size - 32 - 8 * P + 1)) "$1" | head -c $((8 * P)) | sha256sum; }
for k in 1 2 3; do
    [ "$(ob "$T/fr2/node-0/checkpoint.bin")" = "$(ob "$T/fr2/node-$k/checkpoint.bin")" ] ||
        fail "fragments: peer $k's outer parameters differ from peer 0's"
done
grep '"ev":"round"' "$T/fr2/node-0/metrics.jsonl" | grep -o '"outer_fragment":[0-9]' | tr '\n' ' ' |
    grep -q '"outer_fragment":0 "outer_fragment":1 "outer_fragment":0 "outer_fragment":1' ||
    fail "fragments: rounds do not alternate fragments 0 and 1"
run4 fr3 6 --outer nesterov --local-steps 2 --outer-fragments 3
# (all 6 rounds' sends, as the last round line counts them: a middle round
# line may already count the next round's send on a loaded machine)
third=$(( $(round_bytes fr3 0 5) / 6 )); whole=$(( $(round_bytes og 0 5) / 6 ))
[ $((3 * third)) -le $((whole + whole / 50)) ] || fail "gossip F = 3 sent $third bytes a round, the whole vector $whole"
note "DiLoCo F = 2: $half bytes a round against $full; gossip F = 3: $third against $whole"
echo "ok: fragments halve (F = 2) the bytes of a round; the outer parameters stay equal"

# 4. SIGKILL and resume: the error feedback comes back from the checkpoint
# (each local step sleeps 0.1 s, so a round is almost all compute: a kill
# then falls between two all-gathers, with every peer's checkpoint of the
# same round, almost always)
slow="--compute-jitter longtail:1:0.1"
start4 kill 40 --algo allreduce --outer nesterov --local-steps 2 --compress int8 --checkpoint-every 1 \
    --snapshot-every 0 $slow
victim=$(echo $pids | cut -d' ' -f4)
ck_round() { od -An -td8 -j80 -N8 "$1" 2>/dev/null | tr -d ' '; } # the checkpoint's round
i=0
while [ $i -lt 600 ]; do # until every peer has checkpointed round 4 (bounded: 60 s)
    low=99
    for k in 0 1 2 3; do
        r=$(ck_round "$T/kill/node-$k/checkpoint.bin"); r=${r:-0}
        [ "$r" -lt "$low" ] && low=$r
    done
    [ "$low" -ge 4 ] && break
    sleep 0.05; i=$((i + 1))
done
[ $i -lt 600 ] || fail "the peers did not checkpoint round 4 in 60 s"
kill -9 "$victim"
sleep 0.2
cp "$T/kill/node-3/checkpoint.bin" "$T/kill3.ckpt"
want=$(ef_block_sha "$T/kill3.ckpt" "$P")
[ "$want" != "$zero" ] || fail "the killed peer's checkpoint holds no error feedback"
for p in $pids; do wait "$p" 2>/dev/null || true; done # the others fail their all-gather
ck_rounds=$(for k in 0 1 2 3; do ck_round "$T/kill/node-$k/checkpoint.bin"; done | sort -u | wc -l)
start4 kill 12 --algo allreduce --outer nesterov --local-steps 2 --compress int8 --checkpoint-every 1 \
    --snapshot-every 0 --resume
ok=1; for p in $pids; do wait "$p" || ok=0; done
[ "$(start_key kill 3 outer_ef_sha256)" = "$want" ] ||
    fail "peer 3 resumed with error feedback $(start_key kill 3 outer_ef_sha256), its checkpoint holds $want"
if [ "$ck_rounds" = 1 ]; then
    [ $ok = 1 ] || { tail -5 "$T/kill.3.out" >&2; fail "the resumed cluster did not finish"; }
    for k in 0 1 2 3; do
        grep '"ev":"end"' "$T/kill/node-$k/metrics.jsonl" | tail -1 | grep -q '"reason":"done"' ||
            fail "peer $k did not end done after the resume"
    done
    note "the 4 peers resumed from checkpoints of one round and went on to the end"
else # (killed between the others' checkpoint of a round and its own: an all-reduce cannot mix rounds)
    note "the peers' checkpoints were of different rounds: the resumed all-gather refuses to mix them"
fi
echo "ok: a peer SIGKILLed at round $(start_key kill 3 resumed_round) resumed with its checkpoint's error feedback ($want)"

# 5. an outer run says so (issue 34 item 2.4): the report's header, its
# plots' titles, and murmur_peer_info on the Prometheus endpoint
"$MURMUR" report "$T/ag-int8" --plots "$T/plots" > "$T/report.txt" 2>&1 || { cat "$T/report.txt" >&2; fail "murmur report failed"; }
grep -q '^run .*algo allreduce, outer nesterov (lr 0.7, momentum 0.5, H 2)' "$T/report.txt" ||
    fail "the report's header does not name the outer optimizer: $(grep '^run' "$T/report.txt")"
"$MURMUR" report "$T/og" --plots "$T/plots" > "$T/report-og.txt" 2>&1 || fail "murmur report of og failed"
grep -q '^run .*algo dpsgd, outer nesterov' "$T/report-og.txt" || fail "gossip: no outer in the header"
grep -l 'dpsgd + outer nesterov (lr 0.7, momentum 0.5, H 2)' "$T"/plots/*.gp > /dev/null ||
    fail "no plot title names the outer optimizer"
"$MURMUR" report "$T/nl" --no-plots 2>&1 | grep -q '^run .*outer noloco (lr 0.7, momentum 0.5, gamma 0.35' ||
    fail "NoLoCo: the header does not say so"
mport=$(free_ports 1)
start4 prom 30 --outer nesterov --local-steps 2 --outer-momentum-warmup 5 --compute-jitter longtail:1:0.05 \
    --metrics-addr "127.0.0.1:$mport+"
info=""; i=0
while [ $i -lt 300 ] && [ -z "$info" ]; do # (bounded: 30 s)
    info=$(curl -sf "http://127.0.0.1:$((mport + 1))/metrics" 2>/dev/null | grep '^murmur_peer_info' || true)
    sleep 0.1; i=$((i + 1))
done
wait_all $pids || fail "prom: a peer failed"
echo "$info" | grep -q 'outer="nesterov (lr 0.7, momentum 0.5, warm-up 5, H 2)"' ||
    fail "murmur_peer_info does not name the outer optimizer: $info"
echo "ok: outer runs name their optimizer in the report's header, the plots and murmur_peer_info"
