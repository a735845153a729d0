#!/bin/sh
# The languages corpus: one Debian fortunes package per language (English,
# German, Spanish, Italian, Portuguese, Polish, Czech/Slovak, Russian),
# fetched with `apt-get download` at the versions pinned in
# scripts/lang.sha256, each .deb refused unless its SHA-256 is the recorded
# one, its UTF-8 fortune files cut into equal chunks and prepared with
# `murmur data-prepare --text` (label = language; docs/formats.md).
#
#   sh scripts/fetch-lang.sh [--check] [DEST]     (DEST: data/lang)
#
# --check only says (exit 0) whether DEST is already prepared from the
# recorded packages and every file in it verifies. MURMUR names the murmur
# binary (default: ./murmur next to scripts/). LANG_CHUNKS (32) chunks of at
# least LANG_CHUNK_BYTES (7000) bytes per language.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
murmur=${MURMUR:-$root/murmur}
export MURMUR_NO_BLAS_FIX=1 LC_ALL=C
pins=$here/lang.sha256
chunks=${LANG_CHUNKS:-32}
chunk_bytes=${LANG_CHUNK_BYTES:-7000}
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
dest=${1:-$root/data/lang}
die() { echo "fetch-lang: $*" >&2; exit 1; }

# The pins: "SHA256  FILE  LABEL" lines, comments skipped.
grep -v '^#' "$pins" | awk 'NF && (NF != 3 || $1 !~ /^[0-9a-f]+$/ || length($1) != 64 ||
    $2 !~ /^[a-z0-9.+-]+_[A-Za-z0-9.+~%-]+_all\.deb$/ || $3 !~ /^[a-z]+$/) { bad = 1 }
    END { exit bad }' || die "$pins is malformed (want SHA256  PACKAGE_VERSION_all.deb  LABEL)"
[ -x "$murmur" ] || die "$murmur not built (run make)"
# The prepared corpus records the pins' own hash and the chunking: a change
# to either prepares it again.
stamp="source fortunes-lang pins-sha256 $(sha256sum "$pins" | awk '{ print $1 }') chunks $chunks x $chunk_bytes"

prepared() {
    [ -f "$1/index.tsv" ] && grep -qxF "# $stamp" "$1/index.tsv" &&
        "$murmur" data-verify "$1" >/dev/null 2>&1
}
if prepared "$dest"; then
    [ $check -eq 1 ] || echo "data-lang: $dest is already prepared and verified"
    exit 0
fi
[ $check -eq 0 ] || exit 1

command -v apt-get >/dev/null 2>&1 || die "apt-get is needed to fetch the packages"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb is needed to unpack the packages"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/deb" "$tmp/src"
updated=0
download() { (cd "$tmp/deb" && apt-get download -q "$1" >"$tmp/apt.out" 2>&1); }
grep -v '^#' "$pins" | awk 'NF' >"$tmp/pins"
while read -r want file label; do
    pkg=${file%%_*}
    ver=$(echo "$file" | sed 's/^[^_]*_\(.*\)_all\.deb$/\1/; s/%3a/:/g')
    echo "data-lang: fetching $pkg=$ver ($label)"
    if ! download "$pkg=$ver"; then
        # a fresh machine has no package lists yet: read them once, as root
        if [ "$updated" = 0 ] && [ "$(id -u)" = 0 ]; then
            echo "data-lang: apt-get update (the package lists)"
            apt-get update -qq >"$tmp/apt.out" 2>&1 || { cat "$tmp/apt.out" >&2; die "apt-get update failed"; }
            updated=1
        fi
        download "$pkg=$ver" || { cat "$tmp/apt.out" >&2
            die "'apt-get download $pkg=$ver' failed (as root it runs apt-get update first; a version no longer in the archive needs new pins in $pins)"; }
    fi
    [ -f "$tmp/deb/$file" ] || die "apt-get download $pkg=$ver did not produce $file"
    got=$(sha256sum "$tmp/deb/$file" | awk '{ print $1 }')
    if [ "$got" != "$want" ]; then
        echo "fetch-lang: REFUSING $file: its SHA-256 is $got," >&2
        echo "fetch-lang: but scripts/lang.sha256 records $want." >&2
        echo "fetch-lang: the package changed or was damaged; nothing was prepared." >&2
        exit 1
    fi
    mkdir "$tmp/x-$label"
    dpkg-deb -x "$tmp/deb/$file" "$tmp/x-$label" || die "$file: dpkg-deb could not unpack it"
    # The fortune files: regular files (no symlinks), no .dat indexes, no
    # offensive section, valid UTF-8 only; in byte order.
    find "$tmp/x-$label/usr/share/games/fortunes" -type f ! -name '*.dat' ! -path '*/off/*' |
        sort >"$tmp/files-$label"
    : >"$tmp/utf8-$label"
    while read -r f; do
        if iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1; then echo "$f" >>"$tmp/utf8-$label"
        else echo "data-lang: $label: skipping ${f#"$tmp/x-$label"} (not UTF-8)"; fi
    done <"$tmp/files-$label"
    mkdir "$tmp/src/$label"
    # Cut at fortune boundaries (a line "%"), so no chunk splits a UTF-8
    # sequence: chunk k is the next fortunes until it has chunk_bytes.
    tr '\n' '\0' <"$tmp/utf8-$label" | xargs -0 cat | awk -v dir="$tmp/src/$label" \
        -v label="$label" -v want="$chunks" -v min="$chunk_bytes" '
        function out() { return sprintf("%s/%s-%02d.txt", dir, label, k) }
        k < want { printf "%s\n", $0 > out(); n += length($0) + 1
                   if ($0 == "%" && n >= min) { close(out()); k++; n = 0 } }
        END { if (k < want) { printf "data-lang: %s has text for %d chunks of %d bytes, not %d\n",
                                     label, k, min, want > "/dev/stderr"; exit 1 } }' ||
        die "$label: not enough text"
done <"$tmp/pins"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp"
"$murmur" data-prepare --text --note "$stamp" "$tmp/src" "$dest.tmp"
"$murmur" data-verify "$dest.tmp"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "data-lang: ready in $dest"
