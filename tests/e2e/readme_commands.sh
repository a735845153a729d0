# Every command in the README's ```sh blocks runs as written, so the README
# cannot drift from the program: each is taken from README.md itself and run
# in a scratch copy of the layout (./murmur, scripts/, topologies/, data/brown
# = a tiny synthetic corpus), changed only where a test must: a free port
# instead of 29500, a 1 s progress interval, and a tiny model and a few
# rounds appended to the node flags (later flags override earlier ones, so
# every flag of the README is still parsed and checked). A README command
# this test does not know fails it: add it below. Also: section 3's
# comparison carries the demo's flags (mk/demo.mk), so its rows reproduce
# the demo's.
. "$(dirname "$0")/lib.sh"
export MURMUR_NO_BLAS_FIX=1
W="$T/repo"
mkdir -p "$W/data"
ln -s "$ROOT/murmur" "$W/murmur"
ln -s "$ROOT/scripts" "$W/scripts"
ln -s "$ROOT/topologies" "$W/topologies"
mkdir -p "$W/sweeps"
tiny_data "$W/data/brown" 8
tiny="--layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --rounds 4 --eval-every 2 --snapshot-every 2"
tiny="$tiny --checkpoint-every 0 --log-every 0 --start-timeout 20000"

# The commands, one per line (continuations joined, comments dropped).
awk '/^```sh/ { inb = 1; next } /^```/ { inb = 0 } inb' "$ROOT/README.md" |
    sed 's/[[:space:]]*#.*$//' | awk '/\\$/ { sub(/\\$/, ""); printf "%s", $0; next } { print }' |
    sed 's/[[:space:]][[:space:]]*/ /g; /^ *$/d' > "$T/commands"
[ "$(wc -l < "$T/commands")" -ge 8 ] || fail "only $(wc -l < "$T/commands") commands found in README.md"

# run DESCRIPTION COMMAND: in the scratch layout, must exit 0.
run() {
    (cd "$W" && eval "$2") > "$T/out" 2>&1 || { cat "$T/out" >&2; fail "README: $1 failed: $2"; }
    note "ok: $2" | cut -c1-150
}
port=$(free_ports 64)
ran=0
# Heredocs (the hosts file) arrive as separate lines: skip to their end.
in_heredoc=''
while IFS= read -r cmd; do
    if [ -n "$in_heredoc" ]; then
        [ "$cmd" = "$in_heredoc" ] && in_heredoc=''
        continue
    fi
    case $cmd in
    "make demo"|"make test")
        note "not run here: $cmd (the whole demo and test suite)" ;;
    "cat > hosts.txt <<EOF")
        in_heredoc=EOF
        note "not run here: the hosts file for 10.0.0.1-4 (run-hosts.sh: tests/e2e/launch_ssh.sh)" ;;
    "sh scripts/add-peer.sh "*)
        note "not run here: $cmd (a peer added to a running run: tests/e2e/launch_add_peer.sh)" ;;
    "sh scripts/run-hosts.sh -H hosts.txt "*)
        note "not run here: $cmd (needs the hosts; tests/e2e/launch_ssh.sh)" ;;
    "./murmur topo "*|"./murmur node --help")
        run "$cmd" "$cmd" ;;
    "sh scripts/compare.sh "*|"sh scripts/run-local.sh "*)
        # a free port and a 1 s progress interval before the script's options
        # (the launcher notices the end of a run at its next progress line);
        # the tiny model after the node flags
        # (and its metrics endpoints, if any, on free ports too)
        run "$cmd" "$(echo "$cmd" | sed "s|\.sh |.sh -p $port -i 1 |; s|--metrics-addr 127.0.0.1:[0-9]*+|--metrics-addr 127.0.0.1:$((port + 12))+|") $tiny"
        port=$((port + 24)) ;;
    "./murmur watch "*)
        # the page's document once (the server itself: tests/e2e/watch_browser.sh)
        run "$cmd" "$cmd --once" ;;
    "./murmur node --id K "*)
        # the per-peer line: all four peers of section 4's run, by hand
        c=$(echo "$cmd" | sed "s|--topology FILE|--topology topologies/ring-4.topo|; s|--base-port 29500|--base-port $port|")
        (cd "$W" && for k in 0 1 2 3; do eval "$(echo "$c" | sed "s|--id K|--id $k|") $tiny --data data/brown" \
            > "$T/peer$k.out" 2>&1 & done; wait) || true
        for k in 0 1 2 3; do
            grep -q '"ev":"end".*"reason":"done"' "$W/runs/myrun/node-$k/metrics.jsonl" 2>/dev/null ||
                { cat "$T/peer$k.out" >&2; fail "README: the per-peer command did not run peer $k: $c"; }
        done
        note "ok: $c (K = 0..3)"
        port=$((port + 24)) ;;
    "./murmur train "*)
        run "$cmd" "$cmd --steps 6 --layers 1 --width 16 --heads 2 --ctx 16 --batch 4 --eval-every 3" ;;
    "./murmur generate "*)
        run "$cmd" "$cmd" ;;
    "./murmur data-info "*)
        run "$cmd" "$(echo "$cmd" | sed 's/-n 16/-n 2/')" ;;
    "mkdir -p mytext/"*|"for i in "*|" printf "*|"done"|"./murmur data-prepare --text "*)
        # section 7's own-text example, as written: its loop spans lines, so
        # the lines up to `done` run together when the loop ends
        case $cmd in
        "mkdir -p mytext/"*|"./murmur data-prepare --text "*) run "$cmd" "$cmd" ;;
        "for i in "*) loop="$cmd" ;;
        "done") run "the own-text loop" "$loop
