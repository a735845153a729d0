# murmur data-prepare --text: the README's example runs as written (prepare,
# data-info, a short train); labels come from sub-directories and the
# partitions work on them; bad input is refused with the file and, for
# UTF-8, the byte offset, every problem of a tree in one run; names are
# mapped to the index's rules.
. "$(dirname "$0")/lib.sh"
cd "$T"
ln -s "$MURMUR" murmur
awk '/^### 7. Your own text/ { f = 1 } f && /^```sh/ { b = 1; next } b && /^```/ { exit } b { print }' \
    "$ROOT/README.md" > example.sh
[ -s example.sh ] || fail "no example found under '### 7. Your own text' in README.md"
MURMUR_NO_BLAS_FIX=1 sh -e example.sh > example.out 2>&1 || { cat example.out; fail "the README example failed"; }
grep -q "8 files, 2 labels" example.out || fail "data-prepare did not report 8 files in 2 labels"
grep -q "^   0 .*100% poems" example.out || fail "data-info: peer 0 does not hold the poems"
grep -q "^peer files *kB letters poems  top$" example.out || fail "data-info: the labels' columns are cut: $(grep '^peer' example.out)"
grep -q '"ev":"end".*"reason":"done"' runs/mytext/metrics.jsonl || fail "train did not end normally"
"$MURMUR" data-verify mytext-prepared > /dev/null || fail "the prepared text does not verify"
"$MURMUR" data-info --data mytext-prepared --partition dirichlet:0.5 -n 3 --seed 2 > di.out ||
    fail "data-info dirichlet on labels failed"
note "README example ok: $(grep 'files,' example.out | head -1)"
# --peer J: a member beyond the starting peers gets peer J mod N's row
"$MURMUR" data-info --data mytext-prepared --partition genre -n 2 > all.out || fail "data-info -n 2 failed"
"$MURMUR" data-info --data mytext-prepared --partition genre -n 2 --peer 7 > j.out || fail "data-info --peer 7 failed"
grep -q "member     7 is not a starting peer (0..1): it trains on the shard of peer 7 mod 2 = 1" j.out ||
    fail "data-info --peer 7: no line naming peer 1's shard: $(cat j.out)"
[ "$(grep '^   7 ' j.out | cut -c5-)" = "$(grep '^   1 ' all.out | cut -c5-)" ] && [ -n "$(grep '^   1 ' all.out)" ] ||
    fail "data-info --peer 7: its row is not peer 1's: $(grep '^   7 ' j.out)"
[ "$(grep -c '^ *[0-9]' j.out)" -eq 1 ] || fail "data-info --peer 7 printed other peers' rows"

# refused: message naming the file (and the byte for UTF-8), exit 1
refuse() { # WHAT EXPECT DIR
    if "$MURMUR" data-prepare --text "$3" "$T/out-$1" > "$T/$1.out" 2>&1; then fail "$1: accepted"; fi
    grep -q -- "$2" "$T/$1.out" || fail "$1: message '$(cat "$T/$1.out")' lacks '$2'"
}
mk() { mkdir -p "$(dirname "$1")"; printf "$2" > "$1"; }
# many long labels: 5-character columns, and the names they cut said
for l in 01 02 03 04 05 06 07 08 09 10; do
    mk many/label_number_$l/a.txt 'one\n'; mk many/label_number_$l/b.txt 'two\n'
done
"$MURMUR" data-prepare --text many many-prep > /dev/null || fail "the many-label tree was refused"
"$MURMUR" data-info --data many-prep --partition genre -n 2 > many.out || fail "data-info on many labels failed"
[ "$(awk '/^peer/ { print length($0) }' many.out)" -le 100 ] || fail "data-info: the table is wider than 100 characters"
grep -q "^columns .* label = label_number_01, .* label = label_number_10$" many.out ||
    fail "data-info: the cut names are not listed: $(cat many.out)"
