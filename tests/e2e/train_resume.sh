#!/bin/sh
# `murmur train` interrupted after N steps and resumed must follow the
# uninterrupted 2N-step run exactly: same loss at every step, byte-identical
# final checkpoint. Also: a resume that contradicts the checkpoint's model
# is refused, and a damaged checkpoint is refused with a message.
set -eu
MURMUR=${MURMUR:-./murmur}
. tests/e2e/lib/corpus.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MURMUR_NO_BLAS_FIX=1   # speed is irrelevant here; keep the log short

make_tagged_corpus "$tmp/src" 6
"$MURMUR" data-prepare "$tmp/src" "$tmp/data" >/dev/null

common="--data $tmp/data --layers 1 --width 32 --heads 2 --ctx 16 --batch 4 --steps 40
        --warmup 5 --lr 3e-3 --threads 1 --eval-every 10 --eval-windows 8 --log-every 10
        --checkpoint-every 0 --seed 7"
# shellcheck disable=SC2086
"$MURMUR" train $common --out "$tmp/a" 2>"$tmp/a.log" || { cat "$tmp/a.log"; exit 1; }
# shellcheck disable=SC2086
"$MURMUR" train $common --out "$tmp/b" --stop-after 20 2>"$tmp/b1.log" || { cat "$tmp/b1.log"; exit 1; }
grep -q '"ev":"end","step":20,' "$tmp/b/metrics.jsonl" || { echo "FAIL: first half did not stop at 20"; exit 1; }
# shellcheck disable=SC2086
"$MURMUR" train $common --out "$tmp/b" --resume 2>"$tmp/b2.log" || { cat "$tmp/b2.log"; exit 1; }
grep -q "resumed .* at step 20 of 40" "$tmp/b2.log" || { echo "FAIL: no resume line"; cat "$tmp/b2.log"; exit 1; }

steps() { grep '"ev":"step"' "$1" | sed 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/'; }
steps "$tmp/a/metrics.jsonl" >"$tmp/a.loss"
steps "$tmp/b/metrics.jsonl" >"$tmp/b.loss"
[ "$(wc -l <"$tmp/a.loss")" -eq 40 ] || { echo "FAIL: expected 40 step lines"; exit 1; }
if ! cmp -s "$tmp/a.loss" "$tmp/b.loss"; then
    echo "FAIL: resumed losses differ from the uninterrupted run:"
    diff "$tmp/a.loss" "$tmp/b.loss" | head -10
    exit 1
fi
cmp "$tmp/a/checkpoint.bin" "$tmp/b/checkpoint.bin" || { echo "FAIL: final checkpoints differ"; exit 1; }
# The loss must have moved, or the comparison above proves little.
first=$(head -1 "$tmp/a.loss" | cut -d' ' -f2); last=$(tail -1 "$tmp/a.loss" | cut -d' ' -f2)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 0.5) }' ||
    { echo "FAIL: loss did not fall ($first -> $last)"; exit 1; }

# Contradicting the checkpoint is refused (exit 2) and names the flag.
# shellcheck disable=SC2086
if "$MURMUR" train $common --out "$tmp/b" --resume --width 64 2>"$tmp/c.log"; then
    echo "FAIL: resume with another width accepted"; exit 1
fi
grep -q -- "--width 64 contradicts the checkpoint" "$tmp/c.log" || { cat "$tmp/c.log"; exit 1; }
# A corrupted checkpoint is refused with a message naming the problem.
printf 'X' | dd of="$tmp/b/checkpoint.bin" bs=1 seek=5000 conv=notrunc 2>/dev/null
# shellcheck disable=SC2086
if "$MURMUR" train $common --out "$tmp/b" --resume --steps 60 2>"$tmp/d.log"; then
    echo "FAIL: corrupted checkpoint accepted"; exit 1
fi
grep -q "checksum mismatch" "$tmp/d.log" || { cat "$tmp/d.log"; exit 1; }
# A Dirichlet partition is drawn from the run's seed: resumed without
# --seed, the run takes the checkpoint's seed and so the same files.
dir="--data $tmp/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --steps 10 --threads 1
     --eval-every 0 --log-every 10 --checkpoint-every 0 --partition dirichlet:0.5 --n-peers 3 --peer 1"
# shellcheck disable=SC2086
"$MURMUR" train $dir --seed 9 --out "$tmp/e" --stop-after 5 2>"$tmp/e1.log" || { cat "$tmp/e1.log"; exit 1; }
# shellcheck disable=SC2086
"$MURMUR" train $dir --out "$tmp/e" --resume 2>"$tmp/e2.log" || { cat "$tmp/e2.log"; exit 1; }
d1=$(sed -n 's/.*info: \(data: .*\)/\1/p' "$tmp/e1.log"); d2=$(sed -n 's/.*info: \(data: .*\)/\1/p' "$tmp/e2.log")
[ -n "$d1" ] && [ "$d1" = "$d2" ] || { echo "FAIL: resumed shard differs: '$d1' then '$d2'"; exit 1; }
# --resume where no checkpoint is yet (a run that crashed before its first)
# starts fresh, says so, and is the same run as one without --resume.
# shellcheck disable=SC2086
"$MURMUR" train $common --steps 10 --out "$tmp/f1" 2>"$tmp/f1.log" || { cat "$tmp/f1.log"; exit 1; }
# shellcheck disable=SC2086
"$MURMUR" train $common --steps 10 --out "$tmp/f2" --resume 2>"$tmp/f2.log" ||
    { echo "FAIL: --resume without a checkpoint refused"; cat "$tmp/f2.log"; exit 1; }
grep -q -- "--resume: no checkpoint at $tmp/f2/checkpoint.bin, starting fresh" "$tmp/f2.log" ||
    { echo "FAIL: no word that --resume started fresh"; cat "$tmp/f2.log"; exit 1; }
cmp "$tmp/f1/checkpoint.bin" "$tmp/f2/checkpoint.bin" || { echo "FAIL: the fresh --resume run differs"; exit 1; }
echo "ok: 20 + 20 resumed steps match 40 uninterrupted ones ($first -> $last); --resume with no checkpoint starts fresh; dirichlet shard kept on resume"
