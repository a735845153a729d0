# murmur watch --once on run and sweep directories written here (issue 34):
# what the page says of a run and of each peer comes from what the
# directory shows.
#  1. every peer ended 10 minutes ago: the run is "finished", ended_ago
#     about 600 s, not "live";
#  2. peers without an end line: "killed" (launch/node-K.exit records a
#     signal; its end says which), "dead" (an exit status, or its launcher's
#     pid gone), "silent" only with nothing to ask and no line for --stale;
#     the run is "stopped"; a peer whose process is alive and writes is
#     running, and so is the run;
#  3. a sweep: "running" while a process holds its sweep.lock, "finished"
#     once none does and every run is done.
. "$(dirname "$0")/lib.sh"
# peer DIR K END: node-K's metrics, 3 rounds, with an end line END (or none: -)
peer() {
    mkdir -p "$1/node-$2"
    f=$1/node-$2/metrics.jsonl
    printf '{"ev":"start","peer":%d,"n_peers":4,"params":4,"algo":"dpsgd","topology":"t","sketch_dim":2,"sketch_seed":1,"resumed_round":0,"time":0}\n' "$2" > "$f"
    for rd in 0 1 2; do
        printf '{"ev":"round","round":%d,"step":%d,"time":%d,"loss":3,"lr":0.1,"bytes_sent":100,"bytes_recv":100,"t_compute":0.1,"t_comm":0,"t_wait":0,"nbrs":[],"missing":[],"dist":{}}\n' $rd $rd $rd >> "$f"
    done
    [ "$3" = - ] || printf '{"ev":"end","round":3,"step":3,"time":3,"reason":"%s"}\n' "$3" >> "$f"
}
# field JSON PEER NAME: a peer's field (string or number) of the document
field() { printf '%s' "$1" | tr '{' '\n' | grep "^\"id\":$2," | sed -n "s/.*\"$3\":\(\"[^\"]*\"\|[-0-9.e]*\|null\).*/\1/p" | head -n 1; }
top() { printf '%s' "$1" | grep -o "\"$2\":\(\"[^\"]*\"\|[-0-9.e]*\|null\)" | head -n 1 | sed "s/^\"$2\"://"; }
watch_once() { "$MURMUR" watch "$1" --once --stale 5 2> "$T/watch.err" || { cat "$T/watch.err" >&2; fail "murmur watch --once $1 failed"; }; }

# 1. finished 10 minutes ago
for k in 0 1 2 3; do peer "$T/done" $k done; done
touch -d '10 minutes ago' "$T"/done/node-*/metrics.jsonl
doc=$(watch_once "$T/done")
[ "$(top "$doc" status)" = '"finished"' ] || fail "a run ended 10 minutes ago is not finished: status $(top "$doc" status)"
ago=$(top "$doc" ended_ago)
awk -v a="$ago" 'BEGIN { exit !(a >= 590 && a <= 700) }' || fail "ended_ago $ago, not about 600 s"
note "ended 10 minutes ago: status finished, ended_ago ${ago%.*} s"

# 2. killed, dead, silent, running
r=$T/mixed
mkdir -p "$r/launch"
peer "$r" 0 done
peer "$r" 1 -; echo 137 > "$r/launch/node-1.exit"; echo 999999 > "$r/launch/node-1.pid"
peer "$r" 2 -; echo 1 > "$r/launch/node-2.exit"; echo 999999 > "$r/launch/node-2.pid"
peer "$r" 3 -; sh -c 'exit 0' & gone=$!; wait $gone; echo $gone > "$r/launch/node-3.pid"
doc=$(watch_once "$r")
[ "$(field "$doc" 1 state)" = '"killed"' ] && [ "$(field "$doc" 1 end)" = '"killed by signal 9 (SIGKILL)"' ] ||
    fail "a SIGKILLed peer: state $(field "$doc" 1 state), end $(field "$doc" 1 end)"
[ "$(field "$doc" 2 state)" = '"dead"' ] && [ "$(field "$doc" 2 end)" = '"exited with status 1, no end line"' ] ||
    fail "a peer that exited 1: state $(field "$doc" 2 state), end $(field "$doc" 2 end)"
[ "$(field "$doc" 3 state)" = '"dead"' ] || fail "a peer whose process is gone: state $(field "$doc" 3 state)"
[ "$(top "$doc" status)" = '"stopped"' ] || fail "a run whose peers died: status $(top "$doc" status), not stopped"
# the links of a dead peer are missing
printf 'peers 4\n0 1\n1 2\n2 3\n3 0\n' > "$r/topology.txt"
doc=$(watch_once "$r")
printf '%s' "$doc" | grep -q '"from":2,"to":1,"state":"missing"' || fail "the link of two dead peers is not missing"
# silent: no launcher to ask, no line for --stale
peer "$T/hand" 0 -; peer "$T/hand" 1 done
touch -d '1 minute ago' "$T/hand/node-0/metrics.jsonl"
doc=$(watch_once "$T/hand")
[ "$(field "$doc" 0 state)" = '"silent"' ] || fail "a peer with nothing to ask and no line: state $(field "$doc" 0 state)"
# running: its process alive, writing
sleep 60 & alive=$!; E2E_PIDS="$E2E_PIDS $alive"
echo $alive > "$r/launch/node-3.pid"; touch "$r/node-3/metrics.jsonl"
doc=$(watch_once "$r")
[ "$(field "$doc" 3 state)" = '"running"' ] || fail "a live peer: state $(field "$doc" 3 state)"
[ "$(top "$doc" status)" = '"running"' ] || fail "a run with a live peer: status $(top "$doc" status)"
[ "$(top "$doc" ended_ago)" = null ] || fail "a running run has an ended_ago"
kill $alive
note "killed, dead (two ways), silent, running, and the run stopped or running"

# 3. a sweep
s=$T/sw
mkdir -p "$s/t/s1"
printf '# murmur sweep plan 1\nindex\tsetting\tseed\trun\ttopology\tpeers\tflags\n0\tt\t1\tt/s1\tt.topo\t2\t--seed 1\n' > "$s/sweep.plan"
peer "$s/t/s1" 0 done; peer "$s/t/s1" 1 done
printf 'finished 2026-01-01T00:00:00Z wall 3\nflags --seed 1\n' > "$s/t/s1/sweep.done"
echo "log" > "$s/sweep.log"; touch -d '5 minutes ago' "$s/sweep.log"
: > "$s/sweep.lock"
(exec 8>>"$s/sweep.lock"; flock 8; exec sleep 30) & holder=$!; E2E_PIDS="$E2E_PIDS $holder"
i=0; while flock -n "$s/sweep.lock" true; do i=$((i + 1)); [ $i -lt 100 ] || fail "no lock"; sleep 0.05; done
doc=$(watch_once "$s")
[ "$(top "$doc" status)" = '"running"' ] || fail "a sweep whose lock is held: status $(top "$doc" status)"
kill $holder; wait $holder 2>/dev/null || true
doc=$(watch_once "$s")
[ "$(top "$doc" status)" = '"finished"' ] || fail "a finished sweep: status $(top "$doc" status)"
ago=$(top "$doc" ended_ago)
awk -v a="$ago" 'BEGIN { exit !(a >= 290 && a <= 400) }' || fail "the sweep's ended_ago $ago, not about 300 s"
flock -n "$s/sweep.lock" true || fail "the watch left the sweep's lock taken"
echo "ok: murmur watch says finished, stopped, killed, dead and silent from what the directory shows"