mk bad/a/one.txt 'fine\n'; mk bad/a/two.txt 'caf\303\251 ok, then \303\050 bad\n'
refuse utf8 "bad/a/two.txt: byte 15: not valid UTF-8 (0xc3)" bad
mk nul/a/one.txt 'fine\n'; mk nul/a/two.txt 'a\000b\n'
refuse nul "nul/a/two.txt: byte 1: a NUL byte" nul
mk empty/a/one.txt 'fine\n'; : > empty/a/two.txt
refuse empty "empty/a/two.txt: empty file" empty
# every bad file of a directory in one run, not one per run (issue 21,
# friction 14)
mk all/a/one.txt 'fine\n'; mk all/a/two.txt 'caf\303\050\n'; mk all/a/three.txt 'a\000b\n'
mk all/b/five.txt 'ok\n'; : > all/b/four.txt
refuse all "all/a/two.txt: byte 3: not valid UTF-8" all
grep -q "all/a/three.txt: byte 1: a NUL byte" all.out || fail "all: the NUL file after the bad UTF-8 one is not named: $(cat all.out)"
grep -q "all/b/four.txt: empty file" all.out || fail "all: the empty file is not named: $(cat all.out)"
grep -q "3 of 5 files refused" all.out || fail "all: no count of the refused files: $(cat all.out)"
[ ! -f out-all/index.tsv ] || fail "all: an index was written"
mk lonely/a/one.txt 'x\n'; mk lonely/a/two.txt 'y\n'; mk lonely/b/three.txt 'z\n'
refuse lonely "label 'b' has only 1 file (b/three.txt)" lonely
# every problem of a tree in one run (issue 34): an empty file, a file that
# is not UTF-8, a NUL byte, a lone top-level file, a label left with one
# usable file, a name clash, a FIFO; nothing written
mk every/a/one.txt 'fine\n'; mk every/a/two.txt 'fine too\n'; : > every/a/empty.txt
mk every/b/latin1.txt 'caf\351\n'; mk every/b/ok.txt 'ok\n'
mk every/c/nul.txt 'a\000b\n'; mk every/c/ok.txt 'ok\n'; mk every/c/'x y.txt' '1\n'; mk every/c/x_y.txt '2\n'
mk every/lone.txt 'alone\n'; mkfifo every/a/fifo
refuse every "every/a/empty.txt: empty file" every
for want in "every/b/latin1.txt: byte 3: not valid UTF-8" "every/c/nul.txt: byte 1: a NUL byte" \
    "label 'text' has only 1 file (lone.txt)" "label 'b' has only 1 usable file (b/ok.txt; 1 other refused above)" \
    "both become name 'c-x_y'" "every/a/fifo: neither a regular file nor a directory" \
    "7 problems (each named above; 3 of 10 files refused)"; do
    grep -q -- "$want" every.out || fail "every: '$want' not said in the one run: $(cat every.out)"
done
[ ! -e out-every ] || fail "every: the output directory was left behind"
mk clash/a/'x y.txt' '1\n'; mk clash/a/x_y.txt '2\n'
refuse clash "both become name 'a-x_y'" clash
# two long names with the same first 31 bytes are mapped apart (a suffix
# from their whole path), not refused (friction 14)
long=a-rather-long-file-name-that-goes-on
mk longn/a/"$long-1.txt" '1\n'; mk longn/a/"$long-2.txt" '2\n'
"$MURMUR" data-prepare --text longn longn-prep > longn.out 2>&1 || fail "long names with one prefix refused: $(cat longn.out)"
[ "$(grep -c "is 'a-a-rather-long-file-n-[0-9a-f]\{8\}' in the index" longn.out)" -eq 2 ] ||
    fail "long names: not mapped to 22 bytes and a hash: $(cat longn.out)"
[ "$(cut -f1 longn-prep/index.tsv | grep -c '^a-a-rather-long-file-n-')" -eq 2 ] || fail "long names: not both in the index"
# a corpus that is not there: how to prepare that one (issue 34), not
# `make data`, which prepares data/brown only
if "$MURMUR" data-info --data mine -n 2 > nocorpus.out 2>&1; then fail "data-info without a corpus: accepted"; fi
grep -q "mine/index.tsv: cannot open: No such file or directory (no prepared corpus there: prepare it with .murmur data-prepare --text YOUR_TEXT_DIR mine." nocorpus.out ||
    fail "a missing corpus of one's own: $(cat nocorpus.out)"
mkdir -p sub/data
if "$MURMUR" data-info --data sub/data/brown -n 2 > nobrown.out 2>&1; then fail "data-info without data/brown: accepted"; fi
grep -q "(no prepared corpus there: .make data. prepares it)" nobrown.out || fail "a missing data/brown: $(cat nobrown.out)"
mk inside/a/one.txt '1\n'; mk inside/a/two.txt '2\n'
if "$MURMUR" data-prepare --text inside inside/prep > inside.out 2>&1; then fail "DST inside DIR accepted"; fi
grep -q "is inside" inside.out || fail "DST inside DIR: $(cat inside.out)"
# mapped, not refused: spaces and accents in names and labels
mk map/'My Notes'/'été 1.txt' 'un\n'; mk map/'My Notes'/two.txt 'deux\n'
"$MURMUR" data-prepare --text map mapped > map.out || fail "mappable names refused: $(cat map.out)"
grep -q "My Notes/été 1.txt is 'My_Notes-__t___1'" map.out || fail "mapping not reported: $(cat map.out)"
grep -q "^My_Notes-two	My_Notes	" mapped/index.tsv || fail "mapped label not in the index"
echo "ok: data-prepare --text: README example, labels, refusals and mapping"
