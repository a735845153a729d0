# Pure gossip of a model-sized vector needs no corpus (docs/launching.md):
# `--no-train` without `--data` runs where no data/brown exists (issue 11:
# it opened data/brown/index.tsv unless --eval-every 0), its eval lines
# carry the sketch and norm with a null loss; with --data it evaluates.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen chain -n 2 > "$T/pair.topo" 2>/dev/null
mkdir -p "$T/empty"
run() { # NAME [flags]: two peers from a directory without data/
    name=$1; shift
    port=$(free_ports 2)
    pids=""
    for k in 0 1; do
        (cd "$T/empty" && MURMUR_NO_BLAS_FIX=1 exec "$MURMUR" node --id $k --topology "$T/pair.topo" \
            --base-port "$port" --plaintext --no-train --layers 1 --width 16 --heads 2 --ctx 16 \
            --rounds 4 --eval-every 2 --checkpoint-every 0 --log-every 0 --run-dir "$T/$name" "$@" \
            > "$T/$name.$k.out" 2>&1) &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || fail "$name: a peer exited non-zero: $(grep -h ERROR "$T/$name".*.out | head -2)"
}
run nodata
[ ! -e "$T/empty/data" ] || fail "something made data/ in the working directory"
m=$T/nodata/node-0/metrics.jsonl
[ "$(grep -c '"ev":"eval"' "$m")" -ge 3 ] || fail "no eval lines without data"
grep '"ev":"eval"' "$m" | grep -q '"val_loss":null' || fail "val_loss is not null without data"
grep '"ev":"eval"' "$m" | grep -q '"sketch":\[' || fail "no sketch without data"
! grep '"ev":"start"' "$m" | grep -q '"data"' || fail "the start line names a corpus it did not read"
tiny_data "$T/data"
run withdata --data "$T/data"
m=$T/withdata/node-0/metrics.jsonl
grep '"ev":"eval"' "$m" | tail -1 | grep -q '"val_loss":[0-9]' || fail "no validation loss with --data"
note "without data: $(grep '"ev":"eval"' "$T/nodata/node-0/metrics.jsonl" | tail -1 | cut -c1-90)"
echo "ok: --no-train needs no corpus, and evaluates with one"
