# The outer optimizer (--outer nesterov, docs/outer.md) on 4 real peers:
#  1. identities: with --outer-lr 1 --outer-momentum 0 --outer-overlap the
#     parameters are bit for bit those of the plain algorithm, over
#     --algo allreduce and over dpsgd on a ring (H = 2: the local progress
#     d is carried through the outer step);
#  2. DiLoCo over all-reduce (steps first): every peer holds the same floats
#     after every round, and an outer lr/momentum of 0.7/0.9 changes them;
#  3. a stop and --resume at round 4 gives the same parameters at round 8 as
#     an uninterrupted run (the outer parameters, momentum and step are in
#     the checkpoint: resuming without them would differ);
#     and the same for --adam-accum stopped in the middle of an accumulation;
#  4. flags: clear refusals naming the flag, exit 2.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
topo=$T/ring.topo   # run4's topology

. "$ROOT/tests/e2e/lib/four.sh" # run4, snap, same_floats, same_snaps

# 1. identities
id="--outer nesterov --outer-lr 1 --outer-momentum 0 --outer-overlap"
run4 ar1 6 --algo allreduce
run4 ar1-outer 6 --algo allreduce $id
same_snaps ar1 ar1-outer 6
run4 ar 6 --algo allreduce --local-steps 2
run4 ar-outer 6 --algo allreduce --local-steps 2 $id
same_snaps ar ar-outer 6
grep -q '"outer":"nesterov"' "$T/ar-outer/node-0/metrics.jsonl" || fail "no outer in the start line"
note "allreduce, H = 1 and 2: lr 1, momentum 0, overlapped: the snapshots of round 6 equal the plain run's, bit for bit"
run4 dp 6 --local-steps 2
run4 dp-outer 6 --local-steps 2 $id
same_snaps dp dp-outer 6
note "dpsgd on a ring: the same, bit for bit"
echo "ok: the documented identities hold"

# A time-varying graph (epidemic learning: random partners every round)
# runs the gossip version to the end with finite parameters, with both of
# Pier's momentum schedules: every round's outer_mu is docs/outer.md's
# mu_k = mu * min(1, k/N) * f_k (warm-up N = 2, cosine decay from
# k0 = floor(0.5 * 6) = 3), computed here from the formula, not the code.
"$MURMUR" topo gen epidemic -n 4 > "$T/epi.topo" 2>/dev/null
topo=$T/epi.topo
run4 epi 6 --outer nesterov --outer-momentum 0.9 --local-steps 2 --outer-momentum-warmup 2 --outer-momentum-decay cosine:0.5
topo=$T/ring.topo
grep '"ev":"end"' "$T/epi/node-0/metrics.jsonl" | grep -q '"reason":"done"' || fail "epidemic: peer 0 did not end done"
mus=$(grep '"ev":"round"' "$T/epi/node-0/metrics.jsonl" | sed -n 's/.*"outer_mu":\([0-9.e-]*\).*/\1/p' | tr '\n' ' ')
echo "$mus" | awk '{
    if (NF != 6) { print "outer_mu in " NF " round lines, not 6"; exit 1 }
    for (k = 0; k < 6; k++) {
        w = k < 2 ? k / 2 : 1; f = 1
        if (k >= 3) f = (1 + cos(3.141592653589793 * (k - 3) / 3)) / 2
        want = 0.9 * w * f; got = $(k + 1)
        if (got - want > 1e-6 || want - got > 1e-6) { print "round " k ": outer_mu " got ", want " want; exit 1 } } }' ||
    fail "the momentum schedule (warm-up 2, cosine decay from 0.5) is not the documented one: $mus"
note "warm-up 2, cosine decay from round 3 of 6: outer_mu $mus"
echo "ok: the outer optimizer on an epidemic (time-varying) graph, with Pier's schedules"

# 2. DiLoCo: the steps, then the exact average and one outer step on every peer
run4 diloco 6 --algo allreduce --local-steps 2 --outer nesterov --outer-momentum 0.9
for r in 2 4 6; do
    for k in 1 2 3; do
        same_floats "$(snap diloco 0 $r)" "$(snap diloco $k $r)" || fail "DiLoCo: peer $k differs from peer 0 at round $r"
    done
done
cmp -s "$(snap diloco 0 6)" "$(snap ar 0 6)" && fail "DiLoCo with lr 0.7, momentum 0.9 equals plain averaging"
mu=$(grep '"ev":"round"' "$T/diloco/node-0/metrics.jsonl" | head -1 | sed -n 's/.*"outer_mu":\([0-9.e-]*\).*/\1/p')
[ -n "$mu" ] || fail "no outer_mu in the round lines"
echo "ok: DiLoCo keeps every peer on the same parameters (rounds 2, 4, 6), outer momentum $mu"

# 3. stop at round 4 and resume to 8 = 8 rounds at once. The learning
# rate's cosine spans --rounds, which the halves do not share, so the
# schedule is made flat (--lr = --min-lr, no warm-up): then only the state
# differs between the halves, and the outer momentum's warm-up (by outer
# step) makes the outer step count matter too.
flat="--lr 3e-3 --min-lr 3e-3 --warmup 0 --outer nesterov --outer-momentum-warmup 2 --local-steps 2"
run4 whole 8 $flat --checkpoint-every 4
run4 halves 4 $flat --checkpoint-every 4
cp -r "$T/halves" "$T/halves-at4"
run4 halves 8 $flat --checkpoint-every 4 --resume
same_snaps whole halves 8
grep '"ev":"start"' "$T/halves/node-1/metrics.jsonl" | tail -1 | grep -q '"outer_step":4' ||
    fail "the resumed start line does not report outer step 4"
