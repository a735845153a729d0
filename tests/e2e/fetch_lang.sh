#!/bin/sh
# scripts/fetch-lang.sh offline: a stand-in `apt-get` on PATH hands out .deb
# files this test builds with dpkg-deb. With the real pins
# (scripts/lang.sha256) a damaged package under the real name is refused and
# nothing is prepared; with the test's own pins two small languages are
# prepared (UTF-8 fortune files only, .dat indexes and off/ left out, equal
# chunks), a second run fetches nothing, a damaged prepared file is
# prepared again, and too little text is refused.
set -eu
MURMUR=${MURMUR:-./murmur}
MURMUR=$(cd "$(dirname "$MURMUR")" && pwd)/$(basename "$MURMUR")
command -v dpkg-deb >/dev/null 2>&1 || { echo "FAIL: dpkg-deb missing"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MURMUR_NO_BLAS_FIX=1 LC_ALL=C

# fake_deb PKG LANG: a package with LANG's fortunes (30 of about 50 bytes,
# '%' between them), a .dat index, an offensive section and a Latin-1 file.
fake_deb() {
    r=$tmp/root-$1
    d=$r/usr/share/games/fortunes/$2
    mkdir -p "$r/DEBIAN" "$d/off"
    printf 'Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n' "$1" >"$r/DEBIAN/control"
    i=0
    while [ $i -lt 30 ]; do
        printf '%s fortune number %02d, with ü and ж in UTF-8.\n%%\n' "$2" $i >>"$d/cookies"
        i=$((i + 1))
    done
    printf 'binary index\0\001' >"$d/cookies.dat"
    printf 'OFFENSIVE %s\n%%\n' "$2" >"$d/off/rude"
    printf 'caf\351 latin-1\n%%\n' >"$d/latin1"
    dpkg-deb --build --root-owner-group "$r" "$tmp/debs/${1}_1.0_all.deb" >/dev/null
}
mkdir -p "$tmp/debs" "$tmp/bin"
fake_deb fortunes-aa aa
fake_deb fortunes-bb bb
# apt-get download PKG=VER: copies the .deb of that name from $DEBS (the
# test's) into the current directory, as apt-get would; logs every call.
cat >"$tmp/bin/apt-get" <<FAKE
#!/bin/sh
echo "\$*" >>"$tmp/apt.calls"
[ "\$1" = update ] && exit 0
[ "\$1" = download ] || exit 1
for a; do case \$a in *=*) p=\${a%%=*} v=\${a#*=} ;; esac; done
f=\$(echo "\${p}_\${v}_all.deb" | sed 's/:/%3a/g')
[ -f "\$DEBS/\$f" ] || { echo "E: no \$f" >&2; exit 100; }
cp "\$DEBS/\$f" .
FAKE
chmod +x "$tmp/bin/apt-get"
export PATH="$tmp/bin:$PATH" MURMUR

# 1. The real pins, and a damaged package under the first pin's real name:
#    refused, nothing prepared.
first=$(grep -v '^#' scripts/lang.sha256 | awk 'NF { print $2; exit }')
mkdir "$tmp/damaged"
cp "$tmp/debs/fortunes-aa_1.0_all.deb" "$tmp/damaged/$first"
if DEBS=$tmp/damaged sh scripts/fetch-lang.sh "$tmp/out1/lang" 2>"$tmp/err1"; then
    echo "FAIL: a package with another hash was accepted"; exit 1
fi
grep -q "REFUSING $first" "$tmp/err1" || { cat "$tmp/err1"; exit 1; }
[ ! -e "$tmp/out1/lang" ] && [ ! -e "$tmp/out1/lang.tmp" ] || { echo "FAIL: prepared anyway"; exit 1; }

# 2. A copy of the script with the test's pins: prepared and verified.
mkdir -p "$tmp/s/scripts"
cp scripts/fetch-lang.sh "$tmp/s/scripts/"
{ echo "# test pins"
  for p in aa bb; do
      sha256sum "$tmp/debs/fortunes-${p}_1.0_all.deb" | awk -v l=$p '{ print $1 "  fortunes-" l "_1.0_all.deb  " l }'
  done; } >"$tmp/s/scripts/lang.sha256"
export DEBS=$tmp/debs LANG_CHUNKS=3 LANG_CHUNK_BYTES=300
sh "$tmp/s/scripts/fetch-lang.sh" "$tmp/out2/lang" >"$tmp/log2" 2>&1 || { cat "$tmp/log2"; exit 1; }
"$MURMUR" data-verify "$tmp/out2/lang" >/dev/null
for l in aa bb; do
    [ "$(awk -F'\t' -v l=$l '$2 == l' "$tmp/out2/lang/index.tsv" | wc -l)" -eq 3 ] ||
        { cat "$tmp/out2/lang/index.tsv"; echo "FAIL: not 3 chunks of $l"; exit 1; }
done
grep -q "skipping .*/latin1 (not UTF-8)" "$tmp/log2" || { cat "$tmp/log2"; echo "FAIL: latin1 not skipped"; exit 1; }
if cat "$tmp/out2/lang"/*.txt | grep -q "OFFENSIVE\|binary index\|latin-1"; then
    echo "FAIL: off/, .dat or non-UTF-8 text in the corpus"; exit 1
fi
# every chunk ends at a fortune's end and has its 300 bytes
for f in "$tmp/out2/lang"/*.txt; do
    [ "$(tail -n 1 "$f")" = "%" ] && [ "$(wc -c <"$f")" -ge 300 ] || { echo "FAIL: chunk $f"; exit 1; }
done
grep -q "^# source fortunes-lang pins-sha256 [0-9a-f]\{64\} chunks 3 x 300$" "$tmp/out2/lang/index.tsv" ||
    { head -3 "$tmp/out2/lang/index.tsv"; echo "FAIL: no source line"; exit 1; }
calls=$(wc -l <"$tmp/apt.calls")

# 3. Already prepared: nothing fetched.
sh "$tmp/s/scripts/fetch-lang.sh" "$tmp/out2/lang" >"$tmp/log3" 2>&1
grep -q "already prepared" "$tmp/log3" || { cat "$tmp/log3"; exit 1; }
[ "$(wc -l <"$tmp/apt.calls")" -eq "$calls" ] || { echo "FAIL: fetched again"; exit 1; }

# 4. A damaged prepared text: prepared again from the packages.
f1=$(awk -F"\t" '!/^#/ { print $1; exit }' "$tmp/out2/lang/index.tsv")
printf 'x' >>"$tmp/out2/lang/$f1.txt"
sh "$tmp/s/scripts/fetch-lang.sh" "$tmp/out2/lang" >"$tmp/log4" 2>&1 || { cat "$tmp/log4"; exit 1; }
[ "$(wc -l <"$tmp/apt.calls")" -eq $((calls + 2)) ] || { echo "FAIL: not fetched again"; exit 1; }
"$MURMUR" data-verify "$tmp/out2/lang" >/dev/null

# 5. Too little text for the chunks asked: refused, the old corpus kept.
if LANG_CHUNKS=50 sh "$tmp/s/scripts/fetch-lang.sh" "$tmp/out2/lang" 2>"$tmp/err5"; then
    echo "FAIL: 50 chunks of 300 bytes from 1.5 kB accepted"; exit 1
fi
grep -q "aa has text for [0-9]* chunks of 300 bytes, not 50" "$tmp/err5" || { cat "$tmp/err5"; exit 1; }
"$MURMUR" data-verify "$tmp/out2/lang" >/dev/null
echo "ok: damaged package refused, pinned packages prepared (UTF-8 only), skip when verified, redo when damaged, too little text refused"
