# Campaign 7, authentication. A TLS ring of 4 training peers (cluster CA A)
# runs twice with the same seed: alone, then while three impostors, all
# claiming to be peer 0 and all sending vectors of absurd norm
# (--test-poison huge), keep dialling peer 0's neighbours (1 and 3):
#   foreign   a certificate for peer 0 from another CA (B)
#   stolen    a valid certificate of CA A, but for peer 2
#   plain     no certificate at all (plaintext), and `openssl s_client`
#             without a client certificate
# Asserts: the neighbours refuse every impostor connection (bad_tls,
# bad_identity counters), no impostor vector is ever mixed (honest `dist`
# stays at honest sizes), and the attacked run is unaffected: every honest
# peer finishes all rounds with no neighbour missing and ends bit-for-bit
# where the run without impostors ended.
#   CAMPAIGN_MODE=short (default, ~25 s) | full (more rounds)
. "$(dirname "$0")/../e2e/lib.sh"
mode=${CAMPAIGN_MODE:-short}
rounds=$([ "$mode" = full ] && echo 1500 || echo 120)
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
for d in A B; do sh "$ROOT/scripts/make-certs.sh" "$T/$d" 4 >/dev/null 2>&1 || fail "make-certs.sh $d"; done
# The stolen identity: CA A's certificate for peer 2, filed as peer 0's.
mkdir -p "$T/stolen"; chmod 700 "$T/stolen"
cp "$T/A/ca.pem" "$T/stolen/ca.pem"
cp "$T/A/node-2.pem" "$T/stolen/node-0.pem"; cp "$T/A/node-2.key" "$T/stolen/node-0.key"
chmod 600 "$T/stolen/node-0.key"

common="--topology $T/ring.topo --data $T/data --layers 2 --width 32 --heads 2 --ctx 32 --batch 8
        --eval-every 40 --eval-windows 16 --checkpoint-every 0 --log-every 0 --seed 11
        --round-timeout 3000 --start-timeout 15000"
# honest NAME PORT: the 4 honest peers; waits for them
honest() {
    pids=""
    for k in 0 1 2 3; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k $common --base-port "$2" --tls-dir "$T/A" \
            --rounds $rounds --run-dir "$T/$1" > "$T/$1.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || fail "$1: an honest peer exited non-zero"
}
port=$(free_ports 7)
honest clean "$port"

# The impostors listen on ports of their own and dial peers 1 and 3 at the
# cluster's addresses, again and again (back-off capped at 5 s).
imp_pids=""
impostor() { # NAME PORT_OFFSET FLAGS...
    name=$1; off=$2; shift 2
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 $common --base-port "$port" \
        --listen "127.0.0.1:$((port + off))" --rounds 1000000 --run-dir "$T/imp-$name" \
        --test-poison huge "$@" > "$T/imp-$name.out" 2>&1 &
    imp_pids="$imp_pids $!"; E2E_PIDS="$E2E_PIDS $!"
}
impostor foreign 4 --tls-dir "$T/B"
impostor stolen 5 --tls-dir "$T/stolen"
impostor plain 6 --plaintext
honest attacked "$port" &
hp=$!; E2E_PIDS="$E2E_PIDS $hp"
# s_client without a certificate, a few times while the honest run goes on
sc=0
while kill -0 $hp 2>/dev/null && [ $sc -lt 20 ]; do
    for k in 1 3; do
        timeout 5 openssl s_client -connect 127.0.0.1:$((port + k)) -tls1_3 -quiet \
            < /dev/null > /dev/null 2>&1 || true
    done
    sc=$((sc + 1)); sleep 0.2
done
wait $hp || fail "the attacked honest run failed"
for p in $imp_pids; do kill -TERM "$p" 2>/dev/null || true; done
for p in $imp_pids; do wait "$p" 2>/dev/null || true; done

m() { echo "$T/$1/node-$2/metrics.jsonl"; }
endf() { jfield "$(m "$1" "$2")" end "$3" | tail -1; }
tls=0; ident=0
for k in 1 3; do
    b=$(endf attacked $k bad_tls); i=$(endf attacked $k bad_identity)
    note "peer $k refused: bad_tls $b, bad_identity $i (clean run: $(endf clean $k refused) refusals)"
    tls=$((tls + b)); ident=$((ident + i))
    [ "$i" -gt 0 ] || fail "peer $k never refused the stolen identity"
    grep -q "refused.*HELLO claims to be peer 0 but" "$T/attacked/node-$k/node.log" ||
        grep -q "refused.*certificate" "$T/attacked/node-$k/node.log" ||
        fail "peer $k logged no identity refusal"
done
[ "$tls" -ge 4 ] || fail "only $tls TLS refusals for a foreign CA, a plaintext peer and s_client on two peers"
for name in foreign stolen plain; do
    [ -f "$T/imp-$name/node-0/metrics.jsonl" ] || continue
    n=$(grep -c '"nbrs":\[[0-9]' "$T/imp-$name/node-0/metrics.jsonl" || true)
    [ "$n" -eq 0 ] || fail "impostor $name mixed $n rounds with honest peers: it was accepted"
done
# No impostor vector mixed: an accepted one would stand ~1e5 away.
dmax=$(grep -h '"ev":"round"' "$T"/attacked/node-*/metrics.jsonl | grep -o '"dist":{[^}]*}' |
    tr -c '0-9.e+-' ' ' | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /\./ && $i + 0 > m) m = $i + 0 } END { print m + 0 }')
awk -v d="$dmax" 'BEGIN { exit !(d < 10) }' || fail "an honest peer mixed a vector $dmax away"
same=0
for k in 0 1 2 3; do
    r=$(endf attacked $k round); miss=$(grep -c '"missing":\[[0-9]' "$(m attacked $k)" || true)
    [ "$r" -eq "$rounds" ] || fail "peer $k ended at round $r of $rounds"
    [ "$miss" -eq 0 ] || fail "peer $k missed a neighbour in $miss rounds"
    a=$(grep '"ev":"eval"' "$(m attacked $k)" | tail -1 | sed 's/.*"val_loss":\([^,]*\).*"norm":\([^,]*\).*/\1 \2/')
    c=$(grep '"ev":"eval"' "$(m clean $k)" | tail -1 | sed 's/.*"val_loss":\([^,]*\).*"norm":\([^,]*\).*/\1 \2/')
    note "peer $k final val_loss, norm: $a (clean run: $c)"
    [ "$a" = "$c" ] || fail "peer $k ended elsewhere than without impostors"
    same=$((same + 1))
done
echo "CAMPAIGN scenario=auth injected=$((tls + ident)) survived=$((tls + ident)) lost=0 recover=honest_identical=$same/4"
