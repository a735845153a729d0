#!/bin/sh
# The README's demo table (README.md, section 1) against what the demo
# prints, so the two cannot drift apart (issue 21, defect 7).
#
#   demo-table.sh table SWEEP_DIR         the table `murmur report --sweep` prints for
#                                         it, then the line '<!-- demo kernel: K -->'
#                                         naming the OpenBLAS kernel its peers ran
#   demo-table.sh check TABLE [README]    exit 0 when README's table agrees with TABLE
#   demo-table.sh write TABLE [README]    put TABLE (and its kernel line) into README
#   demo-table.sh readme [README]         README's table and kernel line as they stand
#
# The demo is deterministic for one OpenBLAS kernel: every machine whose
# peers run the kernel README's table was made with must print the same
# figures, so `check` then compares every column the run decides (setting,
# peers, seeds, acc, val_loss, consensus_final, consensus_avg, how) exactly
# as printed, MB/peer to within 0.05 MB (heartbeats vary the bytes by a few
# kB), and ignores wall_s (the load). Another kernel sums in another order:
# then the means must agree within a tolerance (acc 0.002, val_loss 0.01,
# the consensus columns 5 %) and the spreads are not compared. `make demo`
# ends with `check` against its own run and fails loudly when they differ;
# `make demo-readme` runs the demo and `write`s its table (one command, for
# when the model's arithmetic changed on purpose). tests/e2e/readme_demo.sh
# checks that README's table parses, matches sweeps/baselines-8.sweep, and
# that `check` can fail.
set -eu
PROG=demo-table
MURMUR=${MURMUR:-./murmur}
die() { echo "$PROG: $*" >&2; exit 1; }

# The header line every table starts with (report/report_sweep.c).
is_header='$1 == "setting" && $2 == "peers" && $3 == "seeds" && /consensus_final/'
kernel_re='^<!-- demo kernel: [A-Za-z0-9_]* -->$'

