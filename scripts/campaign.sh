#!/bin/sh
# The fault campaign: runs every tests/campaign/NN_*.sh in order (full mode
# unless --short), each under a time limit, and prints a summary table from
# the CAMPAIGN line each scenario ends with:
#   CAMPAIGN scenario=NAME injected=N survived=N lost=N recover=TEXT
# A scenario passes when it exits 0, ends with such a line and lost=0.
# Exit status: 0 only when every scenario passed.
#   scripts/campaign.sh [--short] [--logs DIR] [PATTERN]
#   PATTERN: run only the scripts whose name contains it.
set -u
mode=full; logs=""; pattern=""
while [ $# -gt 0 ]; do
    case "$1" in
    --short) mode=short ;;
    --logs) logs=${2:?--logs DIR}; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "campaign: unknown option $1" >&2; exit 2 ;;
    *) pattern=$1 ;;
    esac
    shift
done
cd "$(dirname "$0")/.." || exit 2
[ -x ./murmur ] || { echo "campaign: build murmur first (make murmur)" >&2; exit 2; }
[ -n "$logs" ] || logs=$(mktemp -d "${TMPDIR:-/tmp}/murmur-campaign.XXXXXX")
mkdir -p "$logs" || exit 2
limit=900; [ $mode = short ] && limit=120
rows=""; nfail=0; n=0
for t in tests/campaign/*.sh; do
    [ -f "$t" ] || continue
    name=$(basename "$t" .sh)
    case "$name" in *"$pattern"*) ;; *) continue ;; esac
    n=$((n + 1))
    printf '=== %s (%s)\n' "$name" $mode
    start=$(date +%s)
    CAMPAIGN_MODE=$mode timeout -k 10 $limit sh "$t" > "$logs/$name.out" 2> "$logs/$name.err"
    rc=$?
    secs=$(( $(date +%s) - start ))
    sed 's/^/    /' "$logs/$name.out" "$logs/$name.err"
    line=$(tail -1 "$logs/$name.out")
    field() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    case "$line" in
    "CAMPAIGN scenario="*) sc=$(field scenario); inj=$(field injected); sur=$(field survived)
                           lost=$(field lost); rec=$(field recover) ;;
    *) sc=$name; inj=?; sur=?; lost=?; rec=? ;;
    esac
    result=pass
    if [ $rc -ne 0 ]; then result="FAIL(exit $rc)"
    elif [ "$lost" != 0 ]; then result="FAIL(lost)"
    elif [ "$sc" = "$name" ] && [ "$inj" = "?" ]; then result="FAIL(no CAMPAIGN line)"
    fi
    [ "$result" = pass ] || nfail=$((nfail + 1))
    rows="$rows$sc $inj $sur $lost $rec ${secs}s $result
"
done
[ $n -gt 0 ] || { echo "campaign: no scenario matches '$pattern'" >&2; exit 2; }
echo
echo "fault campaign ($mode), logs in $logs"
{
    echo "scenario injected survived lost recover wall result"
    printf '%s' "$rows"
} | awk '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } if (NF > nf) nf = NF }
    END { for (r = 1; r <= NR; r++) { s = ""; for (i = 1; i <= nf; i++) s = s sprintf("%-" w[i] + 2 "s", c[r, i]); sub(/ +$/, "", s); print s } }'
echo "$((n - nfail)) passed, $nfail failed"
[ $nfail -eq 0 ]
