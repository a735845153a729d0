# An interrupted sweep run, resumed, against the same run uninterrupted
# (issue 21, friction 9). Real peers (3, ring, a tiny model, synchronous
# D-PSGD with timeouts long enough that no wait runs out). Sweep "whole"
# runs seeds 1 and 2 to the end. Sweep "cut" runs seed 1 of the same spec
# on a pseudo-terminal, ^C is pressed mid-run (every peer stops cleanly,
# the run is marked interrupted), and the same command again continues it
# from its checkpoints (run-local.sh --resume), in the same directory.
#
# What must hold (docs/sweep.md, "Resuming an interrupted run"):
#  * the sweep resumes the run rather than rerunning it: said in its log,
#    no attempt-K directory, sweep.done says `resumed 1`;
#  * each peer: two starts in one metrics file, the second at the round the
#    first stopped at, and the last at --rounds with reason done;
#  * bit for bit the uninterrupted run's: every round line (without its
#    timings and byte counts) and snapshot of every round that all peers
#    had finished before the ^C, i.e. up to two rounds before the earliest
#    round a peer stopped at (the round a peer was in when the signal came
#    is mixed with only the neighbours whose vectors had come, docs/node.md);
#  * after it, not bit for bit (the peers' final checkpoints are not a
#    consistent cut), but confined: no round run twice, a neighbour missing
#    only in the rounds around the cut, every neighbour mixed from the
#    latest round a peer stopped at on; the final difference is printed;
#  * `murmur report --sweep` counts it as one run: one row, status done,
#    1/1 seeds, its rounds the uninterrupted run's, its bytes per peer the
#    sum over both attempts, its wall time the sum of both.
. "$(dirname "$0")/lib.sh"
PTYRUN=${PTYRUN:-$ROOT/${BUILD:-build}/tests/tools/ptyrun}
[ -x "$PTYRUN" ] || fail "$PTYRUN missing (make ptyrun)"
export MURMUR MURMUR_NO_BLAS_FIX=1 OPENBLAS_NUM_THREADS=1 RUNS="$T/runs" GRACE=30
n=3
R=400
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring-3.topo" 2>/dev/null
# slept delays (--compute-jitter; they change no value) make the run last
# several seconds however fast the machine, so that ^C comes mid-run
flags="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --lr 1e-2 --rounds $R
       --eval-every 50 --snapshot-every 10 --checkpoint-every 0 --log-every 0 --plaintext
       --round-timeout 120000 --peer-timeout 120000 --start-timeout 120000 --compute-jitter uniform:0.03"
printf 'topology %s\nseeds 1 2\nflags %s\n' "$T/ring-3.topo" "$(echo $flags)" > "$T/whole.sweep"
printf 'topology %s\nseeds 1\nflags %s\n' "$T/ring-3.topo" "$(echo $flags)" > "$T/cut.sweep"
port=$(free_ports $((2 * n)))
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/whole.sweep" > "$T/whole.out" 2>&1 ||
    { cat "$T/whole.out" >&2; fail "the uninterrupted sweep failed"; }
w=$RUNS/whole/ring-3/s1 w2=$RUNS/whole/ring-3/s2 d=$RUNS/cut/ring-3/s1

# ^C once every peer has trained a few rounds.
st=0
"$PTYRUN" -t 300 -o "$T/cut1.out" -w "sh $ROOT/tests/e2e/lib/trained.sh $d $n" -- \
    sh "$ROOT/scripts/sweep.sh" -i 1 -p "$port" "$T/cut.sweep" 2> "$T/pty.err" || st=$?
[ $st -eq 130 ] && [ -f "$d/sweep.interrupted" ] || { cat "$T/pty.err" "$T/cut1.out" >&2; fail "^C: exit $st, not 130 with the run marked interrupted"; }
stops=$(for k in 0 1 2; do jfield "$d/node-$k/metrics.jsonl" end round; done | tr '\n' ' ')
e_min=$(echo $stops | tr ' ' '\n' | sort -n | head -n 1)
[ "$(echo $stops | tr ' ' '\n' | sort -n | tail -n 1)" -lt $R ] || fail "the run ended before ^C (stopped at $stops): nothing to resume"
note "^C: peers stopped at rounds $stops (of $R)"

# The same command again: resumed, not rerun.
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/cut.sweep" > "$T/cut2.out" 2>&1 ||
    { cat "$T/cut2.out" >&2; fail "the resumed sweep failed"; }
