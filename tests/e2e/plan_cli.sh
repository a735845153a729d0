# murmur plan from the command line: the worked example of docs/runtime.md
# (table and --json give its figures), a short --calibrate, the link probe
# over loopback, and clear refusals of bad input (exit status 2).
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1
"$MURMUR" plan --help > "$T/help" || fail "murmur plan --help failed"
grep -q -- "--links GxP" "$T/help" || fail "the help names no --links"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
ex="--vector-len 250000 --step-time 0.05 --links 2x2:intra=100mbps,inter=10mbps --payload-share 1"
jnum() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a - b < 1e-6 && b - a < 1e-6) }'; }

# the worked example: ring 200 ms (150 exposed), all-reduce 200 ms, overlapped 150 ms
# (D-PSGD's figures with the peers in step, round_in_step_s; out of step,
# round_s, tests/test_plan.c checks them)
"$MURMUR" plan --topology "$T/ring.topo" $ex --json > "$T/ring.json" || fail "plan (ring) failed"
near "$(jnum "$T/ring.json" round_in_step_s)" 0.2 || fail "ring round in step: $(jnum "$T/ring.json" round_in_step_s), want 0.2"
"$MURMUR" plan --peers 4 --algo allreduce $ex --json > "$T/ar.json" || fail "plan (allreduce) failed"
near "$(jnum "$T/ar.json" allreduce_s)" 0.15 || fail "all-reduce time: $(jnum "$T/ar.json" allreduce_s), want 0.15"
near "$(jnum "$T/ar.json" round_s)" 0.2 || fail "all-reduce round: want 0.2"
"$MURMUR" plan --peers 4 --algo allreduce --overlap $ex --json > "$T/aro.json" || fail "plan (overlap) failed"
near "$(jnum "$T/aro.json" round_s)" 0.15 || fail "overlapped all-reduce round: want 0.15"
"$MURMUR" plan --topology "$T/ring.topo" $ex > "$T/ring.txt" || fail "plan (table) failed"
grep -q "^round        0.2000 s = compute 0.0500 + exposed communication 0.1500" "$T/ring.txt" ||
    { cat "$T/ring.txt" >&2; fail "the table does not give the worked example's round"; }
grep -q "^in step      0.2000 s" "$T/ring.txt" || { cat "$T/ring.txt" >&2; fail "the table gives no in-step round"; }
note "worked example: ring $(jnum "$T/ring.json" round_s) s, all-reduce $(jnum "$T/ar.json" round_s) s, overlapped $(jnum "$T/aro.json" round_s) s"
# the outer optimizer (docs/runtime.md, "The outer optimizer"): the steps
# before the exchange (50 + 200 ms), overlapped as D-PSGD (200 ms), and
# H = 4: one exchange per 4 steps (400 ms a round, 100 ms per step)
"$MURMUR" plan --topology "$T/ring.topo" $ex --outer --json > "$T/o.json" || fail "plan --outer failed"
near "$(jnum "$T/o.json" round_in_step_s)" 0.25 || fail "--outer ring round in step: $(jnum "$T/o.json" round_in_step_s), want 0.25"
"$MURMUR" plan --topology "$T/ring.topo" $ex --outer --overlap --json > "$T/oo.json" || fail "plan --outer --overlap failed"
near "$(jnum "$T/oo.json" round_in_step_s)" 0.2 || fail "--outer --overlap ring round: want 0.2"
"$MURMUR" plan --topology "$T/ring.topo" $ex --outer --local-steps 4 --json > "$T/o4.json" || fail "plan --outer H=4 failed"
near "$(jnum "$T/o4.json" round_in_step_s)" 0.4 || fail "--outer H = 4 round: $(jnum "$T/o4.json" round_in_step_s), want 0.4"
near "$(jnum "$T/o4.json" step_round_s)" "$(awk -v r="$(jnum "$T/o4.json" round_s)" 'BEGIN { print r / 4 }')" ||
    fail "--outer H = 4 per step: want the round / 4"
note "outer: steps first $(jnum "$T/o.json" round_s) s, overlapped $(jnum "$T/oo.json" round_s) s, H = 4 $(jnum "$T/o4.json" round_s) s a round"
# jitter: a long tail raises the ring's round above its no-wait bound
"$MURMUR" plan --topology "$T/ring.topo" $ex --jitter longtail:0.2:0.5 --json > "$T/j.json" || fail "plan (jitter) failed"
awk -v r="$(jnum "$T/j.json" round_s)" -v lo="$(jnum "$T/j.json" bound_lo_s)" 'BEGIN { exit !(r > lo) }' ||
    fail "with a long tail the ring waits on nobody?"
# the lab's stragglers (docs/node.md, "Uneven peers"): one peer of the ring
# twice as slow, 100 ms steps and free links: every D-PSGD round 200 ms
"$MURMUR" plan --topology "$T/ring.topo" --vector-len 1000 --step-time 0.1 --slow 3:2 --json \
    > "$T/slow.json" || fail "plan --slow failed"
near "$(jnum "$T/slow.json" round_s)" 0.2 || awk -v r="$(jnum "$T/slow.json" round_s)" \
    'BEGIN { exit !(r > 0.198 && r < 0.202) }' || fail "--slow 3:2: round $(jnum "$T/slow.json" round_s), want 0.2"
