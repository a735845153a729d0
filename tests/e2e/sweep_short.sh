# A short real sweep, as CI can afford: 2 topologies (local, the baseline
# without communication, and complete, exact averaging) x 2 seeds of a tiny
# model on the synthetic corpus, through scripts/sweep.sh and
# `murmur report --sweep`. Checks: every run finished and is marked, the
# aggregate has one row per setting with 2 seeds, the local setting sent 0
# bytes and its figures are numbers (no division by zero), complete sent
# bytes and ends closer to consensus than local, the CSVs and plots exist;
# a port block that a socket holds is skipped;
# then scripts/compare.sh on the two local-topology runs prints no nan/inf.
. "$(dirname "$0")/lib.sh"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
tiny_data "$T/data"
"$MURMUR" topo gen local -n 3 > "$T/local-3.topo" 2>/dev/null
"$MURMUR" topo gen complete -n 3 > "$T/complete-3.topo" 2>/dev/null
cat > "$T/short.sweep" <<SPEC
# 2 topologies x 2 seeds, a tiny model: seconds
topology $T/local-3.topo $T/complete-3.topo
seeds 1 2
flags --data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --lr 3e-3
flags --rounds 12 --eval-every 4 --snapshot-every 4 --log-every 0 --plaintext
flags --partition genre
baseline complete-3
SPEC
port=$(free_ports 12)
# A socket on the second port of the first block: the sweep must skip that block.
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0],
    Listen => 1, ReuseAddr => 1) or die "listen: $!"; sleep 60' $((port + 1)) &
E2E_PIDS="$E2E_PIDS $!"
i=0
until grep -qi ":$(printf %04X $((port + 1))) " /proc/net/tcp; do
    i=$((i + 1)); [ $i -lt 50 ] || fail "the test's listener did not start"; sleep 0.1
done
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/short.sweep" > "$T/out" 2>&1 ||
    { cat "$T/out" >&2; fail "the sweep failed"; }
grep -q "\[1/4\] start .* ports $((port + 3))\.\.$((port + 5)))" "$T/out" ||
    { cat "$T/out" >&2; fail "the first run did not skip the block with a busy port ($((port + 1)))"; }
grep -q "\[2/4\] start .* ports $((port + 6))\.\.$((port + 8)))" "$T/out" ||
    { cat "$T/out" >&2; fail "the second run did not get the next block"; }
top=$RUNS/short
for s in local-3/s1 local-3/s2 complete-3/s1 complete-3/s2; do
    [ -f "$top/$s/sweep.done" ] || { cat "$T/out" >&2; fail "$s not marked done"; }
done
[ "$(grep -c 'sweep: \[[0-9]/4\] start' "$T/out")" -eq 4 ] || { cat "$T/out" >&2; fail "not one start line per run"; }
grep -q 'sweep: \[1/4\] done .*3 to go, ETA' "$T/out" || { cat "$T/out" >&2; fail "no ETA after the first run"; }
csv=$top/sweep.csv
[ -f "$csv" ] && [ -f "$top/sweep-runs.csv" ] || fail "no sweep.csv / sweep-runs.csv"
# column NAME of the row of setting S
col() { awk -F, -v s="\"$1\"" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 == s { print $h[c] }' "$csv"; }
[ "$(col local-3 seeds_done)" = 2 ] && [ "$(col complete-3 seeds_done)" = 2 ] || { cat "$csv" >&2; fail "not 2 seeds per setting"; }
[ "$(col local-3 bytes_sent_per_peer_mean)" = 0 ] || { cat "$csv" >&2; fail "local sent bytes"; }
awk -v b="$(col complete-3 bytes_sent_per_peer_mean)" 'BEGIN { exit !(b > 0) }' || fail "complete sent nothing"
for c in acc_mean acc_sd val_loss_mean consensus_final_mean consensus_avg_mean wall_s_mean; do
    v=$(col local-3 $c)
    awk -v v="$v" 'BEGIN { exit !(v ~ /^[0-9.eE+-]+$/) }' || { cat "$csv" >&2; fail "local-3 $c is '$v', not a number"; }
done
awk -v l="$(col local-3 consensus_final_mean)" -v c="$(col complete-3 consensus_final_mean)" \
    'BEGIN { exit !(c < l) }' || { cat "$csv" >&2; fail "complete is not closer to consensus than local"; }
grep -qi 'nan\|inf' "$T/out" && { cat "$T/out" >&2; fail "the sweep printed nan or inf"; }
# paired against the spec's baseline: both seeds pair, the table and CSV say so
grep -q '^paired against complete-3' "$T/out" || { cat "$T/out" >&2; fail "no paired table"; }
[ "$(col local-3 baseline)" = '"complete-3"' ] && [ "$(col local-3 paired_n)" = 2 ] &&
    [ "$(col local-3 paired_seeds)" = '"1 2"' ] || { cat "$csv" >&2; fail "local-3 not paired on seeds 1 2"; }
awk -v d="$(col local-3 d_acc_mean)" -v lo="$(col local-3 d_acc_lo)" -v hi="$(col local-3 d_acc_hi)" \
    'BEGIN { exit !(d ~ /^[0-9.eE+-]+$/ && lo + 0 <= d + 0 && d + 0 <= hi + 0) }' ||
    { cat "$csv" >&2; fail "local-3's paired interval does not hold its mean"; }
if command -v gnuplot >/dev/null 2>&1; then
    for p in sweep_acc_consensus sweep_acc_bytes sweep_acc_wall sweep_paired_acc; do
        [ -s "$top/plots/$p.png" ] && [ -f "$top/plots/$p.gp" ] || fail "no plot $p"
    done
fi
note "$(grep -A3 '^setting' "$T/out" | head -3)"
# compare.sh over the local baseline and complete: no nan, no division by zero.
port=$(free_ports 6)
sh "$ROOT/scripts/compare.sh" -n 3 -r cmp -p "$port" -i 1 "$T/local-3.topo" "$T/complete-3.topo" -- \
    --data "$T/data" --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --rounds 8 --eval-every 4 \
    --log-every 0 --plaintext > "$T/cmp.out" 2>&1 || { cat "$T/cmp.out" >&2; fail "compare.sh failed"; }
grep -qi 'nan\|inf' "$T/cmp.out" && { cat "$T/cmp.out" >&2; fail "compare.sh printed nan or inf"; }
grep -q '^local-3 .* 0\.000 ' "$T/cmp.out" || { cat "$T/cmp.out" >&2; fail "compare.sh: local-3 row without 0.000 MB/peer"; }
echo "ok: a 2 x 2 sweep of real peers, aggregated; local sent 0 bytes"
