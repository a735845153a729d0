#!/bin/sh
# Campaign 3, partition and heal: 8 peers on a ring, each in its own network
# namespace (scripts/netns-lab.sh split: hosts 0-3 on one switch, 4-7 on
# another, one trunk between them). Cutting the trunk cuts exactly the two
# cross-half ring edges (3-4 and 7-0) and leaves each half connected, which
# taking hosts' own links down would not. Asserts: both halves keep training
# while cut; after healing, the cross-half edges mix again and the exact
# consensus distance (murmur report, from snapshots) comes back to its
# pre-partition level; reports how many rounds that took.
# Needs root and iproute2; without them it says so and skips.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib/faults.sh"
LAB="$ROOT/scripts/netns-lab.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
# As root, a missing iproute2 is installed and a refused `ip netns` fails the
# test; only a non-root user skips.
[ "$(id -u)" -ne 0 ] || need_pkgs iproute2
if [ "$(id -u)" -eq 0 ] && ! ip netns list >/dev/null 2>&1; then
    fail "ip netns does not work here, as root"
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: needs root and ip netns"
    campaign_line partition 0 0 0 skipped
    exit 0
fi
N=8
rounds=$(pick 400 500); cut_at=$(pick 40 150); heal_at=$(pick 80 300)
tag="cp$(rand 9999)"
E2E_CLEANUP="sh '$LAB' down $tag"
sh "$LAB" split $tag $N
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $N > "$T/ring.topo" 2>/dev/null
: > "$T/hosts"
k=0; while [ $k -lt $N ]; do echo "$k $(sh "$LAB" addr $tag $k):29500" >> "$T/hosts"; k=$((k + 1)); done
run="$T/run"
flags="--topology $T/ring.topo --hosts $T/hosts --plaintext --data $T/data --run-dir $run
       --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds $rounds
       --eval-every 5 --eval-windows 4 --snapshot-every 5 --checkpoint-every 0
       --round-timeout 500 --peer-timeout 1500 --start-timeout 20000 --log-every 1000"
peer() { k=$1; MURMUR_NO_BLAS_FIX=1 exec sh "$LAB" exec $tag "$k" "$MURMUR" node --id "$k" $flags > "$T/peer$k.out" 2>&1; }
m() { echo "$run/node-$1/metrics.jsonl"; }
pids=""
k=0; while [ $k -lt $N ]; do peer $k & pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"; k=$((k + 1)); done

wait_round() { # peer round
    j=0
    until [ "$(last_round "$(m "$1")")" -ge "$2" ] 2>/dev/null; do
        sleep 0.1; j=$((j + 1)); [ $j -lt 1800 ] || fail "peer $1 never reached round $2"
    done
}
wait_round 0 $cut_at
sh "$LAB" cut $tag trunk
t_cut=$(now)
r_cut=""; k=0; while [ $k -lt $N ]; do r_cut="$r_cut $(last_round "$(m $k)")"; k=$((k + 1)); done
wait_round 0 $heal_at
sh "$LAB" heal $tag trunk
t_heal=$(now)
r_heal=""; k=0; while [ $k -lt $N ]; do r_heal="$r_heal $(last_round "$(m $k)")"; k=$((k + 1)); done
note "cut at rounds$r_cut; healed $(elapsed "$t_cut" "$t_heal")s later at rounds$r_heal"
wait_all $pids || fail "a peer exited non-zero"

lost=0
# Both halves trained while cut: every peer advanced at least half as far as peer 0.
adv0=$(( $(echo $r_heal | cut -d' ' -f1) - $(echo $r_cut | cut -d' ' -f1) ))
k=1; while [ $k -le $N ]; do
    a=$(echo $r_cut | cut -d' ' -f$k); b=$(echo $r_heal | cut -d' ' -f$k)
    [ $(( (b - a) * 2 )) -ge "$adv0" ] || { note "peer $((k - 1)) stalled while cut: $a -> $b"; lost=$((lost + 1)); }
    k=$((k + 1))
