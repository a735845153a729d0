#!/bin/sh
# A lab of N "hosts" on one machine: network namespaces joined by a bridge,
# for tests that must cross a real (virtual) network. Needs root and iproute2.
#
#   scripts/netns-lab.sh up TAG N        create hosts TAG-0 .. TAG-(N-1)
#   scripts/netns-lab.sh up TAG N --profile GxP:intra=RATE,inter=RATE
#                                        the same in G groups of P hosts
#                                        (G*P = N; hosts 0..P-1 are group 0,
#                                        ...), links shaped with tc (below)
#   scripts/netns-lab.sh split TAG N     the same on two switches: hosts
#                                        0..N/2-1 on one, the rest on the
#                                        other, joined by one trunk link
#   scripts/netns-lab.sh cut TAG trunk   cut the trunk: two partitions, each
#                                        half still connected inside
#   scripts/netns-lab.sh heal TAG trunk  restore it
#   scripts/netns-lab.sh down TAG        remove them (and the switch)
#   scripts/netns-lab.sh addr TAG K      print host K's address
#   scripts/netns-lab.sh cut TAG K...    take hosts' links down (partition)
#   scripts/netns-lab.sh heal TAG K...   bring them back up
#   scripts/netns-lab.sh exec TAG K CMD  run CMD inside host K
#   scripts/netns-lab.sh profile SPEC    check a profile, print it as
#                                        "groups G per P intra BYTES/s inter BYTES/s"
#
# Taking a host's own link down (cut TAG K) isolates that host from
# everyone; to split the network into two working halves use the split
# layout and cut its trunk.
#
# Host K is namespace TAG-K with address 10.213.0.(K+1)/24 on a veth whose
# other end sits on a bridge inside its own namespace TAG-sw. Nothing is
# added to the machine's own namespace, and the addresses are reachable only
# from inside the lab.
#
# Link profiles (--profile): group g's hosts sit on their own bridge g<g>,
# and each group bridge is joined to a core bridge by one uplink. Every
# host's link is limited to the intra RATE in each direction (a peer sends
# at most RATE in all, and receives at most RATE), every uplink to the
# inter RATE in each direction (all the traffic leaving a group shares it,
# as the peers of one machine share its network card). So one flow between
# two hosts of a group gets intra, one between groups min(intra, inter), and
# k flows out of one group share inter. RATE is a number and a unit, as tc
# takes it: kbit, mbit, gbit (bits/s, x1000), or bps, kbps, mbps, gbps
# (bytes/s); "intra" or "inter" left out means unlimited. The shaping is tc
# tbf (token bucket) on the egress of both ends of every veth: this kernel
# has no netem, so no delay is added and there is no loss but tbf's own
# queue drops (docs/launching.md).
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cmd=${1:-}; tag=${2:-}
[ -n "$cmd" ] && [ -n "$tag" ] || { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# rate_bps RATE: bytes per second of a tc rate, or nothing when malformed.
rate_bps() {
    echo "$1" | awk '{
        if (!match($0, /^[0-9]+(\.[0-9]+)?/)) exit
        v = substr($0, 1, RLENGTH); u = substr($0, RLENGTH + 1)
        m["bit"] = 1 / 8; m["kbit"] = 1e3 / 8; m["mbit"] = 1e6 / 8; m["gbit"] = 1e9 / 8
        m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9
        if (!(u in m) || v <= 0) exit
        printf "%.0f\n", v * m[u] }'
}
# parse_profile SPEC: sets groups, per, intra, inter (tc rates, "" = unlimited).
parse_profile() {
    spec=$1; groups=""; per=""; intra=""; inter=""
    case "$spec" in *x*:*) ;; *) echo "netns-lab: profile '$spec': expected GxP:intra=RATE,inter=RATE" >&2; exit 2 ;; esac
    groups=${spec%%x*}; rest=${spec#*x}; per=${rest%%:*}; opts=${rest#*:}
    case "$groups$per" in ''|*[!0-9]*) echo "netns-lab: profile '$spec': G and P must be whole numbers" >&2; exit 2 ;; esac
    [ "$groups" -ge 1 ] && [ "$per" -ge 1 ] || { echo "netns-lab: profile '$spec': G and P must be at least 1" >&2; exit 2; }
    for kv in $(echo "$opts" | tr ',' ' '); do
        k=${kv%%=*}; v=${kv#*=}
        [ -n "$(rate_bps "$v")" ] || { echo "netns-lab: profile '$spec': '$v' is not a rate (e.g. 100mbit, 1gbit, 50mbps)" >&2; exit 2; }
        case "$k" in
        intra) intra=$v ;;
        inter) inter=$v ;;
        *) echo "netns-lab: profile '$spec': unknown key '$k' (intra, inter)" >&2; exit 2 ;;
        esac
    done
}
# shape NS DEV RATE: a token bucket on DEV's egress inside namespace NS. The
# bucket holds 4 ms at the rate (at least 64 KB: one GSO packet), and the
# queue 100 ms, so a TCP flow keeps the link busy.
shape() {
    [ -n "$3" ] || return 0
    b=$(rate_bps "$3")
    burst=$(awk -v b="$b" 'BEGIN { x = b * 0.004; if (x < 65536) x = 65536; printf "%.0f", x }')
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst "$burst" latency 100ms
}
shift 2

