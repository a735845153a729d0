# scripts/outer-figures.sh (docs/outer.md's comparison) on a made-up sweep
# whose answers are known: two methods, seeds 1 and 2, one of them a
# setting with a comma (as an axis writes it: b,outer-momentum=0.5), two
# peers a run, 3 rounds of 1 MB a round whose round lines lag one round
# as murmur's do. Checks the bytes of all 3 rounds (3 MB, not the
# report's 2), the paired difference, its 95 % t interval and sign count,
# the curve points and, with gnuplot, the PNG.
. "$(dirname "$0")/lib.sh"
sw=$T/sw
# run SETTING SEED LOSS: one finished run of 2 peers, final val loss LOSS
run() {
    d="$sw/$1/s$2"; mkdir -p "$d/node-0" "$d/node-1"; : > "$d/sweep.done"
    for p in 0 1; do
        {
            echo "{\"ev\":\"eval\",\"peer\":$p,\"round\":0,\"val_loss\":5.5}"
            for r in 0 1 2; do
                echo "{\"ev\":\"round\",\"peer\":$p,\"round\":$r,\"bytes_sent\":$((r * 1000000)),\"loss\":3}"
            done
            echo "{\"ev\":\"eval\",\"peer\":$p,\"round\":3,\"val_loss\":$3}"
        } > "$d/node-$p/metrics.jsonl"
    done
}
run a 1 2.0; run a 2 3.0
run "b,outer-momentum=0.5" 1 1.5; run "b,outer-momentum=0.5" 2 2.9
cat > "$sw/sweep-runs.csv" <<'EOF'
index,setting,seed,run,status,reason,rounds,acc,val_loss,consensus_final,consensus_final_method,consensus_avg,consensus_rms,consensus_avg_method,consensus_rows,bytes_sent_per_peer,wall_s
0,"a",1,"a/s1",done,"",3,0.20,2.0,0.5,exact,0.5,0.5,exact,2,2000000.0,1.0
1,"b,outer-momentum=0.5",1,"b,outer-momentum=0.5/s1",done,"",3,0.25,1.5,0.25,exact,0.25,0.25,exact,2,2000000.0,1.0
2,"a",2,"a/s2",done,"",3,0.30,3.0,0.5,exact,0.5,0.5,exact,2,2000000.0,1.0
3,"b,outer-momentum=0.5",2,"b,outer-momentum=0.5/s2",done,"",3,0.31,2.9,0.25,exact,0.25,0.25,exact,2,2000000.0,1.0
4,"a",3,"a/s3",failed,"a peer failed",3,0.9,0.1,0,exact,0,0,exact,2,2000000.0,1.0
EOF
cat > "$T/methods" <<EOF
# made up
plain A | $sw | a |
method B | $sw | b,outer-momentum=0.5 | --peers 4 --algo allreduce --vector-len 1000 --step-time 0.01
EOF
MURMUR="$MURMUR" sh "$ROOT/scripts/outer-figures.sh" "$T/out" "$T/methods" > "$T/log" 2>&1 ||
    { cat "$T/log" >&2; fail "outer-figures.sh failed"; }

# every done run, none of the failed one; MB = 3 rounds' sends, the report's 2 beside
grep -q '^method B,1,1.5,0.25,0.25,3.000,2.000$' "$T/out/runs.csv" ||
    { cat "$T/out/runs.csv" >&2; fail "runs.csv: method B seed 1 is not 1.5 loss, 3.000 MB (2.000 counted)"; }
[ "$(grep -c '^plain A,' "$T/out/runs.csv")" = 2 ] || fail "runs.csv: plain A should have its 2 done seeds, not the failed one"
# the table: means over seeds, and B minus A paired: -0.5 and -0.1 -> mean -0.300,
# sd 0.283, 95 % interval -0.300 +- 12.706 * 0.2828 / sqrt 2 = [-2.841, +2.241], lower in 2 of 2
grep -q '^| method B | 1 2 | 2.200 ± 0.990 | ' "$T/out/outer.md" || { cat "$T/out/outer.md" >&2; fail "the table's row of method B"; }
grep -q '^| method B | 2 | -0.300 ± 0.283 | \[-2.841, +2.241\] | 2 of 2 | ' "$T/out/outer.md" ||
    { cat "$T/out/outer.md" >&2; fail "the paired difference of B against A"; }
grep -q '^| plain A | .* | - | - |$' "$T/out/outer.md" || fail "a method without plan flags has no plan columns"
# curves: mean over peers then seeds, bytes after R rounds
grep -q '^method B,3,3.0000,2.20000,2$' "$T/out/curves.csv" || { cat "$T/out/curves.csv" >&2; fail "curves.csv: B's last point"; }
grep -q '^plain A,0,0.0000,5.50000,2$' "$T/out/curves.csv" || fail "curves.csv: A's first point"
if command -v gnuplot > /dev/null 2>&1; then
    [ -s "$T/out/loss-mb.png" ] || fail "gnuplot is there but no loss-mb.png"
    note "plot $(wc -c < "$T/out/loss-mb.png") bytes"
fi
echo "ok: outer-figures.sh: bytes of every round, settings with commas, paired intervals"
