# scripts/run-hosts.sh for real: a private sshd on 127.0.0.1 (own host key,
# own authorized key, own port) stands in for 4 hosts. Each peer gets its own
# REMOTE_DIR, so the certificates are copied there and the run directories are
# brought back into runs/NAME. Then a second, endless run is stopped with
# SIGINT to run-hosts.sh: every peer must stop cleanly and still be collected.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/sshd.sh"
start_test_sshd || exit 0
n=4
tiny_data "$T/data"
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
# The peers' pids on their "hosts", for the cleanup, whatever happens.
E2E_CLEANUP='for f in "$T"/host-*/*/node-*/pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
model="--layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --log-every 0 --start-timeout 20000"

# 1. A short TLS training run through ssh; results collected.
test_hosts "$T/hosts" short
rounds=40
start=$(date +%s)
RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts" -t "$T/ring.topo" -r short -D "$T/data" \
    -- $model --rounds $rounds --eval-every 20 > "$T/short.out" 2>&1 ||
    { cat "$T/short.out" >&2; fail "run-hosts.sh failed"; }
note "4 peers over ssh, $rounds rounds: $(($(date +%s) - start))s"
run="$T/runs/short"
grep -q '"launcher":"run-hosts","name":"short","peers":4,' "$run/manifest.json" || fail "no manifest.json for the run"
k=0
while [ $k -lt $n ]; do
    m="$run/node-$k/metrics.jsonl"
    [ -f "$m" ] || fail "node-$k/metrics.jsonl not brought back into $run"
    cmp -s "$m" "$T/host-$k/short/node-$k/metrics.jsonl" || fail "node-$k: collected metrics differ from the host's"
    [ "$(jfield "$m" end round)" = $rounds ] || fail "peer $k did not finish $rounds rounds"
    grep -q '"reason":"done"' "$m" || fail "peer $k did not end normally"
    # TLS: only its own key went to its host, and it used it
    [ -f "$T/host-$k/short/certs/node-$k.key" ] || fail "peer $k's key not copied to its host"
    [ "$(ls "$T/host-$k/short/certs" | grep -c '\.key$')" = 1 ] || fail "host $k got other peers' keys"
    grep -q "is up (TLS" "$run/node-$k/node.log" || fail "peer $k's connections were not TLS"
    mixed=$(grep '"ev":"round"' "$m" | grep -c '"nbrs":\[[0-9]' || true)
    [ "$mixed" -gt $((rounds / 2)) ] || fail "peer $k mixed with its neighbours in only $mixed rounds"
    k=$((k + 1))
done
MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$run" --no-plots > "$T/report.out" 2>&1 ||
    { cat "$T/report.out" >&2; fail "murmur report failed on the collected run"; }
[ -s "$run/report.csv" ] || fail "murmur report wrote no report.csv"
note "murmur report: $(wc -l < "$run/report.csv") csv lines"

# Two-column hosts file, plaintext: every peer is on this machine and writes
# straight into runs/NAME (nothing copied either way).
awk '{ print $1, $2 }' "$T/hosts" > "$T/hosts-inplace"
RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts-inplace" -t "$T/ring.topo" -r inplace \
    -D "$T/nodata" -- --plaintext --no-train --vector-len 100 --rounds 5 --log-every 0 --eval-every 0 \
    > "$T/inplace.out" 2>&1 || { cat "$T/inplace.out" >&2; fail "in-place plaintext run failed"; }
for k in 0 1 2 3; do
    [ "$(jfield "$T/runs/inplace/node-$k/metrics.jsonl" end round)" = 5 ] || fail "in place: peer $k did not finish"
done
[ -d "$T/runs/inplace/certs" ] && fail "plaintext run made certificates"
note "two-column hosts file, plaintext, in place: ok"

# Bad launches fail at once with a reason: a hosts file that misses a
# peer (usage, 2), and a host that refuses our key (1, nothing started).
head -3 "$T/hosts" > "$T/hosts3"
st=0; RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts3" -t "$T/ring.topo" -r bad1 \
    -D "$T/data" > "$T/bad1.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "must list 4 peers" "$T/bad1.out" || fail "a hosts file without peer 3 was not refused ($st)"
