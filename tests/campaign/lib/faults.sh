# Helpers shared by the fault-campaign scenarios (tests/campaign/NN_*.sh).
# Sourced after tests/e2e/lib.sh. A scenario reads CAMPAIGN_MODE (short: a
# quick version for `make test`, full: more faults and rounds) and ends with
# one line: CAMPAIGN scenario=.. injected=.. survived=.. lost=.. recover=..
CAMPAIGN_MODE=${CAMPAIGN_MODE:-short}
case "$CAMPAIGN_MODE" in short|full) ;; *) fail "CAMPAIGN_MODE must be short or full" ;; esac
full() { [ "$CAMPAIGN_MODE" = full ]; }
# pick SHORT FULL: the value for this mode.
pick() { if full; then echo "$2"; else echo "$1"; fi; }

now() { date +%s.%N | cut -c1-14; }
# elapsed T0 [T1]: seconds since T0, one decimal.
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
# rand N: a random integer in 0..N-1.
rand() { echo $(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % $1 )); }

# A checkpoint is good when murmur can load it: the loader checks size,
# magic, version, model fingerprint and the SHA-256 over the whole file.
ckpt_ok() { MURMUR_NO_BLAS_FIX=1 "$MURMUR" generate --checkpoint "$1" --length 1 --temperature 0 >/dev/null 2>"$T/.ckpt_err"; }
ckpt_why() { cat "$T/.ckpt_err"; }

# Every line of a metrics file must parse as one JSON object: no half lines.
# (A cheap structural check: starts with {"ev":" and ends with }, balanced
# braces and brackets, an even number of unescaped quotes.)
bad_jsonl_lines() {
    awk '{
        ok = ($0 ~ /^\{"ev":"[a-z_]+"/ && $0 ~ /\}$/)
        s = $0; gsub(/\\./, "", s)
        q = gsub(/"/, "", s); ob = gsub(/\{/, "", s); cb = gsub(/\}/, "", s)
        osq = gsub(/\[/, "", s); csq = gsub(/\]/, "", s)
        if (!ok || q % 2 || ob != cb || osq != csq) { n++; if (n <= 3) print "line " NR ": " substr($0, 1, 120) > "/dev/stderr" }
    } END { print n + 0 }' "$1"
}

# rounds_done FILE: how many rounds the round lines stand for (one each, or
# a folded line's "rounds": --round-lines, docs/metrics.md); last_round FILE:
# the last one's round.
rounds_done() {
    awk '/"ev":"round"/ { if (match($0, /"rounds":[0-9]+/)) n += substr($0, RSTART + 9, RLENGTH - 9); else n++ }
        END { print n + 0 }' "$1" 2>/dev/null || echo 0
}
last_round() { grep "\"ev\":\"round\"" "$1" 2>/dev/null | sed -n "s/.*\"round\":\([0-9]*\).*/\1/p" | tail -1; }

campaign_line() { # name injected survived lost recover
    echo "CAMPAIGN scenario=$1 injected=$2 survived=$3 lost=$4 recover=$5"
}
# count_ev FILE EV: lines of event EV (0 when the file does not exist yet).
count_ev() { awk -v e="\"ev\":\"$2\"" 'index($0, e) { n++ } END { print n + 0 }' "$1" 2>/dev/null || echo 0; }
# life_rounds FILE: rounds since the last start line (this life's), as rounds_done counts them.
life_rounds() {
    awk '/"ev":"start"/ { c = 0 }
        /"ev":"round"/ { if (match($0, /"rounds":[0-9]+/)) c += substr($0, RSTART + 9, RLENGTH - 9); else c++ }
        END { print c + 0 }' "$1" 2>/dev/null || echo 0
}

