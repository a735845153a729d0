# A family file as a static topology (topologies/README.md, "Families"): 4
# training peers on `family ring` of 4 starting members run to the end, and
# end bit for bit where the same run on `topo gen ring -n 4` ends (the
# family at its `peers N` is that graph, nothing more); the two files have
# different digests, so a peer of one refuses a peer of the other.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 --family > "$T/family.topo"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo"
grep -q '^family ring$' "$T/family.topo" || fail "gen --family wrote no family line"

# run NAME TOPOLOGY: 4 peers, all must end done
run() {
    port=$(free_ports 4)
    pids=""
    for k in 0 1 2 3; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$2" --base-port "$port" --plaintext \
            --data "$T/data" --partition genre --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 \
            --rounds 12 --eval-every 6 --eval-windows 8 --log-every 0 --seed 5 --run-dir "$T/$1" \
            --start-timeout 20000 > "$T/$1-$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || { tail -n 5 "$T/$1"-*.out >&2; fail "$1: a peer exited non-zero"; }
    for k in 0 1 2 3; do
        grep -q '"ev":"end".*"reason":"done"' "$T/$1/node-$k/metrics.jsonl" ||
            fail "$1: peer $k did not end done"
    done
}
run family "$T/family.topo"
run ring "$T/ring.topo"
for k in 0 1 2 3; do
    f=$(grep '"ev":"eval"' "$T/family/node-$k/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([^,]*\).*"norm":\([^,]*\).*/\1 \2/')
    r=$(grep '"ev":"eval"' "$T/ring/node-$k/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([^,]*\).*"norm":\([^,]*\).*/\1 \2/')
    [ -n "$f" ] && [ "$f" = "$r" ] || fail "peer $k: family ring ended at '$f', ring-4 at '$r'"
    nb=$(grep '"ev":"round"' "$T/family/node-$k/metrics.jsonl" | grep -c '"nbrs":\[[0-9],[0-9]\]' || true)
    [ "$nb" -eq 12 ] || fail "peer $k: $nb of 12 rounds mixed with two neighbours on the family ring"
    note "peer $k: val_loss, norm $f on both"
done
a=$("$MURMUR" topo info --no-rho "$T/family.topo" | grep '^digest'); b=$("$MURMUR" topo info --no-rho "$T/ring.topo" | grep '^digest')
[ "$a" != "$b" ] || fail "the family file and ring-4 have one digest"
echo "ok: a static run on a family ring of 4 ends where ring-4 ends"
