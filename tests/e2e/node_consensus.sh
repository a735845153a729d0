# Consensus control with real peers (plaintext, tiny model; docs/node.md,
# "Consensus control"):
#  1. --gossip-steps-schedule 0:3,4:1 runs rounds 0..3 exactly as
#     --gossip-steps 3 (the round-4 snapshots equal bit for bit), then one
#     exchange a round, and every round line says how many it ran;
#  2. --consensus-target: the two ends of every edge agree, every round, on
#     how many exchanges they had (nbr_exchanges), and it is the smaller of
#     what the two wanted: peers with a tiny target reach
#     --max-gossip-steps between them, and have one exchange with a peer
#     whose target is huge;
#  3. a peer SIGKILLed mid-run: the others finish (no hang), keep agreeing
#     and keep running several exchanges with each other; the dead peer's
#     neighbours list it missing and drop its edge after the first exchange;
#     3b. the same below one exchange a round (--min-gossip-steps): the
#     edges skip rounds, both ends agree on which, a dead peer breaks
#     nothing.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring4.topo"
"$MURMUR" topo gen ring -n 5 > "$T/ring5.topo"
MODEL="--data $T/data --partition genre --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --lr 1e-2"

# start NAME TOPO N [flags...]: N peers in the background ($T/NAME/), pids in $PIDS.
# PEER_FLAGS_K (if set) adds flags to peer K only.
start() {
    name=$1 topo=$2 n=$3; shift 3
    port=$(free_ports "$n")
    PIDS=""
    for k in $(seq 0 $((n - 1))); do
        eval "extra=\${PEER_FLAGS_$k:-}"
        # shellcheck disable=SC2086
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id "$k" --topology "$topo" --base-port "$port" \
            --plaintext --run-dir "$T/$name" --log-every 0 --eval-every 0 $MODEL "$@" $extra \
            > "$T/$name-$k.out" 2>&1 &
        PIDS="$PIDS $!"; E2E_PIDS="$E2E_PIDS $!"
    done
}
ended_done() { # NAME PEER...
    name=$1; shift
    for k in "$@"; do
        grep -q '"ev":"end".*"reason":"done"' "$T/$name/node-$k/metrics.jsonl" ||
            { tail -n 5 "$T/$name-$k.out" >&2; fail "$name: peer $k did not end normally"; }
    done
}
# edges NAME: "round i j count" for every round line's nbr_exchanges entry
edges() {
    cat "$T/$1"/node-*/metrics.jsonl | awk '/"ev":"round"/ {
        match($0, /"peer":[0-9]+/); i = substr($0, RSTART + 7, RLENGTH - 7)
        match($0, /"round":[0-9]+/); r = substr($0, RSTART + 8, RLENGTH - 8)
        if (!match($0, /"nbr_exchanges":\{[^}]*\}/)) next
        o = substr($0, RSTART + 17, RLENGTH - 18)
        n = split(o, kv, ",")
        for (k = 1; k <= n; k++) { split(kv[k], p, ":"); gsub(/"/, "", p[1]); print r, i, p[1], p[2] }
    }'
}
# disagreements NAME [DEAD]: edges whose two ends logged different counts
# for the same round (rounds both ends logged; edges to DEAD left out)
disagreements() {
    edges "$1" | awk -v dead="${2:--1}" '$2 != dead && $3 != dead {
        key = ($2 < $3) ? $1 " " $2 " " $3 : $1 " " $3 " " $2
        if (key in c) { if (c[key] != $4) print key, c[key], $4; delete c[key] } else c[key] = $4
    }'
}

# ---- 0. flags that cannot work together are refused before anything starts --
refused() { # WHAT-THE-MESSAGE-SAYS FLAGS...
    want=$1; shift
    rc=0
    "$MURMUR" node --id 0 --topology "$T/ring4.topo" --plaintext --run-dir "$T/refused" \
        "$@" > "$T/refused.out" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || fail "exit status $rc (not 2) for: $*"
    grep -q -- "$want" "$T/refused.out" || fail "'$*' refused without saying '$want': $(cat "$T/refused.out")"
}
refused "not both" --gossip-steps 2 --gossip-steps-schedule 0:1
refused "drop --gossip-steps" --consensus-target 0.1 --gossip-steps 2
refused "drop --gossip-steps" --consensus-target 0.1 --gossip-steps-schedule 0:1
refused "needs --algo dpsgd" --consensus-target 0.1 --algo async
refused "bounds --consensus-target" --max-gossip-steps 4
refused "must be for round 0" --gossip-steps-schedule 5:2
refused "must increase" --gossip-steps-schedule 0:2,9:1,9:3
refused "ROUND:STEPS" --gossip-steps-schedule 0:0
refused "max-gossip-steps" --consensus-target 0.1 --max-gossip-steps 65
refused "bounds --consensus-target" --min-gossip-steps 0.5
refused "min-gossip-steps" --consensus-target 0.1 --min-gossip-steps 0.001
"$MURMUR" topo gen one-peer-exp -n 4 > "$T/ope4.topo"
set +e
"$MURMUR" node --id 0 --topology "$T/ope4.topo" --plaintext --run-dir "$T/ope" --no-train \
    --vector-len 10 --consensus-target 0.1 > "$T/ope.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "one-peer-exp with --consensus-target exited $rc, not 2 (a configuration refusal)"
