#!/bin/sh
# scripts/run-local.sh and scripts/compare.sh with a stand-in for
# `murmur node` (a shell script writing metrics in the documented format)
# and the real `murmur report`: a clean run, a failing peer, Ctrl-C, a name
# already taken, bad usage, a comparison of two topologies, a killed peer,
# --resume, and a peer restarted by hand.
set -u
root=$(pwd)
[ -x "$root/murmur" ] || { echo "build ./murmur first"; exit 1; }
tmp=$(mktemp -d /tmp/mm-launch-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # description, then a command that must succeed
    what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

# The stand-in: `node` writes FAKE_ROUNDS rounds (an eval every 2, with a
# 4-float sketch that shrinks towards agreement, and an empty checkpoint.bin
# as its checkpoint; `node --dry-run` says the flags are valid and writes
# nothing), FAKE_FAIL=K makes peer K
# exit 3 after one round, FAKE_KILL=K makes peer K kill itself with SIGKILL
# after one round (no end line); SIGTERM ends it with reason "signal".
cat >"$tmp/murmur" <<FAKE
#!/bin/sh
case \$1 in
--version) echo "murmur 0.0.0-fake"; exit 0 ;;
report|topo) exec "$root/murmur" "\$@" ;;
node) ;;
*) exit 2 ;;
esac
shift
id='' rd='' topo='' dry=0
while [ \$# -gt 0 ]; do
    case \$1 in
    --id) id=\$2; shift 2 ;;
    --run-dir) rd=\$2; shift 2 ;;
    --topology) topo=\$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    *) echo "flag \$1" >&2; shift ;;
    esac
done
# the launchers' check of the node flags (murmur node --dry-run): valid
[ \$dry = 1 ] && { echo "murmur node: the flags are valid (fake)"; exit 0; }
m=\$rd/node-\$id/metrics.jsonl
mkdir -p "\$rd/node-\$id"
exec 8>>"\$rd/node-\$id/node.log" # the node's lock: one process per peer
flock -n 8 || { echo "node-\$id in use" >&2; exit 2; }
r=0
trap 'echo "{\"ev\":\"end\",\"round\":\$r,\"step\":\$r,\"time\":1,\"reason\":\"signal\"}" >>"\$m"; exit 0' TERM
echo "{\"ev\":\"start\",\"peer\":\$id,\"n_peers\":3,\"params\":4,\"algo\":\"dpsgd\",\"topology\":\"\$(basename "\$topo")\",\"sketch_dim\":4,\"sketch_seed\":1,\"resumed_round\":0,\"time\":0}" >>"\$m"
while [ \$r -lt \${FAKE_ROUNDS:-4} ]; do
    echo "{\"ev\":\"round\",\"round\":\$r,\"step\":\$r,\"time\":\$r.5,\"loss\":3.\$r,\"lr\":0.1,\"bytes_sent\":\$((r * 100 + 100)),\"bytes_recv\":0,\"t_compute\":0.2,\"t_comm\":0.1,\"t_wait\":0.1,\"nbrs\":2,\"missing\":0,\"dist\":{}}" >>"\$m"
    if [ \$((r % 2)) = 1 ]; then
        echo "{\"ev\":\"eval\",\"round\":\$r,\"step\":\$r,\"time\":\$r.6,\"val_loss\":2.\$r,\"val_bpb\":1,\"val_acc\":0.\$((id + 1))\$r,\"norm\":1,\"sketch\":[\$id,0,1,\$((id * 2))e-\$r]}" >>"\$m"
        : >"\$rd/node-\$id/checkpoint.bin"
    fi
    [ "\${FAKE_FAIL:-x}" = "\$id" ] && exit 3
    [ "\${FAKE_KILL:-x}" = "\$id" ] && kill -KILL \$\$
    sleep 0.2
    r=\$((r + 1))
