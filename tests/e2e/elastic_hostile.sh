# Elastic membership against hostile joiners and members (docs/membership.md,
# "Who may change what"), on real sockets with TLS. A ring family of 4 honest
# members; peer 3 of a second run floods membership tables. Refused and
# counted, the honest members unaffected (every one ends `done`, its views
# hold only real members):
#   1. a joiner whose certificate is another CA's: the TLS handshake fails
#      (bad_tls at the member), the joiner exits 5 (join);
#   2. a joiner without TLS (--plaintext): tls_mismatch, exit 5;
#   3. a joiner that claims a live member's id (1), through a member not
#      connected to 1 (3: `join refused: ... still a member`, counted
#      join_refused) and through one connected to it (0: `join refused:
#      peer 1 is a member connected here`); exit 5 both times;
#   4. a member (3) that floods tables with joins of ids nobody certified:
#      its neighbours refuse it (view_flood), no fake id ever enters an
#      honest view of a round that was played.
. "$(dirname "$0")/lib.sh"
"$MURMUR" topo gen ring -n 4 --family > "$T/ring4.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" 4 > /dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/other" 6 > /dev/null
common="--topology $T/ring4.topo --no-train --vector-len 1000 --compute-jitter uniform:0.02
        --log-every 0 --eval-every 0 --suspect-ms 1000 --peer-timeout 2000"
counter() { # RUN K FIELD: the end line's count
    v=$(jfield "$1/node-$2/metrics.jsonl" end "$3" | tail -1); echo "${v:-0}"
}
start_members() { # RUN PORT ROUNDS [FLAGS OF PEER 3]
    run=$1; port=$2; rounds=$3; shift 3
    pids=""
    for k in 0 1 2 3; do
        extra=""; [ $k -eq 3 ] && extra="$*"
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --base-port "$port" --rounds "$rounds" \
            --run-dir "$run" --tls-dir "$T/certs" $common $extra > "$run.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
}
# joiner NAME STATUS FLAGS...: a joiner that must exit with STATUS, in 60 s
joiner() {
    name=$1; want=$2; shift 2
    rc=0
    MURMUR_NO_BLAS_FIX=1 timeout 60 "$MURMUR" node --rounds 5000 --start-timeout 4000 \
        --run-dir "$T/j-$name" $common "$@" > "$T/j-$name.out" 2>&1 || rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: the joiner exited $rc, not $want: $(tail -3 "$T/j-$name.out")"
}
views_ok() { # RUN K: every view line names only ids 0..3
    grep '"ev":"view"' "$1/node-$2/metrics.jsonl" | sed -n 's/.*"members":\[\([0-9,]*\)\].*/\1/p' |
        tr ',' '\n' | awk '$1 > 3 { bad = 1 } END { exit bad }'
}

run="$T/a"; port=$(free_ports 6)
start_members "$run" "$port" 1500
sleep 2
joiner foreign 5 --id 4 --join "127.0.0.1:$((port + 1))" --base-port "$port" --tls-dir "$T/other"
joiner plaintext 5 --id 4 --join "127.0.0.1:$((port + 2))" --base-port "$port" --plaintext
joiner live-3 5 --id 1 --join "127.0.0.1:$((port + 3))" --base-port "$port" --tls-dir "$T/certs" \
    --advertise "127.0.0.1:$((port + 5))"
grep -q "join refused:.*still a member\|join refused:.*member" "$T/j-live-3.out" ||
    fail "live-3: the joiner's log does not say why it was refused: $(grep -i refus "$T/j-live-3.out" | head -2)"
joiner live-0 5 --id 1 --join "127.0.0.1:$port" --base-port "$port" --tls-dir "$T/certs" \
    --advertise "127.0.0.1:$((port + 5))"
grep -q "join refused" "$T/j-live-0.out" || fail "live-0: no 'join refused' in the joiner's log"
wait_all $pids || fail "an honest member failed while joiners were refused"
for k in 0 1 2 3; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | grep -q '"reason":"done"' || fail "member $k did not end done"
    views_ok "$run" $k || fail "member $k had a view with an id beyond 0..3"
done
[ "$(counter "$run" 1 bad_tls)" -ge 1 ] || fail "member 1 counted no bad_tls for the foreign CA"
[ "$(counter "$run" 2 tls_mismatch)" -ge 1 ] || fail "member 2 counted no tls_mismatch for the plaintext joiner"
[ "$(counter "$run" 3 join_refused)" -ge 1 ] || fail "member 3 counted no join_refused for id 1"
[ "$(counter "$run" 0 join_refused)" -ge 1 ] || fail "member 0 counted no join_refused for id 1"
note "foreign CA, plaintext, a live member's id (twice): refused and counted; members done"

run="$T/b"; port=$(free_ports 4)
start_members "$run" "$port" 600 --test-poison view-flood
set -- $pids; honest="$1 $2 $3"; flooder=$4
wait_all $honest || fail "an honest member failed beside the flooder"
kill "$flooder" 2>/dev/null || true
floods=0
for k in 0 1 2; do
    grep '"ev":"end"' "$run/node-$k/metrics.jsonl" | grep -q '"reason":"done"' || fail "honest member $k did not end done"
    views_ok "$run" $k || fail "honest member $k had a fake id in a view it played"
    floods=$((floods + $(counter "$run" $k view_flood)))
done
[ "$floods" -ge 1 ] || fail "no honest member refused the flooder (view_flood 0)"
note "the flooder was refused $floods times (view_flood); its fake joins never reached a played view"
echo "ok: hostile joiners and a flooding member are refused, honest members unaffected"
