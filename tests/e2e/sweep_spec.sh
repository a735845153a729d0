# scripts/sweep.sh refuses a bad spec before anything runs: exit 2 and one
# line naming the spec file, the line and the reason, for every refusal of
# docs/sweep.md. A good spec passes --check and lists its grid.
. "$(dirname "$0")/lib.sh"
export MURMUR RUNS="$T/runs"
"$MURMUR" topo gen ring -n 4 > "$T/ring-4.topo" 2>/dev/null
"$MURMUR" topo gen ring -n 8 > "$T/ring-8.topo" 2>/dev/null
mkdir -p "$T/other" && cp "$T/ring-4.topo" "$T/other/ring-4.topo"
# directed, column-stochastic only (topologies/README.md's example)
printf 'peers 3\ngraph directed\nweights explicit\n0 1 1/4\n0 2 1/4\n1 2 1/2\n2 0 1/2\n' > "$T/push3.topo"
good="topology $T/ring-4.topo
seeds 1 2"
n=0
# refused LINE REASON_PATTERN SPEC_TEXT: the spec is refused naming line LINE
# ("-" for a missing key: no line) with a message matching REASON_PATTERN.
refused() {
    n=$((n + 1))
    printf '%s\n' "$3" > "$T/bad$n.sweep"
    st=0
    sh "$ROOT/scripts/sweep.sh" --check "$T/bad$n.sweep" > "$T/out" 2>&1 || st=$?
    [ $st -eq 2 ] || { cat "$T/out" >&2; fail "spec $n ($2): exit $st, not 2"; }
    if [ "$1" = - ]; then where="$T/bad$n.sweep: "; else where="$T/bad$n.sweep:$1: "; fi
    grep -q "^sweep: $where.*$2" "$T/out" ||
        { cat "$T/out" >&2; fail "spec $n: not 'sweep: $where...$2'"; }
    [ -e "$RUNS" ] && fail "spec $n: something was created under $RUNS"
    note "refused: $(cat "$T/out")"
}
refused 3 "unknown key 'topolgy'" "$good
topolgy $T/ring-8.topo"
refused 3 "empty axis --lr" "$good
axis --lr"
refused 3 "empty 'peers' line" "$good
peers"
refused 1 "topology file $T/nope.topo does not exist" "topology $T/ring-4.topo $T/nope.topo
seeds 1"
refused 2 "topology file $T/ring-4.topo has 4 peers, not 8" "seeds 1
topology $T/ring-4.topo
peers 8"
refused 1 "topology file $T/ring-4.topo has 4 peers, not 8 (the 'peers' line, line 3)" "$good
peers 4 8"
refused 2 "'{n}' needs a 'peers' line" "seeds 1
topology $T/ring-{n}.topo"
refused 3 "'seeds' given twice (first on line 2)" "$good
seeds 3"
refused 4 "axis --lr given twice (first on line 3)" "$good
lr 1e-3 3e-3
axis --lr 1e-2"
refused 4 "flags: --rounds given twice (first on line 3)" "$good
flags --rounds 10
flags --eval-every 2 --rounds 20"
refused 4 "axis --lr is also set in 'flags' (line 3)" "$good
flags --lr 1e-3 --rounds 10
axis --lr 1e-2 3e-2"
refused 3 "axis --batch is also set in 'flags' (line 4)" "$good
axis --batch 8 16
flags --batch=8"
refused 3 "unknown node flag --learning-rate" "$good
axis --learning-rate 1e-3"
refused 3 "flags: unknown node flag --fast" "$good
flags --fast"
refused 3 "--seed is set by the sweep" "$good
flags --seed 3"
refused 3 "--topology is set by the sweep" "$good
axis --topology a b"
refused 3 "axis: --plaintext takes no value" "$good
axis --plaintext 0 1"
refused 3 "flags: --rounds needs a value" "$good
flags --rounds"
refused 3 "axis --lr: value 1e-3 given twice" "$good
lr 1e-3 1e-3"
refused 3 "value 'a/b' may hold only" "$good
partition a/b"
refused 2 "seeds: 'x' is not a seed" "topology $T/ring-4.topo
seeds 1 x"
refused 2 "seeds: seed 2 given twice" "topology $T/ring-4.topo
seeds 1..3 2"
refused 1 "two topology files named ring-4" "topology $T/ring-4.topo $T/other/ring-4.topo
seeds 1"
refused 1 "topology file $T/push3.topo is a directed graph .*only --algo pushsum averages correctly on it (the default --algo dpsgd" "topology $T/push3.topo
seeds 1"
refused 2 "topology file $T/push3.topo is a directed .*(--algo async would drift" "seeds 1
topology $T/push3.topo
axis --algo pushsum async"
# flags the node itself refuses, found by its own option parsing (murmur
# node --dry-run), not only by the sweep's reading of node --help (issue
# 21, friction 8: these three passed --check)
refused - "setting ring-4: murmur node refuses its flags (--rounds abc --seed 1): .*--rounds" "topology $T/ring-4.topo
seeds 1
flags --rounds abc"
refused - "setting ring-4: murmur node refuses its flags (--heads 5 --seed 1): --width 128 is not a multiple of --heads 5" "topology $T/ring-4.topo
seeds 1
flags --heads 5"
refused - "setting ring-4,partition=bogus: murmur node refuses its flags" "topology $T/ring-4.topo
seeds 1 2
axis --partition genre bogus"
refused 3 "baseline: 'complete-4' is not one of the settings" "$good
baseline complete-4"
refused 4 "'baseline' given twice (first on line 3)" "$good
baseline ring-4
baseline ring-4"
refused 3 "baseline: give one setting's name" "$good
baseline ring-4 ring-8"
refused - "no 'seeds' line" "topology $T/ring-4.topo"
refused - "no 'topology' line" "seeds 1 # a comment"