done"; loop='' ;;
        *) loop="$loop
$cmd" ;;
        esac ;;
    "cat sweeps/"*)
        # section 8's sweep: the spec as shipped, here with the tiny model
        # in place of its 'flags' lines (a flag may not repeat in a spec) and
        # one seed (time); its topologies are the shipped ones
        f=${cmd#cat }
        grep -v '^flags\|^seeds' "$ROOT/$f" > "$W/$f"
        printf 'seeds 1\nflags %s --data data/brown --plaintext --partition genre\n' "$tiny" >> "$W/$f"
        run "$cmd" "$cmd" ;;
    "sh scripts/sweep.sh --check "*)
        run "$cmd" "$cmd" ;;
    "sh scripts/sweep.sh "*)
        run "$cmd" "$(echo "$cmd" | sed "s|\.sh |.sh -q -p $port -i 1 |")"
        [ "$(grep -c '^[a-z]*-8 .* 1/1 ' "$T/out")" -eq 4 ] ||
            { cat "$T/out" >&2; fail "README: the sweep's aggregate lacks its 4 settings"; }
        port=$((port + 32)) ;;
    "./murmur plan "*)
        # a quick calibration: the default model shape is what the README asks
        run "$cmd" "$cmd --rounds 60 --seconds 0.2" ;;
    *)
        fail "README command not covered by this test (add it here): $cmd" ;;
    esac
    ran=$((ran + 1))
done < "$T/commands"
[ -s "$W/runs/mine/compare.csv" ] || fail "the README's comparison wrote no compare.csv"
[ -s "$W/runs/solo/checkpoint.bin" ] || fail "the README's murmur train wrote no checkpoint"

# Section 3's comparison and the demo: the demo is the sweep DEMO_SPEC
# (mk/demo.mk); the comparison carries its node flags (every `flags` line)
# and its first seed, so its ring-8 row is the demo's ring-8 row of seed 1.
cmp_line=$(grep '^sh scripts/compare.sh ' "$T/commands")
spec=$(sed -n 's/^DEMO_SPEC *?= *//p' "$ROOT/mk/demo.mk")
[ -n "$spec" ] && [ -f "$ROOT/$spec" ] || fail "cannot read the demo's spec from mk/demo.mk"
demo_flags=$(sed 's/#.*//' "$ROOT/$spec" | awk '$1 == "flags" { $1 = ""; printf "%s ", $0 }')
seed=$(sed 's/#.*//' "$ROOT/$spec" | awk '$1 == "seeds" { print $2 }')
demo_flags=$(echo $demo_flags)
[ -n "$demo_flags" ] && [ -n "$seed" ] || fail "cannot read the demo's flags and seeds from $spec"
echo " $cmp_line " | grep -q -- " -s $seed " || fail "README section 3's comparison does not run the demo's first seed ($seed)"
set -- $demo_flags
while [ $# -gt 0 ]; do
    case $1 in
    -*) opt=$1; val=${2:-}
        case $val in -*|'') val=''; shift ;; *) shift 2 ;; esac
        echo " $cmp_line " | grep -q -- " $opt${val:+ $val} " ||
            fail "README section 3's comparison lacks the demo's '$opt${val:+ $val}' ($spec): its rows would not match the demo's" ;;
    *) shift ;;
    esac
done
echo "$cmp_line" | grep -q ' topologies/ring-8.topo ' || fail "README section 3's comparison does not run the demo's ring-8"
note "section 3's comparison carries the demo's ($spec): -s $seed $demo_flags"
echo "ok: $ran README commands"