ssh-keygen -q -t ed25519 -N '' -f "$S/stranger_key"
test_hosts "$T/hosts4" bad2
st=0; MURMUR_SSH="ssh -p $sport -i $S/stranger_key $opts" RUNS="$T/runs" \
    sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts4" -t "$T/ring.topo" -r bad2 -D "$T/data" \
    -- --no-train --vector-len 10 --rounds 1 > "$T/bad2.out" 2>&1 || st=$?
[ $st = 1 ] && grep -q "could not prepare peer 0" "$T/bad2.out" || { cat "$T/bad2.out" >&2; fail "a refused ssh key did not fail the launch ($st)"; }
ls "$T"/host-*/bad2/node-*/pid > /dev/null 2>&1 && fail "peers started although a host refused the key"
note "bad hosts file: exit 2; refused key: exit 1, nothing started"

# Refused before anything starts: a column-stochastic-only topology without
# --algo pushsum (exit 2, before any ssh), a port inside the host's
# ephemeral range (exit 1 while preparing, no peer started).
printf 'peers 4\ngraph directed\nweights explicit\n0 1 1/2\n1 2 1/2\n2 3 1/2\n3 0 1/2\n0 2 1/4\n' > "$T/push4.topo"
st=0; RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts" -t "$T/push4.topo" -r bad3 \
    -D "$T/data" -- --no-train --vector-len 10 --rounds 1 > "$T/bad3.out" 2>&1 || st=$?
[ $st = 2 ] && grep -q "only --algo pushsum" "$T/bad3.out" || { cat "$T/bad3.out" >&2; fail "run-hosts ran dpsgd on a column-stochastic topology ($st)"; }
lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range)
awk -v lo="$lo" '$1 == 2 { sub(/:[0-9]+$/, ":" lo + 5, $2) } { print }' "$T/hosts" | sed 's|/short$|/bad4|' > "$T/hosts5"
st=0; RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts5" -t "$T/ring.topo" -r bad4 -D "$T/data" \
    -- --no-train --vector-len 10 --rounds 1 > "$T/bad4.out" 2>&1 || st=$?
[ $st = 1 ] && grep -q "could not prepare peer 2" "$T/bad4.out" && grep -q "port $((lo + 5)) is inside this host's ephemeral port range" "$T/bad4.out" ||
    { cat "$T/bad4.out" >&2; fail "a port in the ephemeral range was not refused ($st)"; }
ls "$T"/host-*/bad4/node-*/pid > /dev/null 2>&1 && fail "peers started although a port was refused"
note "run-hosts: column-stochastic without pushsum: exit 2; port $((lo + 5)) in the ephemeral range: exit 1, nothing started"

# A failed peer is explained after collection: its last error and end line.
test_hosts "$T/hosts6" nodata
st=0; RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts6" -t "$T/ring.topo" -r nodata -D "$T/none" \
    -- --rounds 1 > "$T/nodata.out" 2>&1 || st=$?
[ $st = 1 ] && grep -q "peer 3 exited with status 1" "$T/nodata.out" && grep -q "last error: ERROR: $T/none/index.tsv" "$T/nodata.out" ||
    { cat "$T/nodata.out" >&2; fail "run-hosts did not explain the failed peers ($st)"; }
note "run-hosts: failed peers explained: $(grep -m1 'last error' "$T/nodata.out" | sed 's/^ *//')"

# A misconfigured run fails, with the reason per neighbour on the terminal:
# the murmur on "host" 2 (-m) runs its peer with --plaintext among TLS peers.
cat > "$T/plain-murmur" <<EOF
#!/bin/sh
# murmur, with --plaintext for peer 2
prev=''
for a in "\$@"; do
    [ "\$prev" = --id ] && [ "\$a" = 2 ] && exec "$MURMUR" "\$@" --plaintext
    prev=\$a
done
exec "$MURMUR" "\$@"
EOF
chmod +x "$T/plain-murmur"
test_hosts "$T/hosts7" plain
st=0; RUNS="$T/runs" sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts7" -t "$T/ring.topo" -r plain -m "$T/plain-murmur" \
    -D "$T/data" -- --no-train --vector-len 1000 --rounds 20 --eval-every 0 --start-timeout 2000 \
    --peer-timeout 1000 --round-timeout 500 > "$T/plain.out" 2>&1 || st=$?
