# murmur report's time to a target validation loss: the first evaluation
# round whose mean val_loss over the peers is <= the target, and its wall
# time (the slowest peer's). Two synthetic runs of 2 peers: run a evaluates
# 2.0 (round 1, t = 2 s) then 1.2 (round 3, t = 4 s); run b 1.5 (round 1,
# t = 10 s) then 1.0 (round 3, t = 20 s), its peer 1 slower by 1 s.
. "$(dirname "$0")/lib.sh"
mkrun() { # DIR LOSS1 LOSS3 SECONDS_PER_ROUND
    for k in 0 1; do
        mkdir -p "$1/node-$k"; f="$1/node-$k/metrics.jsonl"
        printf '{"ev":"start","peer":%d,"n_peers":2,"params":3,"algo":"dpsgd","topology":"pair.topo","sketch_dim":2,"sketch_seed":5,"resumed_round":0,"time":0}\n' $k > "$f"
        for i in 0 1 2 3; do
            t=$(( (i + 1) * $4 + k * ($4 / 5) ))
            printf '{"ev":"round","round":%d,"step":%d,"time":%d,"loss":2.5,"lr":0.1,"bytes_sent":1000,"bytes_recv":0,"t_compute":1,"t_comm":0,"t_wait":0,"nbrs":1,"missing":0,"dist":{}}\n' $i $i $t >> "$f"
            l=$2; [ $i = 3 ] && l=$3
            [ $((i % 2)) = 1 ] && printf '{"ev":"eval","round":%d,"step":%d,"time":%d,"val_loss":%s,"val_bpb":1,"val_acc":0.5,"norm":1,"sketch":[0,0]}\n' $i $i $t "$l" >> "$f"
        done
    done
}
mkrun "$T/a" 2.0 1.2 1
mkrun "$T/b" 1.5 1.0 5
"$MURMUR" report "$T/b" --no-plots --target-loss 1.5 > "$T/one" || fail "report --target-loss failed"
grep -q '^time to val_loss <= 1.5000 (mean over peers): .* at round 1$' "$T/one" || { cat "$T/one" >&2; fail "single run: no time to target line"; }
"$MURMUR" report "$T/a" --no-plots --target-loss 0.5 | grep -q 'not reached' || fail "an unreached target not said"
(cd "$T" && "$MURMUR" report --compare a b --no-plots --target-loss 1.5 > "$T/cmp") || fail "compare failed"
cat "$T/cmp"
# col FILE RUN NAME: the table's column NAME (by its header) for run RUN
col() { awk -v r="$2" -v c="$3" '$1 == "run" { for (i = 1; i <= NF; i++) if ($i == c) k = i } $1 == r { print $k }' "$1"; }
[ "$(col "$T/cmp" a r_target)" = 3 ] || fail "run a: not at round 3"
[ "$(col "$T/cmp" b r_target)" = 1 ] || fail "run b: not at round 1"
ta=$(col "$T/cmp" a t_target); tb=$(col "$T/cmp" b t_target)
wa=$(jfield "$T/a/node-1/metrics.jsonl" round time | sed -n 4p); wb=$(jfield "$T/b/node-1/metrics.jsonl" round time | sed -n 2p)
note "target 1.5: run a at ${ta} s (its slowest peer's round 3: $wa s), run b at ${tb} s (round 1: $wb s)"
awk -v a="$ta" -v b="$tb" -v wa="$wa" -v wb="$wb" 'BEGIN { exit !(a == wa && b == wb) }' || fail "time to target is not the slowest peer's time of that round"
grep -q '^run,.*,target_loss,round_to_target,time_to_target_s$' "$T/compare.csv" || fail "csv header"
grep -q ',1.5,3,' "$T/compare.csv" && grep -q ',1.5,1,' "$T/compare.csv" || { cat "$T/compare.csv" >&2; fail "csv columns"; }
# default target: the largest final val_loss (1.2): b reaches it at round 3 only
(cd "$T" && "$MURMUR" report --compare a b --no-plots > "$T/cmp2") || fail "compare failed"
grep -q '<= 1.2000' "$T/cmp2" || fail "default target is not the largest final val_loss"
[ "$(col "$T/cmp2" b r_target)" = 3 ] || fail "default target: run b not at round 3"
echo "ok: time to target loss in murmur report"
