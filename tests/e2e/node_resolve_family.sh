# A peer told to --listen on 0.0.0.0 is reached over IPv4 even where the
# peers' host name resolves to an IPv6 address first. A minimal Debian
# without /etc/hosts resolves `localhost` to ::1 first; murmur.sbatch runs
# every task with --listen 0.0.0.0:PORT and names the hosts as Slurm does,
# so the peers dialled ::1 and never met (found by scripts/fresh-debian.sh).
# Here a private mount namespace gives /etc/hosts a name, `dualhost`, with
# ::1 before 127.0.0.1; two peers of a 2-chain, pure gossip, must meet and
# finish every round. Needs root (unshare, mount) and IPv6 on loopback.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (a mount namespace for /etc/hosts)"
[ -e /proc/net/if_inet6 ] || fail "no IPv6 in this kernel: the case cannot arise here"
printf '::1 dualhost\n127.0.0.1 dualhost\n' > "$T/hosts"
"$MURMUR" topo gen chain -n 2 > "$T/chain.topo"
port=$(free_ports 2)
printf '0 dualhost:%d\n1 dualhost:%d\n' "$port" $((port + 1)) > "$T/peers"
cat > "$T/run.sh" <<RUN
set -e
mount --bind "$T/hosts" /etc/hosts
first=\$(getent ahosts dualhost | awk 'NR == 1 { print \$1 }')
echo "dualhost resolves first to \$first" > "$T/first"
for k in 0 1; do
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id \$k --topology "$T/chain.topo" --hosts "$T/peers" \
        --listen 0.0.0.0:\$(($port + \$k)) --plaintext --no-train --vector-len 100 --rounds 5 \
        --eval-every 0 --checkpoint-every 0 --log-every 0 --start-timeout 4000 \
        --peer-timeout 2000 --round-timeout 2000 --run-dir "$T/run" > "$T/peer\$k.out" 2>&1 &
done
st=0
wait %1 || st=1
wait %2 || st=1
exit \$st
RUN
st=0
timeout 60 unshare -m sh "$T/run.sh" || st=$?
cat "$T/first" 2>/dev/null | sed 's/^/  /'
grep -q '::1' "$T/first" || fail "the private /etc/hosts did not put ::1 first: $(cat "$T/first" 2>/dev/null)"
[ $st -eq 0 ] || { tail -n 3 "$T/peer0.out" "$T/peer1.out" >&2; fail "the peers did not finish (status $st)"; }
for k in 0 1; do
    grep '"ev":"end"' "$T/run/node-$k/metrics.jsonl" | grep -q '"reason":"done"' ||
        fail "peer $k did not end done"
done
echo "ok: peers listening on 0.0.0.0 meet by a name that resolves to ::1 first"
