#!/bin/sh
# make bench-allreduce: Open MPI's MPI_Allreduce over TCP (--mca pml ob1
# --mca btl tcp,self: no shared memory even on one machine) next to murmur's
# own ring all-reduce (murmur node --algo allreduce --no-train --vector-len,
# plaintext, over loopback) for 1, 4, 16 and 64 MB float vectors on 4 and 8
# peers of this machine (tests/bench_allreduce.c for MPI).
# The machine may be shared, so the two run in turn, A B A B: for each peer
# count and size, PAIRS pairs of one MPI run then one murmur run, each of
# REPS timed repetitions after a warm-up. A pair's ratio is murmur's median
# algorithm bandwidth (vector bytes / seconds of one all-reduce, slowest
# peer; docs/runtime.md) over MPI's median in the same pair; the table
# prints, per peers and size, each side's median over all its repetitions
# with their range, the median of the pair ratios with their range (the
# spread that decides whether a difference is one), and the load average
# (1 min) before the cell's first pair and after its last. Writes every
# repetition to the CSV; draws a PNG of it when gnuplot is there.
#   BENCH_RANKS="4 8"  BENCH_SIZES=1,4,16,64  BENCH_REPS=5  BENCH_PAIRS=5
#   BENCH_CSV=build/bench-allreduce.csv  BENCH_IMPLS="mpi murmur"
#   BENCH_CHUNK=65536 (murmur's --allreduce-chunk, floats)
# murmur's repetitions are rounds of one run: REPS + 2 rounds, the first
# round (connections opening) left out; a repetition's time is the largest
# over the peers of the time between two consecutive round lines of
# metrics.jsonl (docs/metrics.md): one whole all-reduce and the round's
# book-keeping, back to back, as an application would call it.
# The CSV is long-format (impl,ranks,vector_mb,bytes,pair,rep,seconds,
# algbw_gbs,busbw_gbs): one row per repetition and implementation.
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
BUILD=${BUILD:-build}
MURMUR=${MURMUR:-./murmur}
IMPLS=${BENCH_IMPLS:-mpi murmur}
CHUNK=${BENCH_CHUNK:-65536}
BIN=${BIN:-$BUILD/bench_allreduce}
RANKS=${BENCH_RANKS:-4 8}
SIZES=${BENCH_SIZES:-1,4,16,64}
REPS=${BENCH_REPS:-5}
PAIRS=${BENCH_PAIRS:-5}
CSV=${BENCH_CSV:-$BUILD/bench-allreduce.csv}
[ -x "$BIN" ] || { echo "bench-allreduce: $BIN not built (make bench-allreduce)" >&2; exit 2; }
asroot=""; [ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
echo "impl,ranks,vector_mb,bytes,pair,rep,seconds,algbw_gbs,busbw_gbs" > "$CSV"
LOADS="$CSV.loads"; : > "$LOADS"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-allreduce: MPI_Allreduce (sum, float, in place) and murmur node --algo allreduce" \
     "(average, plaintext, chunks of $CHUNK floats) over TCP loopback;" \
     "peers: $RANKS; sizes: $SIZES MB; $PAIRS pairs (A B A B) of $REPS reps after 1 warm-up;" \
     "$(nproc) cores; load $load0"

# A base port with n free ports above it, below the ephemeral range.
free_base() {
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        b=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100 - $1) ))
        busy=$(ss -Htan 2>/dev/null | awk -v b="$b" -v n="$1" '{ sub(/.*:/, "", $4); if ($4 >= b && $4 < b + n) c++ } END { print c + 0 }')
        [ "$busy" -eq 0 ] && { echo "$b"; return 0; }
    done
    echo "bench-allreduce: no free ports" >&2; exit 1
}

# murmur N MB PAIR: one run of N peers; each round line's time minus the
# previous one's, per peer; a repetition is the slowest peer's.
run_murmur() {
    n=$1 mb=$2 pair=$3
    topo="$BUILD/bench-allreduce-ring$n.topo"
    [ -s "$topo" ] || "$MURMUR" topo gen ring -n "$n" > "$topo" 2>/dev/null
    len=$((mb * 262144)); dir="$BUILD/bench-allreduce-run/$n-$mb"; rm -rf "$dir"; mkdir -p "$dir"
    port=$(free_base "$n"); pids=""; k=0
    while [ "$k" -lt "$n" ]; do
        MURMUR_NO_BLAS_FIX=1 timeout -k 5 600 "$MURMUR" node --id "$k" --topology "$topo" \
            --base-port "$port" --plaintext --algo allreduce --allreduce-chunk "$CHUNK" \
            --no-train --vector-len "$len" --rounds $((REPS + 2)) --eval-every 0 \
            --checkpoint-every 0 --log-every 0 --start-timeout 60000 --round-timeout 60000 \
            --run-dir "$dir" > "$dir.$k.log" 2>&1 &
        pids="$pids $!"; k=$((k + 1))
    done
    for p in $pids; do wait "$p" || { tail -5 "$dir.0.log" >&2; echo "bench-allreduce: murmur node failed" >&2; exit 1; }; done
    k=0
    while [ "$k" -lt "$n" ]; do
        grep '"ev":"round"' "$dir/node-$k/metrics.jsonl" | sed 's/.*"round":\([0-9]*\).*"time":\([0-9.e+-]*\).*/\1 \2/'
        k=$((k + 1))
    done | awk -v n="$n" -v mb="$mb" -v reps="$REPS" -v pair="$pair" '
        { t[$1, ++c[$1]] = $2 }
        END { for (r = 2; r <= reps + 1; r++) { w = 0
                for (k = 1; k <= n; k++) { d = t[r, k] - t[r - 1, k]; if (d > w) w = d }
                # (peer order within a round is the order of the files: the same k)
                b = mb * 1048576; alg = b / w / 1e9
                printf "murmur,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f\n", n, mb, b, pair, r - 2, w, alg, alg * 2 * (n - 1) / n } }' >> "$CSV"
}

