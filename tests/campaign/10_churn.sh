#!/bin/sh
# Campaign 10, churn (issue 35; docs/membership.md): an elastic run (a ring
# family) of N peers (short 8, full 16; CHURN_PEERS overrides) for R rounds
# (short 240, full 600; within CHURN_SECONDS, short 150, full 420), pure
# gossip paced by --compute-jitter. Every ~30
# rounds of peer 0 (which stays) one change, in turn: a new peer joins
# through a random live member; a random live member leaves (SIGTERM); a new
# peer joins; a random live member crashes (SIGKILL, for good). Bounded:
# at most R/30 changes, and the whole run within a deadline. Then:
#  * every peer alive at the end ends `done`, every SIGTERMed one `left`;
#  * no id clash: no join refused, no peer's log says its id is taken;
#  * nobody isolated: no end `isolated`, and every peer mixed a neighbour
#    in at least 90 % of its rounds as a member;
#  * no asymmetric mix: for every round both ends logged, j in i's nbrs
#    exactly when i is in j's (W symmetric, as a doubly stochastic D-PSGD
#    W must be), from the round lines;
#  * consensus distance bounded: the exact consensus distance of the last
#    snapshot (murmur report) below a tenth of the first's.
# Prints the changes, the views' sizes and the consensus distance.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib/faults.sh"
N=${CHURN_PEERS:-$(pick 8 16)}
R=$(pick 240 600)
every=30
MAXP=$((N + R / every + 2))
"$MURMUR" topo gen ring -n "$N" --family > "$T/ring.topo" 2>/dev/null || fail "topo gen ring --family"
port=$(free_ports "$MAXP")
run="$T/run"
common="--plaintext --no-train --vector-len 2000 --compute-jitter uniform:0.02
        --log-every 0 --eval-every 0 --snapshot-every 40 --suspect-ms 1000 --peer-timeout 2000
        --round-timeout 10000 --view-delay 5 --max-peers $MAXP --rounds $R
        --topology $T/ring.topo --base-port $port --run-dir $run"
