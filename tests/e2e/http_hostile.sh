# Hostile HTTP (tests/tools/http_hostile.pl) against both of murmur's
# servers while 4 peers train: peer 0's --metrics-addr endpoint and murmur
# watch on the run. Malformed request lines, huge headers and URLs, ../
# paths, other methods, a GET with a body, 1,000 connections at once and a
# slowloris client: each refused or cut, counted (peer 0's
# murmur_http_refused_total, murmur watch's last line), a good request
# answered after each; and the run unaffected: every peer trains on to a
# clean stop, and peer 0's compute time per round stays within the other
# peers' (they were not attacked).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
need_pkgs curl || { echo "skip: curl missing and not root to install it"; exit 0; }
export MURMUR MURMUR_NO_BLAS_FIX=1 RUNS="$T/runs"
tiny_data "$T/data"
"$MURMUR" topo gen ring -n 4 > "$T/ring-4.topo" 2>/dev/null
E2E_CLEANUP='for f in "$RUNS"/*/launch/node-*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done'
port=$(free_ports 6)
mport=$((port + 4)); wport=$((port + 5))
# only peer 0 serves metrics (run-local.sh passes one flag list to all: a
# wrapper adds it for peer 0)
cat > "$T/node.sh" <<EOF
#!/bin/sh
case " \$* " in *" --id 0 "*) exec "$MURMUR" "\$@" --metrics-addr 127.0.0.1:$mport ;; esac
exec "$MURMUR" "\$@"
EOF
chmod +x "$T/node.sh"
MURMUR="$T/node.sh" setsid sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring-4.topo" -r h -p "$port" -i 60 --no-report \
    -- --data "$T/data" --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --plaintext \
    --rounds 100000 --eval-every 20 --log-every 0 --compute-jitter uniform:0.05 > "$T/run.out" 2>&1 < /dev/null &
ring=$!
E2E_PIDS="$E2E_PIDS $ring"
i=0
until curl -sf "http://127.0.0.1:$mport/metrics" > /dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$T/run.out" "$RUNS"/h/node-0/console.log >&2; fail "peer 0's endpoint did not answer"; }
    sleep 0.1
done
bg "$MURMUR" watch "$RUNS/h" --addr "127.0.0.1:$wport" --interval 0.5 > "$T/watch.out" 2>&1
watch=$(lastpid)
i=0
until curl -sf "http://127.0.0.1:$wport/" > /dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/watch.out" >&2; fail "murmur watch did not answer"; }
    sleep 0.1
done
# grep -c exits 1 on no match: the endpoint can answer before peer 0's first
# round line, and set -e must not end the test silently then
rounds_now() { grep -c '"ev":"round"' "$RUNS/h/node-0/metrics.jsonl" || true; }
r0=$(rounds_now)
echo "  peer 0's metrics endpoint:"
perl "$ROOT/tests/tools/http_hostile.pl" 127.0.0.1 $mport /metrics > "$T/h1.out" 2>&1 ||
    { sed 's/^/    /' "$T/h1.out"; fail "the metrics endpoint let an attack through (above)"; }
sed 's/^/    /' "$T/h1.out"
echo "  murmur watch:"
perl "$ROOT/tests/tools/http_hostile.pl" 127.0.0.1 $wport /state.json > "$T/h2.out" 2>&1 ||
    { sed 's/^/    /' "$T/h2.out"; fail "murmur watch let an attack through (above)"; }
sed 's/^/    /' "$T/h2.out"
r1=$(rounds_now)
note "peer 0 trained $((r1 - r0)) rounds during the attacks"
[ $((r1 - r0)) -gt 20 ] || fail "peer 0 hardly trained during the attacks"

# every attack counted
curl -sf "http://127.0.0.1:$mport/metrics" > "$T/m.txt" || fail "no metrics after the attacks"
count() { sed -n "s/^murmur_http_refused_total{reason=\"$1\"} //p" "$T/m.txt"; }
note "peer 0 counted: $(grep '^murmur_http_refused_total' "$T/m.txt" | sed 's/murmur_http_refused_total{reason="\([a-z_]*\)"} /\1 /' | tr '\n' ' ')"
[ "$(count method)" -ge 2 ] && [ "$(count path)" -ge 2 ] && [ "$(count body)" -ge 1 ] &&
    [ "$(count conn_limit)" -ge 900 ] && [ "$(count slow)" -ge 1 ] && [ "$(count malformed)" -ge 3 ] ||
    fail "peer 0 did not count every refusal"
kill -TERM "$watch"
wait "$watch" 2>/dev/null || true
line=$(tail -1 "$T/watch.out")
note "$line"
echo "$line" | awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
    END { exit !(v["method"] >= 2 && v["path"] >= 2 && v["body"] >= 1 && v["conn_limit"] >= 900 && v["slow"] >= 1 && v["malformed"] >= 3) }' ||
    fail "murmur watch did not count every refusal"

# a bearer token: refused without it, answered with it, counted
printf 'secret-token-0123456789\n' > "$T/token"
bg "$MURMUR" watch "$RUNS/h" --addr "127.0.0.1:$wport" --token-file "$T/token" > "$T/watch3.out" 2>&1
watch=$(lastpid)
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$wport/state.json")" = 401 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/watch3.out" >&2; fail "murmur watch --token-file did not answer 401 without the token"; }
    sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-0123456789' "http://127.0.0.1:$wport/state.json")" = 401 ] ||
    fail "a wrong token was accepted"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer secret-token-0123456789' "http://127.0.0.1:$wport/state.json")" = 200 ] ||
    fail "the right token was refused"
kill -TERM "$watch"
wait "$watch" 2>/dev/null || true
tail -1 "$T/watch3.out" | grep -q ' auth [2-9]' || { tail -1 "$T/watch3.out" >&2; fail "refusals for the token not counted"; }
note "bearer token: 401 without or with a wrong one, 200 with it ($(tail -1 "$T/watch3.out" | grep -o 'auth [0-9]*'))"

# the run: stopped cleanly, and peer 0's own work per round like the others'
kill -TERM "$ring" 2>/dev/null || true
wait "$ring" 2>/dev/null || true
for k in 0 1 2 3; do
    grep -q '"ev":"end".*"reason":"signal"' "$RUNS/h/node-$k/metrics.jsonl" || fail "peer $k did not stop cleanly"
done
for k in 0 1 2 3; do
    tail -1 "$RUNS/h/node-$k/metrics.jsonl" > /dev/null
    grep '"ev":"round"' "$RUNS/h/node-$k/metrics.jsonl" | tail -1 |
        sed -n "s/.*\"round\":\([0-9]*\),.*\"t_compute\":\([0-9.e+-]*\),.*/$k \1 \2/p"
done > "$T/compute.txt"
awk '{ c[$1] = $3 / ($2 + 1) } END {
        for (k = 1; k <= 3; k++) { if (k == 1 || c[k] > hi) hi = c[k]; if (k == 1 || c[k] < lo) lo = c[k] }
        printf "  compute per round: peer 0 %.1f ms (attacked); peers 1-3 %.1f .. %.1f ms\n", 1000 * c[0], 1000 * lo, 1000 * hi
        exit !(c[0] <= 1.5 * hi) }' "$T/compute.txt" || fail "peer 0's rounds slowed under the attacks"
echo "ok: both HTTP servers refused, cut and counted every attack; the run trained on"