# mpi N MB PAIR: one mpirun of N ranks on one size
run_mpi() {
    log="$BUILD/bench-allreduce-$1.log"
    timeout -k 10 900 mpirun $asroot --oversubscribe -np "$1" --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include lo "$BIN" --sizes "$2" --reps "$REPS" --pair "$3" --csv "$CSV" > "$log" 2>&1 ||
        { tail -20 "$log" >&2; echo "bench-allreduce: mpirun -np $1 failed" >&2; exit 1; }
}

for n in $RANKS; do
    for mb in $(echo "$SIZES" | tr ',' ' '); do
        l0=$(cut -d' ' -f1 /proc/loadavg); pair=1
        while [ "$pair" -le "$PAIRS" ]; do
            for impl in $IMPLS; do
                case $impl in
                mpi) run_mpi "$n" "$mb" "$pair" ;;
                murmur) run_murmur "$n" "$mb" "$pair" ;;
                *) echo "bench-allreduce: unknown impl '$impl' (mpi, murmur)" >&2; exit 2 ;;
                esac
            done
            pair=$((pair + 1))
        done
        echo "$n,$mb,$l0,$(cut -d' ' -f1 /proc/loadavg)" >> "$LOADS"
        echo "  $n peers, $mb MB: $PAIRS pairs done (load $l0 -> $(cut -d' ' -f1 /proc/loadavg))"
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "algorithm bandwidth, GB/s: median (min-max) of $PAIRS x $REPS repetitions; ratio: median (min-max)" \
     "of the $PAIRS pairs' ratios of medians; load $load0 before, $load1 after; load (1 min) per cell"
# one column per implementation in the CSV, in order of appearance; the
# ratio is the second implementation's over the first's, pair by pair
awk -F, 'FILENAME == ARGV[1] { ld[$1 "," $2] = $3 "-" $4; next }
    FNR > 1 { k = $2 "," $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
              if (!($1 in isimpl)) { isimpl[$1] = 1; impls[++ni] = $1 }
              c = k "," $1; v[c, ++cnt[c]] = $8
              cp = c "," $5; pv[cp, ++pcnt[cp]] = $8; if ($5 > np[k]) np[k] = $5 }
    function sortv(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
    function medarr(a, n) { sortv(a, n); lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function med(c,   n, i, a) { n = cnt[c]; for (i = 1; i <= n; i++) a[i] = v[c, i]; return medarr(a, n) }
    function pmed(cp,   n, i, a) { n = pcnt[cp]; for (i = 1; i <= n; i++) a[i] = pv[cp, i]; return medarr(a, n) }
    END {
        printf "%5s %7s", "peers", "vector"
        for (i = 1; i <= ni; i++) printf "  %-22s", impls[i]
        if (ni > 1) printf "  %-22s", impls[2] "/" impls[1] " by pair"
        printf "  %s\n", "load"
        for (q = 1; q <= nk; q++) {
            split(keys[q], f, ","); printf "%5s %4s MB", f[1], f[2]
            for (i = 1; i <= ni; i++) { c = keys[q] "," impls[i]
                if (cnt[c]) { m[i] = med(c); printf "  %6.3f (%.3f-%.3f)   ", m[i], lo, hi } else { m[i] = 0; printf "  %-22s", "-" } }
            if (ni > 1) { nr = 0
                for (p = 0; p <= np[keys[q]]; p++) { a1 = keys[q] "," impls[1] "," p; a2 = keys[q] "," impls[2] "," p
                    if (pcnt[a1] && pcnt[a2]) { d = pmed(a1); if (d > 0) r[++nr] = 100 * pmed(a2) / d } }
                if (nr) { rm = medarr(r, nr); printf "  %4.0f%% (%.0f-%.0f%%)%*s", rm, lo, hi, 9 - length(sprintf("%.0f-%.0f", lo, hi)), "" }
                else printf "  %-22s", "-" }
            printf "  %s\n", ld[keys[q]]
        }
    }' "$LOADS" "$CSV"
echo "every repetition: $CSV"
if command -v gnuplot > /dev/null 2>&1; then
    png=${CSV%.csv}.png
    plots=""; pt=5
    for impl in $IMPLS; do
        for n in $RANKS; do
            name=$impl; [ "$impl" = mpi ] && name=MPI_Allreduce; [ "$impl" = murmur ] && name="murmur allreduce"
            plots="$plots${plots:+, }'$CSV' using (strcol(1) eq '$impl' && \$2 == $n ? \$3 : 1/0):8 with points pt $pt title '$name, $n peers'"
            pt=$((pt + 1))
        done
    done
    gnuplot -e "set terminal png noenhanced size 800,500; set output '$png'; set datafile separator ',';
        set logscale x 2; set xlabel 'vector (MB)'; set ylabel 'algorithm bandwidth (GB/s)';
        set key below; set title 'all-reduce over TCP loopback (load $load0)'; plot $plots" 2>/dev/null &&
        echo "plot: $png"
fi