[ $st = 1 ] && grep -q "peer 2 exited with status 3" "$T/plain.out" &&
    grep -q "peer 2: TLS mismatch: it speaks plaintext murmur but this peer expects TLS" "$T/plain.out" &&
    grep -q "peer [13]: TLS mismatch: it speaks TLS but this peer runs --plaintext" "$T/plain.out" &&
    grep -q "run-hosts: the run is misconfigured: 3 peer(s)" "$T/plain.out" ||
    { cat "$T/plain.out" >&2; fail "run-hosts did not fail a run with a --plaintext peer among TLS peers ($st)"; }
note "run-hosts, one --plaintext peer: exit 1, $(grep -m1 'peer 2: TLS mismatch' "$T/plain.out" | sed 's/^ *//')"

# 2. Ctrl-C: SIGINT to run-hosts.sh stops every peer (SIGTERM on its host),
# which ends its round, checkpoints and exits; the directories still come home.
# A background job of a script starts with SIGINT ignored, which a shell
# cannot trap: env gives run-hosts.sh the default disposition back.
test_hosts "$T/hosts2" endless
RUNS="$T/runs" env --default-signal=INT sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts2" -t "$T/ring.topo" \
    -r endless -D "$T/data" -- $model --rounds 100000 --eval-every 0 --checkpoint-every 0 \
    > "$T/endless.out" 2>&1 &
rh=$!; E2E_PIDS="$E2E_PIDS $rh"
rounds_of() { cat "$T/host-$1/endless/node-$1/metrics.jsonl" 2>/dev/null | awk '/"ev":"round"/ { n++ } END { print n + 0 }'; }
i=0
for k in 0 1 2 3; do
    while [ "$(rounds_of $k)" -lt 5 ]; do
        i=$((i + 1)); [ $i -lt 400 ] || { cat "$T/endless.out" >&2; fail "peer $k made no progress"; }
        sleep 0.1
    done
done
t0=$(date +%s)
kill -INT $rh
i=0
while kill -0 $rh 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "run-hosts.sh still running 30s after SIGINT"
    sleep 0.1
done
st=0; wait $rh || st=$?
note "SIGINT: run-hosts.sh exited $st after $(($(date +%s) - t0))s"
[ $st = 130 ] || { cat "$T/endless.out" >&2; fail "run-hosts.sh exited $st after SIGINT, not 130"; }
k=0
while [ $k -lt $n ]; do
    pid=$(cat "$T/host-$k/endless/node-$k/pid")
    kill -0 "$pid" 2>/dev/null && fail "peer $k (pid $pid) still running after SIGINT"
    m="$T/runs/endless/node-$k/metrics.jsonl"
    [ -f "$m" ] || fail "node-$k not collected after SIGINT"
    grep -q '"ev":"end".*"reason":"signal"' "$m" || fail "peer $k did not stop cleanly on the signal"
    k=$((k + 1))
done
# 3. SIGINT the moment the peers are launched (before some have even
# written their pid): none may be left behind.
test_hosts "$T/hosts3b" early
RUNS="$T/runs" env --default-signal=INT sh "$ROOT/scripts/run-hosts.sh" -H "$T/hosts3b" -t "$T/ring.topo" \
    -r early -D "$T/data" -- $model --rounds 100000 --eval-every 0 > "$T/early.out" 2>&1 &
rh=$!; E2E_PIDS="$E2E_PIDS $rh"
i=0
until grep -q "started 4 peers" "$T/early.out"; do
    i=$((i + 1)); [ $i -lt 600 ] || { cat "$T/early.out" >&2; fail "the early run never started"; }
    sleep 0.05
done
kill -INT $rh
i=0
while kill -0 $rh 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "run-hosts.sh still running 30s after an early SIGINT"
    sleep 0.1
done
st=0; wait $rh || st=$?
[ $st = 130 ] || { cat "$T/early.out" >&2; fail "early SIGINT: exit $st, not 130"; }
for k in 0 1 2 3; do
    f="$T/host-$k/early/node-$k/pid"
    # every session got as far as the pid (run-hosts.sh waited for them all)
    [ -s "$f" ] || fail "early SIGINT: no pid file for peer $k"
    kill -0 "$(cat "$f")" 2>/dev/null && fail "early SIGINT: peer $k still running"
done
note "early SIGINT: every peer stopped, $(grep -l '"ev":"round"' "$T"/host-*/early/node-*/metrics.jsonl 2>/dev/null | wc -l) of them after starting to train"
echo "ok: run-hosts.sh over ssh (run, collect, report, SIGINT)"
