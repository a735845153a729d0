#!/bin/sh
# The house's figures (issue 22): lines of C per room, the longest file,
# the five longest functions, and the pairs `duplicates` finds in the
# production code (the rooms, not tests/), so that a restructuring can be
# compared before and after.
#
#   scripts/house-figures.sh [ROOT]
#
# A room is a top-level folder with a README.md that has a "May include:"
# line (scripts/check-layers.sh reads the same). Lines are `wc -l` of the
# room's .c and .h files. A function is a definition whose body opens with
# "{" in column 0 and closes with "}" in column 0 (the project's style);
# its length counts the lines from its name's line to the closing brace.
# `duplicates` (if installed) runs on a copy of the rooms alone.
set -eu
case ${1:-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
rooms=$(grep -l "^May include:" */README.md | xargs -n1 dirname)

echo "lines of C per room"
for r in $rooms; do
    printf '  %-10s %6d lines in %3d files\n' "$r/" "$(cat "$r"/*.[ch] | wc -l)" "$(ls "$r"/*.[ch] | wc -l)"
done
printf '  %-10s %6d lines\n' total "$(for r in $rooms; do cat "$r"/*.[ch]; done | wc -l)"

echo "longest files"
for r in $rooms; do wc -l "$r"/*.[ch]; done | grep -v ' total$' | sort -rn | head -n 3 | sed 's/^ */  /'

echo "five longest functions"
for r in $rooms; do
    for f in "$r"/*.c; do
        awk -v file="$f" '
            /^[A-Za-z_].*\(/ && !/;[ \t]*$/ { sig = $0; at = NR }
            /^\{/ { start = at; name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n] }
            /^\}/ && start { printf "%d %s:%d %s\n", NR - start + 1, file, start, name; start = 0 }' "$f"
    done
done | sort -rn | head -n 5 | awk '{ printf "  %4d lines  %s %s\n", $1, $3, $2 }'

if command -v duplicates > /dev/null; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/house.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    for r in $rooms; do mkdir -p "$tmp/$r"; cp "$r"/*.[ch] "$tmp/$r/"; done
    echo "duplicates in the rooms (production code)"
    duplicates --repo "$tmp" --most 200 --seconds 60 | sed "s|$tmp/||g; s/^/  /"
fi
