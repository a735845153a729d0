# Every script's --help (and -h) prints its whole header comment -- the
# block from line 2 to the first line that is not a comment -- on stdout
# and exits 0, so the help cannot stop part-way (compare.sh's once left out
# its exit statuses and environment). Files sourced by others are skipped.
. "$(dirname "$0")/lib.sh"
count=0
for f in "$ROOT"/scripts/*.sh; do
    sed -n 1,2p "$f" | grep -q "^# Sourced" && continue
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$f" > "$T/want"
    [ "$(wc -l < "$T/want")" -ge 3 ] || fail "$(basename "$f"): a header of $(wc -l < "$T/want") lines says too little"
    for opt in --help -h; do
        st=0
        # bounded: a script that ignores --help would run its real job
        timeout 20 sh "$f" $opt > "$T/got" 2> "$T/err" || st=$?
        [ $st -eq 0 ] || fail "$(basename "$f") $opt: exit $st ($(head -c 200 "$T/err"))"
        cmp -s "$T/want" "$T/got" || { diff "$T/want" "$T/got" >&2; fail "$(basename "$f") $opt is not its whole header"; }
    done
    count=$((count + 1))
done
[ $count -ge 10 ] || fail "only $count scripts checked"
sh "$ROOT/scripts/compare.sh" --help > "$T/got"
grep -q '130 interrupted' "$T/got" && grep -q 'Environment:' "$T/got" || fail "compare.sh --help lacks its exit statuses or environment"

# Every command of the binary, and every subcommand, answers --help and -h
# with its usage on stdout, exit 0 and nothing on stderr (issue 21,
# defect 4: data-prepare and topo gen did not), also after other arguments.
cmds=$("$MURMUR" --help | awk '/^commands:/ { on = 1; next } on && !NF { exit } on { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 8 ] || fail "murmur --help lists only: $cmds"
n_cmd=0
for c in $cmds data-verify "topo gen" "topo info" "topo matrix" "topo gen ring" "topo info x.topo" \
         "data-prepare --text" "report --sweep"; do
    for opt in --help -h; do
        st=0
        timeout 20 "$MURMUR" $c $opt > "$T/got" 2> "$T/err" || st=$?
        [ $st -eq 0 ] || fail "murmur $c $opt: exit $st ($(head -c 200 "$T/err"))"
        [ ! -s "$T/err" ] || fail "murmur $c $opt: wrote to stderr: $(head -c 200 "$T/err")"
        grep -q "^usage: murmur ${c%% *}" "$T/got" || fail "murmur $c $opt: no 'usage: murmur ${c%% *}' line: $(head -c 200 "$T/got")"
    done
    n_cmd=$((n_cmd + 1))
done
echo "ok: --help of $count scripts prints each whole header; $n_cmd commands and subcommands of murmur answer --help and -h"