# readme_table README: the ``` block of README whose first line is the
# header, then the kernel line that follows the block.
readme_table() {
    awk -v kre="$kernel_re" "
        /^\`\`\`/ { if (intable) { intable = 0; after = 1; next } fence = !fence; start = fence; next }
        after { if (\$0 ~ kre) print; exit }
        start { start = 0; if ($is_header) intable = 1 }
        intable" "$1"
}

# sweep_table SWEEP_DIR: the header and the settings' lines of the report.
sweep_table() {
    "$MURMUR" report --sweep "$1" 2>/dev/null |
        awk "$is_header { on = 1; print; next } on && NF == 0 { exit } on" |
        awk 'NR == 1 || (NF == 10 && $1 !~ /^[(]/)'
}

# kernel_of SWEEP_DIR: the OpenBLAS kernel of its peers' start lines (one
# name; 'mixed' when they differ, 'unknown' when none says).
kernel_of() {
    cat "$1"/*/s*/node-*/metrics.jsonl 2>/dev/null | grep '"ev":"start"' |
        sed -n 's/.*"blas_kernel":"\([A-Za-z0-9_]*\)".*/\1/p' | sort -u |
        awk '{ k[NR] = $0 } END { print NR == 0 ? "unknown" : NR == 1 ? k[1] : "mixed" }'
}

# compare A B NAME_A NAME_B SAME_KERNEL: exit 0 when tables A and B agree
# (above); on stdout, how they do not.
compare() {
    awk -v a_name="$3" -v b_name="$4" -v same="$5" '
        function mean(s) { sub(/±.*/, "", s); return s + 0 }
        function near(u, v, abs_tol, rel_tol,   d) {
            d = mean(u) - mean(v); if (d < 0) d = -d
            return d <= abs_tol || (rel_tol > 0 && d <= rel_tol * (mean(v) < 0 ? -mean(v) : mean(v)))
        }
        /^<!--/ { next }
        FNR == 1 { file++; if (file == 1) for (k = 1; k <= NF; k++) col[k] = $k; next }
        file == 1 { a[$1] = $0; order[++na] = $1; next }
        file == 2 { b[$1] = $0; nb++ }
        END {
            bad = 0
            if (na != nb) { printf "  %d settings in %s, %d in %s\n", na, a_name, nb, b_name; bad = 1 }
            for (i = 1; i <= na; i++) {
                s = order[i]
                if (!(s in b)) { printf "  %s: not in %s\n", s, b_name; bad = 1; continue }
                split(a[s], x); split(b[s], y)
                diff = ""
                if (same) {
                    for (k = 2; k <= 8; k++) if (x[k] != y[k]) diff = diff " " col[k]
                } else {
                    for (k = 2; k <= 8; k++) {
                        if (k == 4) ok = near(x[k], y[k], 0.002, 0)
                        else if (k == 5) ok = near(x[k], y[k], 0.01, 0)
                        else if (k == 6 || k == 7) ok = near(x[k], y[k], 0, 0.05)
                        else ok = x[k] == y[k]
                        if (!ok) diff = diff " " col[k]
                    }
                }
                if (!near(x[9], y[9], 0.05, 0)) diff = diff " MB/peer"
                if (diff != "") {
                    printf "  %s differs in%s:\n    %s: %s\n    %s: %s\n", s, diff, a_name, a[s], b_name, b[s]
                    bad = 1
                }
            }
            exit bad
        }' "$1" "$2"
}

kernel_in() { sed -n 's/^<!-- demo kernel: \([A-Za-z0-9_]*\) -->$/\1/p' "$1" | tail -n 1; }

cmd=${1:-}
case $cmd in
table)
    [ $# -eq 2 ] || die "usage: demo-table.sh table SWEEP_DIR"
    t=$(sweep_table "$2")
    [ "$(printf '%s\n' "$t" | wc -l)" -ge 2 ] || die "no table in 'murmur report --sweep $2'"
    printf '%s\n<!-- demo kernel: %s -->\n' "$t" "$(kernel_of "$2")" ;;
readme)
    readme_table "${2:-README.md}" ;;
check)
    [ $# -ge 2 ] || die "usage: demo-table.sh check TABLE [README]"
    readme=${3:-README.md}
    tmp=$(mktemp); trap 'rm -f "$tmp" "$tmp.why"' EXIT
    readme_table "$readme" > "$tmp"
    [ -s "$tmp" ] || die "$readme has no demo table (a \`\`\` block starting with the 'setting peers seeds' header)"
    ka=$(kernel_in "$tmp") kb=$(kernel_in "$2")
    [ -n "$ka" ] || die "$readme's demo table has no '<!-- demo kernel: K -->' line after it"
    same=0
    [ "$ka" = "$kb" ] && same=1
    if ! compare "$tmp" "$2" "$readme" "this demo" "$same" > "$tmp.why"; then
        {
            echo "$PROG: FAIL: $readme's demo table is not what this demo printed" \
                "(OpenBLAS kernel $kb here, $ka in $readme):"
            cat "$tmp.why"
            echo "$PROG: the demo is deterministic for one kernel (README, section 1): either the model's"
            echo "$PROG: arithmetic changed (then 'make demo-readme' reruns it and writes its table into"
            echo "$PROG: $readme), or a result changed that should not have."
        } >&2
        exit 1
    fi
    if [ "$same" = 1 ]; then
        echo "$PROG: $readme's demo table agrees with this demo (kernel $kb: every column but wall_s; MB/peer within 0.05)"
    else
        echo "$PROG: $readme's demo table agrees with this demo within the tolerance of another kernel" \
            "($kb here, $ka in $readme: acc 0.002, val_loss 0.01, consensus 5 %)"
    fi ;;
write)
    [ $# -ge 2 ] || die "usage: demo-table.sh write TABLE [README]"
    readme=${3:-README.md}
    [ -s "$2" ] || die "$2: no table"
    [ -n "$(kernel_in "$2")" ] || die "$2 has no '<!-- demo kernel: K -->' line (demo-table.sh table makes one)"
    [ -n "$(readme_table "$readme")" ] || die "$readme has no demo table to replace"
    awk -v tf="$2" -v kre="$kernel_re" "
        /^\`\`\`/ { fence = !fence; start = fence
                   if (intable) { intable = 0; done = 1; after = 1; print; print kline; next }
                   print; next }
        after { after = 0; if (\$0 ~ kre) next }
        start { start = 0
            if (!done && ($is_header)) {
                intable = 1
                while ((getline l < tf) > 0) { if (l ~ kre) kline = l; else print l }
            } }
        intable { next }
        { print }" "$readme" > "$readme.tmp"
    mv "$readme.tmp" "$readme"
    echo "$PROG: wrote the table of $2 into $readme (check the prose around it: times, load, differences)" ;;
*)
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
    [ "$cmd" = --help ] || [ "$cmd" = -h ] || exit 2 ;;
esac
