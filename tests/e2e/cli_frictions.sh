# Places where murmur said less than it knew (issue 21, frictions 10, 12,
# 13, 15, 16, 18, 20), each checked by what the command now says:
#   12  --heads 5 with --width 64: named in the flags' words;
#   16  a flag given twice warns once with both values; --lr 0 is refused;
#   15  a topology file with a UTF-8 byte-order mark loads; a directed file
#       whose arcs come in pairs is counted in arcs, like any directed file;
#   13  murmur plan: no --links says "unlimited" and "bound by nothing",
#       GxP without rates and a zero rate are named, GxP that is not the
#       topology's peers is refused (2), --peers without --topology is a
#       usage error (2), --algo pushsum is accepted;
#   10  run-local.sh refuses ports a socket already holds; a second peer
#       with one --id in one run directory stops before writing a line
#       into the first one's log;
#   18  node --help no longer promises the shape from the checkpoint;
#   20  compare.sh --help names both PNGs it writes; data-info and train
#       count one peer's training bytes alike.
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1
tiny_data "$T/data" 3
m() { "$MURMUR" "$@" > "$T/out" 2> "$T/err"; }
st=0

# 12
m train --data "$T/data" --width 64 --heads 5 --steps 1 --out "$T/t" || st=$?
[ $st -ne 0 ] && grep -q -- "--width 64 is not a multiple of --heads 5" "$T/err" ||
    { cat "$T/err" >&2; fail "--heads 5 --width 64: not said in the flags' words"; }

# 16
st=0
m train --data "$T/data" --layers 1 --width 16 --heads 2 --ctx 8 --batch 2 --steps 1 --eval-windows 2 \
    --lr 1e-3 --lr 2e-3 --lr 3e-3 --out "$T/t16" || st=$?
[ $st -eq 0 ] || { cat "$T/err" >&2; fail "train with a repeated --lr failed"; }
[ "$(grep -c -- "warning: --lr given twice ('1e-3', then '2e-3'): the last one counts" "$T/err")" -eq 1 ] ||
    { cat "$T/err" >&2; fail "a repeated --lr is not said once with both values"; }
st=0
m train --data "$T/data" --lr 0 --steps 1 --out "$T/t0" || st=$?
[ $st -ne 0 ] && grep -q -- "--lr 0 would never move the weights" "$T/err" ||
    { cat "$T/err" >&2; fail "--lr 0 was not refused"; }

# 15
printf '\357\273\277# saved by a Windows editor\r\npeers 3\r\n0 1\r\n1 2\r\n' > "$T/bom.topo"
m topo info --no-rho "$T/bom.topo" || { cat "$T/err" >&2; fail "a topology with a byte-order mark was refused"; }
printf 'peers 3\ngraph directed\n0 1\n1 0\n1 2\n2 1\n2 0\n0 2\n' > "$T/pairs.topo"
m topo info --no-rho "$T/pairs.topo"
grep -q '^edges  *6 directed (3 pairs, each both ways)$' "$T/out" ||
    { cat "$T/out" >&2; fail "a directed file of 6 arcs is not summarised as 6 directed edges"; }

# 13
ring=$ROOT/topologies/ring-8.topo
m plan --topology "$ring" --vector-len 1000000 --step-time 0.1
grep -q '^links  *unlimited' "$T/out" && grep -q 'bound by nothing' "$T/out" && ! grep -q 'bound by the none' "$T/out" ||
    { cat "$T/out" >&2; fail "plan without --links does not say unlimited / bound by nothing"; }
plan_fails() { # STATUS WORDS ARGS...: plan exits STATUS and says WORDS
    want=$1 words=$2; shift 2
    st=0; m plan "$@" || st=$?
    [ $st -eq "$want" ] && grep -q -- "$words" "$T/err" ||
        { cat "$T/err" >&2; fail "murmur plan $*: exit $st, not $want with '$words'"; }
}
plan_fails 2 "the groups need their rates, e.g. 3x4:intra=10gbit,inter=1gbit" --topology "$ring" \
    --vector-len 1000 --step-time 0.1 --links 3x4
