# scripts/critical-distance.py against hand computation. A sweep-runs.csv
# made here: seeds 1..3, the baseline complete-16 at accuracy 0.30 + 0.01 s
# (seed s), and five settings at averaged Xi 0.1, 0.3, 1, 3, 10 whose
# accuracy is the baseline's of the same seed plus the hinge
#   d = -0.1 * max(0, log10 Xi - log10 1)
# (0, 0, 0, -0.0477121, -0.1). log10 Xi spans [-1, 1], so the grid's step
# is 0.005 and c = 1 (u = 0) is on it: the fit is exact there (a = 0,
# b = -0.1, RSS 0), every bootstrap draw finds it too, and both intervals
# are [1, 1]. A failed run, a run of a seed the baseline lacks and an
# excluded setting must change nothing; a missing baseline is refused.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
need_pkgs python3 || { echo "skip: python3 missing and not root to install it"; exit 0; }
py=python3
csv="$T/sweep-runs.csv"
echo 'index,setting,seed,run,status,reason,rounds,acc,val_loss,consensus_final,consensus_final_method,consensus_avg,consensus_rms,consensus_avg_method,consensus_rows,bytes_sent_per_peer,wall_s' > "$csv"
i=0
row() { # SETTING SEED STATUS ACC XI
    echo "$i,\"$1\",$2,\"r/$1/s$2\",$3,\"\",400,$4,2.5,$5,exact,$5,$5,exact,9,0,1" >> "$csv"
    i=$((i + 1))
}
for s in 1 2 3; do
    base=$(awk -v s=$s 'BEGIN { printf "%.9f", 0.30 + 0.01 * s }')
    row complete-16 $s done "$base" 0.05
    for x in 0.1 0.3 1 3 10; do
        acc=$(awk -v b="$base" -v x=$x 'BEGIN { u = log(x) / log(10); printf "%.9f", b - 0.1 * (u > 0 ? u : 0) }')
        row "ring-16,consensus-target=$x" $s done "$acc" $x
    done
    row "ring-16,sched" $s done 0.9 2       # excluded below
done
row "ring-16,consensus-target=3" 4 done 0.9 3  # seed 4: no baseline run
row "ring-16,consensus-target=1" 2 failed 0.9 1  # failed (its seed's done run above stays)
out=$($py "$ROOT/scripts/critical-distance.py" --exclude sched --boot 200 --dat "$T/fit.dat" "$csv") ||
    fail "critical-distance.py exited $?"
echo "$out" | sed 's/^/  /'
echo "$out" | grep -q '^points: 15 (5 settings, seeds 1 2 3)' || fail "not 15 points of 5 settings"
echo "$out" | grep -q 'd = +0.0000 -0.1000 \* max(0, log10 Xi - log10 c), c = 1,' ||
    fail "the fit is not a = 0, b = -0.1, c = 1"
echo "$out" | grep -q 'profile interval of c: \[1, 1\]' || fail "the profile interval is not [1, 1]"
echo "$out" | grep -q 'seed-bootstrap interval of c: \[1, 1\] (200 resamples' ||
    fail "the bootstrap interval is not [1, 1]"
[ "$(grep -c '"ring-16' "$T/fit.dat")" = 15 ] || fail "fit.dat does not hold the 15 points"
# without --exclude the schedule (d = +0.6 at Xi 2 in every seed) breaks the exact fit
out=$($py "$ROOT/scripts/critical-distance.py" --boot 20 "$csv") || fail "exited $?"
echo "$out" | grep -q '^points: 18' || fail "without --exclude: not 18 points"
echo "$out" | grep -q 'residual sd 0.0000' && fail "without --exclude the fit is still exact"
# refusals: no baseline, a file that is no sweep-runs.csv
$py "$ROOT/scripts/critical-distance.py" --baseline nope "$csv" 2> "$T/err" && fail "a missing baseline was accepted"
grep -q "no finished run of the baseline 'nope'" "$T/err" || fail "no reason for the missing baseline"
printf 'a,b\n1,2\n' > "$T/bad.csv"
$py "$ROOT/scripts/critical-distance.py" "$T/bad.csv" 2> "$T/err" && fail "a bad CSV was accepted"
grep -q 'is not a sweep-runs.csv' "$T/err" || fail "no reason for the bad CSV"
echo "ok: the hinge fitted exactly (c = 1, both intervals [1, 1]), failed, unpaired and excluded runs left out, bad input refused"
