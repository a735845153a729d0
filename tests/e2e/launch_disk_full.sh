# A full disk says "No space left on device" (issue 34): the run directory
# is on a 2 MiB tmpfs the test mounts and fills.
#  1. Full before the launch (48 KiB free): run-local.sh refuses (exit 1)
#     before it writes anything or starts a peer, saying so; never the
#     shell's "echo: I/O error", "exited with status  ", "[: Illegal
#     number" or a peer's "no metrics".
#  2. murmur node alone in that directory: exit 1, saying so.
#  3. Full after the launcher's checks (its stand-in peers fill the disk,
#     then exit 1): each peer's status is still known (1, not empty), said
#     with the full disk.
#  4. sweep.sh on that disk: exit 1, saying so, no run marked failed.
#  5. murmur report of a run on the full disk: "cannot write ...:
#     No space left on device".
# Needs root (mount); skipped without.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: needs root to mount a tmpfs"
    exit 0
fi
disk="$T/disk"; mkdir -p "$disk"
mount -t tmpfs -o size=2m tmpfs "$disk" || fail "cannot mount a tmpfs"
E2E_CLEANUP="umount -l '$disk'"
"$MURMUR" topo gen ring -n 3 > "$T/ring-3.topo" 2>/dev/null
port=$(free_ports 3)
# leave KIB: fill the disk up to KIB KiB free
leave() {
    rm -f "$disk/fill"
    have=$(df -Pk "$disk" | awk 'NR == 2 { print $4 }')
    [ "$have" -gt "$1" ] || fail "the tmpfs has only $have KiB free, not more than $1"
    dd if=/dev/zero of="$disk/fill" bs=1k count=$((have - $1)) 2>/dev/null || fail "cannot fill the tmpfs"
}
# no_garbage FILE: none of what a full disk used to print
no_garbage() {
    for bad in 'I/O error' 'Illegal number' 'exited with status  ' 'status  (' 'stopped before it started'; do
        grep -q "$bad" "$1" && { cat "$1" >&2; fail "'$bad' in $(basename "$1")"; }
    done
    return 0
}
flags="--plaintext --no-train --vector-len 100 --rounds 5 --log-every 0"

# 1.
leave 48
st=0
RUNS="$disk/runs" GRACE=5 timeout 60 sh "$ROOT/scripts/run-local.sh" -n 3 -t "$T/ring-3.topo" -r full \
    -p "$port" -i 1 -- $flags > "$T/one.out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/one.out" >&2; fail "run-local.sh on a full disk: exit $st, not 1"; }
grep -q "run-local: $disk/runs/full: No space left on device ([0-9]* KiB free" "$T/one.out" ||
    { cat "$T/one.out" >&2; fail "run-local.sh on a full disk does not say No space left on device"; }
no_garbage "$T/one.out"
[ -e "$disk/runs/full/node-0" ] && fail "run-local.sh started a peer on a full disk"
note "run-local: $(head -n 1 "$T/one.out" | cut -c1-120)..."

# 2.
st=0
timeout 30 "$MURMUR" node --id 0 --topology "$T/ring-3.topo" --base-port "$port" --run-dir "$disk/runs/byhand" \
    $flags > "$T/two.out" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q "murmur node: $disk/runs/byhand/node-0: No space left on device" "$T/two.out" ||
    { cat "$T/two.out" >&2; fail "murmur node on a full disk: exit $st, without No space left on device"; }
rm -rf "$disk/runs"

# 3. Stand-in peers that fill the disk and exit 1 (the launcher's --dry-run
# check of the node flags passes).
cat > "$T/murmur" <<FAKE
#!/bin/sh
case \$1 in node) ;; *) exec "$MURMUR" "\$@" ;; esac
shift
id=''
while [ \$# -gt 0 ]; do case \$1 in --id) id=\$2; shift 2 ;; --dry-run) exit 0 ;; *) shift ;; esac; done
dd if=/dev/zero of="$disk/fill.\$id" bs=4k 2>/dev/null
exit 1
FAKE
chmod +x "$T/murmur"
leave 1500
st=0
MURMUR="$T/murmur" RUNS="$disk/runs" GRACE=5 timeout 60 sh "$ROOT/scripts/run-local.sh" -n 3 -t "$T/ring-3.topo" \
    -r late -p "$port" -i 1 --no-report -- $flags > "$T/three.out" 2>&1 || st=$?
[ $st -eq 1 ] || { cat "$T/three.out" >&2; fail "peers that failed on a full disk: exit $st, not 1"; }
for k in 0 1 2; do
    grep -q "run-local: peer $k exited with status 1 " "$T/three.out" ||
        { cat "$T/three.out" >&2; fail "peer $k's exit status was lost on the full disk"; }
done
[ "$(grep -c "No space left on device: [0-9]* KiB free on the file system of $disk/runs/late/node-" "$T/three.out")" -eq 3 ] ||
    { cat "$T/three.out" >&2; fail "the failed peers are not said to be on a full disk"; }
no_garbage "$T/three.out"
rm -f "$disk"/fill.*
note "peers on a disk that filled: status 1 each, the full disk said"

# 4. A sweep on the full disk.
leave 48
printf 'topology %s\nseeds 1\nflags %s\n' "$T/ring-3.topo" "$flags" > "$T/s.sweep"
st=0
RUNS="$disk/runs" timeout 60 sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$port" "$T/s.sweep" > "$T/four.out" 2>&1 || st=$?
[ $st -eq 1 ] && grep -q "No space left on device" "$T/four.out" ||
    { cat "$T/four.out" >&2; fail "a sweep on a full disk: exit $st, without No space left on device"; }
no_garbage "$T/four.out"
ls "$disk"/runs/s/*/*/sweep.failed > /dev/null 2>&1 && fail "a sweep on a full disk marked a run failed"

# 5. murmur report writing its CSV on the full disk.
rm -f "$disk/fill"
mkdir -p "$disk/rep/node-0"
echo '{"ev":"start","peer":0,"n_peers":1,"params":4,"time":0}' > "$disk/rep/node-0/metrics.jsonl"
echo '{"ev":"round","peer":0,"round":0,"time":1,"loss":2}' >> "$disk/rep/node-0/metrics.jsonl"
leave 0
st=0
"$MURMUR" report --no-plots "$disk/rep" > "$T/five.out" 2>&1 || st=$?
[ $st -ne 0 ] && grep -q "murmur report: cannot write $disk/rep/report.csv: No space left on device" "$T/five.out" ||
    { cat "$T/five.out" >&2; fail "murmur report on a full disk: exit $st, without No space left on device"; }
echo "ok: a full disk is said: No space left on device (run-local, the node, the launcher's peers, sweep, report)"
