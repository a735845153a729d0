# 4 peers on a ring train for some rounds (TLS, dpsgd): every peer's loss
# falls, and the exact consensus distance (from parameter snapshots) stays
# bounded: small next to the size of the parameters, and no larger at the
# end than at its worst.
. "$(dirname "$0")/lib.sh"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" 4 >/dev/null
port=$(free_ports 4)
run="$T/run"
pids=""
for k in 0 1 2 3; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/ring.topo" --base-port "$port" \
        --tls-dir "$T/certs" --data "$T/data" --run-dir "$run" --partition genre \
        --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 --lr 3e-3 --rounds 80 \
        --eval-every 10 --snapshot-every 10 --log-every 0 > "$T/peer$k.out" 2>&1 &
    pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
done
wait_all $pids || fail "a peer exited non-zero"

for k in 0 1 2 3; do
    m="$run/node-$k/metrics.jsonl"
    awk -v k=$k '/"ev":"round"/ { l = $0; sub(/.*"loss":/, "", l); sub(/,.*/, "", l); n++; x[n] = l + 0 }
        END {
            if (n < 80) { printf "peer %d: only %d rounds\n", k, n; exit 1 }
            for (i = 1; i <= 10; i++) { a += x[i]; b += x[n - 10 + i] }
            printf "  peer %d: training loss %.3f (first 10 rounds) -> %.3f (last 10)\n", k, a / 10, b / 10
            exit !(b < 0.8 * a)
        }' "$m" || fail "peer $k's loss did not fall"
done

MURMUR_NO_BLAS_FIX=1 "$MURMUR" report "$run" --no-plots --csv "$T/r.csv" > "$T/report.txt" 2>&1 ||
    fail "murmur report failed"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $1 > 0 {
        if ($h["method"] != "exact") { printf "round %s: consensus not exact\n", $1; bad = 1 }
        r = $h["consensus"] / $h["avg_norm"]
        if (r > worst) worst = r
        last = r; n++
        printf "  round %s: consensus %.3e, %.2e of |xbar|\n", $1, $h["consensus"], r
    }
    END {
        if (n < 8) { print "too few evaluation rounds"; exit 1 }
        # bounded: replicas stay within 5 % of the parameters apart, and the
        # distance is not growing at the end
        exit !(!bad && worst < 0.05 && last <= worst)
    }' "$T/r.csv" || fail "consensus distance not bounded (see above)"
echo "ok: 4 peers on a ring train and stay close"
