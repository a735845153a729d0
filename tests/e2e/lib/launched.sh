# check_launched_ring DIR N ROUNDS: a run of N pure-gossip peers on a ring,
# started by a cluster launcher without --id (tests/e2e/launch_mpirun.sh,
# launch_slurm.sh), went right: every rank K wrote node-K/ as peer K of N,
# finished ROUNDS rounds, mixed with its two ring neighbours and only with
# them, and the exact consensus distance (from the snapshots taken every
# round) shrank at least a thousandfold. Needs lib.sh (fail, note, jfield).
check_launched_ring() {
    d=$1; n=$2; rounds=$3
    k=0
    while [ $k -lt "$n" ]; do
        m="$d/node-$k/metrics.jsonl"
        [ -f "$m" ] || fail "no node-$k: rank $k did not become peer $k"
        [ "$(jfield "$m" start peer)" = $k ] || fail "node-$k/ was written by peer $(jfield "$m" start peer)"
        [ "$(jfield "$m" start n_peers)" = "$n" ] || fail "peer $k thinks there are $(jfield "$m" start n_peers) peers"
        [ "$(jfield "$m" end round)" = "$rounds" ] || fail "peer $k did not finish $rounds rounds"
        # it mixed with its ring neighbours, and only with them
        l=$(( (k + n - 1) % n )); r=$(( (k + 1) % n ))
        bad=$(grep '"ev":"round"' "$m" | sed -n 's/.*"nbrs":\[\([0-9,]*\)\].*/\1/p' |
            tr ',' '\n' | grep -v -x -e $l -e $r | grep -c . || true)
        [ "$bad" = 0 ] || fail "peer $k mixed with a peer that is not its ring neighbour"
        grep -q "\"nbrs\":\[$l,$r\]\|\"nbrs\":\[$r,$l\]" "$m" || fail "peer $k never mixed with both neighbours $l and $r"
        k=$((k + 1))
    done
    "$MURMUR" report "$d" --no-plots --csv "$d.csv" > "$d.report" 2>&1 || fail "murmur report failed"
    c0=$(launched_col "$d.csv" consensus 0); c1=$(launched_col "$d.csv" consensus "$rounds")
    note "consensus distance (exact snapshots): round 0 $c0 -> round $rounds $c1"
    # a 4-ring averages at rate 1/3 per round: 10 rounds shrink the distance ~6e4x
    awk -v a="$c0" -v b="$c1" 'BEGIN { exit !(a > 0 && b < 1e-3 * a) }' || fail "the launched peers did not reach consensus"
}
# launched_col CSV COLUMN ROUND: one cell of murmur report's CSV.
launched_col() { awk -F, -v c="$2" -v r="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } $1 == r { print $k }' "$1"; }