m() { echo "$run/node-$1/metrics.jsonl"; }
live=""      # ids running now
start_peer() { # K [VIA]
    if [ $# -eq 2 ]; then
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$1" --join "127.0.0.1:$((port + $2))" $common \
            > "$T/p$1.out" 2>&1 &
    else
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$1" $common > "$T/p$1.out" 2>&1 &
    fi
    eval "pid_$1=$!"; E2E_PIDS="$E2E_PIDS $!"; live="$live $1"
}
pick_live() { # a random live id other than 0
    set -- $(echo $live | tr ' ' '\n' | grep -vx 0)
    [ $# -gt 0 ] || return 1
    i=$(( $(rand $#) + 1 )); eval "echo \${$i}"
}
k=0; while [ $k -lt "$N" ]; do start_peer $k; k=$((k + 1)); done
next=$N
deadline=$(( $(date +%s) + ${CHURN_SECONDS:-$(pick 150 420)} ))
changes=0 left_ids="" killed_ids="" joined_ids="" kind=0 at=$every
log=""
while [ $at -lt $((R - 40)) ]; do
    until [ "$(last_round "$(m 0)")" ] && [ "$(last_round "$(m 0)")" -ge $at ]; do
        sleep 0.1
        [ "$(date +%s)" -lt $deadline ] || fail "peer 0 did not reach round $at by the deadline (at $(last_round "$(m 0)"))"
        kill -0 "$pid_0" 2>/dev/null || fail "peer 0 exited before round $at: $(tail -2 "$T/p0.out")"
    done
    case $kind in
    0|2) via=$(pick_live || echo 0); start_peer $next "$via"
         log="$log +$next@$at"; joined_ids="$joined_ids $next"; next=$((next + 1)) ;;
    1)   v=$(pick_live) || fail "no live peer to stop"; eval "kill -TERM \$pid_$v"
         live=$(echo $live | tr ' ' '\n' | grep -vx "$v" | tr '\n' ' ')
         log="$log -$v(leave)@$at"; left_ids="$left_ids $v" ;;
    3)   v=$(pick_live) || fail "no live peer to kill"; eval "kill -KILL \$pid_$v"
         live=$(echo $live | tr ' ' '\n' | grep -vx "$v" | tr '\n' ' ')
         log="$log -$v(crash)@$at"; killed_ids="$killed_ids $v" ;;
    esac
    changes=$((changes + 1)); kind=$(( (kind + 1) % 4 )); at=$((at + every))
done
note "changes:$log"
# everyone still alive finishes by itself
for v in $live $left_ids; do
    eval "p=\$pid_$v"
    while kill -0 "$p" 2>/dev/null; do
        sleep 0.2
        [ "$(date +%s)" -lt $((deadline + 60)) ] || fail "peer $v still runs past the deadline (round $(last_round "$(m "$v")"))"
    done
done
lost=0
end_of() { grep '"ev":"end"' "$(m "$1")" | tail -1 | sed -n 's/.*"reason":"\([a-z_]*\)".*/\1/p'; }
for v in $live; do
    [ "$(end_of "$v")" = done ] || { echo "peer $v ended '$(end_of "$v")', not done: $(tail -2 "$T/p$v.out")" >&2; lost=$((lost + 1)); }
done
for v in $left_ids; do
    [ "$(end_of "$v")" = left ] || { echo "peer $v (SIGTERM) ended '$(end_of "$v")', not left" >&2; lost=$((lost + 1)); }
done
grep -l "join refused\|a joiner needs an id of its own\|is a member connected here" "$T"/p*.out 2>/dev/null |
    head -1 | grep -q . && { echo "an id clash or a refused join: $(grep -h 'join refused' "$T"/p*.out | head -2)" >&2; lost=$((lost + 1)); }
grep -l '"reason":"isolated"' "$run"/node-*/metrics.jsonl 2>/dev/null | grep -q . &&
    { echo "a peer ended isolated" >&2; lost=$((lost + 1)); }
# mixed a neighbour in >= 90 % of its rounds as a member (rounds with a
# view that holds it: after a joiner's joined_round)
for f in "$run"/node-*/metrics.jsonl; do
    awk '/"ev":"start"/ { j = -1; if (match($0, /"joined_round":[0-9]+/)) j = substr($0, RSTART + 15, RLENGTH - 15) + 0 }
         /"ev":"round"/ { r = $0; sub(/.*"round":/, "", r); r += 0; if (r < j) next
                          n++; if ($0 ~ /"nbrs":\[[0-9]/) w++ }
         END { if (n > 10 && w < 0.9 * n) { print FILENAME ": mixed in " w " of " n " rounds"; exit 1 } }' "$f" >&2 ||
        lost=$((lost + 1))
done
# symmetric mixing: "r i j" for every j in i's nbrs; both ends' lines needed
for f in "$run"/node-*/metrics.jsonl; do
    grep '"ev":"round"' "$f" | sed -n 's/.*"peer":\([0-9]*\),"round":\([0-9]*\),.*"nbrs":\[\([0-9,]*\)\].*/\2 \1 \3/p'
done | awk '{ have[$1 " " $2] = 1; n = split($3, a, ","); for (x = 1; x <= n; x++) if (a[x] != "") e[$1 " " $2 " " a[x]] = 1 }
    END { for (k in e) { split(k, p, " "); if (have[p[1] " " p[3]] && !((p[1] " " p[3] " " p[2]) in e)) { bad++; if (bad <= 3) print "round " p[1] ": " p[2] " mixed " p[3] ", not the reverse" } ; pairs++ }
          print "asym " bad + 0 " of " pairs }' > "$T/asym.txt"
asym=$(sed -n 's/^asym \([0-9]*\) of.*/\1/p' "$T/asym.txt")
[ "$asym" = 0 ] || { cat "$T/asym.txt" >&2; lost=$((lost + 1)); }
MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$run" --no-plots > "$T/report.txt" 2>&1 || true
xis=$(awk '/^ *round +peers +consensus/ { on = 1; next } on && NF == 0 { on = 0 } on && $1 ~ /^[0-9]+$/ { print $3 }' "$T/report.txt")
first=$(echo "$xis" | head -1); last=$(echo "$xis" | tail -1)
[ -n "$first" ] && [ -n "$last" ] || { echo "no consensus rows in the report: $(head -20 "$T/report.txt")" >&2; lost=$((lost + 1)); }
if [ -n "$first" ] && [ -n "$last" ]; then
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 10) }' ||
        { echo "consensus distance $first at the first snapshot, $last at the last: not below a tenth" >&2; lost=$((lost + 1)); }
fi
views=$(grep -h '"ev":"view"' "$(m 0)" | sed -n 's/.*"members_n":\([0-9]*\).*/\1/p' | tr '\n' ' ')
note "peer 0's views: $views; consensus $first -> $last; $(cat "$T/asym.txt") directed mixes asymmetric"
note "summary: $(grep -A6 '^membership' "$T/report.txt" | head -1)"
survived=$(echo $live | wc -w)
campaign_line churn "$changes" "$survived" "$lost" "-"
[ "$lost" -eq 0 ]
