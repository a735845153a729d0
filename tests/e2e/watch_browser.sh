# murmur watch in a real browser: Debian's headless Chromium, driven through
# the DevTools protocol (tests/tools/cdp), opens the page of
#  1. a running 4-peer ring: the round shown advances, the consensus chart
#     has points, the topology shows 4 peers and 4 links, each link a
#     rate of bytes per second above 0 and the per-link chart points for
#     its 8 directions; a screenshot; then
#     one peer is killed (SIGKILL) and its node turns "killed" and both its
#     links "missing" within the documented time (--interval after its
#     launcher saw it exit; here 0.5 s, allowed 10 s under load), the badge
#     still "live" (the others run);
#  2. a finished sweep (2 topologies x 2 seeds): the accuracy-against-
#     consensus chart has a point per setting, the grid shows 4 of 4 done
#     and the badge says "finished", not "live".
# Screenshots: $WATCH_SHOTS (default: the test's temp dir, removed), so
# `WATCH_SHOTS=DIR make test` keeps them.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
need_pkgs chromium-headless-shell curl || { echo "skip: chromium-headless-shell or curl missing and not root to install it"; exit 0; }
CDP=${CDP:-$ROOT/${BUILD:-build}/tests/tools/cdp}
[ -x "$CDP" ] || fail "$CDP missing (make test builds it)"
shots=${WATCH_SHOTS:-$T/shots}
mkdir -p "$shots"
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring-4.topo" 2>/dev/null
"$MURMUR" topo gen complete -n 4 > "$T/complete-4.topo" 2>/dev/null
model="--data $T/data --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --lr 3e-3 --plaintext"
E2E_CLEANUP='for f in "$RUNS"/*/launch/node-*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
# q SELECTOR ATTR: the page expression for an element's data attribute
q() { printf "document.querySelector('%s').dataset.%s" "$1" "$2"; }

# 1. a live ring
port=$(free_ports 5)
setsid sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring-4.topo" -r ring -p "$port" -i 60 --no-report \
    -- $model --rounds 100000 --eval-every 5 --snapshot-every 10 --log-every 0 \
    --compute-jitter uniform:0.1 > "$T/ring.out" 2>&1 < /dev/null &
