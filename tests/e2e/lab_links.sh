# Link profiles of the network-namespace lab are applied: scripts/netns-lab.sh
# up TAG 4 --profile 2x2:intra=...,inter=... makes two groups of two hosts;
# TCP throughput measured with murmur's own probe (murmur plan --link-server
# in one host, --link-to in another, 2 s) must come within 20 % of the
# profile: between two hosts of a group (intra), between groups (inter), and
# for two flows leaving one group at once (they share its uplink: inter in
# all). Needs root and iproute2: when namespaces are refused to a non-root
# user the test says why and passes; as root a lab that cannot be made or
# shaped is a failure.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
. "$ROOT/tests/e2e/lib/lab.sh"
intra=200mbit; inter=50mbit
lab_up lk 4 --profile "2x2:intra=$intra,inter=$inter"
export MURMUR_NO_BLAS_FIX=1
port=$(free_ports 1)
want_intra=$(sh "$lab" profile "2x2:intra=$intra,inter=$inter" | awk '{ print $6 }')
want_inter=$(sh "$lab" profile "2x2:intra=$intra,inter=$inter" | awk '{ print $8 }')
# flow FROM TO NAME: a 2 s copy from host FROM to host TO, in the background;
# its bytes/s end up in $T/NAME.
flow() {
    a=$(sh "$lab" addr "$tag" "$2")
    sh "$lab" exec "$tag" "$2" "$MURMUR" plan --link-server "$a:$port" --timeout 20 2> "$T/$3.srv" &
    E2E_PIDS="$E2E_PIDS $!"
    sh "$lab" exec "$tag" "$1" "$MURMUR" plan --link-to "$a:$port" --seconds 2 --json > "$T/$3.json" 2> "$T/$3.err" &
    E2E_PIDS="$E2E_PIDS $!"
}
rate() { sed -n 's/.*"bps":\([0-9.e+]*\).*/\1/p' "$T/$1.json"; }
# check NAME GOT WANT: within 20 %
check() {
    [ -n "$2" ] || fail "$1: no measurement ($(cat "$T/$1.err" "$T/$1.srv" 2>/dev/null | head -3))"
    note "$1: $(awk -v g="$2" -v w="$3" 'BEGIN { printf "%.2f MB/s, profile %.2f MB/s (%+.0f %%)", g / 1e6, w / 1e6, 100 * (g / w - 1) }')"
    awk -v g="$2" -v w="$3" 'BEGIN { exit !(g >= 0.8 * w && g <= 1.2 * w) }' || fail "$1: not within 20 % of the profile"
}
flow 0 1 intra; wait
check "host 0 -> 1 (same group)" "$(rate intra)" "$want_intra"
flow 0 2 inter; wait
check "host 0 -> 2 (across groups)" "$(rate inter)" "$want_inter"
# two flows out of group 0 at once share its uplink
flow 0 2 share0; flow 1 3 share1; wait
both=$(awk -v a="$(rate share0)" -v b="$(rate share1)" 'BEGIN { if (a > 0 && b > 0) printf "%.0f", a + b }')
note "the two shared flows: $(rate share0) and $(rate share1) bytes/s"
check "hosts 0 -> 2 and 1 -> 3 at once (one uplink)" "$both" "$want_inter"
echo "ok: link profile 2x2:intra=$intra,inter=$inter applied"
