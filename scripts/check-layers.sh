#!/bin/sh
# The rooms' layering (docs/architecture.md): every room's README.md says
# which rooms (DIR/) or headers (DIR/FILE.h) its sources may include, on a
# line "May include: ...", and which system headers they must not, on a line
# "Must not include: <...> ..." (<dir/*> names every header under dir/).
# This checks every #include of every .c and .h file in each room against
# them, and of every header the room may include by name from another room
# (cli/ may include net/algo.h, so net/algo.h is held to cli/'s rules too
# and cannot bring in what cli/ must not), and prints one line per
# violation. tests/e2e/check_layers.sh shows that it fails on a forbidden
# include.
#   scripts/check-layers.sh [ROOT]      exit 0 clean, 1 violations, 2 setup
set -u
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
rooms="base model gossip member net report plan node watch cli"
bad=0
# check FILE ROOM: FILE's includes against ROOM's $may and $mustnot
check() {
    out=$(awk -v file="$1" -v room="$2" -v may="$may" -v mustnot="$mustnot" '
        BEGIN { nm = split(may, allow, " "); nn = split(mustnot, deny, " ") }
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            match($0, /"[^"]*"/); h = substr($0, RSTART + 1, RLENGTH - 2)
            ok = 0
            for (i = 1; i <= nm; i++) {
                a = allow[i]
                if (a ~ /\/$/ ? index(h, a) == 1 : h == a) ok = 1
            }
            if (!ok) printf "%s:%d includes \"%s\": %s/ may include only %s\n", file, FNR, h, room, may
        }
        /^[ \t]*#[ \t]*include[ \t]*</ {
            match($0, /<[^>]*>/); h = substr($0, RSTART, RLENGTH)
            for (i = 1; i <= nn; i++) {
                d = deny[i]
                if (d ~ /\/\*>$/ ? index(h, substr(d, 1, length(d) - 2)) == 1 : h == d)
                    printf "%s:%d includes %s: %s/ must not include %s\n", file, FNR, h, room, d
            }
        }' "$1")
    if [ -n "$out" ]; then
        printf '%s\n' "$out" | sed 's/^/LAYERING: /'
        bad=1
    fi
}
for room in $rooms; do
    readme=$room/README.md
    [ -f "$readme" ] || { echo "check-layers: $readme is missing (it says what $room/ may include)" >&2; exit 2; }
    may=$(sed -n 's/^May include: *//p' "$readme")
    mustnot=$(sed -n 's/^Must not include: *//p' "$readme")
    [ -n "$may" ] || { echo "check-layers: $readme has no 'May include:' line" >&2; exit 2; }
    for f in "$room"/*.c "$room"/*.h; do
        [ -f "$f" ] && check "$f" "$room"
    done
    for a in $may; do
        case $a in
        */) ;;
        "$room"/*) ;;
        *) [ -f "$a" ] || { echo "check-layers: $readme allows $a, which does not exist" >&2; exit 2; }
           check "$a" "$room" ;;
        esac
    done
done
[ "$bad" = 0 ] && echo "check-layers: $rooms: every include is allowed (see each room's README.md)"
exit $bad