# A good spec with every kind of line: comments, '{n}', a range, axes.
cat > "$T/good.sweep" <<SPEC
# a comment line
topology $T/ring-{n}.topo   # the files ring-4 and ring-8
peers    4 8
seeds    1..2
lr       1e-3 3e-3
axis     --gossip-steps 1 2
flags    --rounds 10 --plaintext
SPEC
sh "$ROOT/scripts/sweep.sh" --check "$T/good.sweep" > "$T/out" 2>&1 || { cat "$T/out" >&2; fail "good spec refused"; }
grep -q 'is valid: 8 settings x 2 seeds = 16 runs' "$T/out" || { cat "$T/out" >&2; fail "good spec: wrong grid"; }
grep -q '^  ring-8,gossip-steps=2,lr=3e-3 .*seed 2 .* 8 peers  --rounds 10 --plaintext --gossip-steps 2 --lr 3e-3 --seed 2$' "$T/out" ||
    { cat "$T/out" >&2; fail "good spec: a run's setting or flags not as documented"; }
printf 'topology %s\nseeds 1\nflags --algo pushsum\n' "$T/push3.topo" > "$T/push.sweep"
sh "$ROOT/scripts/sweep.sh" --check "$T/push.sweep" > "$T/out" 2>&1 || { cat "$T/out" >&2; fail "push-sum on a column-stochastic graph refused"; }
# a flag whose value is not named in capitals (R:G,...) takes its value
printf 'topology %s\nseeds 1\nflags --gossip-steps-schedule 0:2,5:1 --rounds 10\n' "$T/ring-4.topo" > "$T/sched.sweep"
sh "$ROOT/scripts/sweep.sh" --check "$T/sched.sweep" > "$T/out" 2>&1 || { cat "$T/out" >&2; fail "--gossip-steps-schedule's value refused"; }
echo "ok: $n bad specs refused with file, line and reason; a good one accepted"