grep -q "ring-3/s1: interrupted before; resumed from its peers' checkpoints (run-local.sh --resume)" "$T/cut2.out" ||
    { cat "$T/cut2.out" >&2; fail "the interrupted run was not resumed"; }
[ -e "$d.attempt-1" ] && fail "the interrupted run was moved aside"
grep -q '^resumed 1$' "$d/sweep.done" || fail "sweep.done does not say the run was resumed once"
[ -f "$d/sweep.interrupted" ] && fail "the resumed run is still marked interrupted"

# strip: a metrics line without what measures time or the wire (as
# scripts/bitcompare.sh, and the per-link counters, which count what had
# arrived when the line was written)
strip() { sed -E 's/"(time|t_[a-z]+|bytes_sent|bytes_recv)":[^,}]*,?//g; s/"link_[a-z_]+":\{[^}]*\},?//g'; }
same_rounds=0 same_snaps=0
for k in 0 1 2; do
    m=$d/node-$k/metrics.jsonl
    [ "$(grep -c '"ev":"start"' "$m")" = 2 ] || fail "peer $k: not two starts in one metrics file"
    first_end=$(jfield "$m" end round | head -n 1)
    [ "$(jfield "$m" start resumed_round | tail -n 1)" = "$first_end" ] || fail "peer $k did not resume at round $first_end"
    [ "$(jfield "$m" end round | tail -n 1)" = $R ] && tail -n 1 "$m" | grep -q '"reason":"done"' ||
        fail "peer $k did not end at round $R, done"
    # bit for bit before the cut: rounds 0 .. e_min-2, snapshots to e_min-1
    for f in "$w/node-$k/metrics.jsonl" "$m"; do
        grep '"ev":"round"' "$f" | awk -v e=$((e_min - 2)) '{ r = $0; sub(/.*"round":/, "", r); sub(/[,}].*/, "", r) } r + 0 <= e' | strip
    done > "$T/rounds.$k"
    c=$(grep -c . "$T/rounds.$k" || true) # 0 lines: the message below, not set -e
    [ "$c" -eq $((2 * (e_min - 1))) ] || fail "peer $k: $c round lines up to round $((e_min - 2)), not $((2 * (e_min - 1)))"
    head -n $((e_min - 1)) "$T/rounds.$k" > "$T/rounds.$k.w"
    tail -n $((e_min - 1)) "$T/rounds.$k" > "$T/rounds.$k.c"
    cmp -s "$T/rounds.$k.w" "$T/rounds.$k.c" || { diff "$T/rounds.$k.w" "$T/rounds.$k.c" | head -n 4 >&2; fail "peer $k: a round before the cut differs from the uninterrupted run's"; }
    same_rounds=$((same_rounds + e_min - 1))
    for s in "$w/node-$k"/snap/r*.bin; do
        r=$(basename "$s" .bin); r=${r#r}
        [ "$(expr "$r" + 0)" -le $((e_min - 1)) ] || continue
        cmp -s "$s" "$d/node-$k/snap/$(basename "$s")" || fail "peer $k: snapshot $(basename "$s"), before the cut, differs"
        same_snaps=$((same_snaps + 1))
    done
done
[ "$same_snaps" -ge $n ] || fail "only $same_snaps snapshots before the cut to compare"
note "bit for bit before the cut: $same_rounds round lines and $same_snaps snapshots of $n peers"

# After the cut: what the cut can change is confined to the rounds around
# it. No round is run twice; a neighbour is missing from a peer's mix only
# in rounds e_min-1 .. e_max-1 (the round a peer was in at the signal, the
# round a peer that had stopped a round behind runs alone after the
# resume); from round e_max on every peer mixes with every neighbour. The
# final state is another one (the figures are printed, not judged: a
# perturbation of one round grows over the rounds after it as any does).
e_max=$(echo $stops | tr ' ' '\n' | sort -n | tail -n 1)
cut_missing=0 lost=0
for k in 0 1 2; do
    m=$d/node-$k/metrics.jsonl
    grep '"ev":"round"' "$m" | sed 's/.*"round":\([0-9]*\).*/\1/' | sort -n | uniq -d | grep -q . &&
        fail "peer $k ran a round twice"
    bad=$(grep '"ev":"round"' "$m" | grep -v '"missing":\[\]' | sed 's/.*"round":\([0-9]*\).*/\1/' |
        awk -v lo=$((e_min - 1)) -v hi=$((e_max - 1)) '$1 < lo || $1 > hi' | tr '\n' ' ')
    [ -z "$bad" ] || fail "peer $k: a neighbour missing in rounds $bad, outside the cut's rounds $((e_min - 1))..$((e_max - 1))"
    # grep -c exits 1 when it counts 0 (the peers stopped in one round: no
    # neighbour missing at all), which set -e would take for a failure
    cut_missing=$((cut_missing + $(grep '"ev":"round"' "$m" | { grep -vc '"missing":\[\]' || true; })))
    lost=$((lost + R - $(jfield "$m" end step | tail -n 1)))
done
final() { grep '"ev":"eval"' "$1/node-$2/metrics.jsonl" | grep "\"round\":$R," | tail -n 1 | sed -n 's/.*"val_loss":\([-0-9.eE+]*\).*/\1/p'; }
differ=0 figures=''
for k in 0 1 2; do
    cmp -s "$w/node-$k/checkpoint.bin" "$d/node-$k/checkpoint.bin" || differ=$((differ + 1))
    a=$(final "$w" $k) b=$(final "$d" $k) c=$(final "$w2" $k)
    [ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] || fail "peer $k: no evaluation at round $R"
    figures="$figures $(awk -v a="$a" -v b="$b" -v c="$c" -v k=$k 'function abs(x) { return x < 0 ? -x : x }
        BEGIN { printf "peer%d %.3g (seed 2: %.3g)", k, abs(b - a), abs(c - a) }')"
done
note "the cut: $cut_missing round lines with a neighbour missing (rounds $((e_min - 1))..$((e_max - 1))), $lost steps lost over $n peers"
note "at round $R: $differ of $n final checkpoints differ from the uninterrupted run's; |val_loss - uninterrupted|:$figures"

# One run in the sweep's report: one row, done, its rounds, the bytes and
# wall time of both attempts.
"$MURMUR" report --sweep "$RUNS/cut" --no-plots > "$T/report.out" 2>&1 || { cat "$T/report.out" >&2; fail "murmur report --sweep failed"; }
grep -q '^ring-3 .* 1/1 ' "$T/report.out" || { cat "$T/report.out" >&2; fail "the report does not count 1 of 1 seed"; }
csv=$RUNS/cut/sweep-runs.csv
[ "$(grep -c . "$csv")" = 2 ] || fail "sweep-runs.csv has not one row for the one run"
row=$(sed -n 2p "$csv")
col() { awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) n = i } NR == 2 { print $n }' "$csv"; }
[ "$(col status)" = '"done"' ] || [ "$(col status)" = done ] || fail "status $(col status), not done: $row"
[ "$(col rounds)" = $R ] || fail "rounds $(col rounds), not $R"
# each peer's bytes_sent at the last round line of each attempt, summed;
# its time: that of each earlier attempt's last line, plus that of the last
# attempt's last round line (docs/metrics.md: counters and times add up
# over restarts)
sums=$(for k in 0 1 2; do
    awk 'function v(k,  s) { s = $0; sub(".*\"" k "\":", "", s); sub(/[,}].*/, "", s); return s + 0 }
         /"ev":"start"/ { b += lb; t += tmax; lb = tmax = 0 }
         /"ev":"(round|eval|end)"/ { if (v("time") > tmax) tmax = v("time") }
         /"ev":"round"/ { lb = v("bytes_sent"); lt = v("time") }
         END { printf "%.1f %.3f\n", b + lb, t + lt }' "$d/node-$k/metrics.jsonl"
done | awk '{ b += $1; if ($2 > t) t = $2 } END { printf "%.1f %.3f", b / NR, t }')
awk -v got="$(col bytes_sent_per_peer)" -v want="${sums% *}" 'BEGIN { exit !(got - want < 1 && want - got < 1) }' ||
    fail "bytes_sent_per_peer $(col bytes_sent_per_peer), not the sum over both attempts, ${sums% *}"
awk -v got="$(col wall_s)" -v want="${sums#* }" 'BEGIN { exit !(got - want < 0.002 && want - got < 0.002) }' ||
    fail "wall_s $(col wall_s), not the sum over both attempts, ${sums#* }"
note "report --sweep: one run, done, $R rounds, $(col bytes_sent_per_peer) bytes/peer and $(col wall_s) s over both attempts"
echo "ok: an interrupted sweep run is resumed from its checkpoints: bit for bit before the cut, confined to the rounds around it after, one run"
