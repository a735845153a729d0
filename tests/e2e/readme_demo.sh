# The README's demo table against the demo (issue 21, defect 7). The demo
# itself is too long for make test (about 5 minutes): `make demo` ends
# with scripts/demo-table.sh check and fails when README's table is not
# what it printed. This test keeps the rest honest, every time:
#   - README's table parses: the report's header, one line per setting of
#     sweeps/baselines-8.sweep in its order, the topology's peers, all of
#     its seeds;
#   - README's words about the demo (seeds, layers, width, rounds, the
#     learning rate) are the spec's;
#   - mk/demo.mk runs the check by default on that spec;
#   - the check passes on README's own table and fails, naming the
#     setting and the column, when one figure differs; `write` puts a
#     table in place of README's and nothing else.
. "$(dirname "$0")/lib.sh"
spec=$ROOT/sweeps/baselines-8.sweep
readme=$ROOT/README.md
dt() { sh "$ROOT/scripts/demo-table.sh" "$@"; }

dt readme "$readme" > "$T/table"
[ -s "$T/table" ] || fail "README.md has no demo table"
head -n 1 "$T/table" | awk '{ exit !($1 == "setting" && $2 == "peers" && $3 == "seeds" && $4 == "acc" &&
    $5 == "val_loss" && $6 == "consensus_final" && $7 == "consensus_avg" && $8 == "how" &&
    $9 == "MB/peer" && $10 == "wall_s" && NF == 10) }' || fail "README's table header is not the report's: $(head -n 1 "$T/table")"

# the spec's settings, peers and seeds
topos=$(awk '$1 == "topology" { for (i = 2; i <= NF; i++) print $i }' "$spec")
seeds=$(awk '$1 == "seeds" { for (i = 2; i <= NF; i++) printf "%s%s", (i > 2 ? " " : ""), $i }' "$spec")
n_seeds=$(echo "$seeds" | wc -w)
[ -n "$topos" ] && [ "$n_seeds" -ge 1 ] || fail "cannot read $spec"
grep -q '^<!-- demo kernel: [A-Za-z0-9_]* -->$' "$T/table" ||
    fail "README's demo table is not followed by the line naming its OpenBLAS kernel"
tail -n +2 "$T/table" | grep -v '^<!--' > "$T/rows"
[ "$(wc -l < "$T/rows")" -eq "$(echo "$topos" | wc -l)" ] ||
    fail "README's table has $(wc -l < "$T/rows") settings, the spec $(echo "$topos" | wc -l)"
i=1
for t in $topos; do
    row=$(sed -n "${i}p" "$T/rows")
    name=$(basename "$t" .topo)
    peers=$(awk '$1 == "peers" { print $2; exit }' "$ROOT/$t")
    echo "$row" | awk -v name="$name" -v peers="$peers" -v seeds="$n_seeds/$n_seeds" '
        function pm(s) { return s ~ /^-?[0-9.]+(e[-+][0-9]+)?±[0-9.]+(e[-+][0-9]+)?$/ }
        { ok = NF == 10 && $1 == name && $2 == peers && $3 == seeds && $8 != ""
          for (k = 4; k <= 7; k++) ok = ok && pm($k)
          exit !(ok && pm($9) && pm($10)) }' ||
        fail "README's table row $i is not '$name', $peers peers, $n_seeds/$n_seeds seeds with mean±sd figures: $row"
    i=$((i + 1))
done

# README's words are the spec's
flag() { awk -v f="$1" '$1 == "flags" { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }' "$spec"; }
layers=$(flag --layers) width=$(flag --width) rounds=$(flag --rounds) lr=$(flag --lr)
tr '\n' ' ' < "$readme" | tr -s ' ' > "$T/words"
grep -q "each with seeds $(echo "$seeds" | sed 's/ \([^ ]*\)$/ and \1/')" "$T/words" ||
    fail "README does not say the demo runs seeds $seeds"
grep -q "($layers layers, width $width, $rounds rounds" "$T/words" ||
    fail "README's model words are not the spec's ($layers layers, width $width, $rounds rounds)"
grep -q "$rounds rounds, a learning rate of $lr" "$T/words" ||
    fail "README's demo scale is not the spec's ($rounds rounds, a learning rate of $lr)"

# make demo runs the check on that spec
grep -q '^DEMO_SPEC *?= sweeps/baselines-8.sweep$' "$ROOT/mk/demo.mk" || fail "mk/demo.mk's DEMO_SPEC is not the spec"
grep -q '^DEMO_TABLE *?= check$' "$ROOT/mk/demo.mk" || fail "make demo does not check README's table by default"
grep -q 'scripts/demo-table.sh $(DEMO_TABLE) ' "$ROOT/mk/demo.mk" || fail "the demo recipe does not run the table check"

# the check can fail, and says where
dt check "$T/table" "$readme" > /dev/null || fail "README's own table does not pass the check"
awk 'NR == 3 { sub(/0\.[0-9]+±/, "0.9999±") } { print }' "$T/table" > "$T/other"
setting=$(sed -n '3s/ .*//p' "$T/table")
if dt check "$T/other" "$readme" > "$T/out" 2>&1; then fail "the check passed a table with another acc"; fi
grep -q "$setting differs in acc" "$T/out" || { cat "$T/out" >&2; fail "the check does not name the setting and column"; }
sed '2s/  *[0-9.]*±[0-9.]*$/ 99.9±9.9/' "$T/table" > "$T/wall"
! cmp -s "$T/wall" "$T/table" || fail "could not change the wall_s of README's table"
dt check "$T/wall" "$readme" > /dev/null || fail "the check compared wall_s, which depends on the load"
# another kernel: the means within a tolerance, the spreads not compared
awk 'NR == 3 { sub(/±[0-9.]+/, "±0.0999") } /^<!--/ { $0 = "<!-- demo kernel: OtherKernel -->" } { print }' \
    "$T/table" > "$T/kernel"
dt check "$T/kernel" "$readme" > /dev/null || fail "another kernel's spreads were compared"
awk '/^<!--/ { $0 = "<!-- demo kernel: OtherKernel -->" } { print }' "$T/other" > "$T/other-kernel"
if dt check "$T/other-kernel" "$readme" > /dev/null 2>&1; then fail "another kernel's acc 0.9999 passed"; fi
cp "$readme" "$T/README.md"
dt write "$T/other" "$T/README.md" > /dev/null
dt readme "$T/README.md" | cmp -s - "$T/other" || fail "write did not put the table in place"
[ "$(diff "$readme" "$T/README.md" | grep -c '^[<>]')" -eq 2 ] || fail "write changed more than the one line"
note "README's table: $(wc -l < "$T/rows") settings x $n_seeds seeds, as in $(basename "$spec"); the check fails on: $(grep -m1 differs "$T/out" | sed 's/^ *//')"
echo "ok: README's demo table parses, matches the spec, and make demo checks it"
