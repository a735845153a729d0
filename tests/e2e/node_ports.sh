# Listen ports inside the kernel's ephemeral range (issue 11: 9 of 256
# peers started with -p 38000 failed with "address already in use"): the
# node warns, naming the range and which ports to choose, and still runs
# (docs/launching.md, "Choosing ports"); below the range it says nothing.
# The error when such a port is taken is tested in test_transport
# (ephemeral_port_in_use).
. "$(dirname "$0")/lib.sh"
# (cat, not read: dash reads byte by byte, and this file answers a 1-byte read with 1 byte)
range=$(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || { echo "skipped: no ip_local_port_range"; exit 0; }
lo=$(echo $range | cut -d' ' -f1); hi=$(echo $range | cut -d' ' -f2)
"$MURMUR" topo gen ring -n 4 > "$T/ring.topo" 2>/dev/null
one() { # BASE_PORT OUT [flags]: a run of its own in run-OUT's name (one run per node-K/)
    bp=$1; out=$2; shift 2
    MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id 0 --topology "$T/ring.topo" --base-port "$bp" --plaintext \
        --no-train --vector-len 10 --rounds 0 --eval-every 0 --run-dir "$T/run-$(basename "$out" .out)" \
        "$@" > "$out" 2>&1
}
# a base port inside the range, with its 4 ports free
for _ in 1 2 3 4 5 6 7 8 9 10; do
    p=$(( lo + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (hi - lo - 4) ))
    busy=$(ss -Htan 2>/dev/null | awk -v b="$p" '{ sub(/.*:/, "", $4); if ($4 >= b && $4 < b + 4) c++ } END { print c + 0 }')
    [ "$busy" -eq 0 ] && break
done
one "$p" "$T/in.out" || fail "a node on ports inside the ephemeral range did not run ($(tail -2 "$T/in.out"))"
grep -q "listen ports $p..$((p + 3)) are inside this machine's ephemeral port range $lo..$hi" "$T/in.out" ||
    fail "no warning for ports $p..$((p + 3)) inside $lo..$hi: $(grep -v PLAINTEXT "$T/in.out" | head -3)"
grep -q "choose listen ports below $lo" "$T/in.out" || fail "the warning does not say which ports to choose"
grep -q "ephemeral port range" "$T/run-in/node-0/node.log" || fail "the warning is not in node.log"
# the launcher's kind of port: below the range, no warning
q=$(free_ports 4)
one "$q" "$T/below.out" || fail "a node on ports below the range did not run"
! grep -q "ephemeral" "$T/below.out" || fail "a warning for ports $q..$((q + 3)), below $lo"
# --listen: only this peer's own port is checked
one "$q" "$T/listen.out" --listen "127.0.0.1:$p" || fail "--listen inside the range did not run"
grep -q "listen port $p is inside" "$T/listen.out" || fail "no warning for --listen 127.0.0.1:$p"
note "$(grep -o 'listen ports.*' "$T/in.out" | cut -c1-150)..."
echo "ok: listen ports inside the ephemeral range are named, with the ports to choose"