plan_fails 2 "'intra=0gbit': a rate must be above 0" --topology "$ring" --vector-len 1000 \
    --step-time 0.1 --links 2x4:intra=0gbit
plan_fails 2 "is 3 x 4 = 12 peers" --topology "$ring" --vector-len 1000 --step-time 0.1 \
    --links 3x4:intra=1gbit
plan_fails 2 "needs --topology FILE" --peers 8 --vector-len 1000 --step-time 0.1
m plan --topology "$ring" --vector-len 1000 --step-time 0.1 --algo pushsum ||
    { cat "$T/err" >&2; fail "plan --algo pushsum was refused"; }

# 10
port=$(free_ports 8)
"$MURMUR" topo gen ring -n 4 > "$T/ring4.topo"
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(30)' \
    "$((port + 2))" &
E2E_PIDS="$E2E_PIDS $!"
i=0; while [ $i -lt 50 ] && ! ss -Htln "sport = :$((port + 2))" | grep -q .; do sleep 0.1; i=$((i + 1)); done
st=0
RUNS="$T/runs" sh "$ROOT/scripts/run-local.sh" -n 4 -t "$T/ring4.topo" -r busy -p "$port" -- --no-train \
    > "$T/out" 2>&1 || st=$?
[ $st -eq 2 ] && grep -q "something listens on some of them" "$T/out" && [ ! -e "$T/runs/busy" ] ||
    { cat "$T/out" >&2; fail "run-local on a held port: exit $st, not 2 before starting"; }
quick="--plaintext --no-train --vector-len 1000 --eval-every 0 --checkpoint-every 0 --log-every 0
       --start-timeout 2000 --peer-timeout 1000 --round-timeout 500"
"$MURMUR" node --id 0 $quick --topology "$T/ring4.topo" --base-port "$((port + 4))" --run-dir "$T/dup" \
    --rounds 1000000 > "$T/first.out" 2>&1 &
first=$!; E2E_PIDS="$E2E_PIDS $first"
i=0; while [ $i -lt 100 ] && [ ! -s "$T/dup/node-0/node.log" ]; do sleep 0.1; i=$((i + 1)); done
lines=$(wc -l < "$T/dup/node-0/node.log")
st=0
"$MURMUR" node --id 0 $quick --topology "$T/ring4.topo" --base-port "$((port + 4))" --run-dir "$T/dup" \
    --rounds 10 > "$T/second.out" 2>&1 || st=$?
[ $st -eq 2 ] && grep -q "in use by another process running peer 0" "$T/second.out" ||
    { cat "$T/second.out" >&2; fail "a second peer 0 in one run directory: exit $st, not 2 with the reason"; }
! grep -q "address already in use\|ERROR" "$T/dup/node-0/node.log" ||
    { cat "$T/dup/node-0/node.log" >&2; fail "the second peer 0 wrote into the first one's node.log"; }
[ "$(head -n "$lines" "$T/dup/node-0/node.log" | wc -l)" -eq "$lines" ] || fail "node.log shrank"
kill "$first" 2>/dev/null || true

# 18, 20
"$MURMUR" node --help | grep -q "from the checkpoint with --resume" && fail "node --help still promises the shape from the checkpoint"
"$MURMUR" node --help | grep -q -- "--resume needs the shape" || fail "node --help does not say --resume needs the shape"
sh "$ROOT/scripts/compare.sh" --help | tr '\n' ' ' | grep -q "two PNGs: runs/NAME/compare.png .*runs/NAME/compare-bytes.png" ||
    fail "compare.sh --help does not name both PNGs"
info=$("$MURMUR" data-info --data "$T/data" -n 1 | sed -n 's/.* \([0-9]*\) training bytes$/\1/p')
m train --data "$T/data" --layers 1 --width 16 --heads 2 --ctx 16 --batch 2 --steps 1 --eval-windows 2 --out "$T/bytes" ||
    { cat "$T/err" >&2; fail "train for the byte count failed"; }
grep -q "peer 0 of 1: .*, $info training bytes;" "$T/err" ||
    { grep 'data:' "$T/err" >&2; fail "data-info counts $info training bytes, train another number"; }
echo "ok: frictions 10, 12, 13, 15, 16, 18, 20 say what they know"
