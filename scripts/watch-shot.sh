#!/bin/sh
# A screenshot of murmur watch's page of a run or sweep directory, taken
# with Debian's headless Chromium (chromium-headless-shell) through the
# DevTools protocol tool the browser test uses (build/tests/tools/cdp,
# built by make build-tests).
#
#   scripts/watch-shot.sh DIR [OUT.png] [WIDTHxHEIGHT] [UPDATES]
#
# Starts `murmur watch DIR` on a free loopback port, opens its page, waits
# (at most 120 s) for UPDATES pushed documents (default 6, at --interval
# 0.5: a few seconds
# of a live run, for the per-link chart) and writes OUT.png (default
# DIR/watch.png; size default 1600x1300), then stops the watch. The run may
# be live or finished. Exit status: 0 written; 1 the page did not come up
# or the screenshot failed; 2 usage.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: $0 DIR [OUT.png] [WIDTHxHEIGHT] [UPDATES]" >&2; exit 2; }
dir=$1; out=${2:-$1/watch.png}; size=${3:-1600x1300}; updates=${4:-6}
here=$(cd "$(dirname "$0")" && pwd)
MURMUR=${MURMUR:-$here/../murmur}
CDP=${CDP:-$here/../${BUILD:-build}/tests/tools/cdp}
[ -x "$CDP" ] || { echo "$0: $CDP missing: make build-tests builds it" >&2; exit 1; }
command -v chromium-headless-shell > /dev/null ||
    { echo "$0: chromium-headless-shell missing (Debian's package of that name)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/murmur-watch-shot.XXXXXX")
wpid=""
trap '[ -z "$wpid" ] || kill "$wpid" 2>/dev/null || true; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100) ))
"$MURMUR" watch "$dir" --addr "127.0.0.1:$port" --interval 0.5 > "$T/watch.out" 2>&1 &
wpid=$!
i=0
until curl -sf "http://127.0.0.1:$port/" > /dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] && kill -0 "$wpid" 2>/dev/null || { cat "$T/watch.out" >&2; echo "$0: murmur watch did not answer" >&2; exit 1; }
    sleep 0.1
done
"$CDP" chromium-headless-shell "$T/profile" "$size" "http://127.0.0.1:$port/" \
    "wait:120:Number(document.body.dataset.updates) >= $updates" "shot:$out" > /dev/null ||
    { echo "$0: the page did not show $updates updates" >&2; exit 1; }
echo "$out"