done
echo "{\"ev\":\"end\",\"round\":\$r,\"step\":\$r,\"time\":\$r,\"reason\":\"done\"}" >>"\$m"
exit 0
FAKE
chmod +x "$tmp/murmur"
cat >"$tmp/make-certs.sh" <<'CERTS'
mkdir -p "$1" && : >"$1/ca.pem" && k=0 && while [ $k -lt "$2" ]; do : >"$1/node-$k.pem"; : >"$1/node-$k.key"; k=$((k + 1)); done
CERTS
"$root/murmur" topo gen ring -n 3 >"$tmp/ring-3.topo"
"$root/murmur" topo gen complete -n 3 >"$tmp/full-3.topo"
export MURMUR="$tmp/murmur" MAKE_CERTS="$tmp/make-certs.sh" RUNS="$tmp/runs"
rl() { sh "$root/scripts/run-local.sh" "$@"; }

# 1. a clean run
FAKE_ROUNDS=8 rl -n 3 -t "$tmp/ring-3.topo" -r clean -p 31000 -i 1 -- --seed 7 --lr "a \"b\"" >"$tmp/clean.out" 2>&1
check "clean run exits 0" [ $? -eq 0 ]
d=$tmp/runs/clean
check "manifest written" [ -f "$d/manifest.json" ]
check "certs made" [ -f "$d/certs/node-2.key" ]
check "topology copied" cmp -s "$d/topology.txt" "$tmp/ring-3.topo"
sha=$(sha256sum "$tmp/ring-3.topo" | cut -d' ' -f1)
check "manifest records sha256, seed, version" grep -q "\"sha256\": \"$sha\"" "$d/manifest.json"
check "manifest seed" grep -q '"seed": "7"' "$d/manifest.json"
check "manifest version" grep -q '"version": "murmur 0.0.0-fake"' "$d/manifest.json"
if command -v python3 >/dev/null 2>&1; then
    check "manifest is valid JSON" python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['node_flags'][-1]=='a \"b\"' and m['n_peers']==3" "$d/manifest.json"
fi
check "progress lines printed" grep -q 'peers [0-9]/3 running | round' "$tmp/clean.out"
check "report ran at the end" grep -q '^csv: ' "$tmp/clean.out"
check "report.csv has 4 eval rows" [ "$(wc -l <"$d/report.csv")" -eq 5 ]
check "all peers done" [ "$(grep -l '"reason":"done"' "$d"/node-*/metrics.jsonl | wc -l)" -eq 3 ]

# 2. a failing peer makes the launcher fail
FAKE_FAIL=1 rl -n 3 -t "$tmp/ring-3.topo" -r failing -p 31010 -i 1 --no-report >"$tmp/fail.out" 2>&1
rc=$?
check "failing peer -> exit 1 (got $rc)" [ $rc -eq 1 ]
check "failing peer named" grep -q 'peer 1 exited with status 3' "$tmp/fail.out"

# 3. a name already taken
rl -n 3 -t "$tmp/ring-3.topo" -r clean -p 31020 >"$tmp/taken.out" 2>&1
rc=$?
check "existing run refused (exit $rc)" [ $rc -eq 1 ]
check "existing run: message" grep -q 'already exists' "$tmp/taken.out"

# 4. bad usage
rl -n x -t "$tmp/ring-3.topo" -r u >/dev/null 2>&1
check "bad -n is a usage error" [ $? -eq 2 ]
rl -n 3 -t "$tmp/nope.topo" -r u >/dev/null 2>&1
check "missing topology file fails" [ $? -eq 1 ]

# 5. Ctrl-C: SIGINT to the launcher stops every peer cleanly. A background
# job of a non-interactive shell starts with SIGINT ignored, so start the
# launcher through coreutils' env with SIGINT back to its default. It is
# started directly, not through rl(): $! must be the launcher itself.
sig=INT
FAKE_ROUNDS=1000 env --default-signal=INT sh "$root/scripts/run-local.sh" -n 3 \
    -t "$tmp/ring-3.topo" -r ctrlc -p 31030 -i 1 --no-report >"$tmp/int.out" 2>&1 &
lp=$!
i=0
while [ $i -lt 50 ] && [ "$(cat "$tmp"/runs/ctrlc/node-*/metrics.jsonl 2>/dev/null | grep -c '"ev":"round"')" -lt 6 ]; do
    sleep 0.2; i=$((i + 1))
