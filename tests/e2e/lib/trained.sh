# trained.sh DIR N: exits 0 once every peer 0..N-1 of run directory DIR has
# logged at least 3 rounds. The condition tests/tools/ptyrun polls before
# pressing ^C (launch_ctrlc.sh, sweep_ctrlc.sh): the peers are training.
d=$1; n=$2; k=0
while [ $k -lt $n ]; do
    c=$(grep -c '"ev":"round"' "$d/node-$k/metrics.jsonl" 2>/dev/null) || c=0
    [ "$c" -ge 3 ] || exit 1
    k=$((k + 1))
done
