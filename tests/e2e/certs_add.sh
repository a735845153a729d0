# scripts/make-certs.sh --add DIR K (a peer joining a running cluster):
# the added certificate is signed by DIR's CA, and a peer that presents it
# completes the TLS handshake with a peer of the original set (a 2-peer
# run on TLS ends done); one from another CA is refused by the original
# peer (bad_tls, "certificate rejected", exit 3). --add refuses an
# existing node-K, a directory without the CA key, and a bad K, saying why.
. "$(dirname "$0")/lib.sh"
MC="$ROOT/scripts/make-certs.sh"
sh "$MC" "$T/a" 1 > /dev/null || fail "make-certs.sh a 1"
sh "$MC" --add "$T/a" 1 > "$T/add.out" 2>&1 || fail "--add a 1: $(cat "$T/add.out")"
grep -q "added peer 1" "$T/add.out" || fail "--add said: $(cat "$T/add.out")"
openssl verify -CAfile "$T/a/ca.pem" "$T/a/node-1.pem" > /dev/null || fail "node-1.pem is not signed by a's CA"
[ "$(stat -c %a "$T/a/node-1.key")" = 600 ] || fail "node-1.key is mode $(stat -c %a "$T/a/node-1.key"), not 600"

# refusals: status and the reason
refuse() { # WHAT STATUS EXPECT ARGS...
    what=$1 want=$2 expect=$3; shift 3
    st=0; sh "$MC" "$@" > "$T/r.out" 2>&1 || st=$?
    [ "$st" = "$want" ] || fail "$what: exit $st, not $want ($(cat "$T/r.out"))"
    grep -q -- "$expect" "$T/r.out" || fail "$what: message '$(cat "$T/r.out")' lacks '$expect'"
}
before=$(cat "$T/a/node-1.pem")
refuse "node-1 again" 1 "node-1.pem exists already: peer 1 has a certificate" --add "$T/a" 1
[ "$(cat "$T/a/node-1.pem")" = "$before" ] || fail "a refused --add changed node-1.pem"
refuse "no CA at all" 1 "has no CA" --add "$T/none" 2
mkdir -p "$T/pem"; cp "$T/a/ca.pem" "$T/pem/"
refuse "CA without its key" 1 "has the CA certificate but not its key" --add "$T/pem" 2
[ ! -e "$T/pem/node-2.pem" ] || fail "--add without the CA key wrote node-2.pem"
refuse "K not a number" 2 "K must be a number" --add "$T/a" two
refuse "K missing" 2 "usage:" --add "$T/a"

# run NAME DIR0 DIR1: peers 0 and 1 of a 2-peer TLS run, each with its dir;
# the exit statuses in $T/NAME.st
"$MURMUR" topo gen chain -n 2 > "$T/pair.topo"
run() {
    port=$(free_ports 2)
    pids=""
    for k in 0 1; do
        d=$2; [ $k = 1 ] && d=$3
        ( st=0; MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$T/pair.topo" --base-port "$port" \
            --tls-dir "$d" --no-train --vector-len 64 --rounds 5 --log-every 0 --start-timeout 4000 \
            --run-dir "$T/$1" > "$T/$1-$k.out" 2>&1 || st=$?; echo $st > "$T/$1-$k.st" ) &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || true
}
run added "$T/a" "$T/a"
for k in 0 1; do
    [ "$(cat "$T/added-$k.st")" = 0 ] || { tail -n 5 "$T/added-$k.out" >&2; fail "peer $k (1 with the added certificate) exited $(cat "$T/added-$k.st")"; }
    grep -q '"ev":"end".*"reason":"done"' "$T/added/node-$k/metrics.jsonl" || fail "peer $k did not end done"
done
note "peer 1 with the certificate issued by --add: both peers done"

# peer 1's certificate from another CA (b), trusting a's: peer 0 refuses it
sh "$MC" "$T/b" 2 > /dev/null || fail "make-certs.sh b 2"
mkdir -p "$T/foreign"; chmod 700 "$T/foreign"
cp "$T/a/ca.pem" "$T/foreign/"; cp "$T/b/node-1.pem" "$T/b/node-1.key" "$T/foreign/"
run foreign "$T/a" "$T/foreign"
[ "$(cat "$T/foreign-0.st")" = 3 ] || fail "peer 0 exited $(cat "$T/foreign-0.st"), not 3 (refused), facing another CA's certificate"
grep -q "refused: peer 1: TLS handshake failed: certificate rejected" "$T/foreign/node-0/node.log" ||
    fail "peer 0 did not say it rejected peer 1's certificate"
bad=$(jfield "$T/foreign/node-0/metrics.jsonl" end bad_tls | tail -1)
[ "${bad:-0}" -gt 0 ] || fail "peer 0 counted no bad_tls"
grep -q '"ev":"round".*"nbrs":\[1\]' "$T/foreign/node-0/metrics.jsonl" && fail "peer 0 mixed with the foreign peer"
note "another CA's certificate: refused by peer 0 (bad_tls $bad, exit 3)"
echo "ok: make-certs.sh --add"