done
kill -$sig $lp
i=0
while [ $i -lt 100 ] && kill -0 $lp 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
check "launcher ended within 10 s of SIG$sig" sh -c "! kill -0 $lp 2>/dev/null"
wait $lp
rc=$?
check "interrupted launcher exits 130 (got $rc)" [ $rc -eq 130 ]
alive=0
for f in "$tmp"/runs/ctrlc/launch/node-*.pid; do kill -0 "$(cat "$f")" 2>/dev/null && alive=$((alive + 1)); done
check "no peer left running" [ $alive -eq 0 ]
check "every peer ended by the signal" [ "$(grep -l '"reason":"signal"' "$tmp"/runs/ctrlc/node-*/metrics.jsonl | wc -l)" -eq 3 ]

# 6. compare two topologies
sh "$root/scripts/compare.sh" -n 3 -r cmp -p 31040 -i 1 --partition genre "$tmp/ring-3.topo" "$tmp/full-3.topo" -- --seed 3 >"$tmp/cmp.out" 2>&1
rc=$?
check "compare exits 0 (got $rc)" [ $rc -eq 0 ]
check "compare ran both topologies" [ -f "$tmp/runs/cmp/ring-3/node-2/metrics.jsonl" -a -f "$tmp/runs/cmp/full-3/node-2/metrics.jsonl" ]
check "partition flag passed to the node" grep -q '"--partition", "genre"' "$tmp/runs/cmp/ring-3/manifest.json"
check "comparison csv has both runs" [ "$(grep -c 'ring-3\|full-3' "$tmp/runs/cmp/compare.csv")" -eq 2 ]
if command -v gnuplot >/dev/null 2>&1; then
    check "comparison png" [ -s "$tmp/runs/cmp/compare.png" ]
fi

# 7. a peer killed with SIGKILL (issue 21, defects 3 and 11): once the
# launcher has seen it exit, the progress line no longer counts it live
# (D, dead), and the report says killed, not running?
FAKE_KILL=1 FAKE_ROUNDS=25 rl -n 3 -t "$tmp/ring-3.topo" -r killed -p 31050 -i 1 >"$tmp/kill.out" 2>&1
rc=$?
check "killed peer -> exit 1 (got $rc)" [ $rc -eq 1 ]
check "killed peer named with its signal" grep -q 'killed by signal 9 (SIGKILL)' "$tmp/kill.out"
# every progress line once the launcher counts 2 of 3 running
# (under heavy load a live peer may show x, stale, for a moment; the last
# line may come after a peer's end, E)
check "progress after the kill: live 2/3 [.D.]" awk '/peers 2\/3 running/ { n++; if ($0 !~ /live [0-2]\/3 \[[.xE]D[.xE]\]/) bad = 1 }
    END { exit !(n >= 1 && !bad) }' "$tmp/kill.out"
check "report: node-1 killed, no end line" grep -q '^node-1 .* killed .*no end line: killed by signal 9 (SIGKILL)' "$tmp/kill.out"
check "report: no peer running?" sh -c "! grep -q 'running?' '$tmp/kill.out'"
# pointed at one peer's directory, the report says to look one level up
"$root/murmur" report "$tmp/runs/killed/node-0" >"$tmp/nodedir.out" 2>&1
check "report of a node directory: exit 1 (got $?)" [ $? -ne 0 ]
check "report of a node directory: points at the run" grep -q "one peer's directory.*the directory above it" "$tmp/nodedir.out"