ring=$! # setsid's child leads its own process group: run-local.sh
E2E_PIDS="$E2E_PIDS $ring"
i=0
until [ -s "$RUNS/ring/node-3/metrics.jsonl" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$T/ring.out" >&2; fail "the ring did not start"; }
    sleep 0.1
done
bg "$MURMUR" watch "$RUNS/ring" --addr "127.0.0.1:$((port + 4))" --interval 0.5 --stale 3 > "$T/watch.out" 2>&1
url="http://127.0.0.1:$((port + 4))/"
i=0
until curl -sf "$url" > /dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/watch.out" >&2; fail "murmur watch did not answer"; }
    sleep 0.1
done
r=$(q '#round' round)
"$CDP" chromium-headless-shell "$T/profile1" 1600x1000 "$url" \
    "wait:30:(window.r0 = $r) > 0" "print:'round ' + window.r0" \
    "wait:60:Number(document.body.dataset.updates) >= 3 && $r > window.r0" \
    "print:'round ' + $r" \
    "wait:30:$(q '#chart-consensus' points) > 0" \
    "print:'consensus points ' + $(q '#chart-consensus' points)" \
    "wait:20:$(q '#chart-links' points) >= 8" \
    "print:'link points ' + $(q '#chart-links' points)" \
    "print:'acc-xi axis covers ' + (() => { const c = charts['chart-acc-xi'], xs = c.data.datasets[0].data.map(p => p.x); return c.scales.x.min <= Math.min(...xs) && c.scales.x.max >= Math.max(...xs); })()" \
    "print:'link rates ' + [...document.querySelectorAll('#topology .link')].map(l => l.dataset.from + '-' + l.dataset.to + ':' + Math.round(l.dataset.bps)).join(' ')" \
    "print:'topology ' + $(q '#topology' peers) + ' peers ' + $(q '#topology' links) + ' links'" \
    "print:'states ' + [...document.querySelectorAll('#topology .peer')].map(p => p.dataset.state).join(',')" \
    "shot:$shots/watch-run.png" \
    "run:kill -9 \$(cat '$RUNS/ring/launch/node-2.pid'); date +%s.%N > '$T/killed'" \
    "wait:10:$(q '#topology .peer[data-id=\"2\"]' state) == 'killed'" \
    "wait:5:[...document.querySelectorAll('#topology .link')].filter(l => l.dataset.state == 'missing').length == 2" \
    "run:date +%s.%N > '$T/seen'" \
    "print:'after the kill ' + [...document.querySelectorAll('#topology .link')].map(l => l.dataset.from + '-' + l.dataset.to + ':' + l.dataset.state).join(' ')" \
    "print:'badge ' + document.getElementById('live').textContent" \
    "shot:$shots/watch-run-killed.png" > "$T/cdp1.out" 2> "$T/cdp1.err" ||
    { cat "$T/cdp1.out" "$T/cdp1.err" "$T/watch.out" >&2; fail "the live page did not show what it should"; }
cat "$T/cdp1.out" | sed 's/^/  /'
r1=$(sed -n 's/^round //p' "$T/cdp1.out" | head -1); r2=$(sed -n 's/^round //p' "$T/cdp1.out" | tail -1)
[ "$r2" -gt "$r1" ] || fail "the round shown did not advance ($r1 then $r2)"
grep -q '^topology 4 peers 4 links$' "$T/cdp1.out" || fail "the topology does not show 4 peers and 4 links"
grep -q '^acc-xi axis covers true$' "$T/cdp1.out" || fail "the accuracy-against-consensus chart's axis leaves points out"
grep -q '^states [a-z,]*running' "$T/cdp1.out" || fail "no peer shown running"
# every link of the live ring carries bytes: 4 links, each rate > 0
[ "$(sed -n 's/^link rates //p' "$T/cdp1.out" | tr ' ' '\n' | awk -F: '$2 > 0' | wc -l)" -eq 4 ] ||
    fail "not every link shows its bytes per second"
grep -q '^badge live$' "$T/cdp1.out" || fail "the running ring's badge is not live: $(grep '^badge' "$T/cdp1.out")"
note "peer 2 shown killed $(awk -v a="$(cat "$T/killed")" -v b="$(cat "$T/seen")" 'BEGIN { printf "%.1f", b - a }') s after SIGKILL"
[ -s "$shots/watch-run.png" ] && [ -s "$shots/watch-run-killed.png" ] || fail "no screenshot"
kill -TERM "$ring" 2>/dev/null || true # run-local.sh stops its peers
wait "$ring" 2>/dev/null || true

# 2. a finished sweep
cat > "$T/w.sweep" <<SPEC
topology $T/ring-4.topo $T/complete-4.topo
seeds 1 2
flags $model --rounds 12 --eval-every 4 --snapshot-every 4 --log-every 0
SPEC
sport=$(free_ports 9)
sh "$ROOT/scripts/sweep.sh" -q -i 1 -p "$sport" -r sw "$T/w.sweep" > "$T/sweep.out" 2>&1 ||
    { cat "$T/sweep.out" >&2; fail "the sweep failed"; }
bg "$MURMUR" watch "$RUNS/sw" --addr "127.0.0.1:$((sport + 8))" --interval 0.5 > "$T/watch2.out" 2>&1
url="http://127.0.0.1:$((sport + 8))/"
i=0
until curl -sf "$url" > /dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/watch2.out" >&2; fail "murmur watch (sweep) did not answer"; }
    sleep 0.1
done
"$CDP" chromium-headless-shell "$T/profile2" 1600x900 "$url" \
    "wait:30:document.body.dataset.kind == 'sweep'" \
    "wait:10:$(q '#grid' done) == 4" \
    "print:'grid ' + $(q '#grid' done) + '/' + $(q '#grid' planned)" \
    "print:'sweep points ' + $(q '#chart-sweep' points)" \
    "wait:10:document.getElementById('live').dataset.status == 'finished'" \
    "print:'badge ' + document.getElementById('live').textContent" \
    "shot:$shots/watch-sweep.png" > "$T/cdp2.out" 2> "$T/cdp2.err" ||
    { cat "$T/cdp2.out" "$T/cdp2.err" "$T/watch2.out" >&2; fail "the sweep page did not show what it should"; }
cat "$T/cdp2.out" | sed 's/^/  /'
grep -q '^grid 4/4$' "$T/cdp2.out" || fail "the grid does not show 4 of 4 runs done"
grep -q '^sweep points 2$' "$T/cdp2.out" || fail "the sweep chart has not one point per setting"
grep -q '^badge finished [0-9]* \(s\|min\) ago$' "$T/cdp2.out" || fail "the finished sweep's badge: $(grep '^badge' "$T/cdp2.out")"
[ -s "$shots/watch-sweep.png" ] || fail "no sweep screenshot"
echo "ok: murmur watch in Chromium: a live ring (round advances, consensus points, 4 peers, 4 links, a killed peer shown killed) and a finished sweep shown finished"