grep -q "every round is undirected" "$T/ope.out" || fail "one-peer-exp refused without saying why"
note "incompatible flags and a directed schedule are refused with the reason"

# ---- 1. the schedule ------------------------------------------------------
start fixed "$T/ring4.topo" 4 --rounds 8 --snapshot-every 4 --gossip-steps 3 --round-timeout 30000
wait_all $PIDS || fail "fixed: a peer exited non-zero"
start sched "$T/ring4.topo" 4 --rounds 8 --snapshot-every 4 --gossip-steps-schedule 0:3,4:1 \
    --round-timeout 30000
wait_all $PIDS || fail "sched: a peer exited non-zero"
ended_done fixed 0 1 2 3
ended_done sched 0 1 2 3
for k in 0 1 2 3; do
    cmp -s "$T/fixed/node-$k/snap/r00000004.bin" "$T/sched/node-$k/snap/r00000004.bin" ||
        fail "schedule: peer $k's parameters after round 3 differ from --gossip-steps 3"
    ex=$(jfield "$T/sched/node-$k/metrics.jsonl" round exchanges | tr '\n' ' ')
    [ "$ex" = "3 3 3 3 1 1 1 1 " ] || fail "schedule: peer $k ran exchanges '$ex', not 3 3 3 3 1 1 1 1"
done
note "schedule 0:3,4:1: rounds 0-3 bit-identical to --gossip-steps 3, then 1 exchange a round"

# ---- 2. agreement, and the smaller of the two wishes ------------------------
PEER_FLAGS_1="--consensus-target 1e9"
start agree "$T/ring5.topo" 5 --rounds 60 --consensus-target 1e-9 --max-gossip-steps 4 \
    --round-timeout 30000
PEER_FLAGS_1=""
wait_all $PIDS || fail "agree: a peer exited non-zero"
ended_done agree 0 1 2 3 4
bad=$(disagreements agree)
[ -z "$bad" ] || fail "agree: the ends of an edge disagree (round i j count_i count_j):
$bad"
# from round 20 on: 4 exchanges on 2-3, 3-4, 4-0; 1 on the edges of peer 1
wrong=$(edges agree | awk '$1 >= 20 {
    want = ($2 == 1 || $3 == 1) ? 1 : 4
    if ($4 != want) print }')
[ -z "$wrong" ] || fail "agree: edges with other counts than min(wanted) (round i j count):
$(echo "$wrong" | head -5)"
rounds=$(edges agree | awk '$1 >= 20' | wc -l)
[ "$rounds" -eq 400 ] || fail "agree: $rounds edge records from round 20 on, not 5 peers x 2 x 40"
ex0=$(jfield "$T/agree/node-0/metrics.jsonl" round exchanges | tail -n 1)
ex1=$(jfield "$T/agree/node-1/metrics.jsonl" round exchanges | tail -n 1)
[ "$ex0" = 4 ] && [ "$ex1" = 1 ] || fail "agree: peer 0 ran $ex0 exchanges, peer 1 $ex1 (want 4, 1)"
note "consensus target: every edge agreed every round; 4 exchanges between tiny targets, 1 with the huge one"

# ---- 3. a peer SIGKILLed mid-run ---------------------------------------------
start kill "$T/ring5.topo" 5 --rounds 400 --consensus-target 1e-9 --max-gossip-steps 4 \
    --round-timeout 10000 --peer-timeout 3000
victim=$(echo $PIDS | cut -d' ' -f3)
survivors=$(echo $PIDS | cut -d' ' -f1,2,4,5)
i=0
until [ "$(grep -c '"ev":"round"' "$T/kill/node-2/metrics.jsonl" 2>/dev/null)" -ge 100 ] 2>/dev/null; do
    i=$((i + 1)); [ $i -le 600 ] || fail "kill: peer 2 did not reach round 100 in 30 s"
    sleep 0.05
