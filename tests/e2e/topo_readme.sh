#!/bin/sh
# Every example topology in topologies/README.md (a ``` block that starts
# with "peers N") parses, so the documentation cannot drift from the parser.
set -u
M=${MURMUR:-./murmur}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
    /^```/ { if (inb) { inb = 0; if (keep) close(f) } else { inb = 1; first = 1; keep = 0 } next }
    inb && first { first = 0; if ($1 == "peers" && NF == 2) { n++; f = dir "/ex" n ".topo"; keep = 1 } }
    inb && keep { print > f }
' topologies/README.md
count=0; fails=0
for f in "$tmp"/ex*.topo; do
    [ -f "$f" ] || continue
    count=$((count + 1))
    if ! "$M" topo info "$f" > /dev/null 2> "$tmp/err"; then
        echo "FAIL: README example $(basename "$f"): $(cat "$tmp/err")"; sed 's/^/  | /' "$f"
        fails=$((fails + 1))
    fi
done
[ "$count" -ge 10 ] || { echo "FAIL: only $count examples found in topologies/README.md"; exit 1; }
# the `murmur topo info` example is what it prints, line for line
awk '/^```/ { if (inb) exit; if (getline l > 0 && l ~ /^file +topologies\/ring-8.topo$/) { inb = 1; print l } next }
     inb' topologies/README.md > "$tmp/info.doc"
"$M" topo info topologies/ring-8.topo > "$tmp/info.real" 2>&1
if [ ! -s "$tmp/info.doc" ] || ! cmp -s "$tmp/info.doc" "$tmp/info.real"; then
    echo "FAIL: topologies/README.md's 'murmur topo info' example is not what it prints:"
    diff "$tmp/info.doc" "$tmp/info.real" | sed 's/^/  | /'
    fails=$((fails + 1))
fi
# and the family example (section "Families"), the same way
awk '/^```/ { if (inb) exit; if (getline l > 0 && l ~ /^file +topologies\/family-torus-8.topo$/) { inb = 1; print l } next }
     inb' topologies/README.md > "$tmp/fam.doc"
"$M" topo info topologies/family-torus-8.topo --range 1..10 > "$tmp/fam.real" 2>&1
if [ ! -s "$tmp/fam.doc" ] || ! cmp -s "$tmp/fam.doc" "$tmp/fam.real"; then
    echo "FAIL: topologies/README.md's family 'murmur topo info' example is not what it prints:"
    diff "$tmp/fam.doc" "$tmp/fam.real" | sed 's/^/  | /'
    fails=$((fails + 1))
fi
echo "topo_readme: $count examples, $fails failed"
[ "$fails" -eq 0 ]
