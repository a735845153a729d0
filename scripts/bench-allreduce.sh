#!/bin/sh
# make bench-allreduce: Open MPI's MPI_Allreduce over TCP (--mca pml ob1
# --mca btl tcp,self: no shared memory even on one machine) next to murmur's
# own ring all-reduce (murmur node --algo allreduce --no-train --vector-len,
# plaintext, over loopback) for 1, 4, 16 and 64 MB float vectors on 4 and 8
# peers of this machine, REPS timed repetitions each after a warm-up
# (tests/bench_allreduce.c for MPI). For each peer count MPI runs first,
# then murmur, so both see the same hour's load. Writes every repetition to
# the CSV and prints, per peers and size, the median algorithm bandwidth
# (vector bytes / seconds of one all-reduce, slowest peer; docs/runtime.md)
# of each, with its range, the ratio murmur/MPI of the medians, and the
# load average before and after. Draws a PNG of the CSV when gnuplot is
# there.
#   BENCH_RANKS="4 8"  BENCH_SIZES=1,4,16,64  BENCH_REPS=5
#   BENCH_CSV=build/bench-allreduce.csv  BENCH_IMPLS="mpi murmur"
#   BENCH_CHUNK=65536 (murmur's --allreduce-chunk, floats)
# murmur's repetitions are rounds of one run per size: REPS + 2 rounds,
# the first round (connections opening) left out; a repetition's time is
# the largest over the peers of the time between two consecutive round
# lines of metrics.jsonl (docs/metrics.md): one whole all-reduce and the
# round's book-keeping, back to back, as an application would call it.
# The CSV is long-format (impl,ranks,vector_mb,bytes,rep,seconds,algbw_gbs,
# busbw_gbs): one row per repetition and implementation.
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
CSV=${BENCH_CSV:-$BUILD/bench-allreduce.csv}
[ -x "$BIN" ] || { echo "bench-allreduce: $BIN not built (make bench-allreduce)" >&2; exit 2; }
asroot=""; [ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
echo "impl,ranks,vector_mb,bytes,rep,seconds,algbw_gbs,busbw_gbs" > "$CSV"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-allreduce: MPI_Allreduce (sum, float, in place) and murmur node --algo allreduce" \
     "(average, plaintext, chunks of $CHUNK floats) over TCP loopback;" \
     "peers: $RANKS; sizes: $SIZES MB; $REPS reps after 1 warm-up; $(nproc) cores; load $load0"

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

# murmur N: one run of N peers per size; each round line's time minus the
# previous one's, per peer; a repetition is the slowest peer's.
run_murmur() {
    n=$1
    topo="$BUILD/bench-allreduce-ring$n.topo"
    "$MURMUR" topo gen ring -n "$n" > "$topo" 2>/dev/null
    for mb in $(echo "$SIZES" | tr ',' ' '); do
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
        done | awk -v n="$n" -v mb="$mb" -v reps="$REPS" '
            { t[$1, ++c[$1]] = $2 }
            END { for (r = 2; r <= reps + 1; r++) { w = 0
                    for (k = 1; k <= n; k++) { d = t[r, k] - t[r - 1, k]; if (d > w) w = d }
                    # (peer order within a round is the order of the files: the same k)
                    b = mb * 1048576; alg = b / w / 1e9
                    printf "murmur,%d,%d,%d,%d,%.6f,%.6f,%.6f\n", n, mb, b, r - 2, w, alg, alg * 2 * (n - 1) / n } }' >> "$CSV"
        echo "  murmur $n peers, $mb MB done"
    done
}

for n in $RANKS; do
    for impl in $IMPLS; do
        case $impl in
        mpi)
            timeout -k 10 900 mpirun $asroot --oversubscribe -np "$n" --mca pml ob1 --mca btl tcp,self \
                --mca btl_tcp_if_include lo "$BIN" --sizes "$SIZES" --reps "$REPS" --csv "$CSV" > "$BUILD/bench-allreduce-$n.log" 2>&1 ||
                { tail -20 "$BUILD/bench-allreduce-$n.log" >&2; echo "bench-allreduce: mpirun -np $n failed" >&2; exit 1; }
            echo "  mpi $n ranks done ($(grep -c rep "$BUILD/bench-allreduce-$n.log") repetitions)" ;;
        murmur) run_murmur "$n" ;;
        *) echo "bench-allreduce: unknown impl '$impl' (mpi, murmur)" >&2; exit 2 ;;
        esac
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "algorithm bandwidth, GB/s: median (min-max) of $REPS repetitions; load $load0 before, $load1 after"
# one column per implementation in the CSV, in order of appearance
awk -F, 'NR > 1 { k = $2 "," $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
                 if (!($1 in isimpl)) { isimpl[$1] = 1; impls[++ni] = $1 }
                 c = k "," $1; v[c, ++cnt[c]] = $7 }
    function med(c,   n, i, j, t, a) { n = cnt[c]; for (i = 1; i <= n; i++) a[i] = v[c, i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END {
        printf "%5s %7s", "ranks", "vector"
        for (i = 1; i <= ni; i++) printf "  %-22s", impls[i]
        if (ni > 1) printf "  %s/%s", impls[2], impls[1]
        printf "\n"
        for (q = 1; q <= nk; q++) {
            split(keys[q], f, ","); printf "%5s %4s MB", f[1], f[2]
            for (i = 1; i <= ni; i++) { c = keys[q] "," impls[i]
                if (cnt[c]) { m[i] = med(c); printf "  %6.3f (%.3f-%.3f)   ", m[i], lo, hi } else { m[i] = 0; printf "  %-22s", "-" } }
            if (ni > 1 && m[1] > 0) printf "  %5.0f%%", 100 * m[2] / m[1]
            printf "\n"
        }
    }' "$CSV"
echo "every repetition: $CSV"
if command -v gnuplot > /dev/null 2>&1; then
    png=${CSV%.csv}.png
    plots=""; pt=5
    for impl in $IMPLS; do
        for n in $RANKS; do
            name=$impl; [ "$impl" = mpi ] && name=MPI_Allreduce; [ "$impl" = murmur ] && name="murmur allreduce"
            plots="$plots${plots:+, }'$CSV' using (strcol(1) eq '$impl' && \$2 == $n ? \$3 : 1/0):7 with points pt $pt title '$name, $n peers'"
            pt=$((pt + 1))
        done
    done
    gnuplot -e "set terminal png noenhanced size 800,500; set output '$png'; set datafile separator ',';
        set logscale x 2; set xlabel 'vector (MB)'; set ylabel 'algorithm bandwidth (GB/s)';
        set key below; set title 'all-reduce over TCP loopback (load $load0)'; plot $plots" 2>/dev/null &&
        echo "plot: $png"
fi
