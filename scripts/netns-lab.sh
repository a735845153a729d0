#!/bin/sh
# A lab of N "hosts" on one machine: network namespaces joined by a bridge,
# for tests that must cross a real (virtual) network. Needs root and iproute2.
#
#   scripts/netns-lab.sh up TAG N        create hosts TAG-0 .. TAG-(N-1)
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
#
# Taking a host's own link down (cut TAG K) isolates that host from
# everyone; to split the network into two working halves use the split
# layout and cut its trunk.
#
# Host K is namespace TAG-K with address 10.213.0.(K+1)/24 on a veth whose
# other end sits on a bridge inside its own namespace TAG-sw. Nothing is
# added to the machine's own namespace, and the addresses are reachable only
# from inside the lab.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cmd=${1:-}; tag=${2:-}
[ -n "$cmd" ] && [ -n "$tag" ] || { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
case "$tag" in *[!a-z0-9]*) echo "netns-lab: TAG must be lowercase letters and digits" >&2; exit 2 ;; esac
[ ${#tag} -le 6 ] || { echo "netns-lab: TAG must be at most 6 characters" >&2; exit 2; }
shift 2

addr() { echo "10.213.0.$(($1 + 1))"; }

case "$cmd" in
up|split)
    n=${1:?N}
    [ "$n" -ge 1 ] && [ "$n" -le 200 ] || { echo "netns-lab: N must be 1..200" >&2; exit 2; }
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
    k=0
    while [ "$k" -lt "$n" ]; do
        br=br0; [ "$k" -lt "$half" ] || br=br1
        ip netns add "$tag-$k"
        ip link add "$tag-h$k" type veth peer name "$tag-s$k"
        ip link set "$tag-h$k" netns "$tag-$k"
        ip link set "$tag-s$k" netns "$tag-sw"
        ip -n "$tag-sw" link set "$tag-s$k" master "$br" up
        ip -n "$tag-$k" link set lo up
        ip -n "$tag-$k" addr add "$(addr "$k")/24" dev "$tag-h$k"
        ip -n "$tag-$k" link set "$tag-h$k" up
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