grep -q '"slow":"3:2","stretch":""' "$T/slow.json" || fail "--json does not say --slow"
rc=0; "$MURMUR" plan --topology "$T/ring.topo" --vector-len 1000 --step-time 0.1 --slow 4:2 \
    > /dev/null 2> "$T/slow4.err" || rc=$?
[ $rc -eq 2 ] || fail "--slow 4:2 on 4 peers: exit $rc, not 2"
grep -q "names peer 4, but there are peers 0..3" "$T/slow4.err" || fail "--slow 4:2: $(cat "$T/slow4.err")"
note "--slow 3:2: ring round $(jnum "$T/slow.json" round_s) s (100 ms steps)"

# calibration of a tiny model, and the link probe over loopback
"$MURMUR" plan --calibrate --seconds 0.3 --layers 1 --width 16 --heads 2 --ctx 16 --json > "$T/cal.json" 2> "$T/cal.err" ||
    fail "plan --calibrate failed: $(cat "$T/cal.err")"
for f in sgemm_gflops step_s mix_fps link_bps; do
    awk -v v="$(jnum "$T/cal.json" $f)" 'BEGIN { exit !(v > 0) }' || fail "calibration gave no $f: $(cat "$T/cal.json")"
done
note "calibration: $(cat "$T/cal.json")"
port=$(free_ports 1)
bg "$MURMUR" plan --link-server "127.0.0.1:$port" --timeout 10 2> "$T/srv.err"
"$MURMUR" plan --link-to "127.0.0.1:$port" --seconds 0.3 --json > "$T/link.json" || fail "plan --link-to failed"
wait "$(lastpid)" || fail "the link server failed: $(cat "$T/srv.err")"
awk -v v="$(jnum "$T/link.json" bps)" 'BEGIN { exit !(v > 1e6) }' || fail "loopback link under 1 MB/s: $(cat "$T/link.json")"

# refusals: exit 2 and a message that names the problem
refuse() { # pattern, args...
    pat=$1; shift
    st=0; "$MURMUR" plan "$@" > "$T/bad.out" 2> "$T/bad.err" || st=$?
    [ $st = 2 ] || fail "plan $*: exit $st, want 2"
    grep -q -- "$pat" "$T/bad.err" || fail "plan $*: no '$pat' in: $(cat "$T/bad.err")"
}
refuse "GxP" --topology "$T/ring.topo" --vector-len 10 --step-time 0 --links 2x
refuse "is not KEY=RATE" --topology "$T/ring.topo" --vector-len 10 --step-time 0 --links 2x2:inter=fast
refuse "step-time" --topology "$T/ring.topo" --vector-len 10
refuse "longtail" --topology "$T/ring.topo" --vector-len 10 --step-time 0 --jitter longtail:3:1
refuse "dpsgd, pushsum, async or allreduce" --topology "$T/ring.topo" --vector-len 10 --step-time 0 --algo gossip
refuse "unknown option" --topology "$T/ring.topo" --frobnicate
refuse "not both" --topology "$T/ring.topo" --vector-len 10 --layers 2 --step-time 0
refuse "--peers 5" --topology "$T/ring.topo" --peers 5 --vector-len 10 --step-time 0
# a profile of 3 peers for a 4-peer topology: a usage error, in the flags' words
refuse "is 3 x 1 = 3 peers" --topology "$T/ring.topo" --vector-len 10 --step-time 0 --links 3x1:inter=1mbit
# what murmur node refuses, plan refuses too (its own check, in its words)
refuse "runs over --algo dpsgd or allreduce, not async" --topology "$T/ring.topo" --vector-len 10 \
    --step-time 0 --algo async --outer
refuse "runs over --algo dpsgd or allreduce, not pushsum" --topology "$T/ring.topo" --vector-len 10 \
    --step-time 0 --algo pushsum --outer
refuse "runs one exchange a round: drop --gossip-steps" --topology "$T/ring.topo" --vector-len 10 \
    --step-time 0 --outer --gossip-steps 3
refuse "--algo allreduce has none" --peers 4 --algo allreduce --vector-len 10 --step-time 0 \
    --gossip-steps 2
# G exchanges a round: the per-step line says so (it said "one exchange per round")
"$MURMUR" plan --topology "$T/ring.topo" --vector-len 1000 --step-time 0.01 --gossip-steps 3 \
    > "$T/g3.out" || fail "plan --gossip-steps 3 failed"
grep -q "^per step .*; 3 exchanges per round)" "$T/g3.out" || { cat "$T/g3.out" >&2; fail "the per-step line with --gossip-steps 3"; }
"$MURMUR" plan --peers 4 --algo allreduce --vector-len 1000 --step-time 0.01 > "$T/ar.out" ||
    fail "plan --algo allreduce failed"
grep -q "^per step .*; one all-reduce per round)" "$T/ar.out" || { cat "$T/ar.out" >&2; fail "the per-step line of the all-reduce"; }
st=0; "$MURMUR" plan --topology "$T/nothere.topo" --vector-len 10 --step-time 0 2> "$T/bad.err" || st=$?
[ $st = 1 ] || fail "a missing topology file: exit $st"
echo "ok: murmur plan"
