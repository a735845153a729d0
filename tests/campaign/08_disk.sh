#!/bin/sh
# Campaign 8, disk trouble: peer 0's run directory is on a small tmpfs that
# the test fills up (twice) while 2 peers train.
#  1. Disk full mid-run: the node says clearly that the checkpoint was not
#     written (No space left on device), keeps running (it keeps its
#     neighbours' rounds going and its in-memory state; dying would lose
#     both), the previous checkpoint stays intact and loads, no temp file is
#     left, and every metrics line parses (a short write is cut back).
#  2. Space freed: the next checkpoint is written without a restart
#     (recovery time reported) and metrics lines appear again.
#  3. Disk full at the end (SIGTERM): the final checkpoint cannot be
#     written, so the node exits non-zero with the same clear error, and the
#     previous checkpoint still loads.
# Needs root (mount); skipped without.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib/faults.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: needs root to mount a tmpfs"
    campaign_line disk 0 0 0 skipped
    exit 0
fi
hold=$(pick 15 60)   # rounds of peer 1 to run through with the disk full
disk="$T/disk"; mkdir -p "$disk"
mount -t tmpfs -o size=3m tmpfs "$disk" || fail "cannot mount a tmpfs"
E2E_CLEANUP="umount -l '$disk'"
tiny_data "$T/data"
"$MURMUR" topo gen complete -n 2 > "$T/pair.topo" 2>/dev/null
port=$(free_ports 2)
flags="--topology $T/pair.topo --base-port $port --plaintext --data $T/data
       --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --rounds 100000 --eval-every 0
       --checkpoint-every 5 --round-timeout 1000 --peer-timeout 3000 --start-timeout 20000
       --log-every 100000"
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 $flags --run-dir "$disk/run" > "$T/p0.out" 2>&1 &
p0=$!; E2E_PIDS="$E2E_PIDS $p0"
MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 1 $flags --run-dir "$T/run" > "$T/p1.out" 2>&1 &
p1=$!; E2E_PIDS="$E2E_PIDS $p1"
d="$disk/run/node-0"; f="$d/metrics.jsonl"; f1="$T/run/node-1/metrics.jsonl"
ck="$d/checkpoint.bin"
wait_for() { # file rounds
    j=0; until [ "$(rounds_done "$1")" -ge "$2" ]; do
        sleep 0.1; j=$((j + 1)); [ $j -lt 900 ] || fail "no progress in $1"; done; }
fill() { dd if=/dev/zero of="$disk/fill" bs=16k 2>/dev/null || true; }
# Keeps the disk full: a checkpoint that fails deletes its temp file, and
# the pages it frees would otherwise take the metrics lines of the next
# rounds, so that none is lost (and the test saw no error to check).
keep_full() {
    : > "$T/filling"
    ( i=0; while [ -e "$T/filling" ] && [ $i -lt 2000 ]; do
          i=$((i + 1)); dd if=/dev/zero of="$disk/fill.$i" bs=4k 2>/dev/null; sleep 0.02
      done ) &
    E2E_PIDS="$E2E_PIDS $!"
}
nospace() { grep -c "checkpoint not written (the previous one is intact).*No space left on device" "$T/p0.out" || true; }
injected=0; survived=0; lost=0

wait_for "$f" 12
ckpt_ok "$ck" || fail "no good checkpoint before the fault: $(ckpt_why)"

# 1. disk full mid-run
fill; keep_full; injected=$((injected + 1))
sum0=$(cksum < "$ck"); lines0=$(wc -l < "$f")
wait_for "$f1" $(( $(rounds_done "$f1") + hold ))
kill -0 $p0 2>/dev/null || fail "peer 0 died when the disk filled up: $(tail -3 "$T/p0.out")"
n1=$(nospace)
note "disk full for $hold rounds: $n1 'checkpoint not written ... No space left on device' errors; $(( $(wc -l < "$f") - lines0 )) metrics lines got through"
ok=1
[ "$n1" -ge 1 ] || { note "no clear error for the failed checkpoint: $(tail -3 "$T/p0.out")"; ok=0; }
[ "$(cksum < "$ck")" = "$sum0" ] || { note "checkpoint.bin changed while the disk was full"; ok=0; }
ckpt_ok "$ck" || { note "previous checkpoint does not load: $(ckpt_why)"; ok=0; }
[ "$(ls "$d" | grep -c '\.tmp\.' || true)" -eq 0 ] || { note "a temp file was left on the full disk"; ok=0; }
[ "$(bad_jsonl_lines "$f")" -eq 0 ] || { note "half-written metrics lines"; ok=0; }
[ $ok = 1 ] && survived=$((survived + 1)) || lost=$((lost + 1))

# 2. space freed: recovers by itself
rm -f "$T/filling"; sleep 0.1; rm -f "$disk"/fill*; t0=$(now)
j=0; until [ "$(cksum < "$ck")" != "$sum0" ]; do
    sleep 0.05; j=$((j + 1)); [ $j -lt 600 ] || fail "no checkpoint written within 30 s of freeing space"; done
rec=$(elapsed "$t0")
ckpt_ok "$ck" || fail "the checkpoint written after recovery does not load: $(ckpt_why)"
lines1=$(wc -l < "$f"); sleep 1
[ "$(wc -l < "$f")" -gt "$lines1" ] || fail "no metrics lines after space was freed"
note "space freed: a new checkpoint ${rec}s later"
# Both ends of the metrics gap are in the log: lost lines, then writing again.
grep -q "metrics: cannot write a line (No space left on device)" "$T/p0.out" || fail "no error for lost metrics lines"
grep -q "metrics: writing again" "$T/p0.out" || fail "the log does not say when metrics resumed"

# 3. disk full at the end
wait_for "$f" $(( $(rounds_done "$f") + 10 ))
fill; keep_full; injected=$((injected + 1))
sum1=$(cksum < "$ck"); errs=$(nospace)
wait_for "$f1" $(( $(rounds_done "$f1") + 10 ))
kill -TERM $p0 $p1
rc=0; wait $p0 || rc=$?
wait $p1 || fail "peer 1 exited non-zero"
ok=1
[ $rc -eq 1 ] || { note "peer 0 exited $rc with its final checkpoint unwritten, expected 1"; ok=0; }
[ "$(nospace)" -gt "$errs" ] || { note "no clear error for the final checkpoint"; ok=0; }
[ "$(cksum < "$ck")" = "$sum1" ] && ckpt_ok "$ck" || { note "the last good checkpoint was damaged: $(ckpt_why)"; ok=0; }
[ "$(bad_jsonl_lines "$f")" -eq 0 ] || { note "half-written metrics lines"; ok=0; }
[ $ok = 1 ] && survived=$((survived + 1)) || lost=$((lost + 1))
note "disk full at the end: exit status $rc, last good checkpoint intact"
[ $lost -eq 0 ] || fail "$lost disk faults lost data or were handled wrongly"
campaign_line disk $injected $survived $lost "${rec}s"