addr() { echo "10.213.0.$(($1 + 1))"; }

case "$cmd" in
profile)
    parse_profile "$tag"
    bi=unlimited; [ -z "$intra" ] || bi=$(rate_bps "$intra")
    be=unlimited; [ -z "$inter" ] || be=$(rate_bps "$inter")
    echo "groups $groups per $per intra $bi inter $be"
    exit 0 ;;
esac
case "$tag" in *[!a-z0-9]*) echo "netns-lab: TAG must be lowercase letters and digits" >&2; exit 2 ;; esac
[ ${#tag} -le 6 ] || { echo "netns-lab: TAG must be at most 6 characters" >&2; exit 2; }

case "$cmd" in
up|split)
    n=${1:?N}
    [ "$n" -ge 1 ] && [ "$n" -le 200 ] || { echo "netns-lab: N must be 1..200" >&2; exit 2; }
    groups=""
    if [ "${2:-}" = --profile ]; then
        [ "$cmd" = up ] || { echo "netns-lab: --profile goes with up, not split" >&2; exit 2; }
        parse_profile "${3:?--profile SPEC}"
        [ $((groups * per)) -eq "$n" ] || { echo "netns-lab: profile ${groups}x$per is $((groups * per)) hosts, not $n" >&2; exit 2; }
    elif [ $# -gt 1 ]; then
        echo "netns-lab: unexpected '$2' (up TAG N [--profile SPEC])" >&2; exit 2
    fi
    ip netns add "$tag-sw"
    ip -n "$tag-sw" link add br0 type bridge
    ip -n "$tag-sw" link set br0 up
    ip -n "$tag-sw" link set lo up
    half=$n
    if [ "$cmd" = split ]; then
        half=$((n / 2))
        ip -n "$tag-sw" link add br1 type bridge
        ip -n "$tag-sw" link set br1 up
        ip -n "$tag-sw" link add trunk0 type veth peer name trunk1
        ip -n "$tag-sw" link set trunk0 master br0 up
        ip -n "$tag-sw" link set trunk1 master br1 up
    fi
    if [ -n "$groups" ]; then
        # group bridges g0.., each with an uplink u<g>a - u<g>b to br0 (the core)
        g=0
        while [ "$g" -lt "$groups" ]; do
            ip -n "$tag-sw" link add "g$g" type bridge
            ip -n "$tag-sw" link set "g$g" up
            ip -n "$tag-sw" link add "u${g}a" type veth peer name "u${g}b"
            ip -n "$tag-sw" link set "u${g}a" master "g$g" up
            ip -n "$tag-sw" link set "u${g}b" master br0 up
            shape "$tag-sw" "u${g}a" "$inter"   # out of group g
            shape "$tag-sw" "u${g}b" "$inter"   # into group g
            g=$((g + 1))
        done
    fi
    k=0
    while [ "$k" -lt "$n" ]; do
        br=br0; [ "$k" -lt "$half" ] || br=br1
        [ -z "$groups" ] || br="g$((k / per))"
        ip netns add "$tag-$k"
        ip link add "$tag-h$k" type veth peer name "$tag-s$k"
        ip link set "$tag-h$k" netns "$tag-$k"
        ip link set "$tag-s$k" netns "$tag-sw"
        ip -n "$tag-sw" link set "$tag-s$k" master "$br" up
        ip -n "$tag-$k" link set lo up
        ip -n "$tag-$k" addr add "$(addr "$k")/24" dev "$tag-h$k"
        ip -n "$tag-$k" link set "$tag-h$k" up
        if [ -n "$groups" ]; then
            shape "$tag-$k" "$tag-h$k" "$intra"   # what host k sends
            shape "$tag-sw" "$tag-s$k" "$intra"   # what host k receives
        fi
        k=$((k + 1))
    done
    ;;
down)
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$tag-(sw|[0-9]+)\$" || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
    ;;
addr) addr "${1:?K}" ;;
cut|heal)
    state=down; [ "$cmd" = heal ] && state=up
    for k in "$@"; do
        case "$k" in
        trunk) ip -n "$tag-sw" link set trunk0 "$state" ;;
        *) ip -n "$tag-sw" link set "$tag-s$k" "$state" ;;
        esac
    done
    ;;
exec)
    k=${1:?K}; shift
    exec ip netns exec "$tag-$k" "$@"
    ;;
*) echo "netns-lab: unknown command '$cmd'" >&2; exit 2 ;;
esac
