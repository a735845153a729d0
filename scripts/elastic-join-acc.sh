#!/bin/sh
# elastic-join-acc.sh DIR: per join run of scripts/elastic-study.sh in DIR
# (join-sS-V), the members' (0-3) and
# joiners' (4-7) validation accuracy at every evaluation (NAME.dat: round,
# members' mean, min, max, joiners' mean); the first eval round from which
# the joiners' mean stays within the members' range (docs/membership.md,
# "Four join a running ring of four").
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
d=${1:?usage: elastic-join-acc.sh DIR}
for run in "$d"/join-s*-*; do
    [ -d "$run" ] || continue
    name=$(basename "$run")
    for k in 0 1 2 3 4 5 6 7; do
        grep '"ev":"eval"' "$run/node-$k/metrics.jsonl" |
            sed -n "s/.*\"round\":\([0-9]*\),.*\"val_acc\":\([0-9.e-]*\),.*/$k \1 \2/p"
    done | awk '
        { r = $2; if ($1 < 4) { m[r] += $3; mc[r]++; if (!(r in mn) || $3 < mn[r]) mn[r] = $3; if (!(r in mx) || $3 > mx[r]) mx[r] = $3 }
          else { j[r] += $3; jc[r]++ } }
        END { for (r in jc) if (r in mc) printf "%d %.4f %.4f %.4f %.4f\n", r, m[r] / mc[r], mn[r], mx[r], j[r] / jc[r] }' |
        sort -n > "$d/$name.dat"
    awk -v name="$name" '{ ok = $5 >= $3 && $5 <= $4; if (ok && w < 0) w = $1; if (!ok) w = -1; if (NR == 1) { w = ok ? $1 : -1; f = $1 } }
        END { printf "%s first eval %d, within the members range from round %s\n", name, f, w }' "$d/$name.dat"
done