# resuming a checkpoint without outer state is refused, naming the file
rm -rf "$T/plain"; run4 plain 2 --checkpoint-every 2
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 --topology "$T/ring.topo" --plaintext --data "$T/data" \
    --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 4 --run-dir "$T/plain" --resume \
    --outer nesterov > "$T/plain.resume" 2>&1 && fail "an outer run resumed a checkpoint without outer state"
grep -q "holds no outer optimizer state" "$T/plain.resume" || { cat "$T/plain.resume" >&2; fail "no clear refusal of the old checkpoint"; }
echo "ok: stop at round 4 and --resume gives round 8 bit for bit; a checkpoint without outer state is refused"

# Decentralized Adam (--adam-accum K, Decent-DP's AccumAdamW): the same
# stop-and-resume check with the checkpoint taken in the middle of an
# accumulation (round 3, K = 4 steps of H = 1), so the accumulator must
# come back from the file (format version 2).
flat="--lr 3e-3 --min-lr 3e-3 --warmup 0 --adam-accum 4"
run4 da-whole 6 $flat --checkpoint-every 3
rm -rf "$T/da-halves"; run4 da-halves 3 $flat --checkpoint-every 3
ver=$(od -An -tu4 -j8 -N4 "$T/da-halves/node-0/checkpoint.bin" | tr -d ' ')
[ "$ver" = 2 ] || fail "an --adam-accum checkpoint is format version $ver, not 2"
run4 da-halves 6 $flat --checkpoint-every 3 --resume
same_snaps da-whole da-halves 6
grep -q '"adam_accum":4' "$T/da-whole/node-0/metrics.jsonl" || fail "no adam_accum in the start line"
run4 da-plain 6 --lr 3e-3 --min-lr 3e-3 --warmup 0
cmp -s "$(snap da-whole 0 6)" "$(snap da-plain 0 6)" && fail "--adam-accum 4 changed nothing"
echo "ok: --adam-accum 4: stop mid-accumulation and --resume gives round 6 bit for bit"

# 4. refused flags
refused() { # refused EXPECT FLAGS...
    expect=$1; shift
    rc=0; "$MURMUR" node --id 0 --topology "$T/ring.topo" --plaintext "$@" > "$T/bad.out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "'$*' exited $rc, not 2"
    grep -q -- "$expect" "$T/bad.out" || { cat "$T/bad.out" >&2; fail "'$*': no '$expect' in the message"; }
}
refused "--local-steps" --outer nesterov --local-steps 0
# the defaults (issue 34 item 2.4): momentum 0.5, and loud warnings for the
# settings measured to fail
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 --topology "$T/ring.topo" --plaintext --data "$T/data" \
    --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 1 --run-dir "$T/defaults" \
    --outer nesterov --start-timeout 0 --round-timeout 100 > "$T/defaults.out" 2>&1 || true
grep -q '"outer_momentum":0.5' "$T/defaults/node-0/metrics.jsonl" || fail "the default outer momentum is not 0.5"
grep -q 'WARN: --outer with --local-steps 1 takes an outer step after every optimizer step' "$T/defaults.out" ||
    fail "no warning for --outer with --local-steps 1"
grep -q 'WARN: --outer-momentum 0.9 without' "$T/epi.0.out" && fail "momentum 0.9 with Pier's schedules was warned of as constant"
grep -q 'WARN: --outer-momentum 0.9 without --outer-momentum-warmup' "$T/diloco.0.out" ||
    fail "no warning for a constant outer momentum of 0.9"
refused "--outer-lr" --outer nesterov --outer-lr -1
refused "--outer-lr must be > 0" --outer nesterov --outer-lr 0
refused "--outer-momentum must be in \[0, 1)" --outer nesterov --outer-momentum 1
refused "not async" --outer nesterov --algo async
refused "not pushsum" --outer nesterov --algo pushsum
refused "need --outer nesterov" --outer-lr 0.5
refused "--outer-momentum-decay" --outer nesterov --outer-momentum-decay linear:1
refused "is nesterov, noloco or none" --outer adam
refused "one exchange a round" --outer nesterov --gossip-steps 2
refused "drop --outer-overlap" --outer nesterov --compress int8 --outer-overlap
refused "needs --outer nesterov" --algo allreduce --compress int8
refused "needs --outer nesterov --compress" --algo allreduce --allreduce-schedule allgather
refused "drop --allreduce-schedule" --algo allreduce --outer nesterov --compress int8 --allreduce-schedule ring
refused "--outer-ef-decay is the error feedback" --outer nesterov --compress int8 --outer-ef-decay 0.9
refused "--outer-ef-decay must be in (0, 1\]" --algo allreduce --outer nesterov --compress int8 --outer-ef-decay 0
refused "--consensus-step is CHOCO's gamma" --algo allreduce --outer nesterov --compress int8 --consensus-step 0.5
refused "--noloco-gamma is NoLoCo's" --outer nesterov --noloco-gamma 0.5
refused "runs over --algo dpsgd, not allreduce" --outer noloco --algo allreduce
refused "drop --compress and --outer-overlap" --outer noloco --compress int8
refused "--outer-fragments runs with --outer nesterov on fp32" --outer nesterov --outer-fragments 2 --compress int8
refused "need --outer nesterov" --outer-fragments 2
refused "--outer-memory-mb 1: the outer optimizer" --outer nesterov --outer-memory-mb 1 --data "$T/data" --layers 2 --width 128 --heads 2 --ctx 32 --rounds 1
echo "ok: bad outer flags are refused naming the flag"