done
k=0; while [ $k -lt $N ]; do
    [ "$(jfield "$(m $k)" end round)" = "$rounds" ] || { note "peer $k did not finish"; lost=$((lost + 1)); }
    k=$((k + 1))
done
# The cross-half edges were missing while cut and mix again after healing.
cross_after() { awk -v h="$2" -v j="$3" '/"ev":"round"/ { r = $0; sub(/.*"round":/, "", r); r += 0
    if (r > h && index($0, "\"nbrs\":[") && ($0 ~ ("\"nbrs\":\\[([0-9]+,)*" j "[],]"))) n++ } END { print n + 0 }' "$(m "$1")"; }
cross_missing() { grep -c "\"missing\":\[\([0-9]*,\)*$2[],]" "$(m "$1")" || true; }
h3=$(echo $r_heal | cut -d' ' -f4)
for e in "3 4" "4 3" "0 7" "7 0"; do
    set -- $e
    miss=$(cross_missing $1 $2); back=$(cross_after $1 $(( $(echo $r_heal | cut -d' ' -f$(($1 + 1))) + 5 )) $2)
    note "edge $1<-$2: missing in $miss rounds, mixed again in $back rounds after healing"
    [ "$miss" -gt 0 ] || { note "the cut did not cut $1<-$2"; lost=$((lost + 1)); }
    [ "$back" -gt 10 ] || { note "edge $1<-$2 never came back"; lost=$((lost + 1)); }
done

MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$run" --no-plots --csv "$T/report.csv" > "$T/report.txt" 2>&1 || fail "murmur report failed: $(tail -3 "$T/report.txt")"
# consensus per evaluated round: "round consensus method"
awk -F, 'NR > 1 && $3 != "" { print $1, $3, $4 }' "$T/report.csv" > "$T/xi"
[ "$(awk '$3 != "exact"' "$T/xi" | wc -l)" -eq 0 ] || note "some rounds are sketch estimates, not exact"
first_cut=$(echo $r_cut | tr ' ' '\n' | sort -n | head -1)
last_heal=$(echo $r_heal | tr ' ' '\n' | sort -n | tail -1)
pre=$(awk -v c="$first_cut" '$1 <= c { v = $2 } END { print v }' "$T/xi")
peak=$(awk -v c="$first_cut" -v h="$last_heal" '$1 > c && $1 <= h + 20 && $2 > p { p = $2 } END { print p + 0 }' "$T/xi")
# Back = the first evaluated round after healing from which the distance
# stays within 1.25x of the pre-cut level for three evaluations running.
back=$(awk -v h="$last_heal" -v p="$pre" '$1 > h { if ($2 <= 1.25 * p) { if (!s) s = $1; if (++n >= 3) { print s; exit } } else { s = 0; n = 0 } }' "$T/xi")
note "consensus distance by round: $(awk -v c="$first_cut" '$1 >= c - 10 { printf "%s%d:%.3g", (n++ ? " " : ""), $1, $2 }' "$T/xi")"
final=$(tail -1 "$T/xi" | cut -d' ' -f2)
note "consensus distance: $pre before the cut, peak $peak while cut, $final at the end"
awk -v p="$pre" -v k="$peak" 'BEGIN { exit !(k >= 2 * p) }' ||
    { note "the partition did not raise the consensus distance (pre $pre, peak $peak)"; lost=$((lost + 1)); }
if [ -n "$back" ]; then
    # Counted from the earliest peer's round at the heal (the halves drift
    # apart in round numbers while cut; the laggards fast-forward after).
    first_heal=$(echo $r_heal | tr ' ' '\n' | sort -n | head -1)
    rec=$((back - first_heal)); note "back within 1.25x of the pre-partition level at round $back: $rec rounds after the heal (peers were at rounds $first_heal..$last_heal)"
else
    rec=-; note "never back to the pre-partition level"; lost=$((lost + 1))
fi
k=0; while [ $k -lt $N ]; do [ "$(bad_jsonl_lines "$(m $k)")" -eq 0 ] || lost=$((lost + 1)); k=$((k + 1)); done
[ $lost -eq 0 ] || fail "$lost failures"
campaign_line partition 1 1 0 "${rec}rounds"
