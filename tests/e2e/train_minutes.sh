#!/bin/sh
# `murmur train --minutes` fits its cosine schedule to the steps it can
# take (issue 21, friction 17): a run stalled for 5 s of its 12 (SIGSTOP,
# as a loaded machine does to it) refits the schedule after the stall and
# ends it (reason done, at the schedule's last step), or, where it still
# runs out of time, says by how much; a run whose --steps do not fit in
# --minutes says that it stopped early, how many steps short and at what
# learning rate.
set -eu
MURMUR=${MURMUR:-./murmur}
. tests/e2e/lib/corpus.sh
tmp=$(mktemp -d)
pid=''
trap '[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export MURMUR_NO_BLAS_FIX=1
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -n 8 "$f"; done; exit 1; }

make_tagged_corpus "$tmp/src" 6
"$MURMUR" data-prepare "$tmp/src" "$tmp/data" >/dev/null
common="--data $tmp/data --layers 1 --width 32 --heads 2 --ctx 16 --batch 4 --lr 3e-3
        --threads 1 --eval-every 0 --eval-windows 8 --log-every 1000 --checkpoint-every 0"
end_field() { grep '"ev":"end"' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# 1. A stall after the schedule was sized: the schedule is refitted.
# shellcheck disable=SC2086
"$MURMUR" train $common --minutes 0.2 --out "$tmp/a" 2>"$tmp/a.log" &
pid=$!
i=0
until grep -q 'schedule sized to' "$tmp/a.log" 2>/dev/null; do
    i=$((i + 1)); [ $i -le 200 ] || fail "no 'schedule sized' line within 20 s"
    sleep 0.1
done
sleep 1
kill -STOP "$pid"
sleep 5
kill -CONT "$pid"
wait "$pid" || fail "train --minutes exited $?"
pid=''
grep -q 'schedule refitted from [0-9]* to [0-9]* steps' "$tmp/a.log" || fail "the stall did not refit the schedule"
reason=$(end_field "$tmp/a/metrics.jsonl" reason)
step=$(end_field "$tmp/a/metrics.jsonl" step)
total=$(end_field "$tmp/a/metrics.jsonl" schedule_steps)
[ -n "$total" ] || fail "the end line has no schedule_steps"
case $reason in
done) [ "$step" = "$total" ] || fail "done at step $step of a schedule of $total" ;;
time) grep -q "ran out at step $step of the schedule's $total" "$tmp/a.log" ||
          fail "stopped by time at step $step of $total without saying so" ;;
*) fail "end reason $reason" ;;
esac

# 2. --steps that do not fit: stopped early, and by how much.
# shellcheck disable=SC2086
"$MURMUR" train $common --steps 10000000 --minutes 0.03 --out "$tmp/b" 2>"$tmp/b.log" ||
    fail "train --steps --minutes exited $?"
[ "$(end_field "$tmp/b/metrics.jsonl" reason)" = time ] || fail "--steps 10000000 in 2 s did not stop by time"
step=$(end_field "$tmp/b/metrics.jsonl" step)
grep -q -- "--minutes 0.03 ran out at step $step of the schedule's 10000000: $((10000000 - step)) steps ([0-9]*%) short, so the learning rate stopped at" "$tmp/b.log" ||
    fail "the early stop is not said, with how many steps short"
echo "ok: --minutes refits the schedule after a stall ($reason at step $(end_field "$tmp/a/metrics.jsonl" step) of $total) and says when it stops early"