done
kill -9 "$victim"
killed_at=$(grep -c '"ev":"round"' "$T/kill/node-2/metrics.jsonl")
t0=$(date +%s)
# a watchdog: SIGKILL the survivors if they hang 60 s. Its sleep is a
# process of its own, killed with it: a sleep left behind would hold the
# test's output open for a minute after the test ended.
sleep 60 > /dev/null 2>&1 &
nap=$!
( while kill -0 "$nap" 2>/dev/null; do sleep 0.2; done; kill -9 $survivors 2>/dev/null ) \
    > /dev/null 2>&1 &
dog=$!
E2E_PIDS="$E2E_PIDS $nap $dog"
wait_all $survivors || fail "kill: a survivor exited non-zero or hung (killed after 60 s)"
kill "$dog" 2>/dev/null || true
kill "$nap" 2>/dev/null || true
took=$(( $(date +%s) - t0 ))
ended_done kill 0 1 3 4
bad=$(disagreements kill 2)
[ -z "$bad" ] || fail "kill: surviving edges disagree (round i j count_i count_j):
$(echo "$bad" | head -5)"
# the last 100 rounds: 4 exchanges on 3-4, 4-0, 0-1; only the first (where
# it is found missing) with the dead peer
late=$(edges kill | awk '$1 >= 300 {
    want = ($2 == 2 || $3 == 2) ? 1 : 4
    if ($4 != want) print }')
[ -z "$late" ] || fail "kill: last 100 rounds (round i j count):
$(echo "$late" | head -5)"
for k in 1 3; do
    m=$(grep '"ev":"round"' "$T/kill/node-$k/metrics.jsonl" | tail -n 1)
    case $m in *'"missing":[2]'*) ;; *) fail "kill: peer $k's last round does not list 2 missing: $m" ;; esac
done
note "SIGKILL of peer 2 after round $killed_at: the 4 others finished $took s later, still agreeing, 4 exchanges a round"
# ---- 3b. skipping rounds (--min-gossip-steps < 1), and a peer SIGKILLed ----
# A target far above what the ring reaches: the levels fall to the floor
# (1/32 exchanges a round) and the edges skip most rounds; both ends of
# every edge still agree on every round (0 exchanges on both, or the same
# count), the dead peer's edges are missing, not skipped, every round.
# Stride 64 (--max-gossip-steps 64): neighbours up to 32 rounds apart are
# 2048 exchange numbers apart, beyond the transport's default window of
# 1000; with skipping the node widens it, and no vector may be refused.
start skip "$T/ring5.topo" 5 --rounds 400 --consensus-target 1e9 --min-gossip-steps 0.03125 \
    --max-gossip-steps 64 --round-timeout 10000 --peer-timeout 3000
victim=$(echo $PIDS | cut -d' ' -f3)
survivors=$(echo $PIDS | cut -d' ' -f1,2,4,5)
i=0
until [ "$(grep -c '"ev":"round"' "$T/skip/node-2/metrics.jsonl" 2>/dev/null)" -ge 150 ] 2>/dev/null; do
    i=$((i + 1)); [ $i -le 1200 ] || fail "skip: peer 2 did not reach round 150 in 60 s"
    sleep 0.05
done
kill -9 "$victim"
killed_at=$(grep -c '"ev":"round"' "$T/skip/node-2/metrics.jsonl")
t0=$(date +%s)
sleep 60 > /dev/null 2>&1 &
nap=$!
( while kill -0 "$nap" 2>/dev/null; do sleep 0.2; done; kill -9 $survivors 2>/dev/null ) \
    > /dev/null 2>&1 &
dog=$!
E2E_PIDS="$E2E_PIDS $nap $dog"
wait_all $survivors || fail "skip: a survivor exited non-zero or hung (killed after 60 s)"
kill "$dog" 2>/dev/null || true
kill "$nap" 2>/dev/null || true
took=$(( $(date +%s) - t0 ))
ended_done skip 0 1 3 4
bad=$(disagreements skip 2)
[ -z "$bad" ] || fail "skip: the ends of an edge disagree (round i j count_i count_j):
$(echo "$bad" | head -5)"
# rounds 100..399 on the edges between survivors: exchanges in a few
# percent of them (the floor is 1/32), never none at all
rate=$(edges skip | awk '$1 >= 100 && $2 != 2 && $3 != 2 { n++; x += ($4 > 0) }
    END { printf "%.4f", n ? x / n : -1 }')
awk -v r="$rate" 'BEGIN { exit !(r > 0.005 && r < 0.1) }' ||
    fail "skip: surviving edges exchanged in a fraction $rate of rounds 100..399, not 1/32 or so"
for k in 1 3; do
    m=$(grep '"ev":"round"' "$T/skip/node-$k/metrics.jsonl" | tail -n 1)
    case $m in *'"missing":[2]'*) ;; *) fail "skip: peer $k's last round does not list 2 missing: $m" ;; esac
    case $m in *'"skipped":['*'2'*']'*) fail "skip: peer $k lists the dead peer as skipped: $m" ;; esac
