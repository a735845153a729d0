#!/bin/sh
# `murmur report` from the command line on run directories written here:
# an empty run is a clear error (exit 1), a torn last line is a warning,
# outputs land where asked, --progress prints one line (waiting, exit 0, on
# an empty run), usage errors exit 2.
set -u
root=$(pwd)
m=$root/murmur
[ -x "$m" ] || { echo "build ./murmur first"; exit 1; }
tmp=$(mktemp -d /tmp/mm-report-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
    what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

mkdir -p "$tmp/empty/node-0" "$tmp/empty/node-1"
"$m" report "$tmp/empty" >"$tmp/out" 2>"$tmp/err"
check "empty run exits 1" [ $? -eq 1 ]
check "empty run says so" grep -q 'empty run' "$tmp/err"
"$m" report "$tmp/nowhere" >/dev/null 2>"$tmp/err"
check "missing run dir exits 1" [ $? -eq 1 ]
"$m" report >/dev/null 2>&1
check "no run dir is a usage error" [ $? -eq 2 ]
"$m" report "$tmp/empty" --bogus >/dev/null 2>&1
check "unknown option is a usage error" [ $? -eq 2 ]
"$m" report "$tmp/empty" "$tmp/empty" >/dev/null 2>&1
check "two runs without --compare is a usage error" [ $? -eq 2 ]

# Two peers, evals at rounds 1 and 3; peer 1 died in the middle of a line.
r=$tmp/run
for k in 0 1; do
    mkdir -p "$r/node-$k"
    f=$r/node-$k/metrics.jsonl
    printf '{"ev":"start","peer":%d,"n_peers":2,"params":3,"algo":"dpsgd","topology":"pair.topo","sketch_dim":2,"sketch_seed":5,"resumed_round":0,"time":0}\n' $k >"$f"
    for i in 0 1 2 3; do
        printf '{"ev":"round","round":%d,"step":%d,"time":%d,"loss":2.5,"lr":0.1,"bytes_sent":%d,"bytes_recv":0,"t_compute":%d,"t_comm":0,"t_wait":0,"nbrs":1,"missing":0,"dist":{"%d":0.1}}\n' \
            $i $i $((i + 1)) $((1000 * (i + 1))) $((i + 1)) $((1 - k)) >>"$f"
        [ $((i % 2)) = 1 ] && printf '{"ev":"eval","round":%d,"step":%d,"time":%d,"val_loss":1.5,"val_bpb":1,"val_acc":0.%d,"norm":1,"sketch":[%d,0]}\n' \
            $i $i $((i + 1)) $((k + 4)) $((3 * k)) >>"$f"
    done
done
printf '{"ev":"eval","round":5,"sk' >>"$r/node-1/metrics.jsonl"
"$m" report "$r" --csv "$tmp/x.csv" --no-plots >"$tmp/out" 2>"$tmp/err"
check "report exits 0" [ $? -eq 0 ]
check "torn line warned about" grep -q 'node-1/metrics.jsonl:8: last line is incomplete' "$tmp/err"
check "csv where asked" [ -f "$tmp/x.csv" ]
check "no default csv" [ ! -f "$r/report.csv" ]
check "no plots with --no-plots" [ ! -d "$r/plots" ]
# sketches [0,0] and [3,0]: Xi = sqrt((1.5^2 + 1.5^2) / 2) = 1.5
check "sketch estimate in the csv" grep -q '^3,2,1.5,sketch,,1.5,2,0.45,0.4,0.5,' "$tmp/x.csv"
check "table printed" grep -q '^       3  2/2   1.5000e+00 sketch' "$tmp/out"
check "compute fraction 100%" grep -q '100.0' "$tmp/out"

"$m" report --progress "$r" >"$tmp/out" 2>"$tmp/err"
check "progress exits 0" [ $? -eq 0 ]
check "progress is one line" [ "$(wc -l <"$tmp/out")" -eq 1 ]
check "progress names round, accuracy, liveness" grep -q '^round 3 .* acc 0.4500 @3 .* Xi 1.500e+00 sketch @3 | live 2/2 \[..\]' "$tmp/out"
check "progress is quiet about the torn line" [ ! -s "$tmp/err" ]
# a run that has just started is waiting, not an error; a missing one is
"$m" report --progress "$tmp/empty" >"$tmp/out" 2>"$tmp/err"
check "progress of an empty run exits 0" [ $? -eq 0 ]
check "progress of an empty run waits" grep -qx 'waiting for the first metrics' "$tmp/out"
"$m" report --progress "$tmp/nowhere" >"$tmp/out" 2>"$tmp/err"
check "progress of a missing run exits 1" [ $? -eq 1 ]
check "progress of a missing run says why" grep -q 'cannot open run directory' "$tmp/out"

if command -v gnuplot >/dev/null 2>&1; then
    "$m" report "$r" --plots "$tmp/p" >"$tmp/out" 2>/dev/null
    check "plots written" [ -s "$tmp/p/consensus.png" -a -s "$tmp/p/accuracy.png" -a -s "$tmp/p/acc_vs_consensus.png" ]
    check "plot paths printed" grep -q "^plot: $tmp/p/consensus.png" "$tmp/out"
    # A sweep's run (SETTING/sSEED) is titled with its setting and seed,
    # its peers, topology and algorithm, not "s1" (issue 21, friction 19);
    # the accuracy plot's key is not below the plot, where gnuplot set it
    # over the x label.
    mkdir -p "$tmp/sw/pair,lr=3e-3" && cp -r "$r" "$tmp/sw/pair,lr=3e-3/s1"
    "$m" report "$tmp/sw/pair,lr=3e-3/s1/" >/dev/null 2>&1
    for g in consensus accuracy acc_vs_consensus; do
        check "$g plot titled with setting and seed" \
            grep -qx "set title 'pair,lr=3e-3, seed 1: 2 peers, pair.topo, dpsgd'" "$tmp/sw/pair,lr=3e-3/s1/plots/$g.gp"
    done
    check "accuracy plot: its key not over the x label" sh -c "! grep -q '^set key below' '$tmp/sw/pair,lr=3e-3/s1/plots/accuracy.gp'"
    cp -r "$r" "$tmp/run2"
    (cd "$tmp" && "$m" report --compare run "$tmp/run2" "$tmp/empty" >"$tmp/out" 2>"$tmp/err")
    check "compare with an empty run exits 1" [ $? -eq 1 ]
    check "compare still written" [ -s "$tmp/compare.png" -a -s "$tmp/compare.csv" ]
    check "compare csv: 2 runs" [ "$(wc -l <"$tmp/compare.csv")" -eq 3 ]
    # Constant series (the validation loss, one accuracy per peer) and two
    # settings with the same figures: gnuplot's "empty range" warnings do
    # not reach the terminal (issue 34), and the two settings' labels are
    # not printed over each other.
    "$m" report "$r" --plots "$tmp/p2" >"$tmp/out" 2>"$tmp/err"
    check "run plots: no gnuplot warning" sh -c "! grep -q 'Warning:' '$tmp/err'"
    (cd "$tmp" && "$m" report --compare run "$tmp/run2" >"$tmp/out" 2>"$tmp/err")
    check "compare plots: no gnuplot warning" sh -c "! grep -q 'Warning:' '$tmp/err'"
    sw=$tmp/outer-sweep
    printf '# murmur sweep plan 1\n# baseline pair,outer=none\nindex\tsetting\tseed\trun\ttopology\tpeers\touter\tflags\n' >"$sw.plan"
    i=0
    for o in none nesterov; do
        mkdir -p "$sw/pair,outer=$o" && cp -r "$r" "$sw/pair,outer=$o/s1"
        sed -i '$d' "$sw/pair,outer=$o/s1/node-1/metrics.jsonl" # (no torn line)
        for k in 0 1; do
            echo '{"ev":"end","round":4,"step":4,"time":4,"reason":"done"}' >>"$sw/pair,outer=$o/s1/node-$k/metrics.jsonl"
        done
        printf 'finished 2026-01-01T00:00:00Z wall 4\nflags --outer %s --seed 1\n' $o >"$sw/pair,outer=$o/s1/sweep.done"
        printf '%d\tpair,outer=%s\t1\tpair,outer=%s/s1\tpair.topo\t2\t%s\t--outer %s --seed 1\n' $i $o $o $o $o >>"$sw.plan"
        i=$((i + 1))
    done
    mv "$sw.plan" "$sw/sweep.plan"
    "$m" report --sweep "$sw" >"$tmp/out" 2>"$tmp/err"
    check "sweep report exits 0" [ $? -eq 0 ]
    check "sweep plots: no gnuplot warning" sh -c "! grep -q 'Warning:' '$tmp/err'"
    check "sweep paired plot made" [ -s "$sw/plots/sweep_paired_acc.png" ]
    # the label heights (last 3 columns, last one of the paired file): one
    # above, one below the shared point
    check "sweep.dat: two labels at one point apart" \
        [ "$(awk '/^"outer=/ { print $13, $14, $15 }' "$sw/plots/sweep.dat" | sort -u | wc -l)" -eq 2 ]
    check "sweep_paired.dat: two labels at one point apart" \
        [ "$(awk '/^"outer=/ { print $7 }' "$sw/plots/sweep_paired.dat" | sort -u | wc -l)" -eq 2 ]
    check "sweep plots draw the labels at their heights" grep -q "using 6:14:1 with labels" "$sw/plots/sweep_acc_bytes.gp"
fi

# A long topology path and run name keep the comparison's columns in line:
# every line of the table (header and rows) is as long as the others.
cp -r "$r" "$tmp/a-run-with-a-rather-long-name-indeed"
sed -i 's|"topology":"pair.topo"|"topology":"topologies/some/deep/dir/onepeer-exp-8.topo"|' \
    "$tmp"/a-run-with-a-rather-long-name-indeed/node-*/metrics.jsonl
"$m" report --compare "$r" "$tmp/a-run-with-a-rather-long-name-indeed" --csv "$tmp/c2.csv" --no-plots \
    >"$tmp/out" 2>"$tmp/err"
check "compare with a long path exits 0" [ $? -eq 0 ]
check "compare table: 3 lines, all of one length" \
    [ "$(awk '/^run / { t = 1 } t && NF && !/^\(|^csv|^plot/ { print length($0) }' "$tmp/out" | sort -u | wc -l)" -eq 1 ]

[ $fails -eq 0 ] || { cat "$tmp/out" "$tmp/err"; exit 1; }
