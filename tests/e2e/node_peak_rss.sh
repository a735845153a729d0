# max_rss_kb (murmur node) and peak_rss_kib (murmur train) are the process's
# own peak (VmHWM), not getrusage's ru_maxrss, which Linux carries across
# fork and exec (issue 11: a node started from a process holding 150 MB
# reported 167 MB while its own resident set was ~7 MB). Both commands are
# started here from an awk that holds more than 100 MB; each must report
# less than 64 MiB, and more than 1 MiB (a real measurement).
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/pair.topo" 2>/dev/null
tiny_data "$T/data"
port=$(free_ports 2)
# "exec": the process awk forked becomes murmur, as with a launcher's
# fork+exec (without it the shell forks once more, and ru_maxrss starts over)
node="MURMUR_NO_BLAS_FIX=1 exec '$MURMUR' node --id 0 --topology '$T/pair.topo' --base-port $port --plaintext --no-train --vector-len 1000 --rounds 0 --eval-every 0 --run-dir '$T/run' > '$T/node.out' 2>&1"
train="MURMUR_NO_BLAS_FIX=1 exec '$MURMUR' train --data '$T/data' --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --steps 3 --eval-every 0 --eval-windows 4 --out '$T/train' > '$T/train.out' 2>&1"
awk -v node="$node" -v train="$train" -v out="$T/parent_rss" 'BEGIN {
    s = "x"; while (length(s) < 128000000) s = s s   # resident: every byte written
    system("grep VmRSS /proc/$PPID/status > " out)
    if (system(node) != 0 || system(train) != 0) exit 1
}' || fail "node or train failed: $(tail -2 "$T/node.out" "$T/train.out")"
parent=$(awk '{ print $2 }' "$T/parent_rss")
[ "$parent" -gt 100000 ] || fail "the parent held only $parent kB: the test proves nothing"
n=$(jfield "$T/run/node-0/metrics.jsonl" end max_rss_kb)
t=$(jfield "$T/train/metrics.jsonl" end peak_rss_kib)
note "parent $((parent / 1024)) MiB resident; node max_rss_kb $n, train peak_rss_kib $t"
for v in "node:$n" "train:$t"; do
    k=${v#*:}
    [ -n "$k" ] && [ "$k" -gt 1024 ] && [ "$k" -lt 65536 ] ||
        fail "${v%%:*} reports a peak of $k KiB with a parent of $parent kB: not its own"
done
echo "ok: peak RSS is the process's own"