done
refused=$(cat "$T"/skip-*.out "$T"/skip/node-*/node.log 2>/dev/null | grep -c 'outside the window' || true)
[ "$refused" -eq 0 ] || fail "skip: $refused vectors refused as outside the window (neighbours rounds apart)"
zero=$(jfield "$T/skip/node-0/metrics.jsonl" round exchanges | awk '$1 == 0' | wc -l)
[ "$zero" -gt 300 ] || fail "skip: peer 0 had only $zero rounds without an exchange of 400"
note "skipping rounds: edges exchanged in $rate of rounds 100-399 (floor 1/32), always agreed; SIGKILL of peer 2 after round $killed_at: the others finished $took s later"

# ---- 4. catching up across a schedule's change ------------------------------
# Stride 2 (schedule 0:2,20:1): from round 20 on, round r's only exchange is
# 2r on the wire. A peer restarted from an old checkpoint jumps to its
# neighbours' round, exchange / 2 (with the numbering r*G(r) + g it would
# read r / 2 and stay behind). Open-ended, stopped with SIGTERM.
"$MURMUR" topo gen ring -n 3 > "$T/ring3.topo"
start ff "$T/ring3.topo" 3 --rounds 1000000 --gossip-steps-schedule 0:2,20:1 \
    --checkpoint-every 10 --round-timeout 2000 --peer-timeout 3000
rounds_of() { grep -c '"ev":"round"' "$T/ff/node-$1/metrics.jsonl" 2>/dev/null; }
wait_rounds() { # PEER N: up to 30 s
    i=0
    until [ "$(rounds_of "$1")" -ge "$2" ] 2>/dev/null; do
        i=$((i + 1)); [ $i -le 600 ] || fail "ff: peer $1 did not reach $2 rounds"; sleep 0.05
    done
}
set -- $PIDS
p0=$1 p1=$2 p2=$3
wait_rounds 2 45
kill -9 "$p2"; wait "$p2" 2>/dev/null || true
killed_at=$(rounds_of 2)
wait_rounds 0 $((killed_at + 100))
before=$(rounds_of 0) # peer 0 is at least at this round when peer 2 comes back
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 2 --topology "$T/ring3.topo" --base-port "$port" \
    --plaintext --run-dir "$T/ff" --log-every 0 --eval-every 0 $MODEL --rounds 1000000 \
    --gossip-steps-schedule 0:2,20:1 --checkpoint-every 10 --round-timeout 2000 \
    --peer-timeout 3000 --resume > "$T/ff-2b.out" 2>&1 &
p2=$!; E2E_PIDS="$E2E_PIDS $p2"
i=0
until grep -q "skipping from round" "$T/ff-2b.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -le 600 ] || fail "ff: the restarted peer never caught up"; sleep 0.05
done
kill -TERM "$p0" "$p1" "$p2"
wait_all "$p0" "$p1" "$p2" || fail "ff: a peer did not exit 0 on SIGTERM"
jump=$(sed -n 's/.*neighbours are at round \([0-9]*\): skipping from round \([0-9]*\).*/\2 \1/p' \
    "$T/ff-2b.out" | head -n 1)
set -- $jump
resumed=$(jfield "$T/ff/node-2/metrics.jsonl" start resumed_round | tail -n 1)
[ "$resumed" -gt 0 ] && [ "$resumed" -le "$killed_at" ] ||
    fail "ff: peer 2 resumed at round $resumed, killed after $killed_at rounds"
[ "$2" -ge "$before" ] ||
    fail "ff: restarted peer jumped from round $1 to $2, but its neighbours were past round $before"
note "schedule 0:2,20:1: a peer resumed at round $resumed jumped from round $1 to its neighbours' round $2 (>= $before)"
echo "ok: schedule, agreement, a killed peer, skipping rounds with a killed peer, catching up"