# 8. --resume (issue 21, friction 9): the failed run of case 2 continues,
# every peer started again with --resume; flags, topology or -n other than
# the manifest's are refused; a run not there yet is started, said. Its
# peer 1 failed before its first checkpoint (issue 34, 2.3): a plain
# --resume is refused, naming it, with nothing started;
# --resume-fresh-missing starts it fresh, saying so.
cp "$tmp/runs/failing/manifest.json" "$tmp/manifest.before"
lines_before=$(cat "$tmp"/runs/failing/node-*/metrics.jsonl | wc -l)
rl -n 3 -t "$tmp/ring-3.topo" -r failing -p 31060 -i 1 --no-report --resume >"$tmp/resume0.out" 2>&1
rc=$?
check "--resume with peer 1 without a checkpoint: refused, exit 2 (got $rc)" [ $rc -eq 2 ]
check "--resume without a checkpoint: names the peer and the fix" grep -q 'peer(s) 1 of .*failing have no checkpoint.*--resume-fresh-missing' "$tmp/resume0.out"
check "--resume without a checkpoint: nothing started" [ "$(cat "$tmp"/runs/failing/node-*/metrics.jsonl | wc -l)" -eq "$lines_before" ]
check "--resume without a checkpoint: no resume recorded" [ ! -f "$tmp/runs/failing/launch/resumes.log" ]
rl -n 3 -t "$tmp/ring-3.topo" -r failing -p 31060 -i 1 --no-report --resume-fresh-missing >"$tmp/resume.out" 2>&1
rc=$?
check "--resume of the failed run exits 0 (got $rc)" [ $rc -eq 0 ]
check "--resume-fresh-missing: says which peers start fresh" grep -q 'resuming .*failing: peer(s) 1 start FRESH from round 0 (no checkpoint; --resume-fresh-missing), the others from their checkpoints' "$tmp/resume.out"
check "--resume: every peer got --resume" [ "$(grep -l 'flag --resume' "$tmp"/runs/failing/node-*/console.log | wc -l)" -eq 3 ]
check "--resume: console.log appended" grep -q 'flag' "$tmp/runs/failing/node-1/console.log"
check "--resume: 0 failed" grep -q 'all peers stopped after .*; 0 failed' "$tmp/resume.out"
check "--resume: manifest kept" cmp -s "$tmp/manifest.before" "$tmp/runs/failing/manifest.json"
check "--resume: recorded" [ "$(wc -l <"$tmp/runs/failing/launch/resumes.log")" -eq 1 ]
rl -n 3 -t "$tmp/ring-3.topo" -r failing -p 31060 --resume -- --seed 9 >"$tmp/resume2.out" 2>&1
rc=$?
check "--resume with other flags refused, exit 2 (got $rc)" [ $rc -eq 2 ]
check "--resume with other flags: then and now" grep -q 'now:  \["--seed", "9"\]' "$tmp/resume2.out"
rl -n 3 -t "$tmp/full-3.topo" -r failing -p 31060 --resume >"$tmp/resume3.out" 2>&1
rc=$?
check "--resume on another topology refused, exit 2 (got $rc)" [ $rc -eq 2 ]
rl -n 3 -t "$tmp/ring-3.topo" -r fresh -p 31060 -i 1 --no-report --resume >"$tmp/resume4.out" 2>&1
rc=$?
check "--resume of no run starts it (exit $rc)" [ $rc -eq 0 ] && grep -q 'no run at .*fresh yet, starting it' "$tmp/resume4.out"

# 9. A peer that failed, restarted by hand with --resume while the others
# still run, and ended normally: waited for, and not "1 failed".
FAKE_FAIL=1 FAKE_ROUNDS=40 rl -n 3 -t "$tmp/ring-3.topo" -r byhand -p 31070 -i 1 --no-report >"$tmp/byhand.out" 2>&1 &
lp=$!
i=0
while [ $i -lt 100 ] && [ ! -f "$tmp/runs/byhand/launch/node-1.exit" ]; do sleep 0.1; i=$((i + 1)); done
FAKE_ROUNDS=50 "$tmp/murmur" node --id 1 --topology "$tmp/ring-3.topo" --run-dir "$tmp/runs/byhand" --resume \
    >>"$tmp/runs/byhand/node-1/console.log" 2>&1 &
hp=$!
wait $lp
rc=$?
check "restarted by hand: the launcher waited for it" sh -c "! kill -0 $hp 2>/dev/null"
wait $hp
check "restarted by hand: exit 0 (got $rc)" [ $rc -eq 0 ]
check "restarted by hand: said, and 0 failed" sh -c "grep -q 'peer 1, restarted by hand after status 3, ended normally' '$tmp/byhand.out' && grep -q '; 0 failed' '$tmp/byhand.out'"

if [ $fails -ne 0 ]; then
    for f in "$tmp"/*.out; do echo "--- $f"; cat "$f"; done
    exit 1
fi
exit 0
