#!/bin/sh
# Runs every unit test program (build/tests/test_*), every end-to-end test
# (tests/e2e/*.sh) and every fault-campaign scenario (tests/campaign/*.sh,
# short mode), each under a time limit, and ends with one summary line
# "N passed, N failed". Exit status: 0 only when nothing failed.
#   TESTS=pattern   run only the tests whose name contains pattern
BUILD=${BUILD:-build}
pass=0; fail=0; failed=""
run() { # name, timeout seconds, command...
    name=$1; limit=$2; shift 2
    case "$name" in *"${TESTS:-}"*) ;; *) return ;; esac
    start=$(date +%s)
    printf '=== %s\n' "$name"
    if timeout -k 10 "$limit" "$@"; then
        pass=$((pass + 1)); printf -- '--- ok   %s (%ss)\n' "$name" $(( $(date +%s) - start ))
    else
        rc=$?
        fail=$((fail + 1)); failed="$failed $name"
        printf -- '--- FAIL %s (exit %s, %ss)\n' "$name" "$rc" $(( $(date +%s) - start ))
    fi
}
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue ;; esac
    run "$(basename "$t")" 600 "$t"
done
for t in tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    run "e2e/$(basename "$t" .sh)" 900 sh "$t"
done
# The fault campaign's scenarios, in their quick version (scripts/campaign.sh
# runs the full one).
for t in tests/campaign/*.sh; do
    [ -f "$t" ] || continue
    run "campaign/$(basename "$t" .sh)" 300 env CAMPAIGN_MODE=short sh "$t"
done
[ -n "$failed" ] && printf 'failed:%s\n' "$failed"
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]
